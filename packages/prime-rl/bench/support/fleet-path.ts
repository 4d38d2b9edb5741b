/**
 * One small, deterministic pass through the path `pnpm bench:fleet` times: a group of the
 * multi-turn env's episodes against a {@link VllmFleet}, one episode at a time, scored by GRPO,
 * batched, turned into wire samples and sent over the filesystem transport. Its records (the
 * episodes with their traces, and every rank file's bytes) are what a performance change must
 * leave unchanged; `fleet-path.test.ts` holds them against a committed fixture.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Env, type Episode } from '@troupe/verifiers';
import { GroupScorer } from '../../src/algorithms/group-scorer.ts';
import { Grpo } from '../../src/algorithms/grpo.ts';
import { BatchBuilder } from '../../src/samples/batch-builder.ts';
import { InferencePool } from '../../src/transport/inference-pool.ts';
import { RolloutLink } from '../../src/transport/prime-rl-link.ts';
import { toWireSample } from '../../src/transport/wire-sample.ts';
import { fleetTaskset, fleetTurnsEnv } from './fleet-env.ts';
import { VllmFleet } from './vllm-fleet.ts';

/** Keys whose values differ from run to run: clocks and durations. */
const CLOCKS = /^(timing|timestamp|startedAt|endedAt|createdAt|durationMs|.*Ms)$/;
/** Ids made at random (UUIDs) and the servers' reply ids. */
const RANDOM_ID = /^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|chatcmpl-[0-9a-f]+)$/;

/** `value` with clocks and random ids replaced by a placeholder, so two runs compare byte for byte. */
export function stable(value: unknown): unknown {
  if (typeof value === 'string') return RANDOM_ID.test(value) ? '<id>' : value;
  if (Array.isArray(value)) return value.map(stable);
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, inner] of Object.entries(value)) out[key] = CLOCKS.test(key) ? `<${typeof inner}>` : stable(inner);
    return out;
  }
  return value;
}

/** What one pass records: the scored episodes (as `traces.jsonl` would hold them) and each rank file. */
export interface FleetPathRecord {
  episodes: unknown[];
  ranks: Record<string, string>;
}

/** Runs the pass (see the module header); `groups` groups of `groupSize` episodes, tasks 0, 1, …. */
export async function runFleetPath(options: { groups: number; groupSize: number }): Promise<FleetPathRecord> {
  const fleet = await VllmFleet.start({ servers: 2, latencyMs: 0, tokensPerSecond: 1e9, medianTokens: 24, replies: 16, seed: 7 });
  const outputDir = mkdtempSync(join(tmpdir(), 'troupe-fleet-path-'));
  const sampling = { temperature: 1, topP: 1, topK: -1, minP: 0 };
  try {
    const pool = new InferencePool({ baseUrls: fleet.baseUrls, model: 'policy', sampling });
    const env = await Env.create({
      definition: fleetTurnsEnv,
      config: { id: 'fleet-turns' },
      run: { model: 'policy', client: pool, sampling },
    });
    const taskset = fleetTaskset({ medianTokens: 24 });
    const scorer = new GroupScorer({ algorithm: new Grpo(), groupSize: options.groupSize });
    const builder = new BatchBuilder({ batchSize: options.groups * options.groupSize });
    const link = await RolloutLink.open({
      config: { type: 'filesystem', outputDir, dataWorldSize: 2, seqLen: 4096, padToMultipleOf: 8, exportSamples: false },
    });
    const episodes: Episode[] = [];
    let step = 0;
    for (let g = 0; g < options.groups; g++) {
      for (let i = 0; i < options.groupSize; i++) {
        const episode = await env.runEpisode({ task: taskset.at(g), group: { id: `fleet-${g}`, index: i } });
        episodes.push(episode);
        const group = await scorer.addEpisode(episode);
        if (!group) continue;
        for (const batch of builder.addEpisodes(group))
          await link.send({ step: ++step, samples: batch.samples.map((s) => toWireSample(s, { temperatures: 1 })) });
      }
    }
    await link.close();
    const ranks: Record<string, string> = {};
    for (const dir of readdirSync(join(outputDir, 'rollouts')).sort())
      for (const file of readdirSync(join(outputDir, 'rollouts', dir)).sort())
        ranks[`${dir}/${file}`] = readFileSync(join(outputDir, 'rollouts', dir, file)).toString('base64');
    return { episodes: episodes.map((episode) => stable(episode.toJSON())), ranks };
  } finally {
    await fleet.close();
    rmSync(outputDir, { recursive: true, force: true });
  }
}
