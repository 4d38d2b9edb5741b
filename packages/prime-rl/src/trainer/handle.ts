import { Worker } from 'node:worker_threads';
import { TrainerError } from '@troupe/verifiers';
import { initTfBackend } from '../policy/backend.ts';
import type { NamedWeight, PolicyConfig } from '../policy/config.ts';
import type { StepOptions, TrainerConfigInput, TrainMetrics, TrainRow } from './config.ts';
import type { OptimizerState } from './optimizer-state.ts';
import { packedBuffers, packRows } from './packed-rows.ts';
import { Trainer } from './trainer.ts';

/**
 * What a trainer starts from (`localTrainer` / `workerTrainer`): the policy shape, and optionally its
 * weights (else a fresh init from `policy.seed`), trainer settings and optimizer state (to resume).
 */
export interface TrainerInit {
  policy: PolicyConfig;
  weights?: NamedWeight[];
  trainer?: TrainerConfigInput;
  optimizer?: OptimizerState;
}

/** A trainer behind an async interface: in this thread, or in a worker thread (one core trains while the other infers). */
export interface TrainerHandle {
  readonly backend: string;
  /** One optimizer step; `lr`, `refKlTau` and `beta1` override the configured values (schedules). */
  train(rows: readonly TrainRow[], options?: StepOptions): Promise<{ metrics: TrainMetrics; weights: NamedWeight[] }>;
  weights(): Promise<NamedWeight[]>;
  optimizerState(): Promise<OptimizerState>;
  close(): Promise<void>;
}

/** The trainer in this thread (tests, and when worker threads cannot load TypeScript). */
export async function localTrainer(init: TrainerInit): Promise<TrainerHandle> {
  const backend = await initTfBackend();
  const trainer = new Trainer(init);
  return {
    backend,
    async train(rows, options) {
      const metrics = trainer.trainStep(rows, options);
      return { metrics, weights: trainer.getWeights() };
    },
    async weights() {
      return trainer.getWeights();
    },
    async optimizerState() {
      return trainer.optimizerState();
    },
    async close() {
      trainer.dispose();
    },
  };
}

type Reply = { id: number; ok: true; value: unknown } | { id: number; ok: false; error: string };

/**
 * The trainer in a worker thread (`worker.ts`). The worker inherits this process's exec
 * arguments, so under `tsx` it loads TypeScript the same way.
 */
export async function workerTrainer(init: TrainerInit): Promise<TrainerHandle> {
  // From sources (tsx, vitest) the bootstrap registers the TypeScript loader inside the worker
  // thread; built, the worker is plain JavaScript beside this module.
  const entry = import.meta.url.endsWith('.ts') ? './worker-bootstrap.mjs' : './worker.js';
  const worker = new Worker(new URL(entry, import.meta.url));
  let next = 0;
  const waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: unknown) => void }>();
  worker.on('message', (reply: Reply) => {
    const w = waiting.get(reply.id);
    if (!w) return;
    waiting.delete(reply.id);
    if (reply.ok) w.resolve(reply.value);
    else w.reject(new TrainerError(`trainer worker: ${reply.error}`));
  });
  worker.on('error', (error) => {
    for (const w of waiting.values()) w.reject(error);
    waiting.clear();
  });
  const call = <T>(op: string, payload?: unknown, transfer?: ArrayBuffer[]): Promise<T> =>
    new Promise((resolve, reject) => {
      const id = next++;
      waiting.set(id, { resolve: resolve as (v: unknown) => void, reject });
      worker.postMessage({ id, op, payload }, transfer);
    });
  const backend = await call<string>('init', init);
  return {
    backend,
    train(rows, options) {
      // The rows as typed arrays, transferred (see `PackedRows`); a batch that cannot be packed as is.
      const packed = packRows(rows);
      return packed ? call('train', { packed, options }, packedBuffers(packed)) : call('train', { rows, options });
    },
    weights: () => call('weights'),
    optimizerState: () => call('optimizer'),
    async close() {
      await worker.terminate();
    },
  };
}
