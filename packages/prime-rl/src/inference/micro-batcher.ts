import type { OnnxPolicy } from './onnx-policy.ts';

interface Pending {
  tokens: readonly number[];
  resolve: (logits: Float32Array) => void;
  reject: (error: unknown) => void;
}

export interface MicroBatcherStats {
  batches: number;
  rows: number;
  forwardMs: number;
}

/**
 * Batches next-token requests from many concurrent rollouts into one onnxruntime forward pass.
 * One batch runs at a time; requests queue meanwhile. A queue flushes when it holds `maxBatch`
 * rows, or `maxWaitMs` after the first request arrived at an idle batcher (0 = next macrotask,
 * which already collects every rollout whose continuation ran after the previous batch).
 */
export class MicroBatcher {
  private queue: Pending[] = [];
  private running = false;
  private timer: NodeJS.Timeout | NodeJS.Immediate | null = null;
  readonly stats: MicroBatcherStats = { batches: 0, rows: 0, forwardMs: 0 };

  constructor(private readonly options: { policy: () => OnnxPolicy; maxBatch: number; maxWaitMs: number; vocabSize: number }) {}

  /** Logits of the next token after `tokens`. */
  next(tokens: readonly number[]): Promise<Float32Array> {
    return new Promise((resolve, reject) => {
      this.queue.push({ tokens, resolve, reject });
      if (this.queue.length >= this.options.maxBatch && !this.running) this.flush();
      else this.schedule();
    });
  }

  private schedule(): void {
    if (this.timer || this.running) return;
    const run = () => {
      this.timer = null;
      this.flush();
    };
    this.timer = this.options.maxWaitMs > 0 ? setTimeout(run, this.options.maxWaitMs) : setImmediate(run);
  }

  private flush(): void {
    if (this.running || this.queue.length === 0) return;
    if (this.timer) {
      clearTimeout(this.timer as NodeJS.Timeout);
      clearImmediate(this.timer as NodeJS.Immediate);
      this.timer = null;
    }
    const batch = this.queue.splice(0, this.options.maxBatch);
    this.running = true;
    const started = performance.now();
    const time = Math.max(...batch.map((p) => p.tokens.length));
    const tokens = new Int32Array(batch.length * time);
    const rows: number[] = [];
    batch.forEach((p, b) => {
      tokens.set(p.tokens, b * time);
      rows.push(b * time + p.tokens.length - 1);
    });
    const v = this.options.vocabSize;
    this.options
      .policy()
      .logits({ tokens, batch: batch.length, time, rows })
      .then(
        (logits) => {
          for (const [b, p] of batch.entries()) p.resolve(logits.subarray(b * v, (b + 1) * v));
        },
        (error) => {
          for (const p of batch) p.reject(error);
        },
      )
      .finally(() => {
        this.stats.batches++;
        this.stats.rows += batch.length;
        this.stats.forwardMs += performance.now() - started;
        this.running = false;
        if (this.queue.length >= this.options.maxBatch) this.flush();
        else if (this.queue.length) this.schedule();
      });
  }
}
