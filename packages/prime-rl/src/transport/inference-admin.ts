import { setTimeout as sleep } from 'node:timers/promises';
import { ConfigError, ProviderError, TroupeError } from '@troupe/verifiers';
import { z } from 'zod';

/** prime-rl's admin retry rules (`utils/client.py`), overridable for tests. */
export const AdminRetrySchema = z
  .strictObject({
    /** Attempts per call, the first included (prime-rl: 10). */
    maxAttempts: z.number().int().positive().default(10),
    /** Exponential backoff between attempts: `min(max(minDelayMs, 2^(n−1)·multiplierMs), maxDelayMs)` (prime-rl: 1 s … 10 s). */
    minDelayMs: z.number().nonnegative().default(1000),
    maxDelayMs: z.number().nonnegative().default(10_000),
    multiplierMs: z.number().nonnegative().default(1000),
    /** Per-attempt timeout of `/pause` and `/resume` (prime-rl: 300 s); the whole call stops after twice this. */
    adminTimeoutMs: z.number().int().positive().default(300_000),
    /** Per-attempt timeout of `/update_weights` (prime-rl: 720 s). */
    updateTimeoutMs: z.number().int().positive().default(720_000),
    /** Per-attempt timeout of `/load_lora_adapter` (prime-rl: 30 s read, `utils/client.py:342`). */
    loraTimeoutMs: z.number().int().positive().default(30_000),
    /** Whole budget of `/load_lora_adapter` over its retries (prime-rl: 120 s, `utils/client.py:343`). */
    loraTotalMs: z.number().int().positive().default(120_000),
  })
  .default({
    maxAttempts: 10,
    minDelayMs: 1000,
    maxDelayMs: 10_000,
    multiplierMs: 1000,
    adminTimeoutMs: 300_000,
    updateTimeoutMs: 720_000,
    loraTimeoutMs: 30_000,
    loraTotalMs: 120_000,
  });
/**
 * Retry and timeout settings of the inference admin calls (`/pause`, `/update_weights`, `/resume`),
 * as given (every field optional; times in milliseconds); see {@link AdminRetrySchema}.
 */
export type AdminRetry = z.input<typeof AdminRetrySchema>;

/** An admin call that failed for good: the server, the route, the attempts and the last cause. */
export class AdminCallError extends TroupeError {
  constructor(
    message: string,
    readonly url: string,
    readonly status: number | null,
    readonly attempts: number,
    options?: { cause?: unknown },
  ) {
    super({ name: 'AdminCallError', message, cause: options?.cause, ...(status === null ? {} : { statusCode: status }) });
  }

  /** True for an `AdminCallError` from any copy of this package. */
  static override isInstance(error: unknown): error is AdminCallError {
    return TroupeError.isKind(error, 'AdminCallError');
  }
}

/** The server root of an OpenAI base URL: admin routes live at the root, not under `/v1`. */
export function adminRoot(baseUrl: string): string {
  return baseUrl.replace(/\/+$/, '').replace(/\/v1$/, '');
}

/** Options of {@link InferenceAdmin}. */
export interface InferenceAdminOptions {
  /** OpenAI-compatible base URLs (`http://host:8000/v1`) of every inference server. */
  baseUrls: readonly string[];
  retry?: AdminRetry;
  /** Extra headers (e.g. authorization) on every admin call. */
  headers?: Record<string, string>;
  fetch?: typeof fetch;
  /** Called before each retry wait (logs, tests). */
  onRetry?: (info: { url: string; attempt: number; delayMs: number; error: unknown }) => void;
}

/** A failed admin call that is retried (5xx, transport errors); never leaves this module. */
class RetryableError extends ProviderError {
  constructor(
    message: string,
    readonly status: number | null,
    options?: { cause?: unknown },
  ) {
    super(message, options ?? {});
  }
}

/**
 * The weight-update calls prime-rl's orchestrator makes on vLLM servers: `/pause`,
 * `/update_weights`, `/resume`, with its retry rules: 5xx and transport errors (refused, reset,
 * timed out) are retried with exponential backoff, at most `maxAttempts` attempts and twice the
 * per-attempt timeout in total; 4xx fail at once.
 */
export class InferenceAdmin {
  readonly roots: readonly string[];
  private readonly retry: z.output<typeof AdminRetrySchema>;
  private readonly fetcher: typeof fetch;

