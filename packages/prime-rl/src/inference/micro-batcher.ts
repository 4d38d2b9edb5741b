import { distinctRows, FNV_OFFSET_BASIS, fnv1a } from './distinct-rows.ts';
import type { OnnxPolicy } from './onnx-policy.ts';

/**
 * One request of a forward pass, given to `MicroBatcher.submit`: its tokens, and what to call with
 * its row's logits (`settle`) or with the pass's error (`fail`). Called in submission order, in the
 * macrotask that ends the pass; a request may submit itself again from `settle` (its next token).
 * Requests that share a forward row get the same view of the pass's output: read it, never write it.
 */
export interface BatchRequest {
  readonly tokens: readonly number[];
  settle(logits: Float32Array): void;
  fail(error: unknown): void;
}

/** A request of `next`: settles a promise. */
class PromiseRequest implements BatchRequest {
  constructor(
    readonly tokens: readonly number[],
    readonly settle: (logits: Float32Array) => void,
    readonly fail: (error: unknown) => void,
  ) {}
}

/**
 * Running totals of a `MicroBatcher` since it was made (`batcher.stats`), for benchmarks and logs:
 * forward passes, rows and cells, and time spent in them.
 */
export interface MicroBatcherStats {
  /** Forward passes run. */
  batches: number;
  /** Requests answered. */
  rows: number;
  /** Distinct token rows the forward passes ran over (requests with the same tokens share one). */
  forwardRows: number;
  /** Token cells the forward passes ran over: Σ distinct rows × padded length, per pass. */
  forwardCells: number;
  /** Wall-clock time spent in forward passes (milliseconds, summed). */
  forwardMs: number;
}

/**
 * Batches next-token requests from many concurrent rollouts into one onnxruntime forward pass.
 * One batch runs at a time; requests queue meanwhile. A queue flushes when it holds `maxBatch`
 * rows, or `maxWaitMs` after the first request arrived at an idle batcher (0 = next macrotask,
 * which already collects every rollout whose continuation ran after the previous batch).
 */
export class MicroBatcher {
  private queue: BatchRequest[] = [];
  private running = false;
  private timer: NodeJS.Timeout | NodeJS.Immediate | null = null;
  readonly stats: MicroBatcherStats = { batches: 0, rows: 0, forwardRows: 0, forwardCells: 0, forwardMs: 0 };

  constructor(
    private readonly options: {
      policy: () => OnnxPolicy;
      maxBatch: number;
      maxWaitMs: number;
      vocabSize: number;
      /** Requests with the same tokens share one forward row (default true; false runs one row per request). */
      shareRows?: boolean;
    },
  ) {}

  /** Logits of the next token after `tokens`. */
  next(tokens: readonly number[]): Promise<Float32Array> {
    return new Promise((resolve, reject) => this.submit(new PromiseRequest(tokens, resolve, reject)));
  }

  /**
   * Queues `request` for a forward pass, without a promise: its `settle` gets its row's logits (a
   * caller that already has a promise of its own, such as a completion, makes no second one).
   */
  submit(request: BatchRequest): void {
    this.queue.push(request);
    if (this.queue.length >= this.options.maxBatch && !this.running) this.flush();
    else this.schedule();
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
    let time = 0;
    for (const p of batch) if (p.tokens.length > time) time = p.tokens.length;
    const { slot, firsts } = rowsOf(batch, this.options.shareRows !== false);
    const count = firsts.length;
    const { tokens, rows } = packRows(firsts, time);
    const v = this.options.vocabSize;
    this.options
      .policy()
      .logits({ tokens, batch: count, time, rows })
      .then(
        (logits) => {
          // One view per forward row, shared by the requests of that row (the same memory either way).
          const views: (Float32Array | undefined)[] = new Array(count);
          for (let b = 0; b < batch.length; b++) {
            const u = slot[b] as number;
            const request = batch[b] as BatchRequest;
            // One request's failure (its sampling, its next step) is its own: the rest still settle.
            try {
              let view = views[u];
              if (view === undefined) {
                view = logits.subarray(u * v, (u + 1) * v);
                views[u] = view;
              }
              request.settle(view);
            } catch (error) {
              request.fail(error);
            }
          }
        },
        (error) => {
          for (const p of batch) p.fail(error);
        },
      )
      .finally(() => {
        this.stats.batches++;
        this.stats.rows += batch.length;
        this.stats.forwardRows += count;
        this.stats.forwardCells += count * time;
        this.stats.forwardMs += performance.now() - started;
        this.running = false;
        if (this.queue.length >= this.options.maxBatch) this.flush();
        else if (this.queue.length) this.schedule();
      });
  }
}

/**
 * The rows of one forward pass for `batch`: each request's row (`slot`) and each row's tokens
 * (`firsts`). With `share`, requests with the same tokens share one row: the same logits, computed once.
 */
function rowsOf(batch: readonly BatchRequest[], share: boolean): { slot: Int32Array; firsts: (readonly number[])[] } {
  if (!share) {
    const slot = new Int32Array(batch.length);
    for (let b = 0; b < batch.length; b++) slot[b] = b;
    return { slot, firsts: batch.map((request) => request.tokens) };
  }
  // Rows found by a 32-bit hash of their tokens and length, compared token by token (no joined string per request).
  const { slot, firsts } = distinctRows(
    batch.length,
    (b) => {
      const tokens = (batch[b] as BatchRequest).tokens;
      return fnv1a(tokens, 0, tokens.length, FNV_OFFSET_BASIS ^ tokens.length);
    },
    (a, b) => sameRow((batch[a] as BatchRequest).tokens, (batch[b] as BatchRequest).tokens),
  );
  return { slot, firsts: firsts.map((b) => (batch[b] as BatchRequest).tokens) };
}

function sameRow(a: readonly number[], b: readonly number[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** The rows' tokens left-aligned in a [rows, `time`] grid (zero-padded), and the flat index of each row's last token. */
function packRows(firsts: readonly (readonly number[])[], time: number): { tokens: Int32Array; rows: number[] } {
  const tokens = new Int32Array(firsts.length * time);
  const rows: number[] = [];
  for (let u = 0; u < firsts.length; u++) {
    const t = firsts[u] as readonly number[];
    tokens.set(t, u * time);
    rows.push(u * time + t.length - 1);
  }
  return { tokens, rows };
}
