import { mkdir, readdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { TimeoutError, WireError } from '@troupe/verifiers';
import { decodeMicroBatches, encodeMicroBatches, type WireMicroBatch } from './micro-batch.ts';

/** `<outputDir>/rollouts/step_<step>`: where the trainer reads the batch for step `step` (1-indexed). */
export function rolloutStepDir(options: { outputDir: string; step: number }): string {
  return join(options.outputDir, 'rollouts', `step_${options.step}`);
}

/** `<outputDir>/rollouts/step_<step>/rank_<rank>.bin`. */
export function rolloutRankPath(options: { outputDir: string; step: number; rank: number }): string {
  return join(rolloutStepDir(options), `rank_${options.rank}.bin`);
}

/** `<outputDir>/broadcasts/step_<step>`: weights after trainer step `step` (0 = initial weights). */
export function broadcastStepDir(options: { outputDir: string; step: number }): string {
  return join(options.outputDir, 'broadcasts', `step_${options.step}`);
}

function checkGrid(grid: readonly (readonly WireMicroBatch[])[], dataWorldSize: number): void {
  if (grid.length !== dataWorldSize) {
    throw new WireError(`rollouts: ${grid.length} rank lists for a data world size of ${dataWorldSize}`, { path: 'rollouts' });
  }
  for (let rank = 1; rank < grid.length; rank++) {
    if (grid[rank]!.length !== grid[0]!.length) {
      throw new WireError(`rollouts: rank ${rank} has ${grid[rank]!.length} micro batches, rank 0 has ${grid[0]!.length}`);
    }
  }
}

/**
 * prime-rl's filesystem rollout transport, sending side: for each rank writes
 * `rollouts/step_<N>/rank_<r>.bin.tmp` and renames it to `rank_<r>.bin`, so a polling trainer
 * never reads a partial file.
 */
export class FilesystemRolloutSender {
  readonly outputDir: string;
  readonly dataWorldSize: number;

  constructor(options: { outputDir: string; dataWorldSize: number }) {
    this.outputDir = options.outputDir;
    this.dataWorldSize = options.dataWorldSize;
  }

  /** Writes the batch of trainer step `step` (1-indexed); returns the rank file paths. */
  async send(options: { step: number; microBatches: readonly (readonly WireMicroBatch[])[] }): Promise<string[]> {
    checkGrid(options.microBatches, this.dataWorldSize);
    return this.sendPayloads({ step: options.step, payloads: options.microBatches.map((rank) => encodeMicroBatches(rank)) });
  }

  /** Writes already-encoded rank payloads (e.g. from `packAndEncode`), rank 0 first. */
  async sendPayloads(options: { step: number; payloads: readonly Uint8Array[] }): Promise<string[]> {
    if (options.payloads.length !== this.dataWorldSize) {
      throw new WireError(`rollouts: ${options.payloads.length} rank payloads for a data world size of ${this.dataWorldSize}`, {
        path: 'payloads',
      });
    }
    const dir = rolloutStepDir({ outputDir: this.outputDir, step: options.step });
    await mkdir(dir, { recursive: true });
    const paths: string[] = [];
    for (let rank = 0; rank < this.dataWorldSize; rank++) {
      const path = join(dir, `rank_${rank}.bin`);
      await writeFile(`${path}.tmp`, options.payloads[rank]!);
      await rename(`${path}.tmp`, path);
      paths.push(path);
    }
    return paths;
  }

  async close(): Promise<void> {}
}

/** Options of {@link readRollouts}. */
export interface ReadRolloutsOptions {
  outputDir: string;
  step: number;
  rank: number;
  /** Wait for the file up to this long (default: do not wait; a missing file throws). */
  timeoutMs?: number;
  /** Poll interval while waiting (default 50 ms). */
  pollMs?: number;
  signal?: AbortSignal;
}

/**
 * prime-rl's filesystem rollout transport, receiving side (what a trainer rank does): waits for
 * `rollouts/step_<N>/rank_<r>.bin`, then decodes it.
 */
export async function readRollouts(options: ReadRolloutsOptions): Promise<WireMicroBatch[]> {
  const path = rolloutRankPath(options);
  await waitForFile({ path, timeoutMs: options.timeoutMs ?? 0, pollMs: options.pollMs ?? 50, signal: options.signal });
  return decodeMicroBatches({ bytes: await readFile(path), source: path });
}

/** Waits until `path` exists; throws after `timeoutMs` (0 = check once). */
export async function waitForFile(options: {
  path: string;
  timeoutMs: number;
  pollMs?: number;
  signal?: AbortSignal | undefined;
}): Promise<void> {
  const deadline = Date.now() + options.timeoutMs;
  for (;;) {
    options.signal?.throwIfAborted();
    try {
      await stat(options.path);
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    if (Date.now() >= deadline) {
      throw new TimeoutError(`${options.path}: did not appear within ${options.timeoutMs} ms`);
    }
    await sleep(options.pollMs ?? 50, undefined, options.signal ? { signal: options.signal } : {});
  }
}

/** Steps `N` for which `broadcasts/step_<N>/STABLE` exists, ascending. */
export async function stableBroadcastSteps(options: { outputDir: string }): Promise<number[]> {
  let names: string[];
  try {
    names = await readdir(join(options.outputDir, 'broadcasts'));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  const steps: number[] = [];
  for (const name of names) {
    const match = /^step_(\d+)$/.exec(name);
    if (!match) continue;
    const step = Number(match[1]);
    try {
      await stat(join(options.outputDir, 'broadcasts', name, 'STABLE'));
      steps.push(step);
    } catch {}
  }
  return steps.sort((a, b) => a - b);
}
