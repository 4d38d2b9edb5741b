import * as tf from '@tensorflow/tfjs';
import { ConfigError, TrainerError } from '@troupe/verifiers';
import { fnv1a, distinctRows as groupRows } from '../inference/distinct-rows.ts';
import { initWeights, LAYER_NORM_EPS, type NamedWeight, outputMask, type PolicyConfig, weightShapes } from './config.ts';
import { K, run } from './kernels.ts';

/**
 * x [A, R, S] → [A, S, R] (the last two axes swapped) in two cache-friendly passes: blocks of
 * k rows transposed in place ([A·R/k, k, S] → [A·R/k, S, k]), then the blocks moved as runs of k
 * ([A, R/k, S, k] → [A, S, R/k, k]). The wasm backend's one-pass transpose writes with a stride of
 * R elements and slows down 10–20× when that stride aliases in the cache (R a multiple of 512,
 * e.g. 1,024 channels or 12,288 rows, with S ≥ 48).
 */
function swapLast(x: tf.Tensor3D): tf.Tensor3D {
  const [a, r, s] = x.shape;
  // Only a stride with a large power-of-two factor aliases; the one-pass transpose is faster otherwise.
  const k = r % 512 === 0 ? 32 : 1;
  if (k === 1) return K.transpose(x, [0, 2, 1]);
  const blocks = K.transpose(K.reshape(x, [a * (r / k), k, s]), [0, 2, 1]);
  return K.reshape(K.transpose(K.reshape(blocks, [a, r / k, s, k]), [0, 2, 1, 3]), [a, s, r]) as tf.Tensor3D;
}

/** x [N, w] → xᵀ [w, N] by {@link swapLast}. */
function transpose2d(x: tf.Tensor2D): tf.Tensor2D {
  const [n, w] = x.shape;
  return K.reshape(swapLast(K.reshape(x, [1, n, w]) as tf.Tensor3D), [w, n]) as tf.Tensor2D;
}

/** x [A, B, C] → [C, B, A]: A moved last by {@link swapLast}, then whole rows of A moved. */
function reverseAxes(x: tf.Tensor3D): tf.Tensor3D {
  const [a, b, c] = x.shape;
  const moved = swapLast(K.reshape(x, [1, a, b * c]) as tf.Tensor3D);
  return K.transpose(K.reshape(moved, [b, c, a]), [1, 0, 2]);
}

/** tf.avgPool ('valid', stride 1) without its trailing float32 Cast (a copy and ≈15 µs of tfjs overhead). */
function avgPool(x: tf.Tensor4D, filterSize: [number, number]): tf.Tensor4D {
  return run<tf.Tensor4D>('AvgPool', { x }, { filterSize, strides: 1, pad: 'valid' });
}

/**
 * Σ over rows of x [N, w] → [w], as N × an average pool over the N rows: XNNPACK's pooling reads
 * x once, where the wasm backend's sum over axis 0 transposes first and a ones-row matMul packs x
 * as weights (each ≈10× slower). The result differs from a sequential sum by float rounding only.
 */
function columnSum(x: tf.Tensor2D): tf.Tensor1D {
  const [n, w] = x.shape;
  const mean = avgPool(K.reshape(x, [1, n, 1, w]) as tf.Tensor4D, [n, 1]);
  return K.mul(K.reshape(mean, [w]), n);
}

/**
 * Xᵀ·G for x [N, in], g [N, out] (a weight gradient: the sum over N rows) as a 2-D matMul: the
 * wasm backend packs the right operand as weights on every call (a fresh tensor each step), which
 * costs more with width, so the narrower of x and g goes right and the wider is transposed to the
 * left — when that is g the product comes out as (Gᵀ·X)ᵀ. The sum over rows runs in the same order
 * as a one-channel {@link bmm} (the same values), ≈1.3× faster at N ≈ 14k rows and 32 × 64–96.
 */
function weightGrad(x: tf.Tensor2D, g: tf.Tensor2D): tf.Tensor2D {
  if (g.shape[1] > x.shape[1]) return K.transpose(K.matMul(transpose2d(g), x)) as tf.Tensor2D;
  return K.matMul(transpose2d(x), g);
}

/**
 * `x op v` for x [N, w] and v [w] broadcast over the rows, computed as [N/k, k·w] `op` (v repeated
 * k times): the wasm backend's broadcasting binary ops pay per row, and rows of 32 floats cost
 * 2–3× rows of 768 (N ≈ 14k: 0.31 vs 0.13 ms an add, 2026-12). Every element is the same one
 * float operation, so the values are bit-identical. Small tensors keep the plain op.
 */
function rowwise(op: 'add' | 'mul', x: tf.Tensor2D, v: tf.Tensor1D): tf.Tensor2D {
  const [n, w] = x.shape;
  const fn = op === 'add' ? tf.add : tf.mul;
  let k = n * w >= 16384 ? Math.min(32, Math.floor(1024 / w)) : 1;
  while (k > 1 && n % k !== 0) k--;
  if (k === 1) return fn(x, v) as tf.Tensor2D;
  // v repeated on the JavaScript side: a concat or tile of k pieces costs ≈100 µs of tfjs overhead.
  const data = v.dataSync() as Float32Array;
  const repeated = new Float32Array(k * w);
  for (let i = 0; i < k; i++) repeated.set(data, i * w);
  return K.reshape(fn(K.reshape(x, [n / k, k * w]), tf.tensor1d(repeated)), [n, w]);
}

