import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import type { NamedWeight } from '../policy/config.ts';
import type { OptimizerState } from './trainer.ts';

/** Everything a run needs to resume exactly, besides the tensors. */
export const CheckpointMetaSchema = z.object({
  /** Always `troupe-checkpoint`. */
  kind: z.literal('troupe-checkpoint'),
  /** Format version. */
  version: z.literal(1),
  /** The training step the checkpoint was taken after. */
  step: z.number().int().nonnegative(),
  /** Policy and trainer configs, tokenizer, algorithm state, RNG state, loop state: JSON, owned by the caller. */
  state: z.record(z.string(), z.unknown()),
  /** Index of `tensors.bin`: one entry per float32 tensor, in file order. */
  tensors: z.array(
    z.object({
      /** `weights` (the policy), `m` / `v` (AdamW first / second moments), `inference` (an older policy version). */
      group: z.enum(['weights', 'm', 'v', 'inference']),
      /** Policy version of an `inference` tensor (weights an in-flight rollout was dispatched with). */
      version: z.number().int().nonnegative().optional(),
      /** The weight's name (as in `NamedWeight`). */
      name: z.string(),
      /** The tensor's dimensions. */
      shape: z.array(z.number().int()),
      /** Where the tensor starts in `tensors.bin`, in float32 elements (not bytes). */
      offset: z.number().int(),
    }),
  ),
  /** AdamW's step count (for bias correction). */
  optimizerStep: z.number().int().nonnegative(),
});
/** The parsed `meta.json` of a checkpoint directory; see {@link CheckpointMetaSchema}. */
export type CheckpointMeta = z.infer<typeof CheckpointMetaSchema>;

/** A checkpoint in memory: what {@link saveCheckpoint} writes and {@link loadCheckpoint} returns. */
export interface Checkpoint {
  /** The training step it was taken after. */
  step: number;
  /** The caller's JSON state (configs, tokenizer, algorithm and RNG state, loop state). */
  state: Record<string, unknown>;
  /** The policy's weights. */
  weights: NamedWeight[];
  /** AdamW's step and moments. */
  optimizer: OptimizerState;
  /** Older policy versions still served to rollouts in flight (the orchestrator's `maxAsync`), oldest first. */
  inference?: { version: number; weights: NamedWeight[] }[];
}

/**
 * Writes a checkpoint directory: `meta.json` (step, caller state, tensor index) and
 * `tensors.bin` (float32 weights, then AdamW first and second moments). Written to a temporary
 * name and renamed, so a crash never leaves a half checkpoint.
 */
export async function saveCheckpoint(options: { dir: string } & Checkpoint): Promise<void> {
  const tmp = `${options.dir}.tmp-${process.pid}`;
  await mkdir(tmp, { recursive: true });
  const tensors: CheckpointMeta['tensors'] = [];
  const parts: Float32Array[] = [];
  let offset = 0;
  const add = (group: 'weights' | 'm' | 'v' | 'inference', list: NamedWeight[], version?: number) => {
    for (const w of list) {
      tensors.push({ group, name: w.name, shape: w.shape, offset, ...(version !== undefined ? { version } : {}) });
      parts.push(w.data);
      offset += w.data.length;
    }
  };
  add('weights', options.weights);
  add('m', options.optimizer.m);
  add('v', options.optimizer.v);
  for (const { version, weights } of options.inference ?? []) add('inference', weights, version);
  const all = new Float32Array(offset);
  let at = 0;
  for (const p of parts) {
    all.set(p, at);
    at += p.length;
  }
  const meta: CheckpointMeta = {
    kind: 'troupe-checkpoint',
    version: 1,
    step: options.step,
    state: options.state,
    tensors,
    optimizerStep: options.optimizer.step,
  };
  await writeFile(join(tmp, 'tensors.bin'), new Uint8Array(all.buffer));
  await writeFile(join(tmp, 'meta.json'), `${JSON.stringify(meta)}\n`);
  await import('node:fs/promises').then((fs) => fs.rm(options.dir, { recursive: true, force: true }));
  await rename(tmp, options.dir);
}

/**
 * Reads a checkpoint directory written by {@link saveCheckpoint}. Rejects when `meta.json` or
 * `tensors.bin` is missing (ENOENT) or `meta.json` is not a troupe checkpoint of version 1 (a
 * `ZodError` naming the field).
 */
export async function loadCheckpoint(options: { dir: string }): Promise<Checkpoint> {
  const meta = CheckpointMetaSchema.parse(JSON.parse(await readFile(join(options.dir, 'meta.json'), 'utf8')));
  const bytes = await readFile(join(options.dir, 'tensors.bin'));
  const all = new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
  const groups: Record<'weights' | 'm' | 'v', NamedWeight[]> = { weights: [], m: [], v: [] };
  const inference = new Map<number, NamedWeight[]>();
  for (const t of meta.tensors) {
    const size = t.shape.reduce((a, b) => a * b, 1);
    const weight = { name: t.name, shape: t.shape, data: all.slice(t.offset, t.offset + size) };
    if (t.group === 'inference') {
      const version = t.version ?? 0;
      if (!inference.has(version)) inference.set(version, []);
      inference.get(version)?.push(weight);
    } else groups[t.group].push(weight);
  }
  return {
    step: meta.step,
    state: meta.state,
    weights: groups.weights,
    optimizer: { step: meta.optimizerStep, m: groups.m, v: groups.v },
    ...(inference.size ? { inference: [...inference].map(([version, weights]) => ({ version, weights })) } : {}),
  };
}
