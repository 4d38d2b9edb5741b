import * as tf from '@tensorflow/tfjs';
import { describe, expect, it } from 'vitest';
import { LAYER_NORM_EPS, outputMask, PolicyConfigSchema, weightShapes } from './config.ts';
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
        const w = tf.tensor2d(weights, [batch * time, config.vocabSize]);
        const every = Int32Array.from({ length: batch * time }, (_, i) => i);
        const lossOf = (z: tf.Tensor) => tf.sum(tf.mul(tf.logSoftmax(z), w)) as tf.Scalar;
        const model2 = model.logitsWithBackward(tokens, [batch, time], every);
        const grads = model2.backward(tf.grad(lossOf)(model2.logits) as tf.Tensor2D);
        return {
          distinct,
          logits,
          loss: lossOf(model2.logits).dataSync()[0] as number,
          grads: grads.map((g) => g.dataSync().slice()),
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

describe('PolicyModel.logitsWithBackward', () => {
  /**
   * The same transformer written with tfjs's plain ops (gather, tf.moments, batched matMul,
   * softmax, relu), batch-major: tfjs's autodiff of this is the reference gradient.
   */
  function reference(model: PolicyModel, tokens: Int32Array, batch: number, time: number): tf.Tensor3D {
    const { dModel: d, heads, layers, vocabSize: v } = model.config;
    const dh = d / heads;
    const w = new Map(weightShapes(model.config).map(({ name }, i) => [name, model.variables[i] as tf.Tensor]));
    const get = (name: string) => w.get(name) as tf.Tensor;
    const norm = (x: tf.Tensor2D, prefix: string) => {
      const { mean, variance } = tf.moments(x, -1, true);
      return tf.add(
        tf.mul(tf.div(tf.sub(x, mean), tf.sqrt(tf.add(variance, LAYER_NORM_EPS))), get(`${prefix}.g`)),
        get(`${prefix}.b`),
      );
    };
    const ids = tf.tensor1d(tokens, 'int32');
    let x = tf.reshape(
      tf.add(tf.reshape(tf.gather(get('tok_emb'), ids), [batch, time, d]), tf.slice(get('pos_emb'), [0, 0], [time, d])),
      [batch * time, d],
    ) as tf.Tensor2D;
    const causal = tf.tensor2d(
      Array.from({ length: time * time }, (_, k) => (k % time > Math.floor(k / time) ? -1e9 : 0)),
      [time, time],
    );
    const split = (m: tf.Tensor) => tf.transpose(tf.reshape(m, [batch, time, heads, dh]), [0, 2, 1, 3]) as tf.Tensor4D;
    for (let l = 0; l < layers; l++) {
      const qkv = tf.add(tf.matMul(norm(x, `l${l}.ln1`), get(`l${l}.qkv.w`) as tf.Tensor2D), get(`l${l}.qkv.b`));
      const [q, k, vv] = tf.split(qkv, 3, 1).map(split) as [tf.Tensor4D, tf.Tensor4D, tf.Tensor4D];
      const p = tf.softmax(tf.add(tf.div(tf.matMul(q, k, false, true), Math.sqrt(dh)), causal));
      const merged = tf.reshape(tf.transpose(tf.matMul(p, vv), [0, 2, 1, 3]), [batch * time, d]) as tf.Tensor2D;
      x = tf.add(x, tf.add(tf.matMul(merged, get(`l${l}.proj.w`) as tf.Tensor2D), get(`l${l}.proj.b`)));
      const f = tf.relu(
        tf.add(tf.matMul(norm(x, `l${l}.ln2`), get(`l${l}.fc1.w`) as tf.Tensor2D), get(`l${l}.fc1.b`)),
      ) as tf.Tensor2D;
      x = tf.add(x, tf.add(tf.matMul(f, get(`l${l}.fc2.w`) as tf.Tensor2D), get(`l${l}.fc2.b`)));
    }
    const logits = tf.add(
      tf.add(tf.matMul(norm(x, 'lnf'), get('head.w') as tf.Tensor2D), get('head.b')),
      outputMask(model.config),
    );
    return tf.reshape(logits, [batch, time, v]);
  }

  /** max |a − b| / max |b|. */
  const relDiff = (a: Float32Array, b: Float32Array) => {
    let diff = 0;
    let scale = 0;
    for (let i = 0; i < b.length; i++) {
      diff = Math.max(diff, Math.abs((a[i] as number) - (b[i] as number)));
      scale = Math.max(scale, Math.abs(b[i] as number));
    }
    return diff / scale;
  };

  /** 34 distinct rows of 9 tokens: an even row count ≥ 32, so the model adds an idle row. */
  const distinctBatch = () => {
    const batch = 34;
    const time = 9;
    return {
      tokens: Int32Array.from({ length: batch * time }, (_, i) => (i * 7 + (i >> 3) * 5) % config.vocabSize),
      batch,
      time,
    };
  };
  for (const [narrow, rows, batchOf] of [
    [false, 'repeated rows', batchWithRepeats],
    [true, 'repeated rows', batchWithRepeats],
    [true, '34 distinct rows and an idle one', distinctBatch],
  ] as const) {
    it(`gives logitsAt's logits bit for bit and the gradients of tfjs's autodiff of the plain-op model (${narrow ? "the output tokens' columns" : 'the whole vocabulary'}, ${rows}, shorter than the context)`, () => {
      const model = new PolicyModel({ config });
      const { tokens, batch, time } = batchOf();
      const positions = Int32Array.from({ length: 40 }, (_, i) => (i * 37) % (batch * time));
      const columns = narrow ? [...(config.outputTokens ?? [])].sort((a, b) => a - b) : undefined;
      const width = columns?.length ?? config.vocabSize;
      const r = Float32Array.from({ length: positions.length * width }, (_, i) => Math.cos(i * 0.71));
      // A loss of the logits at the positions (softmax-weighted, so every logit matters).
      const loss = (logits: tf.Tensor2D) =>
        tf.sum(tf.mul(tf.logSoftmax(logits), tf.tensor2d(r, [positions.length, width]))) as tf.Scalar;
      tf.engine().startScope();
      try {
        const plain = model.logitsAt(tokens, [batch, time], positions, columns).dataSync().slice();
        const { logits, backward } = model.logitsWithBackward(tokens, [batch, time], positions, columns);
        expect(Array.from(logits.dataSync())).toEqual(Array.from(plain));
        expect(model.lastRows).toBe(batchOf === distinctBatch ? 34 : 5);
        const ours = backward(tf.grad((x) => loss(x as tf.Tensor2D))(logits) as tf.Tensor2D).map((g) => g.dataSync().slice());
        expect(() => backward(logits)).toThrow(/already ran/);
        const { grads } = tf.variableGrads(() => {
          const all = tf.reshape(reference(model, tokens, batch, time), [batch * time, config.vocabSize]);
          const at = tf.gather(all, tf.tensor1d(positions, 'int32'));
          return loss(columns ? (tf.gather(at, tf.tensor1d(columns, 'int32'), 1) as tf.Tensor2D) : (at as tf.Tensor2D));
        }, model.variables);
        const names = weightShapes(config).map((s) => s.name);
        model.variables.forEach((v, i) => {
          const theirs = (grads[v.name] as tf.Tensor).dataSync() as Float32Array;
          expect(relDiff(ours[i] as Float32Array, theirs), names[i]).toBeLessThan(1e-6);
        });
      } finally {
        tf.engine().endScope();
      }
      model.dispose();
    });
  }
});
