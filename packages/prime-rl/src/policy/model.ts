import * as tf from '@tensorflow/tfjs';
import { initWeights, LAYER_NORM_EPS, type NamedWeight, outputMask, type PolicyConfig, weightShapes } from './config.ts';

/**
 * A dense layer `x·W + b` (x: [N, in]) with an explicit gradient: dX = dY·Wᵀ, dW = Xᵀ·dY,
 * db = Σ dY. On the wasm backend this is ≈2.8× faster than tfjs's own matMul gradient.
 */
export const dense = tf.customGrad((x, w, b, save) => {
  const xx = x as tf.Tensor2D;
  const ww = w as tf.Tensor2D;
  (save as tf.GradSaveFunc)([xx, ww]);
  return {
    value: tf.add(tf.matMul(xx, ww), b as tf.Tensor1D),
    gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
      const [sx, sw] = saved as [tf.Tensor2D, tf.Tensor2D];
      const g = dy as tf.Tensor2D;
      return [tf.matMul(g, tf.transpose(sw)), tf.matMul(tf.transpose(sx), g), tf.sum(g, 0)];
    },
  };
}) as (x: tf.Tensor2D, w: tf.Tensor2D, b: tf.Tensor1D) => tf.Tensor2D;

function layerNorm(x: tf.Tensor2D, g: tf.Tensor1D, b: tf.Tensor1D): tf.Tensor2D {
  const { mean, variance } = tf.moments(x, -1, true);
  return tf.add(tf.mul(tf.div(tf.sub(x, mean), tf.sqrt(tf.add(variance, LAYER_NORM_EPS))), g), b);
}

/**
 * The policy: a small decoder-only transformer (pre-LayerNorm blocks, learned positions,
 * ReLU MLP, causal self-attention) whose weights live in tfjs variables. Embedding is
 * `oneHot(tokens)·E` because `gather` has no gradient on the wasm backend.
 */
export class PolicyModel {
  readonly config: PolicyConfig;
  readonly variables: tf.Variable[];
  private readonly byName: Map<string, tf.Variable>;
  private readonly mask: tf.Tensor1D;
  private readonly causal: tf.Tensor2D;
  /** Compute repeated rows once in {@link forward} (default true; false runs every row, for comparisons). */
  shareRows = true;
  /** Distinct rows the last {@link forward} ran over when it shared repeated rows, else null. */
  lastDistinctRows: number | null = null;

  constructor(options: { config: PolicyConfig; weights?: NamedWeight[] }) {
    this.config = options.config;
    const weights = options.weights ?? initWeights(options.config);
    const expected = weightShapes(options.config);
    if (weights.length !== expected.length) throw new TypeError(`expected ${expected.length} weights, got ${weights.length}`);
    this.variables = expected.map(({ name, shape }, i) => {
      const w = weights[i] as NamedWeight;
      if (w.name !== name || w.shape.join() !== shape.join())
        throw new TypeError(`weight ${i}: expected ${name} ${shape}, got ${w.name} ${w.shape}`);
      return tf.variable(tf.tensor(w.data, shape, 'float32'), true, `${name}_${Math.random().toString(36).slice(2)}`);
    });
    this.byName = new Map(expected.map(({ name }, i) => [name, this.variables[i] as tf.Variable]));
    this.mask = tf.keep(tf.tensor1d(outputMask(options.config)));
    const t = options.config.contextLength;
    const causal = new Float32Array(t * t);
    for (let i = 0; i < t; i++) for (let j = i + 1; j < t; j++) causal[i * t + j] = -1e9;
    this.causal = tf.keep(tf.tensor2d(causal, [t, t]));
  }

  private w(name: string): tf.Variable {
    const v = this.byName.get(name);
    if (!v) throw new Error(`no weight ${name}`);
    return v;
  }

  /**
   * Logits [B, T, V] for int32 tokens [B, T] (T ≤ contextLength). Call inside tf.tidy or a gradient function.
   *
   * Rows that repeat an earlier row exactly are computed once: when the batch holds few distinct
   * rows (self-play over a small game: a 576-hand Kuhn batch has ≈30 distinct sequences among
   * 1,152) the transformer runs over the distinct rows only and a 0/1 selection matmul copies
   * their logits to every row (its gradient sums the copies' gradients). The logits are the
   * same values; only the order in which the weight gradients are summed changes. It applies
   * when the selection costs less than the rows it saves (never when every row is distinct).
   */
  forward(tokens: tf.Tensor2D): tf.Tensor3D {
    const shared = this.distinctRows(tokens);
    this.lastDistinctRows = shared?.count ?? null;
    if (!shared) return this.forwardRows(tokens);
    const [batch, time] = tokens.shape;
    const v = this.config.vocabSize;
    const distinct = shared.count;
    const logits = this.forwardRows(tf.tensor2d(shared.tokens, [distinct, time], 'int32'));
    const select = tf.tensor2d(shared.select, [batch, distinct]);
    return tf.reshape(tf.matMul(select, tf.reshape(logits, [distinct, time * v])), [batch, time, v]);
  }