/** A differentiable piece of the model: its value and the tensors its gradient reads. */
interface Saved<T extends tf.Tensor = tf.Tensor2D> {
  value: T;
  saved: tf.Tensor[];
}

/** `x·W + b` (x: [N, in]); its gradient reads x and W. */
function denseValue(x: tf.Tensor2D, w: tf.Tensor2D, b: tf.Tensor1D): Saved {
  return { value: rowwise('add', K.matMul(x, w), b), saved: [x, w] };
}

/** dX = dY·Wᵀ, dW = Xᵀ·dY, db = Σ dY from {@link denseValue}'s saved [x, W]. */
function denseGrad(saved: tf.Tensor[], dy: tf.Tensor2D): [tf.Tensor2D, tf.Tensor2D, tf.Tensor1D] {
  const [x, w] = saved as [tf.Tensor2D, tf.Tensor2D];
  return [K.matMul(dy, K.transpose(w)), weightGrad(x, dy), columnSum(dy)];
}

/**
 * `act(x·W + b)` in one kernel (the wasm backend's fused matMul: XNNPACK's fully-connected
 * operator with the bias in its packed weights and ReLU as its output clamp), where `x·W` and a
 * {@link rowwise} add of b are two passes over the output. The bias starts each sum instead of
 * ending it: the same values up to float rounding.
 */
function fusedDense(x: tf.Tensor2D, w: tf.Tensor2D, b: tf.Tensor1D, activation: 'linear' | 'relu' = 'linear'): tf.Tensor2D {
  const [n, din] = x.shape;
  const out = w.shape[1];
  const attrs = { transposeA: false, transposeB: false, activation };
  const y = run('_FusedMatMul', { a: K.reshape(x, [1, n, din]), b: K.reshape(w, [1, din, out]), bias: b }, attrs);
  return K.reshape(y, [n, out]);
}

/** `relu(x·W + b)` ({@link fusedDense}); its gradient ({@link denseGrad} of dY·step(y)) reads x and `wBack` (W, or W centred over its rows). */
function denseReluValue(x: tf.Tensor2D, w: tf.Tensor2D, b: tf.Tensor1D, wBack = w): Saved {
  return { value: fusedDense(x, w, b, 'relu'), saved: [x, wBack] };
}

/**
 * A dense layer `x·W + b` (x: [N, in]) with an explicit gradient: dX = dY·Wᵀ, dW = Xᵀ·dY,
 * db = Σ dY. Every product runs on the wasm backend's XNNPACK paths (a 2-D matMul without
 * transpose flags, {@link weightGrad}, {@link columnSum}): ≈2.8× tfjs's own matMul gradient.
 */
export const dense = tf.customGrad((x, w, b, save) => {
  const { value, saved } = denseValue(x as tf.Tensor2D, w as tf.Tensor2D, b as tf.Tensor1D);
  (save as tf.GradSaveFunc)(saved);
  return { value, gradFunc: (dy: tf.Tensor, s: tf.Tensor[]) => denseGrad(s, dy as tf.Tensor2D) };
}) as (x: tf.Tensor2D, w: tf.Tensor2D, b: tf.Tensor1D) => tf.Tensor2D;

/** Rows of `x` [R, d] at `index` [N] (gatherND: the wasm backend's GatherV2 is ≈40× slower for whole rows). */
function gatherValue(x: tf.Tensor2D, index: tf.Tensor1D): tf.Tensor2D {
  return K.gatherND(x, K.reshape(index, [-1, 1])) as tf.Tensor2D;
}

/** The gradient of {@link gatherValue} for x of `rows` rows: each row's copies added back (scatterND sums duplicates). */
function gatherGrad(index: tf.Tensor1D, dy: tf.Tensor2D, rows: number): tf.Tensor2D {
  return K.scatterND(K.reshape(index, [-1, 1]), dy, [rows, dy.shape[1]]);
}

/**
 * Batched matrix product out[m, c, n] = Σ_k a[m, k, c] · b[k, c, n] for a: [M, K, C], b: [K, C, N],
 * run as a depthwise convolution (input [1, M, K, C], filter [1, K, C, N], channel multiplier N):
 * the wasm backend runs it through XNNPACK at 2-D matMul speed, where its batched matMul
 * (rank > 2) falls back to a scalar loop 10–40× slower. The sum over k runs in the same order.
 */
function bmm(a: tf.Tensor3D, b: tf.Tensor3D): tf.Tensor3D {
  const [m, k, c] = a.shape;
  const n = b.shape[2];
  const out = K.depthwiseConv2d(K.reshape(a, [1, m, k, c]) as tf.Tensor4D, K.reshape(b, [1, k, c, n]) as tf.Tensor4D);
  return K.reshape(out, [m, c, n]);
}

/**
 * {@link bmm} with the summed axis first: out[m, c, n] = Σ_k a[k, m, c] · b[k, c, n] for a: [K, M, C],
 * b: [K, C, N], as the same depthwise convolution with the filter spanning the input's height
 * (input [1, K, M, C], filter [K, 1, C, N]).
 */
function bmmFirst(a: tf.Tensor3D, b: tf.Tensor3D): tf.Tensor3D {
  const [k, m, c] = a.shape;
  const n = b.shape[2];
  const out = K.depthwiseConv2d(K.reshape(a, [1, k, m, c]) as tf.Tensor4D, K.reshape(b, [k, 1, c, n]) as tf.Tensor4D);
  return K.reshape(out, [m, c, n]);
}

