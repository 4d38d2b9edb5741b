import { randomBytes, timingSafeEqual } from 'node:crypto';
import { LimitError, ProviderError, RolloutConcludedError } from '../errors/troupe-error.ts';
import type { ModelCallOptions, ModelClient, ModelRequest, ModelResponse, Sampling } from '../model/model-client.ts';
import type { Trace } from '../trace/trace.ts';
import type { StopCondition } from '../trace/trace-schema.ts';
import { canonicalJson, sha256 } from '../util/hash.ts';

/** Per-rollout limits; null / undefined = unlimited. */
export interface RolloutLimits {
  maxTurns?: number | null;
  maxInputTokens?: number | null;
  maxOutputTokens?: number | null;
  maxTotalTokens?: number | null;
}

/**
 * What a {@link RolloutSession} records into and enforces: the trace, the client that answers, the
 * run's model and sampling, its token and turn limits, and extra stop checks.
 */
export interface RolloutSessionOptions {
  /** The trace every call is recorded into. */
  trace: Trace;
  /** The client that answers the calls. */
  client: ModelClient;
  /** The run's model, imposed on every call. */
  model: string;
  /** The run's sampling, merged over what the program asks for. */
  sampling?: Sampling;
  /** Turn and token caps; the call that would pass one is refused and the trace stops. */
  limits?: RolloutLimits;
  /** Extra stop checks run before each call; return a condition name to stop. */
  stops?: ((trace: Trace, request: ModelRequest) => StopCondition | null | undefined)[];
}

/**
 * Facts about one incoming call besides its body: the dialect it arrived in, the client's retry count
 * and the abort signal.
 */
export interface HandleMeta {
  /** The wire dialect (`chat`, `responses`, `messages`, or `direct` for an in-process call). */
  dialect: string;
  /** Value of `x-stainless-retry-count` (0 for a first attempt). */
  retryCount?: number;
  /** Aborts the call when the client disconnects or the run ends. */
  signal?: AbortSignal;
}

/**
 * One rollout's view of interception: imposes the run's model and sampling, enforces limits,
 * guards against double sampling on SDK retries, calls the client and records every call into
 * the live trace. Every dialect and the in-process transport go through `handle`.
 */
export class RolloutSession {
  readonly trace: Trace;
  readonly model: string;
  private readonly client: ModelClient;
  private readonly sampling: Sampling;
  private readonly limits: RolloutLimits;
  private readonly stops: NonNullable<RolloutSessionOptions['stops']>;
  private concludedReason: string | null = null;
  /** The last request and its answer: a retry of an identical body joins it instead of sampling again. */
  private recentRequest: ModelRequest | null = null;
  private recentPromise: Promise<ModelResponse> | null = null;
  /** The last provider error, so the trace can record it rather than the harness's exit. */
  providerError: ProviderError | null = null;
  /** Calls in flight, and who waits for there to be none (draining before the trace is closed). */
  private pending = 0;
  private idleWaiters: (() => void)[] | null = null;

  constructor(options: RolloutSessionOptions) {
    this.trace = options.trace;
    this.client = options.client;
    this.model = options.model;
    this.sampling = options.sampling ?? {};
    this.limits = options.limits ?? {};
    this.stops = options.stops ?? [];
  }

  private secretValue: string | undefined;

  /**
   * The rollout secret: a program's bearer token / `x-api-key`, made when first read (an
   * in-process loop never reads it, and a game plays two sessions per hand).
   */
  get secret(): string {
    this.secretValue ??= `rs-${secretBytes().toString('base64url')}`;
    return this.secretValue;
  }

  /** Whether a call is in flight (`drain` would wait). */
  get inFlight(): boolean {
    return this.pending > 0;
  }

  get concluded(): boolean {
    return this.concludedReason !== null;
  }

  /** Constant-time secret comparison. */
  matches(secret: string): boolean {
    const a = Buffer.from(secret);
    const b = Buffer.from(this.secret);
    return a.length === b.length && timingSafeEqual(a, b);
  }

  /** Ends the rollout: later requests get 409. */
  conclude(reason = 'concluded'): void {
    if (this.concludedReason === null) this.concludedReason = reason;
  }

  /** Waits until no call is in flight (each one recorded, answered or failed). */
  async drain(): Promise<void> {
    if (this.pending === 0) return;
    await new Promise<void>((resolve) => {
      this.idleWaiters ??= [];
      this.idleWaiters.push(resolve);
    });
  }