  /** The distinct rows of `tokens` and the [B, distinct] one-hot selection, when sharing them pays; else null. */
  private distinctRows(tokens: tf.Tensor2D): { count: number; tokens: Int32Array; select: Float32Array } | null {
    const [batch, time] = tokens.shape;
    if (!this.shareRows || batch < 4) return null;
    const data = tokens.dataSync() as Int32Array;
    const index = new Map<string, number>();
    const of = new Int32Array(batch);
    const firsts: number[] = [];
    for (let b = 0; b < batch; b++) {
      const key = data.subarray(b * time, (b + 1) * time).join(',');
      let u = index.get(key);
      if (u === undefined) {
        u = firsts.length;
        index.set(key, u);
        firsts.push(b);
      }
      of[b] = u;
    }
    const count = firsts.length;
    const { dModel: d, vocabSize: v, ffnMult, layers } = this.config;
    // Multiply-adds per row: the transformer's (embedding, blocks, attention, head) against the selection's.
    const perRow = time * (2 * v * d + layers * (4 * d * d + 2 * d * d * ffnMult + 2 * time * d));
    if (count === batch || batch * count * time * v >= (batch - count) * perRow) return null;
    const distinct = new Int32Array(count * time);
    firsts.forEach((b, u) => {
      distinct.set(data.subarray(b * time, (b + 1) * time), u * time);
    });
    const select = new Float32Array(batch * count);
    for (let b = 0; b < batch; b++) select[b * count + (of[b] as number)] = 1;
    return { count, tokens: distinct, select };
  }

  private forwardRows(tokens: tf.Tensor2D): tf.Tensor3D {
    const [batch, time] = tokens.shape;
    const { dModel: d, heads, vocabSize: v } = this.config;
    const dh = d / heads;
    if (time > this.config.contextLength)
      throw new RangeError(`sequence of ${time} tokens exceeds the context ${this.config.contextLength}`);
    const flat = tf.oneHot(tf.reshape(tokens, [-1]) as tf.Tensor1D, v).toFloat() as tf.Tensor2D;
    let x: tf.Tensor2D = tf.matMul(flat, this.w('tok_emb') as tf.Tensor2D);
    const pos = tf.slice(this.w('pos_emb'), [0, 0], [time, d]);
    x = tf.reshape(tf.add(tf.reshape(x, [batch, time, d]), pos), [batch * time, d]) as tf.Tensor2D;
    const causal = tf.slice(this.causal, [0, 0], [time, time]);
    const split = (m: tf.Tensor2D) => tf.transpose(tf.reshape(m, [batch, time, heads, dh]), [0, 2, 1, 3]) as tf.Tensor4D;
    for (let l = 0; l < this.config.layers; l++) {
      const h = layerNorm(x, this.w(`l${l}.ln1.g`) as tf.Tensor1D, this.w(`l${l}.ln1.b`) as tf.Tensor1D);
      const qkv = dense(h, this.w(`l${l}.qkv.w`) as tf.Tensor2D, this.w(`l${l}.qkv.b`) as tf.Tensor1D);
      const [q, k, vv] = tf.split(qkv, 3, 1) as [tf.Tensor2D, tf.Tensor2D, tf.Tensor2D];
      const scores = tf.add(tf.mul(tf.matMul(split(q), split(k), false, true), 1 / Math.sqrt(dh)), causal);
      const att = tf.matMul(tf.softmax(scores), split(vv));
      const merged = tf.reshape(tf.transpose(att, [0, 2, 1, 3]), [batch * time, d]) as tf.Tensor2D;
      x = tf.add<tf.Tensor2D>(x, dense(merged, this.w(`l${l}.proj.w`) as tf.Tensor2D, this.w(`l${l}.proj.b`) as tf.Tensor1D));
      const h2 = layerNorm(x, this.w(`l${l}.ln2.g`) as tf.Tensor1D, this.w(`l${l}.ln2.b`) as tf.Tensor1D);
      const f = tf.relu(dense(h2, this.w(`l${l}.fc1.w`) as tf.Tensor2D, this.w(`l${l}.fc1.b`) as tf.Tensor1D));
      x = tf.add<tf.Tensor2D>(x, dense(f, this.w(`l${l}.fc2.w`) as tf.Tensor2D, this.w(`l${l}.fc2.b`) as tf.Tensor1D));
    }
    const hf = layerNorm(x, this.w('lnf.g') as tf.Tensor1D, this.w('lnf.b') as tf.Tensor1D);
    const logits = tf.add(dense(hf, this.w('head.w') as tf.Tensor2D, this.w('head.b') as tf.Tensor1D), this.mask);
    return tf.reshape(logits, [batch, time, v]);
  }

  /** Copies of the current weights (for export, checkpoints and the ONNX graph). */
  getWeights(): NamedWeight[] {
    return weightShapes(this.config).map(({ name, shape }, i) => ({
      name,
      shape,
      data: new Float32Array((this.variables[i] as tf.Variable).dataSync() as Float32Array),
    }));
  }

  setWeights(weights: NamedWeight[]): void {
    weights.forEach((w, i) => {
      const v = this.variables[i];
      if (!v || w.data.length !== v.size) throw new TypeError(`weight ${w.name}: size mismatch`);
      v.assign(tf.tensor(w.data, v.shape, 'float32'));
    });
  }

  get parameterCount(): number {
    return this.variables.reduce((n, v) => n + v.size, 0);
  }

  dispose(): void {
    for (const v of this.variables) v.dispose();
    this.mask.dispose();
    this.causal.dispose();
  }
}
