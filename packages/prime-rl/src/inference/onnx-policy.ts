import * as ort from 'onnxruntime-node';

/**
 * One onnxruntime session of the policy graph (see `exportOnnx`), pinned to one intra-op thread
 * so it can run beside the trainer.
 */
export class OnnxPolicy {
  private constructor(
    private readonly session: ort.InferenceSession,
    readonly vocabSize: number,
  ) {}

  static async load(options: { model: Uint8Array; vocabSize: number; threads?: number }): Promise<OnnxPolicy> {
    const session = await ort.InferenceSession.create(options.model, {
      intraOpNumThreads: options.threads ?? 1,
      interOpNumThreads: 1,
      executionMode: 'sequential',
      graphOptimizationLevel: 'all',
    });
    return new OnnxPolicy(session, options.vocabSize);
  }

  /**
   * Logits at chosen positions: `tokens` is [batch, time] row-major (int32), `rows` the flat
   * indices `b·time + t`. Returns a Float32Array [rows.length, vocab].
   */
  async logits(options: { tokens: Int32Array; batch: number; time: number; rows: readonly number[] }): Promise<Float32Array> {
    const { tokens, batch, time, rows } = options;
    const out = await this.session.run({
      tokens: new ort.Tensor('int32', tokens, [batch, time]),
      rows: new ort.Tensor('int64', BigInt64Array.from(rows.map((r) => BigInt(r))), [rows.length]),
    });
    const logits = out.logits;
    if (!logits) throw new Error('onnx policy: no logits output');
    return logits.data as Float32Array;
  }

  async release(): Promise<void> {
    await this.session.release();
  }
}
