import { copyFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { ConfigError } from '../errors/troupe-error.ts';
import type { Episode } from '../trace/episode.ts';
import { writeFileAtomic } from './eval-runner.ts';
import { readShardManifest, type ShardManifest } from './shard.ts';
import { type EvalSummary, summarize } from './summary.ts';
import { readEpisodes, rewriteEpisodes } from './traces-file.ts';

interface ShardRun {
  dir: string;
  manifest: ShardManifest;
  config: unknown;
  episodes: Episode[];
  wallSeconds: number;
}

function readJson(path: string): unknown {
  try {
    return JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new ConfigError(`cannot read ${path}: ${(error as Error).message}`);
  }
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** A config without its `outputs` root: shards on different machines write to different roots. */
function withoutOutputs(config: unknown): unknown {
  if (!config || typeof config !== 'object') return config;
  const { outputs: _outputs, ...rest } = config as Record<string, unknown>;
  return rest;
}

/** A shard's run directory: its manifest, config, episodes (none torn) and wall seconds. */
function readShardRun(dir: string): ShardRun {
  const manifest = readShardManifest(dir);
  if (!existsSync(join(dir, 'config.json'))) throw new ConfigError(`${dir} has no config.json (is it a run directory?)`);
  const { episodes, badLines } = readEpisodes(join(dir, 'traces.jsonl'));
  if (badLines.length) {
    throw new ConfigError(`${dir}/traces.jsonl: line ${badLines[0]?.line} is torn or invalid (resume the shard first)`);
  }
  const summary = existsSync(join(dir, 'summary.json')) ? (readJson(join(dir, 'summary.json')) as EvalSummary) : undefined;
  return { dir, manifest, config: readJson(join(dir, 'config.json')), episodes, wallSeconds: summary?.wallSeconds ?? 0 };
}

/**
 * The shards by index, checked to be every shard of one eval exactly once: the same count, config
 * (outputs aside), env and task list.
 */
function shardsByIndex(runs: ShardRun[]): Map<number, ShardRun> {
  const first = runs[0] as ShardRun;
  const count = first.manifest.count;
  const byIndex = new Map<number, ShardRun>();
  for (const run of runs) {
    if (run.manifest.count !== count) {
      throw new ConfigError(
        `${run.dir} is shard ${run.manifest.index}/${run.manifest.count}, but ${first.dir} is one of ${count}`,
      );
    }
    const twice = byIndex.get(run.manifest.index);
    if (twice) throw new ConfigError(`shard ${run.manifest.index}/${count} given twice: ${twice.dir} and ${run.dir}`);
    byIndex.set(run.manifest.index, run);
    if (!sameJson(withoutOutputs(run.config), withoutOutputs(first.config))) {
      throw new ConfigError(`${run.dir}/config.json differs from ${first.dir}/config.json: not shards of one eval`);
    }
    if (!sameJson(run.manifest.items, first.manifest.items) || run.manifest.env !== first.manifest.env) {
      throw new ConfigError(`${run.dir} ran another task list than ${first.dir}: not shards of one eval`);
    }
  }
  const missing = Array.from({ length: count }, (_, i) => i + 1).filter((i) => !byIndex.has(i));
  if (missing.length)
    throw new ConfigError(`shard${missing.length > 1 ? 's' : ''} ${missing.map((i) => `${i}/${count}`).join(', ')} missing`);
  return byIndex;
}

/**
 * Every item of the eval exactly once, from the shard that owns it, in the single-process order;
 * an episode in two shards, an item no shard finished, or an episode of no item is an error.
 */
function orderedEpisodes(runs: ShardRun[], byIndex: Map<number, ShardRun>): Episode[] {
  const first = runs[0] as ShardRun;
  const count = first.manifest.count;
  const found = new Map<string, Episode>();
  for (const run of runs) {
    for (const episode of run.episodes) {
      const key = JSON.stringify([episode.task.key, episode.group.index]);
      if (found.has(key)) {
        throw new ConfigError(`${run.dir}: episode of task ${episode.task.key} rollout ${episode.group.index} is in two shards`);
      }
      found.set(key, episode);
    }
  }
  const ordered: Episode[] = [];
  const unfinished = new Map<number, number>();
  first.manifest.items.forEach(([task, rollout], position) => {
    const episode = found.get(JSON.stringify([task, rollout]));
    found.delete(JSON.stringify([task, rollout]));
    if (episode) ordered.push(episode);
    else {
      const shard = (position % count) + 1;
      unfinished.set(shard, (unfinished.get(shard) ?? 0) + 1);
    }
  });
  if (unfinished.size) {
    const list = [...unfinished].map(([shard, n]) => `shard ${shard}/${count} (${byIndex.get(shard)?.dir}) lacks ${n}`);
    throw new ConfigError(`unfinished shards: ${list.join('; ')} episode(s) — run troupe eval --resume on them first`);
  }
  if (found.size) throw new ConfigError(`${found.size} episode(s) belong to no task of the eval`);
  return ordered;
}

/**
 * Merges shard runs into `outDir` and returns the merged summary. The merged traces and summary
 * are those of the same eval run in one process (episode ids, timestamps and wallSeconds aside).
 */
export function mergeRuns(options: { dirs: string[]; outDir: string }): EvalSummary {
  const { dirs, outDir } = options;
  if (dirs.length === 0) throw new ConfigError('troupe merge: name the shard run directories');
  const runs = dirs.map(readShardRun);
  const first = runs[0] as ShardRun;
  const byIndex = shardsByIndex(runs);
  const ordered = orderedEpisodes(runs, byIndex);

  if (existsSync(join(outDir, 'traces.jsonl'))) throw new ConfigError(`--out ${outDir} already holds a run`);
  mkdirSync(join(outDir, 'logs'), { recursive: true });
  rewriteEpisodes(join(outDir, 'traces.jsonl'), ordered);
  const mergedConfig = { ...(first.config as Record<string, unknown>), outputs: dirname(resolve(outDir)) };
  writeFileAtomic(join(outDir, 'config.json'), `${JSON.stringify(mergedConfig, null, 2)}\n`);
  const config = first.config as { model?: string; passThreshold?: number };
  const summary = summarize({
    episodes: ordered,
    env: first.manifest.env,
    model: String(config.model ?? ''),
    ...(first.manifest.primaryRole !== null ? { primaryRole: first.manifest.primaryRole } : {}),
    ...(first.manifest.passThreshold !== null ? { passThreshold: first.manifest.passThreshold } : {}),
    wallSeconds: Math.max(...runs.map((r) => r.wallSeconds)),
  });
  writeFileAtomic(join(outDir, 'summary.json'), `${JSON.stringify(summary, null, 2)}\n`);
  for (const [index, run] of byIndex) {
    const log = join(run.dir, 'logs', 'eval.log');
    if (existsSync(log)) copyFileSync(log, join(outDir, 'logs', `shard-${index}.log`));
  }
  return summary;
}
