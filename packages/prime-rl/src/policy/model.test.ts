import * as tf from '@tensorflow/tfjs';
import { describe, expect, it } from 'vitest';
import { PolicyConfigSchema } from './config.ts';
import { dense, PolicyModel } from './model.ts';

const config = PolicyConfigSchema.parse({
  vocabSize: 24,
  contextLength: 16,
  dModel: 16,
  layers: 2,
  heads: 2,
  ffnMult: 2,
  outputTokens: [5, 6, 7, 8],
  seed: 5,
});

/** 64 rows of 12 tokens drawn from 5 distinct rows (two are padded shorter), in a scrambled order. */
function batchWithRepeats(): { tokens: Int32Array; batch: number; time: number } {
  const time = 12;
  const distinct = Array.from({ length: 5 }, (_, u) =>
    Array.from({ length: time }, (_, t) => (u >= 3 && t >= 8 ? 0 : 6 + ((u * 7 + t * 3) % 18))),
  );
  const batch = 64;
  const tokens = new Int32Array(batch * time);
  for (let b = 0; b < batch; b++) tokens.set(distinct[(b * 3 + (b >> 2)) % 5] as number[], b * time);
  return { tokens, batch, time };
}

describe('PolicyModel.forward computes repeated rows once', () => {
  it('gives the same logits as running every row, and the same weight gradients up to summation order', () => {
    const model = new PolicyModel({ config });
    const { tokens, batch, time } = batchWithRepeats();
    const weights = Float32Array.from({ length: batch * time * config.vocabSize }, (_, i) => Math.sin(i * 0.37));
    const run = (share: boolean) => {
      model.shareRows = share;
      // A scope instead of tf.tidy: the result holds plain arrays, not tensors.
      tf.engine().startScope();
      try {
        const input = tf.tensor2d(tokens, [batch, time], 'int32');
        const logits = model.forward(input).dataSync().slice();
        const distinct = model.lastDistinctRows;
        const w = tf.tensor3d(weights, [batch, time, config.vocabSize]);
        const { value, grads } = tf.variableGrads(
          () => tf.sum(tf.mul(tf.logSoftmax(model.forward(input)), w)) as tf.Scalar,
          model.variables,
        );
        return {
          distinct,
          logits,
          loss: value.dataSync()[0] as number,
          grads: model.variables.map((v) => (grads[v.name] as tf.Tensor).dataSync().slice()),
        };
      } finally {
        tf.engine().endScope();
      }
    };
    const shared = run(true);
    const every = run(false);
    expect(shared.distinct).toBe(5);
    expect(every.distinct).toBeNull();
    // Same logits at every position, padding included (bit for bit: each row is computed alone either way).
    expect(shared.logits.length).toBe(every.logits.length);
    let logitDiff = 0;
    for (let i = 0; i < shared.logits.length; i++)
      logitDiff = Math.max(logitDiff, Math.abs((shared.logits[i] as number) - (every.logits[i] as number)));
    expect(logitDiff).toBe(0);
    expect(shared.loss).toBeCloseTo(every.loss, 3);
    for (const [i, g] of shared.grads.entries()) {
      const ref = every.grads[i] as Float32Array;
      let scale = 1e-6;
      let diff = 0;
      for (let j = 0; j < g.length; j++) {
        scale = Math.max(scale, Math.abs(ref[j] as number));
        diff = Math.max(diff, Math.abs((g[j] as number) - (ref[j] as number)));
      }
      expect(diff / scale).toBeLessThan(1e-4);
    }
    model.dispose();
  });

  it('runs every row when all rows are distinct (nothing to share)', () => {
    const model = new PolicyModel({ config });
    const batch = 6;
    const time = 5;
    const tokens = Int32Array.from({ length: batch * time }, (_, i) => 6 + (i % 17));
    const a = tf.tidy(() =>
      model
        .forward(tf.tensor2d(tokens, [batch, time], 'int32'))
        .dataSync()
        .slice(),
    );
    expect(model.lastDistinctRows).toBeNull();
    model.shareRows = false;
    const b = tf.tidy(() =>
      model
        .forward(tf.tensor2d(tokens, [batch, time], 'int32'))
        .dataSync()
        .slice(),
    );
    expect(Array.from(a)).toEqual(Array.from(b));
    model.dispose();
  });

  it("logitsAt reads the same logits at chosen positions, and the output tokens' columns only when asked", () => {
    const model = new PolicyModel({ config });
    const batch = 40;
    const time = 9;
    const tokens = Int32Array.from({ length: batch * time }, (_, i) => (i * 7 + (i >> 4)) % config.vocabSize);
    const positions = Int32Array.from([0, 8, 9, 100, 359, 17]);
    const columns = [...(config.outputTokens ?? [])].sort((a, b) => a - b);
    const [full, at, narrow] = tf.tidy(() => [
      model
        .forward(tf.tensor2d(tokens, [batch, time], 'int32'))
        .dataSync()
        .slice(),
      model.logitsAt(tokens, [batch, time], positions).dataSync().slice(),
      model.logitsAt(tokens, [batch, time], positions, columns).dataSync().slice(),
    ]);
    const v = config.vocabSize;
    positions.forEach((p, i) => {
      expect(Array.from(at.subarray(i * v, (i + 1) * v))).toEqual(Array.from(full.subarray(p * v, (p + 1) * v)));
      expect(Array.from(narrow.subarray(i * columns.length, (i + 1) * columns.length))).toEqual(
        columns.map((c) => full[p * v + c]),
      );
    });
    expect(() => tf.tidy(() => model.logitsAt(tokens, [batch, time], positions, [7, 6]))).toThrow(/columns\[1\]/);
    expect(() => tf.tidy(() => model.logitsAt(tokens, [batch, time], Int32Array.from([batch * time])))).toThrow(/positions\[0\]/);
    model.dispose();
  });
});

describe('dense', () => {
  /** max |a − b| / max |b| over all entries. */
  const relDiff = (a: tf.Tensor, b: tf.Tensor) =>
    tf.tidy(() => (tf.max(tf.abs(tf.sub(a, b))).dataSync()[0] as number) / (tf.max(tf.abs(b)).dataSync()[0] as number));

  it("matches tfjs's own matMul + bias and its gradients (each weight-gradient layout: wider input, wider output, square)", () => {
    for (const [n, din, dout] of [
      [300, 32, 64],
      [257, 64, 32],
      [130, 32, 32],
    ] as const) {
      tf.tidy(() => {
        const x = tf.randomNormal([n, din], 0, 1, 'float32', n) as tf.Tensor2D;
        const w = tf.randomNormal([din, dout], 0, 1, 'float32', din) as tf.Tensor2D;
        const b = tf.randomNormal([dout], 0, 1, 'float32', dout) as tf.Tensor1D;
        const r = tf.randomNormal([n, dout], 0, 1, 'float32', 7);
        const ours = tf.grads((xx, ww, bb) => tf.sum(tf.mul(dense(xx as tf.Tensor2D, ww as tf.Tensor2D, bb as tf.Tensor1D), r)));
        const theirs = tf.grads((xx, ww, bb) => tf.sum(tf.mul(tf.add(tf.matMul(xx as tf.Tensor2D, ww as tf.Tensor2D), bb), r)));
        expect(relDiff(dense(x, w, b), tf.add(tf.matMul(x, w), b))).toBe(0);
        const [a, c] = [ours([x, w, b]), theirs([x, w, b])];
        for (let i = 0; i < 3; i++) expect(relDiff(a[i] as tf.Tensor, c[i] as tf.Tensor)).toBeLessThan(1e-6);
      });
    }
  });
});
