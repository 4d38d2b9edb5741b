import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { initTfBackend } from '../policy/backend.ts';
import { PolicyConfigSchema } from '../policy/config.ts';
import { PolicyModel } from '../policy/model.ts';
import { exportOnnx } from './onnx-export.ts';
import { OnnxPolicy } from './onnx-policy.ts';

describe('ONNX export', () => {
  beforeAll(async () => {
    await initTfBackend({ prefer: 'wasm' });
  });

  it('gives the same logits in onnxruntime as in tfjs (to 1e-4), at every position, with dynamic batch and time', async () => {
    const config = PolicyConfigSchema.parse({
      vocabSize: 40,
      contextLength: 24,
      dModel: 32,
      layers: 2,
      heads: 4,
      outputTokens: [5, 6, 7, 30],
      seed: 3,
    });
    const model = new PolicyModel({ config });
    const allowed = new Set(config.outputTokens);
    // Perturb biases and gains so that every weight matters.
    model.setWeights(model.getWeights().map((w, i) => ({ ...w, data: w.data.map((x, j) => x + 0.05 * Math.sin(i * 7 + j)) })));
    const onnx = await OnnxPolicy.load({ model: exportOnnx({ config, weights: model.getWeights() }), vocabSize: 40 });
    for (const [batch, time] of [
      [3, 11],
      [1, 24],
      [5, 2],
    ] as const) {
      const tokens = Int32Array.from({ length: batch * time }, (_, i) => (i * 13 + batch) % 40);
      const expected = tf.tidy(() => model.forward(tf.tensor2d(tokens, [batch, time], 'int32')).dataSync());
      const rows = Array.from({ length: batch * time }, (_, i) => i);
      const got = await onnx.logits({ tokens, batch, time, rows });
      expect(got.length).toBe(expected.length);
      let maxDiff = 0;
      for (let i = 0; i < got.length; i++) {
        // Masked logits sit near −1e4, where float32 spacing is ≈1e-3: compare them only as masked.
        if (!allowed.has(i % 40)) {
          expect(got[i]).toBeLessThan(-1000);
          expect(expected[i]).toBeLessThan(-1000);
        } else maxDiff = Math.max(maxDiff, Math.abs((got[i] as number) - (expected[i] as number)));
      }
      expect(maxDiff).toBeLessThan(1e-4);
    }
    await onnx.release();
    model.dispose();
  });

  it('runs the same graph on onnxruntime-web (WebAssembly) as on onnxruntime-node, to 1e-5; auto picks the native one when installed', async () => {
    const config = PolicyConfigSchema.parse({ vocabSize: 30, contextLength: 16, dModel: 16, layers: 1, heads: 2, seed: 5 });
    const model = new PolicyModel({ config });
    const graph = exportOnnx({ config, weights: model.getWeights() });
    model.dispose();
    const native = await OnnxPolicy.load({ model: graph, vocabSize: 30, runtime: 'onnxruntime-node' });
    const wasm = await OnnxPolicy.load({ model: graph, vocabSize: 30, runtime: 'onnxruntime-web' });
    const auto = await OnnxPolicy.load({ model: graph, vocabSize: 30 });
    expect([native.runtime, wasm.runtime, auto.runtime]).toEqual(['onnxruntime-node', 'onnxruntime-web', 'onnxruntime-node']);
    const batch = 4;
    const time = 9;
    const tokens = Int32Array.from({ length: batch * time }, (_, i) => (i * 11 + 3) % 30);
    const rows = [8, 17, 20, 35];
    const a = await native.logits({ tokens, batch, time, rows });
    const b = await wasm.logits({ tokens, batch, time, rows });
    expect(b.length).toBe(rows.length * 30);
    let maxDiff = 0;
    for (let i = 0; i < a.length; i++) maxDiff = Math.max(maxDiff, Math.abs((a[i] as number) - (b[i] as number)));
    expect(maxDiff).toBeLessThan(1e-5);
    for (const p of [native, wasm, auto]) await p.release();
  });
});
