import {
  ConfigError,
  type ModelCallOptions,
  type ModelClient,
  type ModelRequest,
  type ModelResponse,
  OpenAICompatibleClient,
  ProviderError,
  type RetryOptions,
  type Sampling,
} from '@troupe/verifiers';
import { ServedModelError } from '../errors/served-model-error.ts';
import { adminRoot, isLive } from './inference-admin.ts';
import type { VersionedInference } from './weight-relay.ts';

/** Deadline of the `/liveness` check made when every server is marked down (see `InferencePool.recheck`). */
const RECHECK_TIMEOUT_MS = 30_000;

/** The policy versions one rollout was sampled under (prime-rl's `PolicySpan`). */
export interface PolicySpan {
  /** Version served when the rollout's first call started. */
  start: number;
  /** Version served when its last call ended. */
  end: number;
}

/** One model call of a rollout, as recorded by a {@link RolloutClient}. */
export interface RecordedCall {
  /** Index of the server (in `baseUrls`) that answered. */
  server: number;
  versionAtStart: number;
  versionAtEnd: number;
  /** Sampling temperature of the call (what the trainer divides its logits by for these tokens). */
  temperature: number;
  completionTokens: number;
}

/** Options of {@link InferencePool}. */
export interface InferencePoolOptions {
  /** OpenAI-compatible base URLs of the servers, e.g. `["http://10.0.0.1:8000/v1", "http://10.0.0.2:8000/v1"]`. */
  baseUrls: readonly string[];
  /** Model name the servers serve (vLLM `--served-model-name`), or the LoRA adapter's name requests ask for. */
  model: string;
  /**
   * The name the servers serve at start, checked by {@link InferencePool.checkServedModel} (default
   * `model`): the base model when `model` is a LoRA adapter loaded afterwards, as prime-rl checks
   * the base model first and names the adapter once loaded (`orchestrator/orchestrator.py:361-363`).
   */
  startModel?: string;
  /** Default `EMPTY`, as vLLM without `--api-key`. */
  apiKey?: string;
  /** Sampling defaults; a request's own sampling wins. */
  sampling?: Sampling;
  retry?: RetryOptions;
  /** Per-call timeout (default 10 minutes). */
  timeoutMs?: number;
  /** Policy version served at start (default 0). */
  version?: number;
  fetch?: typeof fetch;
}

/**
 * Several OpenAI-compatible inference servers (vLLM) as one `ModelClient`: each call goes to the
 * healthy server with the fewest calls in flight (ties rotate), asks for token ids and logprobs
 * (`return_token_ids`, `logprobs`), and carries `cache_salt` = the policy version so the prefix
 * cache never reuses keys computed under older weights. Health is `GET /liveness` at each
 * server's root; a server that fails a call or a check is skipped until a health check passes
 * again. When every server is marked down, a call first checks them all once more.
 */
export class InferencePool implements ModelClient, VersionedInference {
  readonly model: string;
  /** The name {@link checkServedModel} looks for (`startModel`, default {@link model}). */
  readonly startModel: string;
  readonly baseUrls: readonly string[];
  private readonly clients: OpenAICompatibleClient[];
  private readonly inFlight: number[];
  private readonly live: boolean[];
  private readonly fetcher: typeof fetch;
  private readonly defaultTemperature: number;
  private readonly apiKey: string;
  private current: number;
  private cursor = 0;
  private rechecking: Promise<boolean[]> | null = null;

  constructor(options: InferencePoolOptions) {
    if (options.baseUrls.length === 0)
      throw new ConfigError('InferencePool: baseUrls: at least one inference server', { path: 'baseUrls' });
    this.model = options.model;
    this.startModel = options.startModel ?? options.model;
    this.baseUrls = [...options.baseUrls];
    this.fetcher = options.fetch ?? fetch;
    this.current = options.version ?? 0;
    this.defaultTemperature = options.sampling?.temperature ?? 1;
    this.apiKey = options.apiKey ?? 'EMPTY';
    this.clients = options.baseUrls.map(
      (baseUrl) =>
        new OpenAICompatibleClient({
          baseUrl,
          apiKey: options.apiKey ?? 'EMPTY',
          model: options.model,
          returnTokenIds: true,
          logprobs: true,
          ...(options.sampling ? { sampling: options.sampling } : {}),
          ...(options.retry ? { retry: options.retry } : {}),
          ...(options.timeoutMs ? { timeoutMs: options.timeoutMs } : {}),
          ...(options.fetch ? { fetch: options.fetch } : {}),
        }),
    );
    this.inFlight = options.baseUrls.map(() => 0);
    this.live = options.baseUrls.map(() => true);
  }

