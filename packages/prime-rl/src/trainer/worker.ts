import { parentPort } from 'node:worker_threads';
import { TrainerError } from '@troupe/verifiers';
import { initTfBackend } from '../policy/backend.ts';
import type { StepOptions, TrainRow } from './config.ts';
import type { TrainerInit } from './handle.ts';
import { type PackedRows, unpackRows } from './packed-rows.ts';
import { Trainer } from './trainer.ts';

// Worker-thread side of `workerTrainer`: one Trainer, driven by messages {id, op, payload}.
let trainer: Trainer | null = null;
const port = parentPort;
if (!port) throw new TrainerError('trainer worker must run in a worker thread');

port.on('message', async (message: { id: number; op: string; payload: unknown }) => {
  try {
    let value: unknown;
    switch (message.op) {
      case 'init': {
        const backend = await initTfBackend();
        trainer = new Trainer(message.payload as TrainerInit);
        value = backend;
        break;
      }
      case 'train': {
        if (!trainer) throw new TrainerError('trainer worker: train before init');
        const { rows, packed, options } = message.payload as { rows?: TrainRow[]; packed?: PackedRows; options?: StepOptions };
        const metrics = trainer.trainStep(packed ? unpackRows(packed) : (rows ?? []), options);
        value = { metrics, weights: trainer.getWeights() };
        break;
      }
      case 'weights':
        value = trainer?.getWeights();
        break;
      case 'optimizer':
        value = trainer?.optimizerState();
        break;
      default:
        throw new TrainerError(`trainer worker: unknown op ${message.op}`);
    }
    port.postMessage({ id: message.id, ok: true, value });
  } catch (error) {
    port.postMessage({ id: message.id, ok: false, error: (error as Error)?.stack ?? String(error) });
  }
});
