import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { troupe } from '../../test/support/troupe-process.ts';
import { inShard, parseShard } from '../eval/shard.ts';
import { ScriptedModelServer } from '../testing/scripted-model-server.ts';

const root = resolve(import.meta.dirname, '../../../..');
const _cli = join(root, 'packages/verifiers/src/cli/main.ts');

const VOLATILE = new Set(['id', 'startedAt', 'endedAt', 'timestamp', 'durationMs', 'timing', 'wallSeconds']);

/** The run's content with ids, clocks and durations removed. */
function normalize(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(normalize);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value)
        .filter(([key]) => !VOLATILE.has(key))
        .map(([key, v]) => [key, normalize(v)]),
    );
  }
  return value;
}

function readRun(dir: string) {
  const episodes = readFileSync(join(dir, 'traces.jsonl'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { task: { key: string }; group: { index: number } });
  const key = (e: { task: { key: string }; group: { index: number } }) =>
    `${e.task.key}#${String(e.group.index).padStart(4, '0')}`;
  return {
    order: episodes.map(key),
    // Order-normalized: a single process appends episodes as they finish.
    episodes: normalize([...episodes].sort((a, b) => key(a).localeCompare(key(b)))),
    summary: normalize(JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8'))),
    config: JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')),
  };
}

const onlyRun = (outputs: string) => join(outputs, readdirSync(outputs)[0] as string);

describe('troupe eval --shard i/n and troupe merge', () => {
  let server: ScriptedModelServer;
  beforeAll(async () => {
    // Deterministic in the request alone: right on multiples of 3, one off otherwise.
    server = await ScriptedModelServer.start({
      vllmTokens: true,
      script: (request) => {
        const expression = String(request.messages.at(-1)?.content).match(/What is (.*)\?/)?.[1] ?? '0';
        const value = Function(`return (${expression})`)() as number;
        return `The answer is ${value % 3 === 0 ? value : value + 1}`;
      },
    });
  });
  afterAll(() => server.close());

  const evalArgs = (outputs: string) => [
    'eval',
    '-m',
    'm',
    '-b',
    server.baseUrl,
    '-n',
    '5',
    '-r',
    '3',
    '-c',
    '4',
    '--harness',
    'null',
    '--allow-failures',
    '-o',
    outputs,
  ];

  it('two shards merged equal the single-process run: traces (order-normalized) and summary', async () => {
    const single = mkdtempSync(join(tmpdir(), 'troupe-single-'));
    const shard1 = mkdtempSync(join(tmpdir(), 'troupe-shard1-'));
    const shard2 = mkdtempSync(join(tmpdir(), 'troupe-shard2-'));
    const results = await Promise.all([
      troupe(evalArgs(single)),
      troupe([...evalArgs(shard1), '--shard', '1/2']),
      troupe([...evalArgs(shard2), '--shard', '2/2']),
    ]);
    for (const result of results) expect(result.code, result.stderr).toBe(0);
    const first = readRun(onlyRun(shard1));
    const second = readRun(onlyRun(shard2));
    expect(first.order.length).toBe(8); // items 0, 2, …, 14 of 15
    expect(second.order.length).toBe(7);
    expect(new Set([...first.order, ...second.order]).size).toBe(15);

    const merged = join(mkdtempSync(join(tmpdir(), 'troupe-merged-')), 'run');
    // Shards in any order.
    const merge = await troupe(['merge', onlyRun(shard2), onlyRun(shard1), '--out', merged]);
    expect(merge.stderr).toBe('');
    expect(merge.code).toBe(0);
    expect(merge.stdout).toMatch(/merged 2 shards/);
    const want = readRun(onlyRun(single));
    const got = readRun(merged);
    expect(got.episodes).toEqual(want.episodes);
    expect(got.summary).toEqual(want.summary);
    expect({ ...got.config, outputs: null }).toEqual({ ...want.config, outputs: null });
    // The merged file is in the single-process item order: task by task, rollout by rollout.
    expect(got.order).toEqual([...got.order].sort());
    expect((want.summary as { rewardMean: number }).rewardMean).toBeGreaterThan(0);
    expect((want.summary as { rewardMean: number }).rewardMean).toBeLessThan(1);
    expect(existsSync(join(merged, 'logs', 'shard-1.log'))).toBe(true);

    // A missing shard, a shard twice, and an occupied --out are refused by name.
    const lonely = await troupe(['merge', onlyRun(shard1), '--out', join(merged, '..', 'other')]);
    expect(lonely.code).toBe(2);
    expect(lonely.stderr).toMatch(/shard 2\/2 missing/);
    const twice = await troupe(['merge', onlyRun(shard1), onlyRun(shard1), '--out', join(merged, '..', 'other')]);
    expect(twice.stderr).toMatch(/shard 1\/2 given twice/);
    const occupied = await troupe(['merge', onlyRun(shard1), onlyRun(shard2), '--out', merged]);
    expect(occupied.stderr).toMatch(/already holds a run/);
  });

  it('refuses a malformed --shard before any run directory exists', async () => {
    const outputs = mkdtempSync(join(tmpdir(), 'troupe-badshard-'));
    const result = await troupe([...evalArgs(outputs), '--shard', '3/2']);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/--shard must be i\/n with 1 ≤ i ≤ n/);
    expect(readdirSync(outputs)).toEqual([]);
  });

  it('a slice is round-robin over tasks × rollouts and every item is in exactly one shard', () => {
    expect(parseShard(' 2 / 3 ')).toEqual({ index: 2, count: 3 });
    for (const bad of ['0/2', '2', 'a/b', '1/0', '-1/2']) expect(() => parseShard(bad)).toThrow(/--shard/);
    for (const count of [1, 2, 3, 7]) {
      for (let position = 0; position < 50; position++) {
        const owners = Array.from({ length: count }, (_, i) => i + 1).filter((index) => inShard({ index, count }, position));
        expect(owners).toHaveLength(1);
      }
    }
  });
});
