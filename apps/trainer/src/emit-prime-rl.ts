import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { stringify } from 'smol-toml';
import { type RunConfig, RunConfigError } from './run-config.ts';

/** The prime-rl commit whose config classes the emitted files follow (`docs/scale-out.md` cites it). */
export const PRIME_RL_COMMIT = '559b44772e471d1538537b8805cc77f3824a5e64';

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
 * - `max_steps` = the run's.
 *
 * Refuses (a {@link RunConfigError} naming the field) a run that is not `policy.engine = "external"`
 * over files or ZMQ, or `max_async` above 1: prime-rl's trainer deletes `broadcasts/step_{N-2}`
 * once it broadcast step N (`trainer/utils.py:349-363`), which a rollout further behind would
 * still load.
 */
export function primeRlLaunch(options: {
  config: RunConfig;
  /** The run config file (absolute), for the launch script's `troupe train --config`. */
  configPath: string | null;
  /** The run directory `troupe train --out` writes. */
  out: string;
}): PrimeRlLaunch {
  const { config } = options;
  const transport = config.transport;
  if (config.policy.engine !== 'external')
    throw new RunConfigError(
      'policy.engine: --emit-prime-rl writes the launch of prime-rl\'s trainer and vLLM; set policy.engine = "external"',
    );
  if (transport.type === 'in-process' || !config.inference)
    throw new RunConfigError(
      'transport.type: --emit-prime-rl needs transport.type = "filesystem" or "zmq" and [inference] base_urls',
    );
  if (config.maxAsync > 1)
    throw new RunConfigError(
      `max_async: ${config.maxAsync} is more than prime-rl's trainer keeps (it deletes broadcasts/step_{N-2} after step N); use 0 or 1`,
    );
  const outputDir = resolve(transport.outputDir);
  const cp = transport.padToMultipleOf;
  const ranks = transport.dataWorldSize * cp;
  const served = config.inference.model;
  const server = new URL(config.inference.baseUrls[0] as string);
  const trainer = {
    output_dir: outputDir,
    max_steps: config.maxSteps,
    model: { name: served, seq_len: transport.seqLen, cp },
    rollout_transport:
      transport.type === 'zmq' ? { type: 'zmq', host: transport.host, port: transport.port } : { type: 'filesystem' },
    weight_broadcast: { type: 'filesystem' },
  };
  const inference = {
    output_dir: outputDir,
    server: { port: Number(server.port || 8000) },
    vllm: { model: served },
    weight_broadcast: { type: 'filesystem' },
  };
  const header = (what: string) =>
    `# ${what}, written by \`troupe train --emit-prime-rl\` from ${options.configPath ?? 'an inline run config'};\n` +
    `# keys of prime-rl ${PRIME_RL_COMMIT.slice(0, 9)} (tooling/prime-rl-double/upstream-config.json).\n`;
  return {
    'trainer.toml': `${header('prime-rl TrainerConfig')}${stringify(trainer)}\n`,
    'inference.toml': `${header('prime-rl InferenceConfig')}${stringify(inference)}\n`,
    'launch.sh': launchScript({ ranks, served, outputDir, configPath: options.configPath, out: resolve(options.out) }),
  };
}

/** The launch script: vLLM, the trainer ranks under torchrun, then the orchestrator (troupe). */
function launchScript(options: { ranks: number; served: string; outputDir: string; configPath: string | null; out: string }) {
  const quote = (text: string) => `'${text.replaceAll("'", "'\\''")}'`;
  const train = options.configPath
    ? `\${TROUPE:-troupe} train --config ${quote(options.configPath)} --out ${quote(options.out)}`
    : '# troupe train --config <the run config> (it was inline)';
  return `#!/usr/bin/env bash
# prime-rl's trainer (${options.ranks} rank${options.ranks > 1 ? 's' : ''}) and vLLM serving ${options.served}, then troupe's
# orchestrator. Run from a prime-rl checkout at ${PRIME_RL_COMMIT.slice(0, 9)} (\`uv sync\`); GPUs by
# INFERENCE_GPUS (default 0) and TRAINER_GPUS (default 1..${options.ranks}); the orchestrator by TROUPE
# (default \`troupe\`; in the troupe repository: TROUPE="pnpm --dir <troupe checkout> trainer").
set -euo pipefail
here="$(cd "$(dirname "\${BASH_SOURCE[0]}")" && pwd)"
mkdir -p ${quote(options.outputDir)}
CUDA_VISIBLE_DEVICES="\${INFERENCE_GPUS:-0}" uv run inference @ "$here/inference.toml" &
inference=$!
CUDA_VISIBLE_DEVICES="\${TRAINER_GPUS:-${Array.from({ length: options.ranks }, (_, i) => i + 1).join(',')}}" \\
  uv run torchrun --nproc-per-node ${options.ranks} -m prime_rl.trainer.rl.train @ "$here/trainer.toml" &
trainer=$!
trap 'kill "$inference" "$trainer" 2>/dev/null || true' EXIT
${train}
wait "$trainer"
`;
}

/** Writes {@link primeRlLaunch}'s files into `dir` (created); returns their paths. */
export async function emitPrimeRl(options: {
  config: RunConfig;
  configPath: string | null;
  out: string;
  dir: string;
}): Promise<string[]> {
  const files = primeRlLaunch(options);
  await mkdir(options.dir, { recursive: true });
  const paths: string[] = [];
  for (const [name, text] of Object.entries(files)) {
    const path = join(options.dir, name);
    await writeFile(path, text);
    if (name.endsWith('.sh')) await chmod(path, 0o755);
    paths.push(path);
  }
  return paths;
}
