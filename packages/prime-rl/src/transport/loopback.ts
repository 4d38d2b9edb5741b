import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { NamedWeight } from '../policy/config.ts';
import { type Checkpoint, loadCheckpoint, saveCheckpoint } from '../trainer/checkpoint.ts';
import type { TrainRow } from '../trainer/config.ts';
import type { OptimizerState } from '../trainer/optimizer-state.ts';
import { broadcastStepDir } from './filesystem.ts';
import type { WireMicroBatch } from './micro-batch.ts';

/**
 * `<outputDir>/model.json`: what prime-rl's three processes agree on by naming one Hugging Face
 * model, for the embedded policy: the tokenizer, the policy shape and the trainer settings, with
 * the id of the run that wrote it. The orchestrator writes it; the loopback trainer reads it.
 */
export interface RunModel {
  /** Changes with every orchestrator start; a trainer serving another id starts over. */
  runId: string;
  /** `WordTokenizer.toJSON()`. */
  tokenizer: unknown;
  /** `PolicyConfig`. */
  policy: unknown;
  /** `TrainerConfigInput` of the embedded trainer. */
  trainer: Record<string, unknown>;
  /** `TrainerSchedule` (lr and reference-KL schedules over `maxSteps`). */
  schedule: Record<string, unknown>;
}

/**
 * Name of the file in a run's output directory that describes its model (policy and trainer configs,
 * schedule) to a trainer process; see {@link writeRunModel}.
 */
export const RUN_MODEL_FILE = 'model.json';

/** Writes `<outputDir>/model.json` (tmp + rename). */
export async function writeRunModel(options: { outputDir: string; model: RunModel }): Promise<void> {
  await mkdir(options.outputDir, { recursive: true });
  const path = join(options.outputDir, RUN_MODEL_FILE);
  await writeFile(`${path}.tmp`, `${JSON.stringify(options.model)}\n`);
  await rename(`${path}.tmp`, path);
}

/** Reads `<outputDir>/model.json`; null when absent. */
export async function readRunModel(options: { outputDir: string }): Promise<RunModel | null> {
  try {
    return JSON.parse(await readFile(join(options.outputDir, RUN_MODEL_FILE), 'utf8')) as RunModel;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}

/** Removes `rollouts/` and `broadcasts/` of a previous run under `outputDir` (the orchestrator does it at start). */
export async function clearRunDir(options: { outputDir: string }): Promise<void> {
  await rm(join(options.outputDir, 'rollouts'), { recursive: true, force: true });
  await rm(join(options.outputDir, 'broadcasts'), { recursive: true, force: true });
  await rm(join(options.outputDir, 'samples'), { recursive: true, force: true });
}

/**
 * Writes `broadcasts/step_<step>/` in the embedded engines' weight format (a troupe checkpoint:
 * `meta.json` + `tensors.bin`, with `state.run` = tokenizer and policy so an inference server can
 * load it alone), then touches `STABLE`, as prime-rl's trainer does after each step.
 */
export async function writeBroadcast(options: {
  outputDir: string;
  step: number;
  weights: NamedWeight[];
  optimizer: OptimizerState;
  state: Record<string, unknown>;
}): Promise<string> {
  const dir = broadcastStepDir(options);
  await mkdir(join(options.outputDir, 'broadcasts'), { recursive: true });
  await saveCheckpoint({
    dir,
    step: options.step,
    state: options.state,
    weights: options.weights,
    optimizer: options.optimizer,
  });
  await writeFile(join(dir, 'STABLE'), '');
  return dir;
}

/** Reads a broadcast written by {@link writeBroadcast}. */
export function readBroadcast(options: { outputDir: string; step: number } | { dir: string }): Promise<Checkpoint> {
  return loadCheckpoint({ dir: 'dir' in options ? options.dir : broadcastStepDir(options) });
}

/** Removes broadcasts older than `keepFrom` (prime-rl's trainer keeps only the recent ones too). */
export async function pruneBroadcasts(options: { outputDir: string; keepFrom: number }): Promise<void> {
  let names: string[];
  try {
    names = await readdir(join(options.outputDir, 'broadcasts'));
  } catch {
    return;
  }
  for (const name of names) {
    const match = /^step_(\d+)$/.exec(name);
    if (match && Number(match[1]) < options.keepFrom)
      await rm(join(options.outputDir, 'broadcasts', name), { recursive: true, force: true });
  }
}

/** One sample recovered from packed micro batches, with its env and temperature. */
export interface UnpackedSample extends TrainRow {
  envName: string;
  temperatures: number[];
}

/**
 * What a trainer rank does with its `list[MicroBatch]`, for a trainer that trains per sample: cut
 * every micro batch at its `sequence_lengths`, drop the padding after the last sample (env name
 * `""`), and keep the samples that have a trainable token or a ce / ref_kl weight (zero-loss
 * fillers and fully masked samples add nothing to prime-rl's loss either), with their weight streams.
 */
export function unpackMicroBatches(batches: readonly WireMicroBatch[]): UnpackedSample[] {
  const out: UnpackedSample[] = [];
  for (const batch of batches) {
    let start = 0;
    for (const length of batch.sequenceLengths) {
      let end = start + length;
      while (end > start && batch.envNames[end - 1] === '') end--;
      const mask = batch.lossMask.slice(start, end);
      const ce = batch.ceWeights?.slice(start, end);
      const refKl = batch.refKlWeights?.slice(start, end);
      const supervised = ce?.some((w) => w !== 0) || refKl?.some((w) => w !== 0);
      if (mask.some(Boolean) || supervised) {
        const sample: UnpackedSample = {
          tokenIds: batch.inputIds.slice(start, end),
          mask,
          logprobs: batch.inferenceLogprobs.slice(start, end),
          advantages: batch.advantages.slice(start, end),
          envName: batch.envNames[start] ?? '',
          temperatures: batch.temperatures.slice(start, end),
        };
        // The loss routing streams ride along (prime-rl's trainer reads them per token).
        if (batch.rlWeights) sample.rlWeights = batch.rlWeights.slice(start, end);
        if (ce) sample.ceWeights = ce;
        if (refKl) sample.refKlWeights = refKl;
        if (batch.refLogprobs) sample.refLogprobs = batch.refLogprobs.slice(start, end);
        out.push(sample);
      }
      start += length;
    }
  }
  return out;
}
