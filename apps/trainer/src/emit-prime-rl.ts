import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { ConfigError } from '@troupe/verifiers';
import { stringify } from 'smol-toml';
import { type RunConfig, resolvedPolicies } from './run-config.ts';

/** The prime-rl commit whose config classes the emitted files follow (`docs/scale-out.md` cites it). */
export const PRIME_RL_COMMIT = '559b44772e471d1538537b8805cc77f3824a5e64';

/**
 * Refuses `max_async` above 1 for `policy.engine = "external"` (a {@link ConfigError} naming the
 * key). prime-rl runs its rollouts at most one step ahead of the trainer (`TARGET_LAG = 1`,
 * `orchestrator/orchestrator.py:101-104` at 559b447, not configurable there), and its trainer
 * deletes `broadcasts/step_{N-2}` once it broadcast step N (`trainer/utils.py:349-363`), which a
 * rollout two steps behind would still load into vLLM. 0 (on-policy) is honoured: troupe then waits.
 */
export function checkExternalMaxAsync(config: RunConfig): void {
  if (config.policy.engine === 'external' && config.maxAsync > 1)
    throw new ConfigError(
      `max_async: ${config.maxAsync} is more than prime-rl allows with policy.engine = "external" (its orchestrator runs at most 1 step ahead, and its trainer deletes broadcasts/step_{N-2} after step N); use 0 or 1`,
    );
}

/** The launch files for prime-rl's trainer and vLLM, as text, by file name. */
export interface PrimeRlLaunch {
  /** `uv run torchrun … -m prime_rl.trainer.rl.train @ trainer.toml`'s config (prime-rl `TrainerConfig`). */
  'trainer.toml': string;
  /** `uv run inference @ inference.toml`'s config (prime-rl `InferenceConfig`). */
  'inference.toml': string;
  /** Starts vLLM, the trainer ranks under torchrun, then `troupe train` with this run config. */
  'launch.sh': string;
}

/**
 * The prime-rl launch of an external-engine run, from its run config: the one source of truth for
 * what the trainer and vLLM must agree on with troupe.
 *
 * - trainer ranks: `torchrun --nproc-per-node W` with W = `transport.data_world_size` ×
 *   `pad_to_multiple_of` (prime-rl's data world is the trainer world ÷ the context-parallel degree
 *   `model.cp`, and its orchestrator pads to a multiple of cp: `configs/rl.py:657-663` at 559b447);
 * - `output_dir` absolute (the trainer, vLLM and troupe run from different checkouts);
 * - `model.seq_len` = `transport.seq_len`, `model.name` = `[inference] model`, which vLLM serves
 *   under that name (`vllm.model`), so the requests' `model` is found;
 * - `rollout_transport` = `[transport]` (the trainer's default is ZMQ: `configs/trainer.py:620`),
 *   `weight_broadcast` = filesystem (what troupe's orchestrator reads: `broadcasts/step_N/STABLE`);
 * - `max_steps` = the run's; `[ckpt] interval` = `checkpoint_every`, so the trainer checkpoints
 *   the steps the orchestrator does and `launch.sh --resume` finds both at one step.
 *
 * Refuses (a {@link ConfigError} naming the field) a run that is not `policy.engine = "external"`
 * over files or ZMQ, or `max_async` above 1 ({@link checkExternalMaxAsync}).
 */
