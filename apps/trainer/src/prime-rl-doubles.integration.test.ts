import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { encode } from '@msgpack/msgpack';
import { VllmShapedServer } from '@troupe/prime-rl/testing';
import type { ModelRequest } from '@troupe/verifiers';
import { type ScriptContext, ScriptedModelServer } from '@troupe/verifiers/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { primeRlLaunch } from './emit-prime-rl.ts';
import { readMetrics, train } from './run.ts';
import { camelKeys, parseRunConfig } from './run-config.ts';

// Three processes as a user runs them against prime-rl: troupe's orchestrator (this process), a
// vLLM-shaped server that serves one named model and refuses any other name, and prime-rl's
// trainer as a double run rank by rank under a torchrun double (tooling/prime-rl-double: Python +
// msgpack, each rank decoding only its own data rank's file with msgspec's checks and failing on
// an empty step where train.py does). The trainer reads the trainer.toml `--emit-prime-rl` writes.
// Scripted replies force whole rollouts with every advantage 0: those never reach the trainer;
// the step rolls again and its number and the weight versions stay in line.
const PYTHON = '/usr/bin/python3';
const DOUBLE = resolve(import.meta.dirname, '../../../tooling/prime-rl-double');
const ready = spawnSync(PYTHON, ['-c', 'import msgpack, zmq'], { stdio: 'ignore' }).status === 0;
// Under CI a missing double is a failure, not a skip (.ci/run installs python3-msgpack and python3-zmq).
const runIt = ready || process.env.CI === 'true' ? it : it.skip;
const SERVED = 'Qwen/Qwen3-0.6B';
const STEPS = 20;