  constructor(private readonly options: InferenceAdminOptions) {
    if (options.baseUrls.length === 0)
      throw new ConfigError('InferenceAdmin: baseUrls: at least one inference server', { path: 'baseUrls' });
    this.roots = options.baseUrls.map(adminRoot);
    const parsed = AdminRetrySchema.safeParse(options.retry ?? {});
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const path = `retry.${issue?.path.join('.')}`;
      throw new ConfigError(`InferenceAdmin: ${path}: ${issue?.message}`, { path });
    }
    this.retry = parsed.data;
    this.fetcher = options.fetch ?? fetch;
  }

  /**
   * Updates every server to the weights in `weightDir`: pauses all (draining in-flight requests,
   * keeping the prefix cache: `mode=keep&clear_cache=false`), then `POST /update_weights
   * {"weight_dir"}` on all, then resumes all — the resume runs in a `finally`, whatever failed.
   */
  async updateWeights(options: { weightDir: string }): Promise<void> {
    try {
      await Promise.all(
        this.roots.map((root) =>
          this.post({ root, path: '/pause?mode=keep&clear_cache=false', timeoutMs: this.retry.adminTimeoutMs }),
        ),
      );
      await Promise.all(
        this.roots.map((root) =>
          this.post({
            root,
            path: '/update_weights',
            body: { weight_dir: options.weightDir },
            timeoutMs: this.retry.updateTimeoutMs,
          }),
        ),
      );
    } finally {
      await Promise.allSettled(
        this.roots.map((root) => this.post({ root, path: '/resume', timeoutMs: this.retry.adminTimeoutMs })),
      ).then((results) => {
        const failed = results.find((result) => result.status === 'rejected');
        if (failed) throw (failed as PromiseRejectedResult).reason;
      });
    }
  }

  /**
   * Loads the adapter in `loraPath` under `loraName` on every server, replacing the weights an
   * adapter of that name had: prime-rl's `POST /load_lora_adapter {lora_name, lora_path}` (its own
   * route, wrapping vLLM's `/v1/load_lora_adapter` with `load_inplace` forced:
   * `src/prime_rl/inference/vllm/server.py:90-116` at 559b447), called instead of `/pause` →
   * `/update_weights` → `/resume` (`utils/client.py:294-295`). As prime-rl does
   * (`utils/client.py:323-375`), 404 (adapter files not visible yet) and 500 are retried as
   * transport errors are, each try bounded by `loraTimeoutMs`, all of them by `loraTotalMs`.
   */
  async loadLoraAdapter(options: { loraName: string; loraPath: string }): Promise<void> {
    await Promise.all(
      this.roots.map((root) =>
        this.post({
          root,
          path: '/load_lora_adapter',
          body: { lora_name: options.loraName, lora_path: options.loraPath },
          timeoutMs: this.retry.loraTimeoutMs,
          budgetMs: this.retry.loraTotalMs,
          retryStatuses: [404],
        }),
      ),
    );
  }

  /** `GET /liveness` on every server: true where it answered 2xx within `timeoutMs`. */
  async liveness(options: { timeoutMs?: number } = {}): Promise<boolean[]> {
    return Promise.all(this.roots.map((root) => isLive({ root, timeoutMs: options.timeoutMs ?? 5000, fetch: this.fetcher })));
  }

  /**
   * One admin POST with prime-rl's retry rules: 5xx, transport errors and `retryStatuses` are
   * retried within `budgetMs` (default twice `timeoutMs`).
   */
  async post(options: {
    root: string;
    path: string;
    body?: unknown;
    timeoutMs: number;
    budgetMs?: number;
    retryStatuses?: readonly number[];
  }): Promise<void> {
    const url = `${options.root}${options.path}`;
    const started = Date.now();
    const budgetMs = options.budgetMs ?? 2 * options.timeoutMs;
    for (let attempt = 1; ; attempt++) {
      try {
        await this.attempt(url, options.body, options.timeoutMs);
        return;
      } catch (error) {
        const status = error instanceof RetryableError ? error.status : ((error as { status?: number }).status ?? null);
        const retryable = error instanceof RetryableError || (status !== null && (options.retryStatuses ?? []).includes(status));
        const delayMs = Math.min(
          Math.max(this.retry.minDelayMs, this.retry.multiplierMs * 2 ** (attempt - 1)),
          this.retry.maxDelayMs,
        );
        if (!retryable || attempt >= this.retry.maxAttempts || Date.now() - started >= budgetMs) {
          throw new AdminCallError(
            `POST ${url} failed${attempt > 1 ? ` after ${attempt} attempts` : ''}: ${(error as Error).message}`,
            url,
            status,
            attempt,
            { cause: error },
          );
        }
        this.options.onRetry?.({ url, attempt, delayMs, error });
        await sleep(delayMs);
      }
    }
  }

  private async attempt(url: string, body: unknown, timeoutMs: number): Promise<void> {
    let response: Response;
    try {
      response = await this.fetcher(url, {
        method: 'POST',
        headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...this.options.headers },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (error) {
      const cause = (error as { cause?: { code?: string } }).cause?.code;
      throw new RetryableError(
        `${(error as Error).name === 'TimeoutError' ? `timed out after ${timeoutMs} ms` : (error as Error).message}${cause ? ` (${cause})` : ''}`,
        null,
        {
          cause: error,
        },
      );
    }
    let text: string;
    try {
      text = await response.text();
    } catch (error) {
      throw new RetryableError(`reading the reply: ${(error as Error).message}`, response.status, { cause: error });
    }
    if (response.status >= 500) throw new RetryableError(`answered ${response.status}: ${text.slice(0, 200)}`, response.status);
    if (!response.ok)
      throw Object.assign(
        new ProviderError(`answered ${response.status}: ${text.slice(0, 200)}`, { statusCode: response.status }),
        {
          status: response.status,
        },
      );
  }
}

/** True when `GET <root>/liveness` answers 2xx within `timeoutMs`. */
export async function isLive(options: { root: string; timeoutMs: number; fetch?: typeof fetch }): Promise<boolean> {
  try {
    const response = await (options.fetch ?? fetch)(`${options.root}/liveness`, {
      signal: AbortSignal.timeout(options.timeoutMs),
    });
    await response.arrayBuffer().catch(() => undefined);
    return response.ok;
  } catch {
    return false;
  }
}
