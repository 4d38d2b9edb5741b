import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ConfigError, type Episode } from '@troupe/verifiers';
import { afterAll, describe, expect, it } from 'vitest';
import { readMetrics, train } from './run.ts';
import { parseRunConfig, resolvedPolicies } from './run-config.ts';

const env = resolve(import.meta.dirname, '__fixtures__/two-sides-env.ts');
const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

/** A two-sides run whose seats play `west` and `east`, with `extra` merged over it. */
function twoPolicies(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    max_steps: 1,
    groups_per_step: 1,
    train: { source: [{ env, group_size: 2, roles: { left: { policy: 'west' }, right: { policy: 'east' } } }] },
    policies: { west: { d_model: 8, heads: 2 }, east: { d_model: 8, heads: 2, trainer: { lr: 0.5 } } },
    trainer: { worker_thread: false },
    ...extra,
  };
}

const pathOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (error) {
    expect(ConfigError.isInstance(error)).toBe(true);
    return [(error as ConfigError).path, (error as Error).message] as const;
  }
  throw new Error('no error');
};

describe('[policies.<name>] in a run config', () => {
  it('resolves each policy: its own [policy] keys, its trainer overrides over [trainer], main from [policy]', () => {
    const config = parseRunConfig(twoPolicies({ policy: { d_model: 16 }, trainer: { lr: 0.01, worker_thread: false } }));
    const policies = resolvedPolicies(config);
    expect([...policies.keys()]).toEqual(['main', 'west', 'east']);
    expect(policies.get('main')?.policy.dModel).toBe(16);
    expect(policies.get('west')?.trainer.lr).toBe(0.01);
    expect(policies.get('east')?.trainer.lr).toBe(0.5);
    expect(policies.get('east')?.trainer.workerThread).toBe(false);
    expect(policies.get('east')?.transport).toEqual({ type: 'in-process' });
    // [policies.main] is [policy].
    const named = parseRunConfig(twoPolicies({ policies: { main: { d_model: 24, trainer: { lr: 0.2 } }, west: {}, east: {} } }));
    expect(named.policy.dModel).toBe(24);
    expect(named.trainer.lr).toBe(0.2);
    expect(Object.keys(named.policies)).toEqual(['west', 'east']);
  });

  it('names the field of each problem: [policy] with [policies.main], an unknown policy, a bad name, a bad override', () => {
    expect(pathOf(() => parseRunConfig(twoPolicies({ policy: {}, policies: { main: {} } })))).toEqual([
      'policies.main',
      'policies.main: [policy] is [policies.main]; give one of them',
    ]);
    const unknown = twoPolicies({ policies: { west: {} } });
    expect(pathOf(() => parseRunConfig(unknown))[1]).toMatch(
      /^train\.source\[0\]\.roles\.right\.policy: no policy east \(policies: main, west; add \[policies\.east\]\)$/,
    );
    expect(pathOf(() => parseRunConfig(twoPolicies({ policies: { West: {}, west: {}, east: {} } })))[1]).toMatch(
      /^policies\.West: a policy name is/,
    );
    expect(pathOf(() => parseRunConfig(twoPolicies({ policies: { west: {}, east: { trainer: { lr: -1 } } } })))[1]).toMatch(
      /^policies\.east\.trainer\.lr: /,
    );
    expect(pathOf(() => parseRunConfig(twoPolicies({ policies: { west: {}, east: { dmodel: 3 } } })))[1]).toMatch(
      /^policies\.east: .*dmodel/,
    );
  });

  it('refuses a policy no role plays, and a second policy on a trainer process, before anything is written', async () => {
    const out = join(await mkdtemp(join(tmpdir(), 'troupe-policies-')), 'run');
    dirs.push(out);
    const unused = twoPolicies({ policies: { west: {}, east: {}, north: {} } });
    await expect(train({ config: unused, out })).rejects.toThrow(
      /^policies\.north: no role of a train source plays it \(bind one with policy = "north"\)$/,
    );
    const wired = twoPolicies({
      policies: { west: {}, east: { transport: { type: 'filesystem', output_dir: join(out, 'x') } } },
    });
    await expect(train({ config: wired, out })).rejects.toThrow(
      /^policies\.east: a run of several policies trains each with the embedded in-process engines/,
    );
  });

  it("plays an eval source on each role's own policy, and records each trace's policy and version for the viewer", async () => {
    const out = join(await mkdtemp(join(tmpdir(), 'troupe-policies-')), 'run');
    dirs.push(out);
    const config = twoPolicies({
      max_steps: 2,
      traces_every: 2,
      eval: {
        interval: 1,
        groups: 2,
        source: [{ env, name: 'held-out', group_size: 2, roles: { left: { policy: 'west' }, right: { policy: 'east' } } }],
      },
    });
    await train({ config, out });
    const metrics = await readMetrics(out);
    expect(metrics.map((m) => m['eval/held-out/episodes'])).toEqual([4, 4]);
    expect(typeof metrics[1]?.['eval/held-out/left/reward/mean']).toBe('number');
    const episodes = (await readFile(join(out, 'traces.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Episode);
    const seen = new Set(episodes.flatMap((e) => e.traces.map((t) => `${t.agent.name}:${t.agent.model}`)));
    expect(seen).toEqual(new Set(['left:west', 'right:east']));
    const versions = new Set(episodes.flatMap((e) => e.traces.flatMap((t) => t.calls.map((c) => c.policyVersion))));
    expect(versions).toEqual(new Set([0]));
  });
});
