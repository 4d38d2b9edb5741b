import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, SandboxError } from '../errors/troupe-error.ts';
import { CreationLimiter } from './creation-limiter.ts';

const fixture = join(import.meta.dirname, '__fixtures__/hold-shared-slots.ts');
const freshDir = () => mkdtempSync(join(tmpdir(), 'troupe-limits-test-'));

/** Runs the fixture in its own node process; resolves with its `acquire`/`release` times. */
function holder(dir: string, count: number, holdMs: number, maxConcurrent: number, createsPerSecond = 0) {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', fixture, dir, String(count), String(holdMs), String(maxConcurrent), String(createsPerSecond)],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  return new Promise<Array<{ kind: string; at: number }>>((resolve, reject) =>
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`holder exited ${code}: ${err}`));
      resolve(
        out
          .trim()
          .split('\n')
          .map((line) => {
            const [kind, at] = line.split(' ');
            return { kind: kind ?? '', at: Number(at) };
          }),
      );
    }),
  );
}

describe('shared creation limits (across processes)', () => {
  it('two limiters on one scope never hold more than maxConcurrent slots between them', async () => {
    const dir = freshDir();
    const a = new CreationLimiter({ shared: 'x', sharedLimitsDir: dir, maxConcurrent: 1 });
    const b = new CreationLimiter({ shared: 'x', sharedLimitsDir: dir, maxConcurrent: 1 });
    const first = await a.acquire();
    let second = false;
    const pending = b.acquire().then((slot) => {
      second = true;
      return slot;
    });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(second).toBe(false);
    first.release();
    (await pending).release();
    expect(second).toBe(true);
    expect(readdirSync(join(dir, 'x'))).toEqual([]);
  });

  it('two real processes with maxConcurrent = 1 never overlap', async () => {
    const dir = freshDir();
    const [one, two] = await Promise.all([holder(dir, 3, 80, 1), holder(dir, 3, 80, 1)]);
    const intervals: Array<[number, number]> = [];
    for (const events of [one ?? [], two ?? []]) {
      expect(events.map((e) => e.kind)).toEqual(['acquire', 'release', 'acquire', 'release', 'acquire', 'release']);
      for (let i = 0; i < events.length; i += 2) intervals.push([events[i]?.at ?? 0, events[i + 1]?.at ?? 0]);
    }
    intervals.sort((x, y) => x[0] - y[0]);
    for (let i = 1; i < intervals.length; i++) expect(intervals[i]?.[0]).toBeGreaterThanOrEqual(intervals[i - 1]?.[1] ?? 0);
  }, 60_000);

  it('two real processes share one creation rate', async () => {
    const dir = freshDir();
    const [one, two] = await Promise.all([holder(dir, 3, 0, 0, 5), holder(dir, 3, 0, 0, 5)]);
    const starts = [...(one ?? []), ...(two ?? [])]
      .filter((e) => e.kind === 'acquire')
      .map((e) => e.at)
      .sort((x, y) => x - y);
    expect(starts).toHaveLength(6);
    // 5 per second: starts are booked 200 ms apart; a process prints its start after the file
    // operations of booking it, which a loaded machine can delay by a few tens of ms.
    for (let i = 1; i < starts.length; i++) expect((starts[i] ?? 0) - (starts[i - 1] ?? 0)).toBeGreaterThanOrEqual(160);
    // Over the whole run the rate holds: 6 starts span at least 5 intervals.
    expect((starts.at(-1) ?? 0) - (starts[0] ?? 0)).toBeGreaterThanOrEqual(5 * 200 - 40);
  }, 60_000);

  it('reclaims a slot held by a process that is gone', async () => {
    const dir = freshDir();
    const dead = spawnSync(process.execPath, ['-e', 'console.log(process.pid)'], { encoding: 'utf8' });
    mkdirSync(join(dir, 'x'));
    writeFileSync(join(dir, 'x', 'slot-0'), `${dead.stdout.trim()} gone`, { flag: 'w' });
    const limiter = new CreationLimiter({ shared: 'x', sharedLimitsDir: dir, maxConcurrent: 1, acquireTimeoutMs: 2_000 });
    (await limiter.acquire()).release();
  });

  it('times out naming the lock directory when every slot stays held', async () => {
    const dir = freshDir();
    const holderLimiter = new CreationLimiter({ shared: 'x', sharedLimitsDir: dir, maxConcurrent: 1 });
    const held = await holderLimiter.acquire();
    const waiter = new CreationLimiter({ shared: 'x', sharedLimitsDir: dir, maxConcurrent: 1, acquireTimeoutMs: 150 });
    const error = await waiter.acquire().catch((e: unknown) => e);
    expect(SandboxError.isInstance(error)).toBe(true);
    expect(String((error as Error).message)).toContain(join(dir, 'x'));
    expect(waiter.active).toBe(0);
    held.release();
  });

  it('rejects a scope name that is not a plain word, naming the field', () => {
    expect(() => new CreationLimiter({ shared: '../etc' })).toThrow(ConfigError);
    expect(() => new CreationLimiter({ shared: '../etc' })).toThrow(/shared/);
  });

  it('scopes shared = true by the runtime id', async () => {
    const dir = freshDir();
    const limiter = new CreationLimiter({ shared: true, sharedLimitsDir: dir, maxConcurrent: 2 }, 'docker');
    const slot = await limiter.acquire();
    expect(readdirSync(join(dir, 'docker'))).toEqual(['slot-0']);
    slot.release();
  });
});
