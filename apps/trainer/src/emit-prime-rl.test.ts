import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { parse } from 'smol-toml';
import { describe, expect, it } from 'vitest';
import { emitPrimeRl, PRIME_RL_COMMIT, primeRlLaunch } from './emit-prime-rl.ts';
import { camelKeys, parseRunConfig, RunConfigError, readRunConfigFile } from './run-config.ts';

// The keys and types of prime-rl's config classes at the commit docs/scale-out.md names, read from
// its source by tooling/prime-rl-double/gen_upstream_config.py.
interface Field {
  type: string;
  classes: string[];
  default?: unknown;
}
interface Fixture {
  commit: string;
  roots: { trainer: string; inference: string };
  classes: Record<string, { fields: Record<string, Field> }>;
}
const fixturePath = resolve(import.meta.dirname, '../../../tooling/prime-rl-double/upstream-config.json');
const EXTERNAL = resolve(import.meta.dirname, '../configs/prime-rl-external.toml');

/** Whether a TOML scalar fits one arm of a Python annotation (int, float, str, Path, bool, Literal[…]). */
function fits(value: unknown, annotation: string): boolean {
  return annotation.split('|').some((arm) => {
    const type = arm.trim();
    const literal = /^Literal\[(.*)\]$/.exec(type);
    if (literal) return (literal[1] as string).split(',').some((option) => option.trim().replace(/^['"]|['"]$/g, '') === value);
    if (type === 'int') return Number.isInteger(value);
    if (type === 'float') return typeof value === 'number';
    if (type === 'str' || type === 'Path') return typeof value === 'string';
    if (type === 'bool') return typeof value === 'boolean';
    return false;
  });
}

/** Every key of `table` is a field of `cls` at the fixture's commit, and every scalar fits its annotation. */
function checkTable(fixture: Fixture, table: Record<string, unknown>, cls: string, path = ''): string[] {
  const problems: string[] = [];
  const fields = fixture.classes[cls]?.fields ?? {};
  for (const [key, value] of Object.entries(table)) {
    const field = fields[key];
    if (!field) {
      problems.push(`${path}${key}: not a field of ${cls}`);
      continue;
    }
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
      const type = (value as { type?: unknown }).type;
      const chosen =
        field.classes.length === 1
          ? field.classes[0]
          : field.classes.find((c) => fixture.classes[c]?.fields.type?.default === type);
      if (!chosen) problems.push(`${path}${key}: no class of ${field.type} for type ${String(type)}`);
      else problems.push(...checkTable(fixture, value as Record<string, unknown>, chosen, `${path}${key}.`));
    } else if (!fits(value, field.type)) {
      problems.push(`${path}${key}: ${JSON.stringify(value)} is not ${field.type}`);
    }
  }
  return problems;
}

async function externalConfig(sets: (config: Record<string, unknown>) => void = () => {}) {
  const raw = await readRunConfigFile(EXTERNAL);
  sets(raw);
  return parseRunConfig(camelKeys(raw));
}

describe('--emit-prime-rl', () => {
  it('writes trainer and inference configs whose every key and type exists in prime-rl at the named commit', async () => {
    const fixture = JSON.parse(await readFile(fixturePath, 'utf8')) as Fixture;
    expect(fixture.commit).toBe(PRIME_RL_COMMIT);
    const launch = primeRlLaunch({ config: await externalConfig(), configPath: EXTERNAL, out: 'runs/kuhn-llm' });
    const trainer = parse(launch['trainer.toml']) as Record<string, unknown>;
    const inference = parse(launch['inference.toml']) as Record<string, unknown>;
    expect(checkTable(fixture, trainer, fixture.roots.trainer)).toEqual([]);
    expect(checkTable(fixture, inference, fixture.roots.inference)).toEqual([]);
    // The checker refuses what prime-rl refuses (pydantic forbids extra keys; types are checked).
    expect(checkTable(fixture, { model: { seq_length: 2048 } }, fixture.roots.trainer)).toEqual([
      'model.seq_length: not a field of trainer.ModelConfig',
    ]);
    expect(checkTable(fixture, { max_steps: '200' }, fixture.roots.trainer)).toEqual(['max_steps: "200" is not int | None']);

    // What must agree with troupe: the output dir (absolute), the served name, seq_len, transports.
    expect(isAbsolute(trainer.output_dir as string)).toBe(true);
    expect(trainer.output_dir).toBe(resolve('outputs/kuhn'));
    expect(inference.output_dir).toBe(trainer.output_dir);
    expect(trainer).toMatchObject({
      max_steps: 200,
      model: { name: 'Qwen/Qwen3-0.6B', seq_len: 2048, cp: 1 },
      rollout_transport: { type: 'filesystem' },
      weight_broadcast: { type: 'filesystem' },
    });
    expect(inference).toMatchObject({
      server: { port: 8000 },
      vllm: { model: 'Qwen/Qwen3-0.6B' },
      weight_broadcast: { type: 'filesystem' },
    });
    // Two data ranks, cp 1: torchrun starts two trainer processes.
    expect(launch['launch.sh']).toContain(
      'uv run torchrun --nproc-per-node 2 -m prime_rl.trainer.rl.train @ "$here/trainer.toml"',
    );
    expect(launch['launch.sh']).toContain('uv run inference @ "$here/inference.toml"');
    expect(launch['launch.sh']).toContain(`out='${resolve('runs/kuhn-llm')}'`);
    expect(launch['launch.sh']).toContain(
      `(cd '${resolve('.')}' && \${TROUPE:-npx --no-install troupe} train --config '${EXTERNAL}' --out "$out" "\${troupe_args[@]}")`,
    );
    // The trainer checkpoints the steps the orchestrator does (prime-rl wants one interval on both sides).
    expect(trainer.ckpt).toEqual({ interval: 25 });
  });

  it('writes one trainer.toml and inference.toml per external policy, each with its own output_dir and served model', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'emit-policies-'));
    try {
      const config = await externalConfig((raw) => {
        raw.policies = {
          solver: {
            engine: 'external',
            transport: { type: 'filesystem', output_dir: join(dir, 'solver-wire') },
            inference: { base_urls: ['http://127.0.0.1:8100/v1'], model: 'solver-model' },
          },
        };
      });
      const written = await emitPrimeRl({ config, configPath: EXTERNAL, out: join(dir, 'run'), dir: join(dir, 'emit') });
      expect(written.map((p) => p.slice(dir.length + 1)).sort()).toEqual([
        'emit/main/inference.toml',
        'emit/main/trainer.toml',
        'emit/solver/inference.toml',
        'emit/solver/trainer.toml',
      ]);
      const fixture = JSON.parse(await readFile(fixturePath, 'utf8')) as Fixture;
      const trainer = parse(await readFile(join(dir, 'emit', 'solver', 'trainer.toml'), 'utf8')) as Record<string, unknown>;
      const inference = parse(await readFile(join(dir, 'emit', 'solver', 'inference.toml'), 'utf8')) as Record<string, unknown>;
      expect(checkTable(fixture, trainer, fixture.roots.trainer)).toEqual([]);
      expect(checkTable(fixture, inference, fixture.roots.inference)).toEqual([]);
      expect(trainer).toMatchObject({ output_dir: join(dir, 'solver-wire'), model: { name: 'solver-model' } });
      expect(inference).toMatchObject({
        output_dir: join(dir, 'solver-wire'),
        server: { port: 8100 },
        vllm: { model: 'solver-model' },
      });
      const main = parse(await readFile(join(dir, 'emit', 'main', 'trainer.toml'), 'utf8')) as Record<string, unknown>;
      expect(main.output_dir).toBe(resolve('outputs/kuhn'));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("launch.sh --resume clears the wire past troupe's checkpoint step and resumes both sides at that step", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'emit-launch-'));
    try {
      const out = join(dir, 'run');
      const outputDir = join(dir, 'wire');
      const bin = join(dir, 'bin');
      const calls = join(dir, 'calls.log');
      const config = await externalConfig((raw) => {
        (raw.transport as Record<string, unknown>).output_dir = outputDir;
      });
      const launch = primeRlLaunch({ config, configPath: EXTERNAL, out, projectDir: dir });
      await writeFile(join(dir, 'launch.sh'), launch['launch.sh'], { mode: 0o755 });
      for (const name of ['trainer.toml', 'inference.toml'] as const) await writeFile(join(dir, name), launch[name]);
      // uv and npx stand-ins record their arguments and the directory they ran in.
      await mkdir(bin);
      for (const name of ['uv', 'npx'])
        await writeFile(join(bin, name), `#!/bin/sh\necho "${name} $(pwd) $*" >> '${calls}'\n`, { mode: 0o755 });
      await mkdir(join(out, 'checkpoints', 'step-4'), { recursive: true });
      await symlink('checkpoints/step-4', join(out, 'checkpoint'));
      for (const step of [3, 4, 5, 6]) {
        await mkdir(join(outputDir, 'rollouts', `step_${step}`), { recursive: true });
        await mkdir(join(outputDir, 'broadcasts', `step_${step}`), { recursive: true });
      }
      // A link past the step is not followed nor removed.
      await mkdir(join(dir, 'elsewhere'));
      await symlink(join(dir, 'elsewhere'), join(outputDir, 'broadcasts', 'step_9'));
      const env = { ...process.env, PATH: `${bin}:${process.env.PATH}` };
      const run = spawnSync('bash', [join(dir, 'launch.sh'), '--resume'], { cwd: dir, env, encoding: 'utf8' });
      expect(run.status, run.stderr).toBe(0);
      expect((await readdir(join(outputDir, 'rollouts'))).sort()).toEqual(['step_3', 'step_4']);
      expect((await readdir(join(outputDir, 'broadcasts'))).sort()).toEqual(['step_3', 'step_4', 'step_9']);
      const log = await readFile(calls, 'utf8');
      expect(log).toContain(`-m prime_rl.trainer.rl.train @ ${dir}/trainer.toml --resume.step 4`);
      expect(log).toContain(`npx ${dir} --no-install troupe train --config ${EXTERNAL} --out ${out} --resume`);
      // No checkpoint to resume: refused before anything runs.
      await rm(join(out, 'checkpoint'));
      const refused = spawnSync('bash', [join(dir, 'launch.sh'), '--resume'], { cwd: dir, env, encoding: 'utf8' });
      expect(refused.status).toBe(2);
      expect(refused.stderr).toMatch(/names no checkpoint of troupe/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('starts data ranks × cp trainer processes, with cp as the padding, and ZMQ where the run sends on ZMQ', async () => {
    const config = await externalConfig((raw) => {
      raw.transport = {
        type: 'zmq',
        output_dir: '/data/kuhn',
        host: '10.0.0.5',
        port: 6000,
        data_world_size: 2,
        pad_to_multiple_of: 2,
      };
    });
    const launch = primeRlLaunch({ config, configPath: null, out: '/runs/x' });
    const trainer = parse(launch['trainer.toml']) as Record<string, unknown>;
    expect(trainer).toMatchObject({ model: { cp: 2 }, rollout_transport: { type: 'zmq', host: '10.0.0.5', port: 6000 } });
    expect(launch['launch.sh']).toContain('--nproc-per-node 4 ');
  });

  it('refuses a run prime-rl cannot serve, naming the field', async () => {
    const embedded = await externalConfig((raw) => {
      (raw.policy as Record<string, unknown>).engine = 'embedded';
    });
    expect(() => primeRlLaunch({ config: embedded, configPath: null, out: 'x' })).toThrow(/^policy\.engine: /);
    const ahead = await externalConfig((raw) => {
      raw.max_async = 2;
    });
    expect(() => primeRlLaunch({ config: ahead, configPath: null, out: 'x' })).toThrow(RunConfigError);
    expect(() => primeRlLaunch({ config: ahead, configPath: null, out: 'x' })).toThrow(/^max_async: 2 .*step_\{N-2\}/);
  });
});