export function primeRlLaunch(options: {
  config: RunConfig;
  /** The policy whose trainer and vLLM are launched (default `main`: `[policy]`, `[transport]`, `[inference]`). */
  policy?: string;
  /** The run config file (absolute), for the launch script's `troupe train --config`. */
  configPath: string | null;
  /** The run directory `troupe train --out` writes. */
  out: string;
  /** Where the launch script runs `npx --no-install troupe` (the project that installed `@troupe/trainer`; default the working directory). */
  projectDir?: string;
}): PrimeRlLaunch {
  const resolved = resolvedPolicies(options.config).get(options.policy ?? 'main');
  if (!resolved) throw new ConfigError(`--emit-prime-rl: no policy ${options.policy}`, { path: 'policies' });
  // The policy's own sections stand where main's are.
  const config: RunConfig = {
    ...options.config,
    policy: resolved.policy,
    trainer: resolved.trainer,
    transport: resolved.transport,
    inference: resolved.inference,
  };
  const transport = config.transport;
  if (config.policy.engine !== 'external')
    throw new ConfigError(
      'policy.engine: --emit-prime-rl writes the launch of prime-rl\'s trainer and vLLM; set policy.engine = "external"',
    );
  if (transport.type === 'in-process' || !config.inference)
    throw new ConfigError(
      'transport.type: --emit-prime-rl needs transport.type = "filesystem" or "zmq" and [inference] base_urls',
    );
  checkExternalMaxAsync(config);
  const outputDir = resolve(transport.outputDir);
  const cp = transport.padToMultipleOf;
  const ranks = transport.dataWorldSize * cp;
  const served = config.inference.model;
  const server = new URL(config.inference.baseUrls[0] as string);
  const trainer = {
    output_dir: outputDir,
    max_steps: config.maxSteps,
    // A LoRA policy trains and broadcasts only its adapter (`[model.lora]`, `configs/trainer.py:256`).
    model: { name: served, seq_len: transport.seqLen, cp, ...(config.inference.loraName ? { lora: {} } : {}) },
    rollout_transport:
      transport.type === 'zmq' ? { type: 'zmq', host: transport.host, port: transport.port } : { type: 'filesystem' },
    weight_broadcast: { type: 'filesystem' },
    // The trainer checkpoints the steps the orchestrator does, so a resume finds both at one step
    // (prime-rl wants both sides checkpointing: `validate_shared_ckpt_config`, `utils/validation.py:194-206`).
    ...(config.checkpointEvery > 0 ? { ckpt: { interval: config.checkpointEvery } } : {}),
  };
  const inference = {
    output_dir: outputDir,
    server: { port: Number(server.port || 8000) },
    vllm: { model: served, ...(config.inference.loraName ? { enable_lora: true } : {}) },
    weight_broadcast: { type: 'filesystem' },
  };
  const header = (what: string) =>
    `# ${what}, written by \`troupe train --emit-prime-rl\` from ${options.configPath ?? 'an inline run config'};\n` +
    `# keys of prime-rl ${PRIME_RL_COMMIT.slice(0, 9)} (tooling/prime-rl-double/upstream-config.json).\n`;
  return {
    'trainer.toml': `${header('prime-rl TrainerConfig')}${stringify(trainer)}\n`,
    'inference.toml': `${header('prime-rl InferenceConfig')}${stringify(inference)}\n`,
    'launch.sh': launchScript({
      ranks,
      served,
      outputDir,
      configPath: options.configPath,
      out: resolve(options.out),
      projectDir: resolve(options.projectDir ?? '.'),
    }),
  };
}

/**
 * The launch script: vLLM, the trainer ranks under torchrun, then the orchestrator (troupe), run as
 * `npx --no-install troupe` in the project that installed `@troupe/trainer` (`projectDir`).
 * `launch.sh --resume` continues the run: the step S is the one troupe's `<out>/checkpoint` names;
 * rollouts and broadcasts past S are removed (prime-rl's launcher does the same on resume:
 * `clean_future_steps`, `utils/pathing.py:196-214`, called at `entrypoints/rl.py:640-651`), the trainer
 * starts with `--resume.step S` and troupe with `--resume`.
 */