/**
 * Causal multi-head self-attention over time-major rows, from the block's normalised input h
 * [T·B, d] (row t·B + b) and the fused projection W [d, 3d], b [3d] to the merged heads [T·B, d]
 * (before the output projection): q, k, v = h·W + b (three matMuls on W's column blocks), then
 * softmax(Q·Kᵀ + causal)·V per head, with the 1/√dh of the scores already in q's columns of W and
 * b ({@link foldNorm}: a few thousand products instead of one per score). q, k and v are read as [T, C, dh] with C = B·H
 * (batch × head) channels; forward and gradient are five {@link bmm} products. Its gradient reads
 * h, `wBack` (W, or W centred over its rows: see {@link foldNorm}), q, k, v, P [T, C, T], P with
 * its last two axes swapped, and the output O [T, C, dh].
 */
function attentionValue(
  time: number,
  heads: number,
  causal: tf.Tensor3D,
  h: tf.Tensor2D,
  [w, b, wBack]: [tf.Tensor2D, tf.Tensor1D, tf.Tensor2D],
): Saved {
  const [rows, d] = h.shape;
  const c = (rows / time) * heads;
  const dh = d / heads;
  const [q3, k3, v3] = [0, 1, 2].map(
    (i) => K.reshape(fusedDense(h, K.slice(w, [0, i * d], [d, d]), K.slice(b, [i * d], [d])), [time, c, dh]) as tf.Tensor3D,
  ) as [tf.Tensor3D, tf.Tensor3D, tf.Tensor3D];
  // S[i, c, j] = Σ_d Q[i, c, d] K[j, c, d]: a = Q as [i, d, c], b = K as [d, c, j].
  const scores = bmm(swapLast(q3), reverseAxes(k3));
  const p = K.softmax(K.add(scores, causal)) as tf.Tensor3D;
  // O[i, c, d] = Σ_j P[i, c, j] V[j, c, d]: a = P as [i, j, c], b = V.
  const pT = swapLast(p);
  const out = bmm(pT, v3);
  return { value: K.reshape(out, [rows, d]), saved: [h, wBack, q3, k3, v3, p, pT, out] };
}

/**
 * [dh, dW, db] of {@link attentionValue} from its saved tensors. Every product reads q, k, v and
 * the output gradient in their natural [T, C, dh] layout or P / dS with the last two axes swapped
 * (P's swap is the forward pass's), so only dS is transposed at full [T, C, T] size, and dV and dK
 * come out in the natural layout ({@link bmmFirst} sums over the first axis of P and dS).
 */
function attentionGrad(
  time: number,
  heads: number,
  saved: tf.Tensor[],
  dy: tf.Tensor2D,
): [tf.Tensor2D, tf.Tensor2D, tf.Tensor1D] {
  const [sh, sw, sq, sk, sv, sp, spT, so] = saved as [
    tf.Tensor2D,
    tf.Tensor2D,
    tf.Tensor3D,
    tf.Tensor3D,
    tf.Tensor3D,
    tf.Tensor3D,
    tf.Tensor3D,
    tf.Tensor3D,
  ];
  const [rows, d] = sh.shape;
  const c = (rows / time) * heads;
  const dh = d / heads;
  const dOut = K.reshape(dy, [time, c, dh]) as tf.Tensor3D;
  // dV[j, c, d] = Σ_i P[i, c, j] dO[i, c, d]: a = P as [i, j, c] (the forward's swap), b = dO.
  const dV = bmmFirst(spT, dOut);
  // dP[i, c, j] = Σ_d dO[i, c, d] V[j, c, d].
  const dP = bmm(swapLast(dOut), reverseAxes(sv));
  // Softmax: dS = (dP − Σ_j dP·P)·P, where Σ_j dP[i, c, j]·P[i, c, j] = Σ_d dO[i, c, d]·O[i, c, d]
  // (O = P·V, the forward's output): two products over [T, C, dh] instead of over [T, C, T].
  // q holds the scores' 1/√dh (its columns of W and b): dK reads the scaled q, and dQ becomes
  // the gradient of the scaled columns (unfolded with the LayerNorm, see {@link unfoldGrad}).
  const dS = K.mul(K.sub(dP, K.sum(K.mul(dOut, so), -1, true)), sp) as tf.Tensor3D;
  // dQ[i, c, d] = Σ_j dS[i, c, j] K[j, c, d] and dK[j, c, d] = Σ_i dS[i, c, j] Q[i, c, d], both from dS as [i, j, c].
  const dST = swapLast(dS);
  const dQ = bmm(dST, sk);
  const dK = bmmFirst(dST, sq);
  // Through the projection: dW = hᵀ·[dQ dK dV], db = Σ_rows [dQ dK dV], dh = Σ dX·Wᵢᵀ. dW as three
  // products Gᵢᵀ·h with h the packed operand of each: the wasm backend keeps the packing of a
  // matMul's right operand per tensor, so h is packed once (≈1 ms at 14k rows), and the three
  // [d, d] results are stacked, where a [3d, rows] stack of the gradients cost a 1.3M-float copy.
  const grads = [dQ, dK, dV].map((g) => K.reshape(g, [rows, d]) as tf.Tensor2D);
  const dW = K.transpose(K.concat(grads.map((g) => K.matMul(transpose2d(g), sh))) as tf.Tensor2D) as tf.Tensor2D;
  const db = K.concat(grads.map(columnSum)) as tf.Tensor1D;
  const dH = K.addN(grads.map((g, i) => K.matMul(g, K.transpose(K.slice(sw, [0, i * d], [d, d]))))) as tf.Tensor2D;
  return [dH, dW, db];
}

