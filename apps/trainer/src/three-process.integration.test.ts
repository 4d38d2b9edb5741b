import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { readBroadcast, readRollouts, readRunModel } from '@troupe/prime-rl/transport';
import { afterAll, describe, expect, it } from 'vitest';
import { readMetrics } from './run.ts';

// The three processes of docs/scale-out.md on loopback: serve-trainer (prime-rl's trainer's
// place), serve-inference (vLLM's place) and `train` with [transport] + [inference].
const cli = resolve(import.meta.dirname, 'cli.ts');
const appDir = resolve(import.meta.dirname, '..');
const config = resolve(appDir, 'configs', 'kuhn-three-process.toml');
const checker = resolve(appDir, '..', '..', 'tooling', 'wire-check', 'check_rollouts.py');
const PYTHON = '/usr/bin/python3';
const pythonSkip = !existsSync(PYTHON)
  ? `${PYTHON} is missing`
  : spawnSync(PYTHON, ['-c', 'import msgpack'], { stdio: 'ignore' }).status !== 0
    ? `${PYTHON} lacks msgpack (apt-get install -y python3-msgpack)`
    : null;

const dirs: string[] = [];
const children: ChildProcess[] = [];
afterAll(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

function start(args: string[]) {
  const child = spawn(process.execPath, ['--conditions=@troupe/source', '--import', 'tsx', cli, ...args], {
    cwd: appDir,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d) => (stdout += d));
  child.stderr?.on('data', (d) => (stderr += d));
  const exited = new Promise<number | null>((res) => child.on('close', (code) => res(code)));
  return { child, exited, out: () => stdout, err: () => stderr };
}

async function line(proc: ReturnType<typeof start>, pattern: RegExp): Promise<RegExpExecArray> {
  for (;;) {
    const match = pattern.exec(proc.out());
    if (match) return match;
    if (proc.child.exitCode !== null) throw new Error(`exited ${proc.child.exitCode} before ${pattern}: ${proc.err()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('three processes on prime-rl wire (orchestrator + serve-trainer + serve-inference, Kuhn poker)', () => {
  // The size matters: at 16 groups × 40 steps Kuhn learns on some sampling seeds and not on others
  // in-process too (seeds 1 and 3 of the in-process run stayed at NashConv ≈ 0.65), which is
  // why this test once failed; at 72 groups (the default) × 60 steps every seed tried fell from
  // ≈ 0.66 to 0.27–0.35 in-process and over the wire alike. The wire trainer alone (transport
  // filesystem, embedded inference) reproduces the in-process metrics exactly.
  it('trains: NashConv falls; rollouts are prime-rl rank files, weights come back as STABLE broadcasts and reach the server', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'three-process-'));
    dirs.push(dir);
    const outputDir = join(dir, 'wire');
    const steps = 60;
    const trainer = start(['serve-trainer', '--output-dir', outputDir, '--no-worker-thread']);
    const inference = start(['serve-inference', '--checkpoint', join(outputDir, 'broadcasts', 'step_0'), '--port', '0']);
    const url = (await line(inference, /listening (\S+)/))[1] as string;
    const orchestrator = start([
      'train',
      '--config',
      config,
      '--out',
      join(dir, 'run'),
      '--set',
      `transport.output_dir=${outputDir}`,
      '--set',
      `inference.base_urls=${JSON.stringify([url])}`,
      '--set',
      `max_steps=${steps}`,
      '--set',
      'checkpoint_every=0',
      '--set',
      'trainer.worker_thread=false',
      // Each step's samples as JSONL beside the rank files: the Python check matches the two.
      '--set',
      'transport.export_samples=true',
    ]);
    const code = await orchestrator.exited;
    expect(code, orchestrator.err()).toBe(0);
    // The trainer stops by itself after the run's last step, as prime-rl's does.
    expect(await trainer.exited, trainer.err()).toBe(0);

    const metrics = await readMetrics(join(dir, 'run'));
    expect(metrics.map((m) => m.step)).toEqual(Array.from({ length: steps }, (_, i) => i + 1));
    const nashConv = metrics.map((m) => m['eval/kuhn-poker/nash_conv'] as number);
    // Learns: from the initial policy's ≈0.66 to ≈0.3.
    expect(Math.min(...nashConv.slice(-5))).toBeLessThan((nashConv[0] as number) - 0.15);
    for (const m of metrics) {
      expect(typeof m['trainer/loss']).toBe('number');
      // Rollout m is sampled by version m − 2 (maxAsync 1), served by the inference process.
      expect(m.policy_version).toBe(Math.max(0, (m.step as number) - 2));
    }
    expect(orchestrator.err()).toContain("trainer process over prime-rl's wire");

    // Steps are 1-indexed rank files; broadcasts are this run's, the newest ones kept.
    const model = await readRunModel({ outputDir });
    const rolloutSteps = (await readdir(join(outputDir, 'rollouts'))).sort((a, b) => a.localeCompare(b, 'en', { numeric: true }));
    expect(rolloutSteps).toEqual(Array.from({ length: steps }, (_, i) => `step_${i + 1}`));
    const first = await readRollouts({ outputDir, step: 1, rank: 0 });
    expect(first.flatMap((b) => b.envNames).every((name) => name === 'kuhn-poker' || name === '')).toBe(true);
    const last = await readBroadcast({ outputDir, step: steps });
    expect(last.state.runId).toBe(model?.runId);
    expect(existsSync(join(outputDir, 'broadcasts', `step_${steps}`, 'STABLE'))).toBe(true);
    // The inference server took the weights the orchestrator pushed (the version before the last).
    const live = (await (await fetch(`${url.replace(/\/v1$/, '')}/liveness`)).json()) as { version: number };
    expect(live.version).toBe(steps - 2);

    if (pythonSkip) console.warn(`three-process: Python wire check skipped, ${pythonSkip}`);
    else {
      const check = spawnSync(PYTHON, [checker, outputDir, '--seq-len', '2048'], { encoding: 'utf8' });
      expect(check.status, check.stdout + check.stderr).toBe(0);
      expect(check.stdout).toMatch(new RegExp(`ok: steps=${steps} .* exports_checked=${steps}\n`));
    }
    inference.child.kill('SIGTERM');
    expect(await inference.exited).toBe(0);
  }, 900_000);
});