const dirs: string[] = [];
const children: ChildProcess[] = [];
afterAll(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

/** A free TCP port whose successor is free too (ZMQ takes port and port + 1). */
async function freePortPair(): Promise<number> {
  const listen = (port: number) =>
    new Promise<number>((res, rej) => {
      const server = createServer();
      server.once('error', rej);
      server.listen(port, '127.0.0.1', () => {
        const bound = (server.address() as { port: number }).port;
        server.close(() => res(bound));
      });
    });
  for (;;) {
    const port = await listen(0);
    if (
      port < 65000 &&
      (await listen(port + 1).then(
        () => true,
        () => false,
      ))
    )
      return port;
  }
}

/** A deterministic choice from a call index. */
const pick = <T>(options: readonly T[], index: number): T => options[((index * 2654435761) % 2 ** 32) % options.length] as T;

/**
 * Replies by env. At a policy version in `flat`, the first `flatCalls` calls reply so that every
 * episode of a group scores the same (every advantage 0): Kuhn seats always take the first legal
 * action (check, check: the cards decide), proposer-solver proposes "5" and every solver says 5.
 */
function script(env: 'kuhn' | 'proposer-solver', flat: Set<number>, flatCalls: number) {
  const calls = new Map<string, number>();
  return (request: ModelRequest, context: ScriptContext): string => {
    const salt = String((context.body as { cache_salt?: unknown }).cache_salt);
    const seen = calls.get(salt) ?? 0;
    calls.set(salt, seen + 1);
    const level = flat.has(Number(salt)) && seen < flatCalls;
    const last = request.messages.filter((m) => m.role === 'user').at(-1);
    const text = typeof last?.content === 'string' ? last.content : '';
    if (env === 'kuhn') {
      const legal = [...text.matchAll(/\[([a-z]+)\]/g)].map((m) => m[1] as string);
      return `[${level ? legal[0] : pick(legal, context.callIndex)}]`;
    }
    if (text.startsWith('propose')) return level ? '5' : pick(['3 8', '1 2 9', '7', '4 4 2'], context.callIndex);
    return level ? '5' : pick(['1', '2', '3', '4', '7', '8', '9'], context.callIndex);
  };
}

function runConfig(options: {
  env: 'kuhn' | 'proposer-solver';
  transport: Record<string, unknown>;
  baseUrl: string;
  steps?: number;
  checkpointEvery?: number;
}) {
  const source =
    options.env === 'kuhn'
      ? {
          env: 'kuhn-poker',
          group_size: 4,
          options: { deals: 'stratified' },
          algorithm: { type: 'grpo' },
          // Self-play, player 1 on the same policy but not trained: a group is one deal's player-0
          // traces, whose advantages are all 0 when the cards alone decide (check, check).
          roles: { player0: { policy: 'main' }, player1: { policy: 'main', trainable: false } },
        }
      : {
          env: 'proposer-solver',
          group_size: 2,
          options: { n: 2, format: 'compact', claims: 'executed' },
          algorithm: { type: 'hierarchical-grpo', episodeAgents: ['solver'] },
          roles: {
            proposer: { policy: 'main', sampling: { max_tokens: 8 } },
            solver: { policy: 'main', sampling: { max_tokens: 1 } },
          },
        };
  return {
    seed: 0,
    max_steps: options.steps ?? STEPS,
    groups_per_step: 3,
    max_async: options.env === 'kuhn' ? 1 : 0,
    checkpoint_every: options.checkpointEvery ?? 0,
    train: { source: [source] },
    policy: { engine: 'external', max_tokens: 8, temperature: 1 },
    transport: { ...options.transport, data_world_size: 2, seq_len: 256 },
    inference: { base_urls: [options.baseUrl], model: SERVED, start_timeout_seconds: 60 },
  };
}

interface RankRead {
  step: number;
  rank: number;
  data_rank: number;
  source: string;
  micro_batches: number;
  tokens: number;
  loss_tokens: number;
}

async function threeProcess(options: { env: 'kuhn' | 'proposer-solver'; transport: 'filesystem' | 'zmq' }) {
  const dir = await mkdtemp(join(tmpdir(), 'prime-rl-doubles-'));
  dirs.push(dir);
  const outputDir = join(dir, 'wire');
  const out = join(dir, 'run');
  const flat = new Set([3, 9, 14]);
  const flatCalls = options.env === 'kuhn' ? 3 * 4 * 2 : 3 * 2 * 3;
  const model = await ScriptedModelServer.start({
    vllmTokens: true,
    keepLog: false,
    script: script(options.env, flat, flatCalls),
  });
  const vllm = await VllmShapedServer.start({ upstream: model.url, servedModelName: SERVED });
  const transport =
    options.transport === 'zmq'
      ? { type: 'zmq', output_dir: outputDir, host: '127.0.0.1', port: await freePortPair() }
      : { type: 'filesystem', output_dir: outputDir };
  const config = runConfig({ env: options.env, transport, baseUrl: vllm.baseUrl });
  // The trainer runs on what --emit-prime-rl writes from this very config.
  const launch = primeRlLaunch({ config: parseRunConfig(camelKeys(config)), configPath: null, out });
  await mkdir(join(dir, 'launch'));
  await writeFile(join(dir, 'launch', 'trainer.toml'), launch['trainer.toml']);
  const nproc = /--nproc-per-node (\d+)/.exec(launch['launch.sh'])?.[1];
  expect(nproc).toBe('2');
  const trainer = spawn(
    PYTHON,
    [
      join(DOUBLE, 'torchrun.py'),
      '--nproc-per-node',
      nproc as string,
      join(DOUBLE, 'trainer.py'),
      '@',
      join(dir, 'launch', 'trainer.toml'),
    ],
    { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  children.push(trainer);
  let trainerErr = '';
  trainer.stderr?.on('data', (chunk) => (trainerErr += chunk));
  const trainerExit = new Promise<number | null>((res) => trainer.on('close', (code) => res(code)));
  const lines: string[] = [];
  try {
    const result = await train({ config, out, baseDir: import.meta.dirname, log: (line) => lines.push(line) });
    expect(await trainerExit, trainerErr).toBe(0);
    const reads = (
      await Promise.all(
        [0, 1].map(async (rank) =>
          (await readFile(join(outputDir, 'trainer-double', `rank_${rank}.jsonl`), 'utf8')).trim().split('\n'),
        ),
      )
    )
      .flat()
      .map((line) => JSON.parse(line) as RankRead);
    return { result, reads, metrics: await readMetrics(out), vllm, lines, outputDir };
  } finally {
    await vllm.close();
    await model.close();
  }
}

describe('the trainer double fails where prime-rl would', () => {
  async function runDouble(rankFiles: { step: number; rank: number; payload: Uint8Array }[]) {
    const dir = await mkdtemp(join(tmpdir(), 'prime-rl-double-'));
    dirs.push(dir);
    const toml = `output_dir = "${join(dir, 'wire')}"\nmax_steps = 2\n[rollout_transport]\ntype = "filesystem"\n`;
    await writeFile(join(dir, 'trainer.toml'), toml);
    for (const file of rankFiles) {
      const stepDir = join(dir, 'wire', 'rollouts', `step_${file.step}`);
      await mkdir(stepDir, { recursive: true });
      await writeFile(join(stepDir, `rank_${file.rank}.bin`), file.payload);
    }
    const run = spawnSync(
      PYTHON,
      [
        join(DOUBLE, 'torchrun.py'),
        '--nproc-per-node',
        String(new Set(rankFiles.map((f) => f.rank)).size),
        join(DOUBLE, 'trainer.py'),
        '@',
        join(dir, 'trainer.toml'),
      ],
      { encoding: 'utf8', timeout: 60_000 },
    );
    return { status: run.status, stderr: run.stderr };
  }
  const batch = (mask: unknown[]) => [[1, 2], mask, [0, 0.5], [0, -0.1], [0, 1], [2], [1, 1], ['e', 'e'], [2]];

  runIt('an empty step is an IndexError at train.py:299, on the rank that read it, and stops every rank', async () => {
    const { status, stderr } = await runDouble([
      { step: 1, rank: 0, payload: encode([batch([false, true])]) },
      { step: 1, rank: 1, payload: encode([]) },
    ]);
    expect(status).not.toBe(0);
    expect(stderr).toMatch(/IndexError: list index out of range/);
    expect(stderr).toMatch(/rank 1 exited with 1/);
  });

  runIt('a loss mask of integers is refused as msgspec refuses it (bool is strict)', async () => {
    const { status, stderr } = await runDouble([{ step: 1, rank: 0, payload: encode([batch([0, 1])]) }]);
    expect(status).not.toBe(0);
    expect(stderr).toMatch(/ValidationError: Expected `bool`, got `int` - at `\$\[0\]\[1\]\[0\]`/);
  });

  runIt('a trainer.toml key prime-rl does not have is refused, naming it', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'prime-rl-double-'));
    dirs.push(dir);
    await writeFile(join(dir, 'trainer.toml'), '[model]\nseq_length = 2048\n');
    const run = spawnSync(PYTHON, [join(DOUBLE, 'trainer.py'), '@', join(dir, 'trainer.toml')], { encoding: 'utf8' });
    expect(run.status).not.toBe(0);
    expect(run.stderr).toMatch(/model\.seq_length: Extra inputs are not permitted \(trainer\.ModelConfig\)/);
  });
});