/** LayerNorm's normalised rows x̂ = (x − μ)/σ with σ = √(var + ε), without gain and bias: [x̂, σ]. */
function normalize(x: tf.Tensor2D): [tf.Tensor2D, tf.Tensor2D] {
  // tf.moments's values without its float32 Cast copy of x and its second x − μ.
  const centred = K.sub(x, K.mean(x, -1, true));
  const std = K.sqrt(K.add(K.mean(K.square(centred), -1, true), LAYER_NORM_EPS)) as tf.Tensor2D;
  return [K.div<tf.Tensor2D>(centred, std), std];
}

/**
 * dL/dx from dL/dx̂ through {@link normalize}: (dx̂ − mean(dx̂) − x̂·mean(dx̂·x̂))/σ. A `centred` dx̂
 * (mean 0 up to rounding: a folded layer's product with W′ centred, see {@link foldNorm}) skips
 * the mean and its subtraction.
 */
function normalizeGrad(xhat: tf.Tensor2D, std: tf.Tensor2D, dxhat: tf.Tensor2D, centred = false): tf.Tensor2D {
  const dc = centred ? dxhat : K.sub(dxhat, K.mean(dxhat, -1, true));
  return K.div(K.sub(dc, K.mul(xhat, K.mean(K.mul(dxhat, xhat), -1, true))), std);
}

/** LayerNorm over the last axis, y = (x − μ)/σ · g + b with σ = √(var + ε); its gradient reads x̂, σ and g. */
function layerNormValue(x: tf.Tensor2D, g: tf.Tensor1D, b: tf.Tensor1D): Saved {
  const [xhat, std] = normalize(x);
  return { value: rowwise('add', rowwise('mul', xhat, g), b), saved: [xhat, std, g] };
}

/** dx = (ĝ − mean(ĝ) − x̂·mean(ĝ·x̂))/σ for ĝ = dy·g, dg = Σ_rows dy·x̂, db = Σ_rows dy. */
function layerNormGrad(saved: tf.Tensor[], dy: tf.Tensor2D): [tf.Tensor2D, tf.Tensor1D, tf.Tensor1D] {
  const [xh, sd, gg] = saved as [tf.Tensor2D, tf.Tensor2D, tf.Tensor1D];
  return [normalizeGrad(xh, sd, rowwise('mul', dy, gg)), columnSum(K.mul(dy, xh) as tf.Tensor2D), columnSum(dy)];
}

/**
 * A LayerNorm's gain g and bias β folded into the dense layer that reads it (W [d, out], c [out]):
 * (x̂·g + β)·W + c = x̂·W′ + c′ with W′ = g·W (row i times gᵢ) and c′ = β·W + c, a few thousand
 * products instead of the LayerNorm's scaling and shift of every activation row (and, in the
 * backward pass, of every gradient row: see {@link unfoldGrad}). `scale` multiplies W′'s and c′'s
 * columns too (attention's 1/√dh on q's columns). The same values up to float rounding.
 */
function foldNorm(g: tf.Tensor1D, beta: tf.Tensor1D, w: tf.Tensor2D, c: tf.Tensor1D, scale: tf.Tensor1D | null = null): Folded {
  const [d, out] = w.shape;
  const wf = K.mul<tf.Tensor2D>(w, K.reshape(g, [d, 1]));
  const bf = K.add<tf.Tensor1D>(K.reshape(K.matMul(K.reshape(beta, [1, d]), w), [out]), c);
  const [ws, bs] = scale ? [K.mul<tf.Tensor2D>(wf, scale), K.mul<tf.Tensor1D>(bf, scale)] : [wf, bf];
  // For the backward product dx̂ = dY·W′ᵀ: W′ centred over its rows gives dx̂ centred (row mean 0).
  return { g, beta, w, scale, wf: ws, bf: bs, wc: K.sub(ws, K.mean(ws, 0, true)) };
}

/** A dense layer's weights with a LayerNorm folded in ({@link foldNorm}), and the unfolded ones its gradient reads. */
interface Folded {
  g: tf.Tensor1D;
  beta: tf.Tensor1D;
  w: tf.Tensor2D;
  scale: tf.Tensor1D | null;
  wf: tf.Tensor2D;
  bf: tf.Tensor1D;
  /** wf centred over its rows, for the gradient's dx̂ = dY·W′ᵀ. */
  wc: tf.Tensor2D;
}

/**
 * [dg, dβ, dW, dc] from the folded layer's gradients (of its scaled W′ and c′): with the column
 * scale s undone (dW′ = s·dW″, dc = dc′ = s·dc″), dW = g·dW′ + β⊗dc′ (W′ = g·W and c′ = β·W + c
 * both read W), dg = Σ_out dW′·W, dβ = W·dc′ — products over [d, out] instead of sums over the rows.
 */
