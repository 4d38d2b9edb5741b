import { ConfigError } from '@troupe/verifiers';
import { Rng } from '@troupe/verifiers/random';
import { z } from 'zod';

/** Shape of the decoder-only transformer policy. */
export const PolicyConfigSchema = z
  .object({
    /** Token ids the embedding and output head know (the tokenizer's vocabulary size). */
    vocabSize: z.number().int().min(8),
    /** Maximum sequence length (prompt + completion). */
    contextLength: z.number().int().min(4).max(4096),
    /** Width of the residual stream (embedding size); a multiple of `heads`. */
    dModel: z.number().int().min(4),
    /** Transformer blocks. */
    layers: z.number().int().min(1),
    /** Attention heads per block. */
    heads: z.number().int().min(1),
    /** Hidden width of the MLP as a multiple of dModel. */
    ffnMult: z.number().int().min(1).default(4),
    /**
     * Token ids the output head may emit; every other id gets a −1e4 logit bias, in training and
     * inference alike (a restricted output vocabulary). Absent = the whole vocabulary.
     */
    outputTokens: z.array(z.number().int().nonnegative()).optional(),
    /** Standard deviation of the initial weight matrices (GPT's 0.02 by default). */
    initStd: z.number().positive().default(0.02),
    /** Seed of the weight initialisation. */
    seed: z.number().int().default(0),
  })
  .strict()
  .refine((c) => c.dModel % c.heads === 0, { message: 'dModel must be divisible by heads', path: ['heads'] });
/**
 * The policy's shape as parsed by {@link PolicyConfigSchema} (defaults applied: `ffnMult` 4,
 * `initStd` 0.02, `seed` 0); sizes in tokens and units.
 */
export type PolicyConfig = z.infer<typeof PolicyConfigSchema>;
/** What {@link PolicyConfigSchema} accepts before defaults (`ffnMult`, `initStd`, `seed` optional). */
export type PolicyConfigInput = z.input<typeof PolicyConfigSchema>;

/** One named weight as plain data (row-major). */
export interface NamedWeight {
  name: string;
  shape: number[];
  data: Float32Array;
}

/** LayerNorm epsilon, shared by the tfjs model and the ONNX export. */
export const LAYER_NORM_EPS = 1e-5;
/** Logit bias of tokens outside `outputTokens`. */
export const MASKED_LOGIT = -1e4;

/** Names and shapes of every weight, in a fixed order. */
export function weightShapes(config: PolicyConfig): { name: string; shape: number[] }[] {
  const { vocabSize: v, contextLength: t, dModel: d, ffnMult } = config;
  const f = d * ffnMult;
  const out = [
    { name: 'tok_emb', shape: [v, d] },
    { name: 'pos_emb', shape: [t, d] },
  ];
  for (let l = 0; l < config.layers; l++) {
    out.push(
      { name: `l${l}.ln1.g`, shape: [d] },
      { name: `l${l}.ln1.b`, shape: [d] },
      { name: `l${l}.qkv.w`, shape: [d, 3 * d] },
      { name: `l${l}.qkv.b`, shape: [3 * d] },
      { name: `l${l}.proj.w`, shape: [d, d] },
      { name: `l${l}.proj.b`, shape: [d] },
      { name: `l${l}.ln2.g`, shape: [d] },
      { name: `l${l}.ln2.b`, shape: [d] },
      { name: `l${l}.fc1.w`, shape: [d, f] },
      { name: `l${l}.fc1.b`, shape: [f] },
      { name: `l${l}.fc2.w`, shape: [f, d] },
      { name: `l${l}.fc2.b`, shape: [d] },
    );
  }
  out.push(
    { name: 'lnf.g', shape: [d] },
    { name: 'lnf.b', shape: [d] },
    { name: 'head.w', shape: [d, v] },
    { name: 'head.b', shape: [v] },
  );
  return out;
}

/** Initial weights: N(0, initStd) matrices (residual projections scaled by 1/√(2·layers)), zero biases, unit LayerNorm gains. */
export function initWeights(config: PolicyConfig): NamedWeight[] {
  const normal = gaussian(config.seed);
  return weightShapes(config).map(({ name, shape }) => {
    const size = shape.reduce((a, b) => a * b, 1);
    const data = new Float32Array(size);
    if (name.endsWith('.g')) data.fill(1);
    else if (shape.length === 2) {
      const std =
        name.endsWith('proj.w') || name.endsWith('fc2.w') ? config.initStd / Math.sqrt(2 * config.layers) : config.initStd;
      for (let i = 0; i < size; i++) data[i] = normal() * std;
    }
    return { name, shape, data };
  });
}

/** The constant output bias: 0 for allowed tokens, MASKED_LOGIT for the others. */
export function outputMask(config: PolicyConfig): Float32Array {
  const mask = new Float32Array(config.vocabSize);
  if (config.outputTokens) {
    mask.fill(MASKED_LOGIT);
    for (const id of config.outputTokens) {
      if (id >= config.vocabSize)
        throw new ConfigError(`outputTokens: id ${id} is outside the vocabulary`, { path: 'outputTokens' });
      mask[id] = 0;
    }
  }
  return mask;
}

function gaussian(seed: number): () => number {
  const rng = new Rng(seed);
  // In (0, 1): the half keeps log() finite.
  const uniform = () => (rng.nextUint32() + 0.5) / 4294967296;
  return () => Math.sqrt(-2 * Math.log(uniform())) * Math.cos(2 * Math.PI * uniform());
}