  handle(request: ModelRequest, meta: HandleMeta): Promise<ModelResponse> {
    // Not `async`: the call's own promise is returned as is (one promise less per call); a
    // refusal still arrives as a rejection, never as a synchronous throw.
    try {
      return this.start(request, meta);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  private start(request: ModelRequest, meta: HandleMeta): Promise<ModelResponse> {
    if (this.concludedReason !== null) {
      throw new RolloutConcludedError(`rollout ${this.trace.id} has ended (${this.concludedReason})`, { statusCode: 409 });
    }
    const imposed: ModelRequest = { ...request, model: this.model, sampling: { ...request.sampling, ...this.sampling } };
    // Hashing only when a retry arrives keeps the guard off the hot path of first attempts.
    if (
      (meta.retryCount ?? 0) > 0 &&
      this.recentRequest &&
      this.recentPromise &&
      requestKey(this.recentRequest) === requestKey(request)
    ) {
      return this.recentPromise;
    }
    const why = this.limitReached(imposed);
    if (why) {
      this.trace.stop(why);
      throw new LimitError(`rollout stopped: ${why}`, { statusCode: 400 });
    }
    // Counted here, uncounted when `call` settles: no set of promises and no handlers per call.
    this.pending++;
    const promise = this.call(imposed, meta);
    this.recentRequest = request;
    this.recentPromise = promise;
    return promise;
  }

  /**
   * Calls the client and records the call when it settles. Not `async`: one reaction on the
   * client's promise (no async frame per call); the answer arrives in the same microtask turn as
   * an awaiting frame's would.
   */
  private call(request: ModelRequest, meta: HandleMeta): Promise<ModelResponse> {
    const startedAt = Date.now();
    let answer: Promise<ModelResponse>;
    try {
      answer = this.client.complete(request, this.callOptions(meta.signal));
    } catch (error) {
      // A client that throws rather than rejects: recorded now, as the awaiting frame did.
      try {
        this.failed(request, meta, startedAt, error);
      } catch (providerError) {
        return Promise.reject(providerError);
      }
    }
    return answer.then(
      (response) => this.answered(request, meta, startedAt, response),
      (error: unknown) => this.failed(request, meta, startedAt, error),
    );
  }

  /** Records a call that `response` answered. */
  private answered(request: ModelRequest, meta: HandleMeta, startedAt: number, response: ModelResponse): ModelResponse {
    try {
      const durationMs = Date.now() - startedAt;
      this.trace.recordCall(request, response, { dialect: meta.dialect, startedAt, durationMs });
      this.trace.timing.model = (this.trace.timing.model ?? 0) + durationMs / 1000;
      return response;
    } catch (error) {
      // Recording failed: the call fails as it did when recording ran in the awaiting frame.
      return this.failed(request, meta, startedAt, error, true);
    } finally {
      this.settled();
    }
  }

  /** Records a failed call and throws the provider error it becomes. */
  private failed(request: ModelRequest, meta: HandleMeta, startedAt: number, error: unknown, counted = false): never {
    try {
      this.trace.recordFailedCall(request, error, { dialect: meta.dialect, startedAt, durationMs: Date.now() - startedAt });
      const status = statusOf(error);
      const message = (error as Error)?.message ?? String(error);
      if (status === 400 && /context|too long|maximum.*tokens/i.test(message)) this.trace.stop('context_length');
      const providerError = ProviderError.isInstance(error)
        ? error
        : new ProviderError(message, { cause: error, statusCode: status ?? 502 });
      this.providerError = providerError;
      throw providerError;
    } finally {
      if (!counted) this.settled();
    }
  }

  /** A call settled: wakes `drain` waiters when none is left in flight. */
  private settled(): void {
    if (--this.pending === 0 && this.idleWaiters) {
      const waiters = this.idleWaiters;
      this.idleWaiters = null;
      for (const resolve of waiters) resolve();
    }
  }

  /** The client's options for a call with `signal`: one object while the signal stays the same. */
  private callOptions(signal: AbortSignal | undefined): ModelCallOptions {
    if (!signal) return NO_CALL_OPTIONS;
    if (this.lastCallOptions?.signal !== signal) this.lastCallOptions = { signal };
    return this.lastCallOptions;
  }

  private lastCallOptions: ModelCallOptions | undefined;

  private limitReached(request: ModelRequest): StopCondition | null {
    const { maxTurns, maxInputTokens, maxOutputTokens, maxTotalTokens } = this.limits;
    if (this.trace.stopCondition && this.trace.stopCondition !== 'agent_completed') return this.trace.stopCondition;
    if (maxTurns != null && this.trace.numTurns >= maxTurns) return 'max_turns';
    if (maxInputTokens != null || maxOutputTokens != null || maxTotalTokens != null) {
      const usage = this.trace.usage;
      const input = usage.promptTokens + (usage.cachedInputTokens ?? 0);
      if (maxInputTokens != null && input >= maxInputTokens) return 'max_input_tokens';
      if (maxOutputTokens != null && usage.completionTokens >= maxOutputTokens) return 'max_output_tokens';
      if (maxTotalTokens != null && input + usage.completionTokens >= maxTotalTokens) return 'max_total_tokens';
    }
    for (const stop of this.stops) {
      const condition = stop(this.trace, request);
      if (condition) return condition;
    }
    return null;
  }
}

/** The client's options of a call without a signal (frozen: shared by every such call). */
const NO_CALL_OPTIONS: ModelCallOptions = Object.freeze({});

/** Secret bytes are cut from a pool refilled by one `randomBytes` call per 256 sessions (a syscall each otherwise). */
const SECRET_BYTES = 24;
let secretPool = Buffer.alloc(0);
let secretOffset = 0;
function secretBytes(): Buffer {
  if (secretOffset + SECRET_BYTES > secretPool.length) {
    secretPool = randomBytes(SECRET_BYTES * 256);
    secretOffset = 0;
  }
  const bytes = secretPool.subarray(secretOffset, secretOffset + SECRET_BYTES);
  secretOffset += SECRET_BYTES;
  return bytes;
}

function statusOf(error: unknown): number | undefined {
  const e = error as { statusCode?: unknown; status?: unknown };
  const status = e?.statusCode ?? e?.status;
  return typeof status === 'number' ? status : undefined;
}

function requestKey(request: ModelRequest): string {
  return sha256(canonicalJson({ m: request.messages, t: request.tools, c: request.toolChoice }));
}