function unfoldGrad(f: Folded, dWs: tf.Tensor2D, dbs: tf.Tensor1D): [tf.Tensor1D, tf.Tensor1D, tf.Tensor2D, tf.Tensor1D] {
  const [d, out] = f.w.shape;
  const [dWf, dbf] = f.scale ? [K.mul<tf.Tensor2D>(dWs, f.scale), K.mul<tf.Tensor1D>(dbs, f.scale)] : [dWs, dbs];
  const dW = K.add<tf.Tensor2D>(K.mul(dWf, K.reshape(f.g, [d, 1])), K.mul(K.reshape(f.beta, [d, 1]), K.reshape(dbf, [1, out])));
  const dg = K.sum<tf.Tensor1D>(K.mul(dWf, f.w), 1, false);
  const dbeta = K.reshape<tf.Tensor1D>(K.matMul(f.w, K.reshape(dbf, [out, 1])), [d]);
  return [dg, dbeta, dW, dbf];
}

/** The distinct rows of a token batch and, for each row, the index of its distinct row. */
interface DistinctRows {
  count: number;
  tokens: Int32Array;
  of: Int32Array;
}

/** What one transformer block's forward pass keeps for {@link blockGrad}. */
interface BlockForward {
  /** x̂ and σ of the block's first LayerNorm, whose gain and bias fold into the qkv projection. */
  norm1: [tf.Tensor2D, tf.Tensor2D];
  qkv: Folded;
  attn: Saved;
  proj: Saved;
  /** x̂ and σ of the second LayerNorm, folded into fc1. */
  norm2: [tf.Tensor2D, tf.Tensor2D];
  fc1Fold: Folded;
  fc1: Saved;
  fc2: Saved;
}

/** What `PolicyModel.explicitForward` keeps for the backward pass. */
interface ExplicitForward {
  stride: number;
  time: number;
  rows: number;
  tokenIndex: tf.Tensor1D;
  /** Whether tokenIndex indexes the table of token + position sums (see `embeddingIndex`). */
  table: boolean;
  blocks: BlockForward[];
  lnf: Saved;
  atIndex: tf.Tensor1D;
  select: tf.Tensor2D | null;
  head: Saved;
  logits: tf.Tensor2D;
}

function setPair(grads: Map<string, tf.Tensor>, a: string, ga: tf.Tensor, b: string, gb: tf.Tensor): void {
  grads.set(a, ga);
  grads.set(b, gb);
}

/** Block `l`'s weight gradients into `grads`, given dL/d(its output); returns dL/d(its input). */
function blockGrad(
  l: number,
  time: number,
  heads: number,
  blk: BlockForward,
  dOut: tf.Tensor2D,
  grads: Map<string, tf.Tensor>,
): tf.Tensor2D {
  const [dF, dW2, db2] = denseGrad(blk.fc2.saved, dOut);
  setPair(grads, `l${l}.fc2.w`, dW2, `l${l}.fc2.b`, db2);
  // ReLU: the gradient passes where the pre-activation is > 0, i.e. where fc1's output (after
  // its ReLU) is > 0 (tfjs's own: dy · step(x)).
  // fc1 and qkv read x̂ with the LayerNorm folded in: their dX is dL/dx̂ and their weight
  // gradients are those of W′ and c′, unfolded into W's, g's and β's.
  const [dXhat2, dW1f, db1] = denseGrad(blk.fc1.saved, K.mul(dF, K.step(blk.fc1.value)));
  const [dg2, dbeta2, dW1] = unfoldGrad(blk.fc1Fold, dW1f, db1);
  setPair(grads, `l${l}.fc1.w`, dW1, `l${l}.fc1.b`, db1);
  setPair(grads, `l${l}.ln2.g`, dg2, `l${l}.ln2.b`, dbeta2);
  const dx = K.add<tf.Tensor2D>(dOut, normalizeGrad(...blk.norm2, dXhat2, true));
  const [dMerged, dWp, dbp] = denseGrad(blk.proj.saved, dx);
  setPair(grads, `l${l}.proj.w`, dWp, `l${l}.proj.b`, dbp);
  const [dXhat1, dWqkvs, dbqkvs] = attentionGrad(time, heads, blk.attn.saved, dMerged);
  const [dg1, dbeta1, dWqkv, dbqkv] = unfoldGrad(blk.qkv, dWqkvs, dbqkvs);
  setPair(grads, `l${l}.qkv.w`, dWqkv, `l${l}.qkv.b`, dbqkv);
  setPair(grads, `l${l}.ln1.g`, dg1, `l${l}.ln1.b`, dbeta1);
  return K.add<tf.Tensor2D>(dx, normalizeGrad(...blk.norm1, dXhat1, true));
}

/**
 * The policy: a small decoder-only transformer (pre-LayerNorm blocks, learned positions,
 * ReLU MLP, causal self-attention) whose weights live in tfjs variables.
 *
 * Activations are time-major ([T·B, d], row t·B + b), so attention reads its batch × head
 * channels without transposing the residual stream; the embedding is a row lookup.
 */
export class PolicyModel {
  readonly config: PolicyConfig;
  readonly variables: tf.Variable[];
  private readonly byName: Map<string, tf.Variable>;
  private readonly mask: tf.Tensor1D;
  private readonly causal: tf.Tensor2D;
  private readonly causalMasks = new Map<string, tf.Tensor3D>();
  /** Compute repeated rows once (default true; false runs every row, for comparisons). */
  shareRows = true;
  /** Distinct rows the last forward pass ran over when it shared repeated rows, else null. */
  lastDistinctRows: number | null = null;
  /** Rows (sequences) the last forward pass ran the transformer over. */
  lastRows = 0;