  /** Policy version the servers hold. */
  get version(): number {
    return this.current;
  }

  setVersion(version: number): void {
    this.current = version;
  }

  /** Calls in flight per server. */
  outstanding(): number[] {
    return [...this.inFlight];
  }

  /** Health per server as last seen. */
  health(): boolean[] {
    return [...this.live];
  }

  /** `GET /liveness` on every server; updates which servers are routed to. */
  async checkHealth(options: { timeoutMs?: number } = {}): Promise<boolean[]> {
    const results = await Promise.all(
      this.baseUrls.map((baseUrl) =>
        isLive({ root: adminRoot(baseUrl), timeoutMs: options.timeoutMs ?? 5000, fetch: this.fetcher }),
      ),
    );
    results.forEach((ok, index) => {
      this.live[index] = ok;
    });
    return results;
  }

  /** Runs {@link checkHealth} every `intervalMs`; returns a stop function. */
  startHealthChecks(options: { intervalMs: number; timeoutMs?: number }): () => void {
    const timer = setInterval(() => {
      this.checkHealth(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}).catch(() => undefined);
    }, options.intervalMs);
    timer.unref();
    return () => clearInterval(timer);
  }

  /**
   * Waits until every server answers `/liveness`, then checks that each serves {@link startModel}
   * (`GET <baseUrl>/models`), as prime-rl's `wait_for_ready` does (`src/prime_rl/utils/client.py:82-87`
   * at 559b447): a {@link ServedModelError} names the first server that does not.
   */
  async waitUntilLive(options: { timeoutMs: number; pollMs?: number }): Promise<void> {
    const deadline = Date.now() + options.timeoutMs;
    for (;;) {
      const results = await this.checkHealth();
      if (results.every(Boolean)) return this.checkServedModel({ timeoutMs: Math.max(5000, deadline - Date.now()) });
      if (Date.now() >= deadline) {
        const down = this.baseUrls.filter((_, index) => !results[index]);
        throw new ProviderError(`inference servers not live after ${options.timeoutMs} ms: ${down.join(', ')}`, {
          statusCode: 503,
        });
      }
      await new Promise((resolve) => setTimeout(resolve, options.pollMs ?? 500));
    }
  }

  /**
   * `GET <baseUrl>/models` on every server: each must list {@link startModel} among `data[].id`
   * (prime-rl's `maybe_check_has_model`, `src/prime_rl/utils/client.py:159-172` at 559b447), else a
   * {@link ServedModelError} naming the server and the names it serves. A server that does not
   * answer, or answers with something that is not a model list, fails the same way (no names).
   */
  async checkServedModel(options: { timeoutMs?: number } = {}): Promise<void> {
    const lists = await Promise.all(
      this.baseUrls.map(async (baseUrl) => {
        try {
          const response = await this.fetcher(`${baseUrl.replace(/\/+$/, '')}/models`, {
            signal: AbortSignal.timeout(options.timeoutMs ?? 30_000),
            headers: { authorization: `Bearer ${this.apiKey}` },
          });
          const body = (await response.json()) as { data?: { id?: unknown }[] };
          if (!response.ok || !Array.isArray(body?.data)) throw new ProviderError(`answered ${response.status}`);
          return { baseUrl, served: body.data.map((entry) => String(entry?.id)) };
        } catch (error) {
          return { baseUrl, served: [] as string[], error };
        }
      }),
    );
    for (const { baseUrl, served, error } of lists as { baseUrl: string; served: string[]; error?: unknown }[])
      if (!served.includes(this.startModel))
        throw new ServedModelError({ baseUrl, model: this.startModel, served, cause: error });
  }

  /** Answers with the current version as `cache_salt`. */
  complete(request: ModelRequest, options?: ModelCallOptions): Promise<ModelResponse> {
    return this.call(request, String(this.current), options).then(({ response }) => response);
  }

  /**
   * A client for one rollout: its calls all carry the salt of the version the rollout started
   * under (as prime-rl salts by the group's dispatch version), and it records the policy span
   * and each call's temperature.
   */
  rollout(): RolloutClient {
    return new RolloutClient(this);
  }

  /** @internal */
  async call(
    request: ModelRequest,
    cacheSalt: string,
    options?: ModelCallOptions,
  ): Promise<{ response: ModelResponse; server: number; temperature: number }> {
    let server = this.pick();
    if (server < 0) server = await this.recheck();
    const sampling: Sampling = { ...request.sampling, extra: { ...request.sampling.extra, cache_salt: cacheSalt } };
    // The served name, whatever the request says (inside troupe it names the policy, e.g. `main`;
    // vLLM refuses any name it does not serve). prime-rl sends its configured model name too
    // (`src/prime_rl/orchestrator/dispatcher.py:503-530` at 559b447).
    this.inFlight[server]!++;
    const versionAtStart = this.current;
    try {
      const response = await this.clients[server]!.complete({ ...request, model: this.model, sampling }, options);
      // vLLM does not say which weights answered; the version did not change during the call, so
      // those were this one (a call across an update is left unmarked: drained or held, either can be).
      if (response.policyVersion === undefined && this.current === versionAtStart) response.policyVersion = versionAtStart;
      return { response, server, temperature: request.sampling.temperature ?? this.defaultTemperature };
    } catch (error) {
      if (!options?.signal?.aborted && (error as { statusCode?: number }).statusCode === 502) this.live[server] = false;
      throw error;
    } finally {
      this.inFlight[server]!--;
    }
  }

  private pick(): number {
    const n = this.baseUrls.length;
    let best = -1;
    for (let k = 0; k < n; k++) {
      const index = (this.cursor + k) % n;
      if (!this.live[index]) continue;
      if (best < 0 || this.inFlight[index]! < this.inFlight[best]!) best = index;
    }
    if (best >= 0) this.cursor = (best + 1) % n;
    return best;
  }

  /**
   * Every server failed its last check. A busy server can miss one `/liveness` deadline (a
   * loaded host, a long batch), so before failing the call: one more check, shared by the calls
   * that wait for it, with a longer deadline.
   */
  private async recheck(): Promise<number> {
    this.rechecking ??= this.checkHealth({ timeoutMs: RECHECK_TIMEOUT_MS }).finally(() => {
      this.rechecking = null;
    });
    await this.rechecking;
    const server = this.pick();
    if (server < 0) {
      throw new ProviderError(`no live inference server among ${this.baseUrls.join(', ')} (last /liveness failed)`, {
        statusCode: 503,
      });
    }
    return server;
  }
}