function launchScript(options: {
  ranks: number;
  served: string;
  outputDir: string;
  configPath: string | null;
  out: string;
  projectDir: string;
}) {
  const quote = (text: string) => `'${text.replaceAll("'", "'\\''")}'`;
  const train = options.configPath
    ? `(cd ${quote(options.projectDir)} && \${TROUPE:-npx --no-install troupe} train --config ${quote(options.configPath)} --out "$out" "\${troupe_args[@]}")`
    : '# npx --no-install troupe train --config <the run config> --out "$out" [--resume] (the config was inline)';
  return `#!/usr/bin/env bash
# prime-rl's trainer (${options.ranks} rank${options.ranks > 1 ? 's' : ''}) and vLLM serving ${options.served}, then troupe's
# orchestrator. Run from a prime-rl checkout at ${PRIME_RL_COMMIT.slice(0, 9)} (\`uv sync\`):
#   launch.sh             a fresh run
#   launch.sh --resume    continue from troupe's checkpoint (<out>/checkpoint, step S): the trainer
#                         resumes from its own checkpoint of step S (--resume.step S), and what the
#                         wire holds past S (rollouts/, broadcasts/) is removed first
# GPUs by INFERENCE_GPUS (default 0) and TRAINER_GPUS (default 1..${options.ranks}). The orchestrator runs as
# \`npx --no-install troupe\` in ${options.projectDir}, where @troupe/trainer is installed; TROUPE
# replaces that command (in a troupe checkout, after pnpm build: TROUPE="node <checkout>/packages/verifiers/bin/troupe.js").
set -euo pipefail
here="$(cd "$(dirname "\${BASH_SOURCE[0]}")" && pwd)"
out=${quote(options.out)}
output_dir=${quote(options.outputDir)}
trainer_args=()
troupe_args=()
case "\${1:-}" in
  "") ;;
  --resume)
    link="$(readlink "$out/checkpoint" || true)"
    if [[ ! "$link" =~ ^checkpoints/step-([0-9]+)$ ]]; then
      echo "launch.sh --resume: $out/checkpoint names no checkpoint of troupe" >&2
      exit 2
    fi
    step="\${BASH_REMATCH[1]}"
    for dir in "$output_dir"/rollouts/step_* "$output_dir"/broadcasts/step_*; do
      n="\${dir##*/step_}"
      if [[ -d "$dir" && ! -L "$dir" && "$n" =~ ^[0-9]+$ ]] && (( n > step )); then rm -rf -- "$dir"; fi
    done
    trainer_args=(--resume.step "$step")
    troupe_args=(--resume)
    ;;
  *)
    echo "usage: launch.sh [--resume]" >&2
    exit 2
    ;;
esac
mkdir -p "$output_dir"
CUDA_VISIBLE_DEVICES="\${INFERENCE_GPUS:-0}" uv run inference @ "$here/inference.toml" &
inference=$!
CUDA_VISIBLE_DEVICES="\${TRAINER_GPUS:-${Array.from({ length: options.ranks }, (_, i) => i + 1).join(',')}}" \\
  uv run torchrun --nproc-per-node ${options.ranks} -m prime_rl.trainer.rl.train @ "$here/trainer.toml" "\${trainer_args[@]}" &
trainer=$!
trap 'kill "$inference" "$trainer" 2>/dev/null || true' EXIT
${train}
wait "$trainer"
`;
}

/**
 * Writes {@link primeRlLaunch}'s files into `dir` (created); returns their paths. A run with
 * external policies under `[policies]` gets one folder per external policy, `<dir>/<policy>/`,
 * with that policy's `trainer.toml` and `inference.toml` (one prime-rl trainer and vLLM each) and
 * no `launch.sh`: start each policy's trainer and servers, then `troupe train` once.
 */
export async function emitPrimeRl(options: {
  config: RunConfig;
  configPath: string | null;
  out: string;
  dir: string;
}): Promise<string[]> {
  const external = [...resolvedPolicies(options.config)]
    .filter(([name, policy]) => name !== 'main' && policy.policy.engine === 'external')
    .map(([name]) => name);
  const write = async (dir: string, files: Record<string, string>) => {
    await mkdir(dir, { recursive: true });
    const paths: string[] = [];
    for (const [name, text] of Object.entries(files)) {
      const path = join(dir, name);
      await writeFile(path, text);
      if (name.endsWith('.sh')) await chmod(path, 0o755);
      paths.push(path);
    }
    return paths;
  };
  if (external.length === 0) return write(options.dir, { ...primeRlLaunch(options) });
  const names = [...(options.config.policy.engine === 'external' ? ['main'] : []), ...external];
  const paths: string[] = [];
  for (const policy of names) {
    const { 'launch.sh': _launch, ...files } = primeRlLaunch({ ...options, policy });
    paths.push(...(await write(join(options.dir, policy), files)));
  }
  return paths;
}
