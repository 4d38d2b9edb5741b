import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError } from '../errors/troupe-error.ts';

/** Shard `index` (1-based) of `count`: `troupe eval --shard 2/4`. */
export interface Shard {
  index: number;
  count: number;
}

/** What a shard's run directory records about its slice (`shard.json`), read by `troupe merge`. */
export interface ShardManifest {
  version: 1;
  index: number;
  count: number;
  env: string;
  /** The role whose traces define pass@k and the reward mean. */
  primaryRole: string | null;
  passThreshold: number | null;
  /** Every item of the whole eval, in the single-process order: `[taskKey, rollout]`. */
  items: [string, number][];
}

/** Parses `i/n` (1 ≤ i ≤ n); the error names the flag. */
export function parseShard(text: string): Shard {
  const match = /^\s*(\d+)\s*\/\s*(\d+)\s*$/.exec(text);
  const index = Number(match?.[1]);
  const count = Number(match?.[2]);
  if (!match || !Number.isSafeInteger(index) || !Number.isSafeInteger(count) || count < 1 || index < 1 || index > count) {
    throw new ConfigError(`--shard must be i/n with 1 ≤ i ≤ n (e.g. 1/4), got ${JSON.stringify(text)}`);
  }
  return { index, count };
}

/**
 * Whether item `position` of the eval (tasks × rollouts in order: task 0 rollouts 0…r−1, task 1 …)
 * belongs to the shard. Round-robin over items, so every shard gets a near-equal share and the
 * slice depends only on (position, count): the same command on any machine runs the same slice.
 */
export function inShard(shard: Shard | undefined, position: number): boolean {
  return shard === undefined || position % shard.count === shard.index - 1;
}

/** The shard a run uses: the one asked for, or (on resume) the one its `shard.json` records. */
export function resolveShard(options: { outDir: string; resume?: boolean; shard?: Shard }): Shard | undefined {
  const path = join(options.outDir, 'shard.json');
  if (!options.resume || !existsSync(path)) return options.shard;
  const saved = readShardManifest(options.outDir);
  if (options.shard && (options.shard.index !== saved.index || options.shard.count !== saved.count)) {
    throw new ConfigError(
      `--shard ${options.shard.index}/${options.shard.count}: the run is shard ${saved.index}/${saved.count}`,
    );
  }
  return { index: saved.index, count: saved.count };
}

/** Writes `shard.json` into a shard's run directory. */
export function writeShardManifest(outDir: string, manifest: Omit<ShardManifest, 'version'>): void {
  writeFileSync(join(outDir, 'shard.json'), `${JSON.stringify({ version: 1, ...manifest })}\n`);
}

/** Reads a run directory's `shard.json`; the error names the directory. */
export function readShardManifest(dir: string): ShardManifest {
  const path = join(dir, 'shard.json');
  if (!existsSync(path)) throw new ConfigError(`${dir} has no shard.json (was it run with troupe eval --shard i/n?)`);
  const value = JSON.parse(readFileSync(path, 'utf8')) as ShardManifest;
  if (value.version !== 1 || !Number.isInteger(value.index) || !Number.isInteger(value.count) || !Array.isArray(value.items)) {
    throw new ConfigError(`${path}: not a shard manifest (version 1)`);
  }
  return value;
}

/**
 * The eval runner's view of a shard: resolves it (`resolveShard`), records `shard.json` in the
 * run directory, and returns whether item `position` (tasks × rollouts in order) is in the slice.
 * Without a shard every item is.
 */
export function shardSlice(
  options: {
    outDir: string;
    resume?: boolean;
    shard?: Shard;
    env: { id: string; roles: readonly string[] };
    passThreshold?: number;
  },
  tasks: readonly { key: string }[],
  rollouts: number,
): (position: number) => boolean {
  const shard = resolveShard(options);
  if (!shard) return () => true;
  const items = tasks.flatMap((task) => Array.from({ length: rollouts }, (_, index): [string, number] => [task.key, index]));
  writeShardManifest(options.outDir, {
    ...shard,
    env: options.env.id,
    // As an unsharded run: the summary picks its top-level role itself (the one scored role, if any).
    primaryRole: null,
    passThreshold: options.passThreshold ?? null,
    items,
  });
  return (position) => inShard(shard, position);
}