  constructor(options: { config: PolicyConfig; weights?: NamedWeight[] }) {
    this.config = options.config;
    const weights = options.weights ?? initWeights(options.config);
    const expected = weightShapes(options.config);
    if (weights.length !== expected.length)
      throw new ConfigError(`weights: expected ${expected.length} weights, got ${weights.length}`, { path: 'weights' });
    this.variables = expected.map(({ name, shape }, i) => {
      const w = weights[i] as NamedWeight;
      if (w.name !== name || w.shape.join() !== shape.join())
        throw new ConfigError(`weight ${i}: expected ${name} ${shape}, got ${w.name} ${w.shape}`, { path: `weights[${i}]` });
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
    // bare-error: the weight names come from this model's own shape table
    if (!v) throw new Error(`no weight ${name}`);
    return v;
  }

  /** Logits [B, T, V] for int32 tokens [B, T] (T ≤ contextLength). Call inside tf.tidy. */
  forward(tokens: tf.Tensor2D): tf.Tensor3D {
    const [batch, time] = tokens.shape;
    const every = Int32Array.from({ length: batch * time }, (_, i) => i);
    const logits = this.logitsAt(tokens.dataSync() as Int32Array, [batch, time], every);
    return K.reshape(logits, [batch, time, this.config.vocabSize]);
  }

  /**
   * Logits [N, V] at N positions of a token batch (`positions[i]` = row · T + t; tokens: int32
   * data [B, T], T ≤ contextLength): the output head runs on those positions only (a loss that
   * reads a few positions per row needs no others). Call inside tf.tidy; for gradients, use
   * {@link logitsWithBackward} (the same forward pass).
   *
   * Rows that repeat an earlier row exactly are computed once (self-play over a small game: a
   * batch of 1,152 seat sequences can hold ≈30 distinct ones): the transformer runs over the
   * distinct rows and each position reads its distinct row's hidden state (the gradient sums the
   * copies). The logits are the same values; only the order in which gradients are summed changes.
   *
   * `columns` (distinct token ids, ascending, each an output token) restricts the head to those
   * ids: [N, columns.length], the same values as those columns of the full logits (a loss over
   * the output tokens needs no others: the rest have probability 0 and a zero gradient).
   */
  logitsAt(tokens: Int32Array, shape: [number, number], positions: Int32Array, columns?: readonly number[]): tf.Tensor2D {
    return this.explicitForward(tokens, shape, positions, columns).logits;
  }

  /**
   * {@link logitsAt}'s logits (the same forward pass) and a function from their gradient
   * dL/dlogits to the gradient of every weight, in the order of {@link variables}. The backward
   * pass is explicit and reads the forward pass's tensors directly (tfjs's tape would copy each
   * saved tensor and each taped op's inputs, one Identity kernel per tensor). Call inside tf.tidy,
   * and call `backward` at most once, inside the same scope.
   */
  logitsWithBackward(
    tokens: Int32Array,
    shape: [number, number],
    positions: Int32Array,
    columns?: readonly number[],
  ): { logits: tf.Tensor2D; backward: (dLogits: tf.Tensor2D) => tf.Tensor[] } {
    const forward = this.explicitForward(tokens, shape, positions, columns);
    let used = false;
    const backward = (dLogits: tf.Tensor2D): tf.Tensor[] => {
      if (used) throw new TrainerError('logitsWithBackward: backward already ran');
      used = true;
      return this.explicitBackward(forward, dLogits);
    };
    return { logits: forward.logits, backward };
  }

  /** The model's one forward pass (logitsAt's and logitsWithBackward's), keeping what each gradient reads. */
  private explicitForward(
    tokens: Int32Array,
    shape: [number, number],
    positions: Int32Array,
    columns: readonly number[] | undefined,
  ): ExplicitForward {
    const { rowTokens, stride, time, index } = this.prepare(tokens, shape, positions);
    const { dModel: d, heads, layers } = this.config;
    const rows = stride * time;
    const w2 = (name: string) => this.w(name) as tf.Tensor2D;
    const w1 = (name: string) => this.w(name) as tf.Tensor1D;
    const { tokenIndex, table } = this.embeddingIndex(rowTokens, stride, time);
    const pos = K.reshape(K.slice(this.w('pos_emb'), [0, 0], [time, d]), [time, 1, d]);
    // x = tok_emb[token] + pos_emb[t]: one lookup in the table of every sum [T·V, d] (row t·V +
    // token) when it has fewer rows than the batch, else a lookup and a broadcast add. Either way
    // each row is the same one addition.
    let x = (
      table
        ? gatherValue(
            K.reshape(K.add(K.reshape(w2('tok_emb'), [1, this.config.vocabSize, d]), pos), [-1, d]) as tf.Tensor2D,
            tokenIndex,
          )
        : K.reshape(K.add(K.reshape(gatherValue(w2('tok_emb'), tokenIndex), [time, stride, d]), pos), [rows, d])
    ) as tf.Tensor2D;
    const causal = this.causalMask(time, stride * heads);
    // Attention's 1/√dh on q's columns of the qkv projection (see attentionValue).
    const qScale = tf.tensor1d(Float32Array.from({ length: 3 * d }, (_, j) => (j < d ? 1 / Math.sqrt(d / heads) : 1)));
    const fold = (ln: string, dense: string, scale: tf.Tensor1D | null = null) =>
      foldNorm(w1(`${ln}.g`), w1(`${ln}.b`), w2(`${dense}.w`), w1(`${dense}.b`), scale);
    const blocks: BlockForward[] = [];
    for (let l = 0; l < layers; l++) {
      const norm1 = normalize(x);
      const qkv = fold(`l${l}.ln1`, `l${l}.qkv`, qScale);
      const attn = attentionValue(time, heads, causal, norm1[0], [qkv.wf, qkv.bf, qkv.wc]);
      const proj = denseValue(attn.value, w2(`l${l}.proj.w`), w1(`l${l}.proj.b`));
      x = K.add<tf.Tensor2D>(x, proj.value);
      const norm2 = normalize(x);
      const fc1Fold = fold(`l${l}.ln2`, `l${l}.fc1`);
      const fc1 = denseReluValue(norm2[0], fc1Fold.wf, fc1Fold.bf, fc1Fold.wc);
      const fc2 = denseValue(fc1.value, w2(`l${l}.fc2.w`), w1(`l${l}.fc2.b`));
      x = K.add<tf.Tensor2D>(x, fc2.value);
      blocks.push({ norm1, qkv, attn, proj, norm2, fc1Fold, fc1, fc2 });
    }
    // The final LayerNorm works row by row: it runs on the rows the head reads only (the same values).
    const atIndex = tf.tensor1d(index, 'int32');
    const lnf = layerNormValue(gatherValue(x, atIndex), w1('lnf.g'), w1('lnf.b'));
    const at = lnf.value;
    const select = columns ? this.columnSelect(columns) : null;
    const [headW, headB] = select ? this.headColumns(select) : [w2('head.w'), w1('head.b')];
    const head = denseValue(at, headW, headB);
    const logits = (select ? head.value : K.add(head.value, this.mask)) as tf.Tensor2D;
    return { stride, time, rows, tokenIndex, table, blocks, lnf, atIndex, select, head, logits };
  }

  /** Every weight's gradient from dL/dlogits, in the order of {@link variables}. */
  private explicitBackward(f: ExplicitForward, dLogits: tf.Tensor2D): tf.Tensor[] {
    const grads = new Map<string, tf.Tensor>();
    const [dAt, dHeadW, dHeadB] = denseGrad(f.head.saved, dLogits);
    if (f.select) {
      // The columns' gradients back in place (exact: one 1 per column of the 0/1 selection).
      const selectT = K.transpose(f.select);
      setPair(
        grads,
        'head.w',
        K.matMul(dHeadW, selectT),
        'head.b',
        K.reshape(K.matMul(K.reshape(dHeadB, [1, -1]), selectT), [this.config.vocabSize]),
      );
    } else setPair(grads, 'head.w', dHeadW, 'head.b', dHeadB);
    const [dxf, dgf, dbf] = layerNormGrad(f.lnf.saved, dAt);
    setPair(grads, 'lnf.g', dgf, 'lnf.b', dbf);
    let dx = gatherGrad(f.atIndex, dxf, f.rows);
    for (let l = this.config.layers - 1; l >= 0; l--) dx = blockGrad(l, f.time, this.config.heads, f.blocks[l]!, dx, grads);
    this.embeddingGrads(f, dx, grads);
    return weightShapes(this.config).map(({ name }) => {
      const g = grads.get(name);
      // bare-error: every variable is in the gradient map built just above
      if (!g) throw new Error(`no gradient for ${name}`);
      return g;
    });
  }

  /** The embeddings' gradients from dL/dx at the first block's input. */
  private embeddingGrads(f: ExplicitForward, dx: tf.Tensor2D, grads: Map<string, tf.Tensor>): void {
    const { dModel: d, vocabSize: v, contextLength } = this.config;
    // Through the sum table: its rows' gradients [T, V, d] summed over T (tok_emb) and over V (pos_emb).
    const dTable = f.table ? gatherGrad(f.tokenIndex, dx, f.time * v) : null;
    // pos gets the sum over each time step's rows (n × an average pool over them, as in
    // columnSum: tf.sum over the middle axis transposes first), padded to the context.
    const [per, n] = dTable ? [dTable, v] : [dx, f.stride];
    const dPos = K.mul(K.reshape(avgPool(K.reshape(per, [1, f.time, n, d]) as tf.Tensor4D, [1, n]), [f.time, d]), n);
    grads.set(
      'pos_emb',
      f.time < contextLength
        ? K.pad(dPos, [
            [0, contextLength - f.time],
            [0, 0],
          ])
        : dPos,
    );
    grads.set(
      'tok_emb',
      dTable ? K.reshape(columnSum(K.reshape(dTable, [f.time, v * d]) as tf.Tensor2D), [v, d]) : gatherGrad(f.tokenIndex, dx, v),
    );
  }

  /**
   * The embedding's row index per activation row (time-major): the token id, or t·V + token id
   * in the table of token + position sums when that table [T·V, d] is smaller than the batch.
   */
  private embeddingIndex(tokens: Int32Array, stride: number, time: number): { tokenIndex: tf.Tensor1D; table: boolean } {
    const v = this.config.vocabSize;
    const table = v < stride;
    const index = this.timeMajor(tokens, stride, time);
    if (table)
      for (let t = 0; t < time; t++)
        for (let b = 0; b < stride; b++) index[t * stride + b] = (index[t * stride + b] as number) + t * v;
    return { tokenIndex: tf.tensor1d(index, 'int32'), table };
  }

  /**
   * The causal mask (0 on and below the diagonal, −1e9 above) at attention's full shape
   * [T, C, T] for C = rows × heads channels, kept across steps (at most four shapes): adding it
   * costs half the [T, 1, T] mask broadcast over the channels (1.1 → 0.5 ms at the trainer's
   * default shape), and each score gets the same single addition.
   */
  private causalMask(time: number, channels: number): tf.Tensor3D {
    const key = `${time}x${channels}`;
    let mask = this.causalMasks.get(key);
    if (!mask) {
      mask = tf.keep(
        tf.tidy(() =>
          K.add(tf.zeros([time, channels, time]), K.reshape(K.slice(this.causal, [0, 0], [time, time]), [time, 1, time])),
        ) as tf.Tensor3D,
      );
      if (this.causalMasks.size >= 4) {
        const [oldest, old] = this.causalMasks.entries().next().value as [string, tf.Tensor3D];
        this.causalMasks.delete(oldest);
        old.dispose();
      }
      this.causalMasks.set(key, mask);
    }
    return mask;
  }

  /** Checks a batch against the model and lays out the rows the transformer runs over (see {@link logitsAt}). */
  private prepare(tokens: Int32Array, shape: [number, number], positions: Int32Array) {
    const [batch, time] = shape;
    if (tokens.length !== batch * time) throw new TrainerError(`tokens: ${tokens.length} values for shape [${batch}, ${time}]`);
    if (time > this.config.contextLength)
      throw new TrainerError(`sequence of ${time} tokens exceeds the context ${this.config.contextLength}`);
    const shared = this.distinctRows(tokens, batch, time);
    const rows = shared?.count ?? batch;
    this.lastDistinctRows = shared ? shared.count : null;
    this.lastRows = rows;
    const of = shared?.of;
    // An even row count gets one idle row (a copy of row 0 that no position reads: its gradient
    // is exactly zero): attention's batch × head channels then have an odd stride, where a stride
    // of 2^k floats (256 rows × 4 heads) makes the cache alias and attention 3× slower.
    const stride = rows >= 32 && rows % 2 === 0 ? rows + 1 : rows;
    let rowTokens = shared?.tokens ?? tokens;
    if (stride > rows) {
      const withIdle = new Int32Array(stride * time);
      withIdle.set(rowTokens.subarray(0, rows * time));
      withIdle.set(rowTokens.subarray(0, time), rows * time);
      rowTokens = withIdle;
    }
    const index = new Int32Array(positions.length);
    for (let i = 0; i < positions.length; i++) {
      const p = positions[i] as number;
      const b = Math.floor(p / time);
      if (!(p >= 0 && b < batch)) throw new TrainerError(`positions[${i}] = ${p} is outside [0, ${batch * time})`);
      index[i] = (p - b * time) * stride + (of ? (of[b] as number) : b);
    }
    return { rowTokens, stride, time, index };
  }

  /** The 0/1 matrix [V, columns] that picks the head's columns (ascending output token ids). */
  private columnSelect(columns: readonly number[]): tf.Tensor2D {
    const v = this.config.vocabSize;
    const allowed = outputMask(this.config);
    const pick = new Float32Array(v * columns.length);
    columns.forEach((id, j) => {
      if (!(id >= 0 && id < v && allowed[id] === 0 && (j === 0 || id > (columns[j - 1] as number))))
        throw new TrainerError(`columns[${j}] = ${id}: expected ascending output token ids`);
      pick[id * columns.length + j] = 1;
    });
    return tf.tensor2d(pick, [v, columns.length]);
  }

  /** The head's weight and bias at the selected columns, picked by a 0/1 matMul (exact; its gradient puts them back in place). */
  private headColumns(select: tf.Tensor2D): [tf.Tensor2D, tf.Tensor1D] {
    const v = this.config.vocabSize;
    const w = K.matMul(this.w('head.w') as tf.Tensor2D, select) as tf.Tensor2D;
    const b = K.reshape(K.matMul(K.reshape(this.w('head.b'), [1, v]) as tf.Tensor2D, select), [select.shape[1]]) as tf.Tensor1D;
    return [w, b];
  }

  /** Token ids [B, T] (row-major data) reordered time-major: entry t·B + b. */
  private timeMajor(tokens: Int32Array, batch: number, time: number): Int32Array {
    const out = new Int32Array(batch * time);
    for (let b = 0; b < batch; b++) for (let t = 0; t < time; t++) out[t * batch + b] = tokens[b * time + t] as number;
    return out;
  }

  /** The distinct rows of `tokens` [B, T] when some row repeats and sharing is on, else null. */
  private distinctRows(data: Int32Array, batch: number, time: number): DistinctRows | null {
    if (!this.shareRows || batch < 2) return null;
    // Rows grouped by a 32-bit FNV-1a hash of their tokens, rows of equal hash compared token by
    // token (the micro-batcher's grouping): no string per row (joining 576 rows of 24 tokens took
    // ≈1.5 ms a step).
    const same = (a: number, b: number) => {
      for (let t = 0; t < time; t++) if (data[a * time + t] !== data[b * time + t]) return false;
      return true;
    };
    const { slot: of, firsts } = groupRows(batch, (b) => fnv1a(data, b * time, (b + 1) * time), same);
    const count = firsts.length;
    if (count === batch) return null;
    const distinct = new Int32Array(count * time);
    firsts.forEach((b, u) => {
      distinct.set(data.subarray(b * time, (b + 1) * time), u * time);
    });
    return { count, tokens: distinct, of };
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
      if (!v || w.data.length !== v.size) throw new ConfigError(`weight ${w.name}: size mismatch`, { path: `weights[${i}]` });
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
    for (const mask of this.causalMasks.values()) mask.dispose();
    this.causalMasks.clear();
  }
}
