import { EngineError } from '@troupe/verifiers';
/**
 * Which onnxruntime runs the policy graph. `onnxruntime-web` (its WebAssembly build, run in Node) is
 * a plain dependency with no install script; `onnxruntime-node` (native, several times faster on
 * the policy's small passes) is used when installed. `auto` (the default): `onnxruntime-node` when
 * it loads, else `onnxruntime-web`.
 */
export type OnnxRuntimeChoice = 'auto' | 'onnxruntime-node' | 'onnxruntime-web';

/** The runtimes {@link OnnxRuntimeChoice} names, for config schemas and messages. */
export const ONNX_RUNTIMES = ['auto', 'onnxruntime-node', 'onnxruntime-web'] as const;

// The few onnxruntime-common names this file uses, typed here so that the public types of this
// package name neither runtime (a consumer compiles them with whichever one is installed, or none).
interface OrtTensor {
  readonly data: unknown;
}
interface OrtSession {
  run(feeds: Record<string, OrtTensor>): Promise<Record<string, OrtTensor | undefined>>;
  release(): Promise<void>;
}
interface OrtModule {
  InferenceSession: { create(model: Uint8Array, options: Record<string, unknown>): Promise<OrtSession> };
  Tensor: new (type: 'int32' | 'int64', data: Int32Array | BigInt64Array, dims: number[]) => OrtTensor;
  env: { wasm?: { numThreads?: number } };
}

/** A runtime that was asked for by name and cannot be loaded. */
export class OnnxRuntimeError extends EngineError {}

const loaded = new Map<'onnxruntime-node' | 'onnxruntime-web', Promise<OrtModule>>();

function importRuntime(name: 'onnxruntime-node' | 'onnxruntime-web', threads: number): Promise<OrtModule> {
  let module = loaded.get(name);
  if (!module) {
    module = (import(name) as Promise<OrtModule & { default?: OrtModule }>).then((m) => {
      const ort = m.InferenceSession ? m : (m.default as OrtModule);
      // The WebAssembly build: one thread, as the native session is pinned to one intra-op thread.
      if (name === 'onnxruntime-web' && ort.env.wasm) ort.env.wasm.numThreads = threads;
      return ort;
    });
    loaded.set(name, module);
    module.catch(() => loaded.delete(name));
  }
  return module;
}

/** Loads the runtime a choice names: `auto` falls back to `onnxruntime-web` when `onnxruntime-node` does not load. */
export async function loadOnnxRuntime(
  choice: OnnxRuntimeChoice = 'auto',
  threads = 1,
): Promise<{ name: 'onnxruntime-node' | 'onnxruntime-web'; ort: OrtModule }> {
  const order = choice === 'auto' ? (['onnxruntime-node', 'onnxruntime-web'] as const) : [choice];
  const failures: string[] = [];
  for (const name of order) {
    try {
      return { name, ort: await importRuntime(name, threads) };
    } catch (error) {
      failures.push(`${name}: ${(error as Error).message.split('\n')[0]}`);
    }
  }
  throw new OnnxRuntimeError(
    `no onnxruntime could be loaded (${failures.join('; ')}); @troupe/trainer depends on onnxruntime-web, and \`npm install onnxruntime-node\` adds the faster native one`,
  );
}

/**
 * One onnxruntime session of the policy graph (see `exportOnnx`), pinned to one intra-op thread
 * so it can run beside the trainer.
 */
export class OnnxPolicy {
  private constructor(
    private readonly ort: OrtModule,
    private readonly session: OrtSession,
    readonly vocabSize: number,
    /** The runtime that runs this session. */
    readonly runtime: 'onnxruntime-node' | 'onnxruntime-web',
  ) {}

  /** A session of an ONNX graph on the chosen runtime (default `auto`, see {@link OnnxRuntimeChoice}). */
  static async load(options: {
    model: Uint8Array;
    vocabSize: number;
    threads?: number;
    runtime?: OnnxRuntimeChoice;
  }): Promise<OnnxPolicy> {
    const { name, ort } = await loadOnnxRuntime(options.runtime, options.threads ?? 1);
    const session = await ort.InferenceSession.create(options.model, {
      intraOpNumThreads: options.threads ?? 1,
      interOpNumThreads: 1,
      executionMode: 'sequential',
      graphOptimizationLevel: 'all',
    });
    return new OnnxPolicy(ort, session, options.vocabSize, name);
  }

  /**
   * Logits at chosen positions: `tokens` is [batch, time] row-major (int32), `rows` the flat
   * indices `b·time + t`. Returns a Float32Array [rows.length, vocab].
   */
  async logits(options: { tokens: Int32Array; batch: number; time: number; rows: readonly number[] }): Promise<Float32Array> {
    const { tokens, batch, time, rows } = options;
    const out = await this.session.run({
      tokens: new this.ort.Tensor('int32', tokens, [batch, time]),
      rows: new this.ort.Tensor('int64', BigInt64Array.from(rows.map((r) => BigInt(r))), [rows.length]),
    });
    const logits = out.logits;
    if (!logits) throw new EngineError('onnx policy: no logits output', { engine: 'onnxruntime' });
    return logits.data as Float32Array;
  }

  /** Frees the session. */
  async release(): Promise<void> {
    await this.session.release();
  }
}