/** A `ModelClient` for one rollout on an {@link InferencePool}; see {@link InferencePool.rollout}. */
export class RolloutClient implements ModelClient {
  readonly model: string;
  /** Every call, in completion order. */
  readonly calls: RecordedCall[] = [];
  private startVersion: number | null = null;
  private endVersion: number | null = null;

  constructor(private readonly pool: InferencePool) {
    this.model = pool.model;
  }

  /** Versions the rollout spans; null before its first call. Staleness at step s is `(s − 1) − span.start`. */
  get span(): PolicySpan | null {
    return this.startVersion === null ? null : { start: this.startVersion, end: this.endVersion ?? this.startVersion };
  }

  async complete(request: ModelRequest, options?: ModelCallOptions): Promise<ModelResponse> {
    const versionAtStart = this.pool.version;
    this.startVersion ??= versionAtStart;
    const { response, server, temperature } = await this.pool.call(request, String(this.startVersion), options);
    const versionAtEnd = this.pool.version;
    this.endVersion = Math.max(this.endVersion ?? versionAtEnd, versionAtEnd);
    this.calls.push({
      server,
      versionAtStart,
      versionAtEnd,
      temperature,
      completionTokens: response.completionTokenIds?.length ?? response.usage.completionTokens,
    });
    return response;
  }

  /** The temperature of every sampled token, in call order (concatenated completions). */
  completionTemperatures(): number[] {
    const out: number[] = [];
    for (const call of this.calls) for (let t = 0; t < call.completionTokens; t++) out.push(call.temperature);
    return out;
  }
}