describe('three processes against prime-rl doubles (vLLM with the name check, torchrun trainer with 2 ranks)', () => {
  for (const [env, transport] of [
    ['kuhn', 'filesystem'],
    ['proposer-solver', 'zmq'],
  ] as const) {
    runIt(
      `${env} over ${transport}: 20 steps, every rank reads its own file of every step, zero-advantage steps never reach the trainer`,
      async () => {
        const { result, reads, metrics, vllm, lines, outputDir } = await threeProcess({ env, transport });
        expect(result.steps).toBe(STEPS);
        // Every (step, rank) was read exactly once, by the rank that owns that data rank.
        const seen = reads.map((r) => `${r.step}/${r.rank}/${r.data_rank}`).sort();
        const expected = Array.from({ length: STEPS }, (_, i) => [`${i + 1}/0/0`, `${i + 1}/1/1`])
          .flat()
          .sort();
        expect(seen).toEqual(expected);
        expect(reads.every((r) => r.micro_batches > 0 && r.loss_tokens >= 0)).toBe(true);
        if (transport === 'filesystem') {
          for (let step = 1; step <= STEPS; step++)
            expect((await readdir(join(outputDir, 'rollouts', `step_${step}`))).sort()).toEqual(['rank_0.bin', 'rank_1.bin']);
          expect(reads.every((r) => r.source.endsWith(`rollouts/step_${r.step}/rank_${r.data_rank}.bin`))).toBe(true);
        } else {
          expect(reads.every((r) => r.source.includes(`data_rank|${r.data_rank}|`))).toBe(true);
        }
        // The flat rollouts gave empty batches: logged with their cause, counted, rolled again.
        // (Versions 3, 9 and 14 each sample one rollout first, whatever else rolls again.)
        const zero = metrics.map((m) => Number(m['batch/empty_steps/zero_advantages']));
        expect(zero.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(3);
        expect(lines.some((l) => /empty batch after \d+ episodes \(zero-advantages\); not sent to the trainer/.test(l))).toBe(
          true,
        );
        expect(metrics.every((m) => Number(m['batch/samples']) > 0)).toBe(true);
        // Step numbers and weight versions stay in line: one metrics line per step, versions never go back.
        expect(metrics.map((m) => m.step)).toEqual(Array.from({ length: STEPS }, (_, i) => i + 1));
        const versions = metrics.map((m) => Number(m.policy_version));
        expect(versions.every((v, i) => v <= i && (i === 0 || v >= (versions[i - 1] as number)))).toBe(true);
        // The servers: every request named the served model; each update an absolute broadcast
        // directory (the double checks its safetensors from its own working directory), in order.
        expect(vllm.refusedModels).toEqual([]);
        expect(new Set(vllm.chat.map((c) => c.model))).toEqual(new Set([SERVED]));
        expect(vllm.violations).toEqual([]);
        const updates = vllm.admin
          .filter((c) => c.route === 'update_weights')
          .map((c) => (c.body as { weight_dir: string }).weight_dir);
        expect(updates.length).toBeGreaterThan(0);
        expect(updates.every((d) => d.startsWith(`${outputDir}/broadcasts/step_`))).toBe(true);
        const steps = updates.map((d) => Number(/step_(\d+)$/.exec(d)?.[1]));
        expect(steps).toEqual([...steps].sort((a, b) => a - b));
      },
      240_000,
    );
  }
});

describe('resume of an external-engine run (prime-rl trainer double resuming from its own checkpoint)', () => {
  const RESUME_STEPS = 12;

  /** Starts the trainer double's ranks under the torchrun double; resolves its exit code when it ends. */
  function startTrainer(dir: string, args: string[]) {
    const child = spawn(
      PYTHON,
      [join(DOUBLE, 'torchrun.py'), '--nproc-per-node', '2', join(DOUBLE, 'trainer.py'), '@', join(dir, 'trainer.toml'), ...args],
      { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    children.push(child);
    let stderr = '';
    child.stderr?.on('data', (chunk) => (stderr += chunk));
    const exit = new Promise<number | null>((res) => child.on('close', (code) => res(code)));
    return {
      exit,
      stderr: () => stderr,
      async stop() {
        child.kill('SIGTERM');
        await exit;
      },
    };
  }

  /** What `launch.sh --resume` removes before it starts the trainer: the wire's steps past `step` (emit-prime-rl.test.ts runs the script). */
  async function clearPast(outputDir: string, step: number) {
    for (const kind of ['rollouts', 'broadcasts'])
      for (const name of await readdir(join(outputDir, kind)).catch(() => [] as string[]))
        if (Number(/^step_(\d+)$/.exec(name)?.[1] ?? -1) > step) await rm(join(outputDir, kind, name), { recursive: true });
  }

  async function waitFor(path: string) {
    for (let i = 0; i < 600; i++) {
      if (
        await readFile(path).then(
          () => true,
          () => false,
        )
      )
        return;
      await new Promise((res) => setTimeout(res, 50));
    }
    throw new Error(`${path} did not appear`);
  }

  for (const transport of ['filesystem', 'zmq'] as const)
    runIt(
      `over ${transport}: stopped after step 6 with checkpoints at 4, a trainer at step 6 is refused naming both steps; resumed at 4 on both sides it runs to the end, every rank file read once`,
      async () => {
        const dir = await mkdtemp(join(tmpdir(), 'prime-rl-resume-'));
        dirs.push(dir);
        const outputDir = join(dir, 'wire');
        const out = join(dir, 'run');
        const model = await ScriptedModelServer.start({ vllmTokens: true, keepLog: false, script: script('kuhn', new Set(), 0) });
        const vllm = await VllmShapedServer.start({ upstream: model.url, servedModelName: SERVED });
        try {
          const config = runConfig({
            env: 'kuhn',
            transport:
              transport === 'zmq'
                ? { type: 'zmq', output_dir: outputDir, host: '127.0.0.1', port: await freePortPair() }
                : { type: 'filesystem', output_dir: outputDir },
            baseUrl: vllm.baseUrl,
            steps: RESUME_STEPS,
            checkpointEvery: 4,
          });
          const launch = primeRlLaunch({ config: parseRunConfig(camelKeys(config)), configPath: null, out });
          expect(launch['trainer.toml']).toMatch(/\[ckpt\]\ninterval = 4\n/);
          // A user's edit: the trainer checkpoints every 2 steps, so it holds step 6 where troupe holds 4.
          await writeFile(join(dir, 'trainer.toml'), launch['trainer.toml'].replace(/interval = 4/, 'interval = 2'));

          // First launch, stopped (as Ctrl-C does) after step 6: troupe's checkpoint is step 4.
          const first = startTrainer(dir, []);
          const stop = new AbortController();
          const interrupted = await train({
            config,
            out,
            baseDir: import.meta.dirname,
            signal: stop.signal,
            onStep: (m) => {
              if (m.step === 6) stop.abort();
            },
          }).catch((error: Error) => error);
          expect((interrupted as Error).name).toBe('TrainingInterruptedError');
          await first.stop();
          expect(await readdir(join(out, 'checkpoints'))).toContain('step-4');
          expect((await readdir(join(outputDir, 'checkpoints'))).sort()).toEqual(['step_2', 'step_4', 'step_6']);

          // A trainer resumed from its latest checkpoint (6) while troupe resumes from 4: refused, nothing written.
          await clearPast(outputDir, 4);
          const wrong = startTrainer(dir, ['--resume']);
          await waitFor(join(outputDir, 'broadcasts', 'step_6', 'STABLE'));
          const metricsBefore = await readFile(join(out, 'metrics.jsonl'), 'utf8');
          const refused = (await train({ config, out, resume: true, baseDir: import.meta.dirname }).catch(
            (error) => error,
          )) as Error & {
            orchestratorStep?: number;
            trainerStep?: number;
          };
          expect(refused.name).toBe('ResumeStepMismatchError');
          expect(refused.message).toMatch(/orchestrator is at step 4, the trainer at step 6/);
          expect(refused.message).toMatch(/--resume\.step 4/);
          expect([refused.orchestratorStep, refused.trainerStep]).toEqual([4, 6]);
          expect(await readFile(join(out, 'metrics.jsonl'), 'utf8')).toBe(metricsBefore);
          await wrong.stop();

          // Both sides at step 4 (launch.sh --resume: the wire cleared past 4, the trainer with --resume.step 4).
          await clearPast(outputDir, 4);
          const resumed = startTrainer(dir, ['--resume.step', '4']);
          const updatesBefore = vllm.admin.filter((c) => c.route === 'update_weights').length;
          const result = await train({ config, out, resume: true, baseDir: import.meta.dirname });
          expect(await resumed.exit, resumed.stderr()).toBe(0);
          expect(result.steps).toBe(RESUME_STEPS);
          const metrics = await readMetrics(out);
          expect(metrics.map((m) => m.step)).toEqual(Array.from({ length: RESUME_STEPS }, (_, i) => i + 1));
          // The resumed rollouts play at version 4 first: the servers were given broadcasts/step_4 before any other.
          const updates = vllm.admin
            .filter((c) => c.route === 'update_weights')
            .slice(updatesBefore)
            .map((c) => (c.body as { weight_dir: string }).weight_dir);
          expect(updates[0]).toBe(join(outputDir, 'broadcasts', 'step_4'));
          expect(Number(metrics[4]?.policy_version)).toBe(4);
          // Every rank file of steps 5..12 was read once by the resumed trainer, by the rank that owns it.
          const reads = (
            await Promise.all(
              [0, 1].map(async (rank) =>
                (await readFile(join(outputDir, 'trainer-double', `rank_${rank}.jsonl`), 'utf8')).trim().split('\n'),
              ),
            )
          )
            .flat()
            .map((line) => JSON.parse(line) as RankRead & { resumed_from: number | null });
          const resumedReads = reads.filter((r) => r.resumed_from === 4).map((r) => `${r.step}/${r.rank}/${r.data_rank}`);
          expect(resumedReads.sort()).toEqual(
            Array.from({ length: RESUME_STEPS - 4 }, (_, i) => [`${i + 5}/0/0`, `${i + 5}/1/1`])
              .flat()
              .sort(),
          );
          // The trainer wrote its final checkpoint, troupe its own of the last step.
          expect(await readdir(join(outputDir, 'checkpoints'))).toContain(`step_${RESUME_STEPS}`);
          expect(await readdir(join(out, 'checkpoints'))).toContain(`step-${RESUME_STEPS}`);
          expect(vllm.refusedModels).toEqual([]);
        } finally {
          await vllm.close();
          await model.close();
        }
      },
      240_000,
    );
});
