import { randomBytes, timingSafeEqual } from 'node:crypto';
import { type InterceptionError, LimitError, ProviderError, RolloutConcludedError } from '../errors/troupe-error.ts';
import type { ModelCallOptions, ModelClient, ModelRequest, ModelResponse, Sampling } from '../model/model-client.ts';
import type { Trace } from '../trace/trace.ts';
import type { StopCondition } from '../trace/trace-schema.ts';
import { AbortRelay } from '../util/abort-relay.ts';
import { canonicalJson, sha256 } from '../util/hash.ts';

/** Per-rollout limits; null / undefined = unlimited. */
export interface RolloutLimits {
  maxTurns?: number | null;
  maxInputTokens?: number | null;
  maxOutputTokens?: number | null;
  maxTotalTokens?: number | null;
  /**
   * Bytes the rollout may record (its messages, token ids, calls and tool calls), default
   * {@link DEFAULT_MAX_TRACE_BYTES}. A call that would pass it is refused and the trace stops with
   * `max_trace_bytes`; calls in flight count with their request bodies. null = unlimited.
   */
  maxTraceBytes?: number | null;
}

/**
 * The default per-rollout byte budget: 64 MiB, well under V8's longest string (512 Mi characters)
 * so an episode of several such traces is still one line `--resume`, `view` and `export` read back.
 */
export const DEFAULT_MAX_TRACE_BYTES = 64 * 1024 * 1024;

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
  /**
   * The secret works only from the process that made the rollout's first call (see
   * `CallerBinding`): a program whose every model call comes from its own process sets it, so code
   * it runs cannot call with a secret it stole. Enforced by the interception server where it can
   * tell processes apart (Linux); default false.
   */
  bindCaller?: boolean;
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
  /**
   * Size of the request body on the wire, when it came over HTTP: what the call reserves of the
   * rollout's byte budget while in flight (an upper bound of what recording it adds). Without it,
   * the size of the request's messages and tools is estimated.
   */
  bodyBytes?: number;
}

/**
 * One rollout's view of interception: imposes the run's model and sampling, enforces limits,
 * guards against double sampling on SDK retries, calls the client and records every call into
 * the live trace. Every dialect and the in-process transport go through `handle`.
 */
export class RolloutSession {
  readonly trace: Trace;
  readonly model: string;
  /** Whether the secret works only from the process that made the first call ({@link RolloutSessionOptions.bindCaller}). */
  readonly bindsCaller: boolean;
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
  /** Why the session was closed (its program exited), or null while it is open; see `close`. */
  private closedReason: string | null = null;
  /** Aborts the calls in flight when the session closes (made on the first call without a signal of its caller's). */
  private ending: AbortController | undefined;
  /** Per caller's signal, the controller its calls get: aborted by that signal or by `close` (see `callOptions`). */
  private joined: Joined[] | null = null;
  /** Set once `close` stopped waiting: a call that settles later is not recorded at all. */
  private sealed = false;
  /** Refused calls recorded on the trace (the rest are only counted in `calls/refused`). */
  private refusedRecorded = 0;
  /** Bytes recorded so far (see {@link RolloutLimits.maxTraceBytes}) and reserved by calls in flight. */
  private recordedBytes = 0;
  private reservedBytes = 0;
  /**
   * Nodes recorded but not yet measured, as (from, to, cost) triples: measured when a budget check
   * reads `recordedBytes` (see `measure`), so a rollout's last call is never serialized for it.
   */
  private unmeasured: number[] | null = null;
  private readonly maxTraceBytes: number | null;
  /** Whether a token limit is set: calls then pass the limit check one at a time (see `start`). */
  private readonly tokenLimited: boolean;

  constructor(options: RolloutSessionOptions) {
    this.trace = options.trace;
    this.client = options.client;
    this.model = options.model;
    this.sampling = options.sampling ?? {};
    this.limits = options.limits ?? {};
    this.stops = options.stops ?? [];
    this.bindsCaller = options.bindCaller ?? false;
    const { maxInputTokens, maxOutputTokens, maxTotalTokens, maxTraceBytes } = this.limits;
    this.maxTraceBytes = maxTraceBytes === undefined ? DEFAULT_MAX_TRACE_BYTES : maxTraceBytes;
    this.tokenLimited = maxInputTokens != null || maxOutputTokens != null || maxTotalTokens != null;
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

  /**
   * Ends the session with its program: later calls are refused (409, and counted on the trace by
   * `refused`), calls in flight are aborted and recorded as `cut_off` — a reply that still arrives
   * is dropped, so nothing the model says after the program's exit reaches the trace. Waits for the
   * aborted calls to settle, at most `graceMs` (default 2 s); one that settles later is not
   * recorded at all. Returns undefined when no call was in flight (nothing to wait for).
   */
  close(reason = 'program_exited', graceMs = CUT_OFF_GRACE_MS): Promise<void> | undefined {
    this.conclude(reason);
    if (this.closedReason !== null) return undefined;
    this.closedReason = reason;
    if (this.pending === 0) {
      this.sealed = true;
      return undefined;
    }
    const error = this.cutOffError();
    this.ending?.abort(error);
    if (this.joined) for (const joined of this.joined) joined.controller.abort(error);
    return new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, graceMs);
      this.drain().then(() => {
        clearTimeout(timer);
        resolve();
      });
    }).then(() => {
      this.sealed = true;
    });
  }

  /** Whether `close` ended the session (its program exited). */
  get closed(): boolean {
    return this.closedReason !== null;
  }

  /**
   * Records a call the interception server refused without reading its body: one that arrived
   * after the session closed (409), or — with `error` — one from a process the secret is not bound
   * to (403, also counted in `calls/other_process`). On the trace as an `ended: 'refused'` call, the
   * first {@link MAX_REFUSED_RECORDED} of them, and every one counted in the `calls/refused` metric.
   */
  refused(dialect: string, error?: InterceptionError): void {
    const metrics = this.trace.metrics;
    metrics['calls/refused'] = (metrics['calls/refused'] ?? 0) + 1;
    if (error) metrics['calls/other_process'] = (metrics['calls/other_process'] ?? 0) + 1;
    if (this.refusedRecorded >= MAX_REFUSED_RECORDED) return;
    this.refusedRecorded++;
    const reason =
      error ??
      new RolloutConcludedError(`refused: rollout ${this.trace.id} had ended (${this.concludedReason ?? 'ended'})`, {
        statusCode: 409,
      });
    this.trace.recordEndedCall({ ended: 'refused', model: this.model, dialect, startedAt: Date.now(), error: reason });
  }

  /** The error a call cut off by `close` ends with (answered 409 when its connection is still open). */
  private cutOffError(): RolloutConcludedError {
    return new RolloutConcludedError(
      `cut off: rollout ${this.trace.id} ended (${this.closedReason ?? 'closed'}) while this call was in flight`,
      { statusCode: 409 },
    );
  }

  /**
   * A call that settled after `close`: recorded as `cut_off` (without its reply or prompt) unless
   * the session is sealed; the program gets the cut-off error.
   */
  private cutOff(request: ModelRequest, meta: HandleMeta, startedAt: number): never {
    const error = this.cutOffError();
    if (!this.sealed) {
      this.trace.recordEndedCall({ ended: 'cut_off', model: request.model, dialect: meta.dialect, startedAt, error });
    }
    throw error;
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
    // Token usage is known only once a call settles: with a token limit, a call that arrives while
    // others are in flight waits for them, so every check sees the usage of every earlier call
    // (concurrent calls cannot pass a limit together). Turns and bytes are reserved below instead.
    if (this.tokenLimited && this.pending > 0) return this.drain().then(() => this.start(request, meta));
    const cost = this.maxTraceBytes === null ? 0 : (meta.bodyBytes ?? requestBytes(request));
    const why = this.limitReached(imposed, cost);
    if (why) {
      this.trace.stop(why);
      throw new LimitError(`rollout stopped: ${why}${why === 'max_trace_bytes' ? ` (${this.bytesNote(cost)})` : ''}`, {
        statusCode: 400,
      });
    }
    // Counted here, uncounted when `call` settles: no set of promises and no handlers per call.
    // The check above and these reservations run in one synchronous step: calls made at once
    // cannot all pass a limit that only one of them fits under.
    this.pending++;
    this.reservedBytes += cost;
    const promise = this.call(imposed, meta, cost);
    this.recentRequest = request;
    this.recentPromise = promise;
    return promise;
  }

  /**
   * Calls the client and records the call when it settles. Not `async`: one reaction on the
   * client's promise (no async frame per call); the answer arrives in the same microtask turn as
   * an awaiting frame's would.
   */
  private call(request: ModelRequest, meta: HandleMeta, cost: number): Promise<ModelResponse> {
    const startedAt = Date.now();
    let answer: Promise<ModelResponse>;
    try {
      answer = this.client.complete(request, this.callOptions(meta.signal));
    } catch (error) {
      // A client that throws rather than rejects: recorded now, as the awaiting frame did.
      try {
        this.failed({ request, meta, startedAt, cost }, error);
      } catch (providerError) {
        return Promise.reject(providerError);
      }
    }
    return answer.then(
      (response) => this.answered({ request, meta, startedAt, cost }, response),
      (error: unknown) => this.failed({ request, meta, startedAt, cost }, error),
    );
  }

  /** Records a call that `response` answered. */
  private answered(flight: CallInFlight, response: ModelResponse): ModelResponse {
    const { request, meta, startedAt } = flight;
    if (this.closedReason !== null) {
      try {
        return this.cutOff(request, meta, startedAt);
      } finally {
        this.settled(flight.cost);
      }
    }
    try {
      const durationMs = Date.now() - startedAt;
      const nodesBefore = this.trace.nodes.length;
      this.trace.recordCall(request, response, { dialect: meta.dialect, startedAt, durationMs });
      this.countRecorded(nodesBefore, flight.cost);
      this.trace.timing.model = (this.trace.timing.model ?? 0) + durationMs / 1000;
      return response;
    } catch (error) {
      // Recording failed: the call fails as it did when recording ran in the awaiting frame.
      return this.failed(flight, error, true);
    } finally {
      this.settled(flight.cost);
    }
  }

  /** Records a failed call and throws the provider error it becomes. */
  private failed(flight: CallInFlight, error: unknown, counted = false): never {
    const { request, meta, startedAt } = flight;
    if (this.closedReason !== null) {
      try {
        return this.cutOff(request, meta, startedAt);
      } finally {
        if (!counted) this.settled(flight.cost);
      }
    }
    try {
      const nodesBefore = this.trace.nodes.length;
      this.trace.recordFailedCall(request, error, { dialect: meta.dialect, startedAt, durationMs: Date.now() - startedAt });
      if (!counted) this.countRecorded(nodesBefore, flight.cost);
      // This process's own refusal (a request that cannot be serialized, a stack overflow while
      // recording it) is the program's error, answered 400: never a provider error, never retried.
      const local = localError(error);
      if (local) throw local;
      const status = statusOf(error);
      const message = (error as Error)?.message ?? String(error);
      if (status === 400 && /context|too long|maximum.*tokens/i.test(message)) this.trace.stop('context_length');
      const providerError = ProviderError.isInstance(error)
        ? error
        : new ProviderError(message, { cause: error, statusCode: status ?? 502 });
      this.providerError = providerError;
      throw providerError;
    } finally {
      if (!counted) this.settled(flight.cost);
    }
  }

  /**
   * Adds what recording a call added to the trace (the nodes from `nodesBefore` on, exactly as
   * they serialize, and the call's record) to the bytes recorded; `cost` bounds a node that cannot
   * be measured. The nodes are serialized by `measure`, once a check needs the count.
   */
  private countRecorded(nodesBefore: number, cost: number): void {
    if (this.maxTraceBytes === null) return;
    this.recordedBytes += CALL_RECORD_BYTES;
    const nodesAfter = this.trace.nodes.length;
    if (nodesAfter > nodesBefore) (this.unmeasured ??= []).push(nodesBefore, nodesAfter, cost);
  }

  /**
   * Adds the serialized length of the nodes `countRecorded` left unmeasured to the bytes recorded.
   * Every reader of `recordedBytes` calls it first, so each check sees the count it saw when the
   * nodes were measured as they were recorded (a trace's nodes are not changed once added).
   */
  private measure(): void {
    const ranges = this.unmeasured;
    if (ranges === null) return;
    this.unmeasured = null;
    const nodes = this.trace.nodes;
    let bytes = 0;
    for (let r = 0; r < ranges.length; r += 3) {
      const to = ranges[r + 1] as number;
      for (let i = ranges[r] as number; i < to; i++) {
        try {
          bytes += JSON.stringify(nodes[i]).length;
        } catch {
          bytes += ranges[r + 2] as number;
        }
      }
    }
    this.recordedBytes += bytes;
  }

  /**
   * Charges `bytes` that something besides a model call records on this rollout's trace (a served
   * tool call): false — and the trace stops with `max_trace_bytes` — when they do not fit in
   * what is left of the budget, in which case nothing is charged and the caller records nothing.
   */
  chargeRecord(bytes: number): boolean {
    this.measure();
    if (this.maxTraceBytes !== null && this.recordedBytes + this.reservedBytes + bytes > this.maxTraceBytes) {
      this.trace.stop('max_trace_bytes');
      return false;
    }
    this.recordedBytes += bytes;
    return true;
  }

  /** Bytes left of the rollout's byte budget (recorded and reserved bytes taken off); Infinity when unlimited. */
  get bytesLeft(): number {
    this.measure();
    return this.maxTraceBytes === null ? Number.POSITIVE_INFINITY : this.maxTraceBytes - this.recordedBytes - this.reservedBytes;
  }

  /**
   * Refuses a request of `bytes` that does not fit in {@link bytesLeft} before it is read: the
   * trace stops with `max_trace_bytes`, and the returned error is what the program is answered.
   */
  refuseBytes(bytes: number): LimitError {
    this.trace.stop('max_trace_bytes');
    return new LimitError(`rollout stopped: max_trace_bytes (${this.bytesNote(bytes)})`, { statusCode: 400 });
  }

  /** What the byte budget looks like when a call of `cost` bytes is refused (for the error message). */
  private bytesNote(cost: number): string {
    this.measure();
    return `${this.recordedBytes} bytes recorded, ${this.reservedBytes} reserved by calls in flight, this call ${cost}; the rollout's budget is ${this.maxTraceBytes} (maxTraceBytes)`;
  }

  /** A call settled: gives back its byte reservation and wakes `drain` waiters when none is left in flight. */
  private settled(cost: number): void {
    this.reservedBytes -= cost;
    if (--this.pending !== 0) return;
    // No call in flight: no caller's signal needs to reach this session until the next one.
    if (this.joined) for (const joined of this.joined) unfollow(joined);
    if (this.idleWaiters) {
      const waiters = this.idleWaiters;
      this.idleWaiters = null;
      for (const resolve of waiters) resolve();
    }
  }

  /**
   * The client's options for a call with `signal` (made while the call is counted in flight).
   * Every call can be cut off by `close`: without a signal it gets the session's own; with one, a
   * controller of this session's that the caller's signal aborts (with its reason) or `close` does,
   * as `AbortSignal.any([signal, ending])` would be — one per signal (a server passes one to every
   * call), relayed only while calls are in flight (see {@link follow}).
   */
  private callOptions(signal: AbortSignal | undefined): ModelCallOptions {
    if (!signal) {
      this.ending ??= new AbortController();
      this.endingOptions ??= { signal: this.ending.signal };
      return this.endingOptions;
    }
    let joined = this.lastJoined;
    if (joined?.signal !== signal) joined = this.join(signal);
    if (!joined.following) follow(joined);
    return joined.options;
  }

  /** The joined controller of `signal`, made on its first call. */
  private join(signal: AbortSignal): Joined {
    this.joined ??= [];
    let joined = this.joined.find((j) => j.signal === signal);
    if (!joined) {
      const controller = new AbortController();
      joined = { signal, controller, options: { signal: controller.signal }, following: false };
      this.joined.push(joined);
    }
    this.lastJoined = joined;
    return joined;
  }

  private endingOptions: ModelCallOptions | undefined;
  private lastJoined: Joined | undefined;

  /** The limit a call reserving `cost` bytes would pass, counting the calls in flight. */
  private limitReached(request: ModelRequest, cost: number): StopCondition | null {
    const { maxTurns, maxInputTokens, maxOutputTokens, maxTotalTokens } = this.limits;
    if (this.trace.stopCondition && this.trace.stopCondition !== 'agent_completed') return this.trace.stopCondition;
    // Every call in flight will record a turn if it succeeds: it holds one of the turns left.
    if (maxTurns != null && this.trace.numTurns + this.pending >= maxTurns) return 'max_turns';
    if (this.maxTraceBytes !== null) {
      this.measure();
      if (this.recordedBytes + this.reservedBytes + cost > this.maxTraceBytes) return 'max_trace_bytes';
    }
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

/** A session's controller for the calls made with one caller's signal (see `RolloutSession.callOptions`). */
interface Joined {
  signal: AbortSignal;
  controller: AbortController;
  options: ModelCallOptions;
  /** Whether the signal's abort is relayed to `controller` (while the session has calls in flight). */
  following: boolean;
}

/**
 * The joined controllers each caller's signal aborts, with one `abort` listener per signal.
 * `AbortSignal.any` would keep a weak reference per session on a run-long signal (Node 20 drops
 * them only as the set is collected): ~10 µs and garbage per rollout, a tenth of self-play's time.
 */
const followers = new AbortRelay<AbortController>((controller, signal) => controller.abort(signal.reason));

/** Relays `joined.signal`'s abort to its controller from now on (at once when it has aborted). */
function follow(joined: Joined): void {
  const { signal, controller } = joined;
  joined.following = true;
  if (signal.aborted) controller.abort(signal.reason);
  else followers.add(signal, controller);
}

/** Stops relaying `joined.signal`'s abort (`follow` starts again on the next call). */
function unfollow(joined: Joined): void {
  if (!joined.following) return;
  joined.following = false;
  followers.delete(joined.signal, joined.controller);
}

/** How long `close` waits for the calls it cut off to settle (and be recorded as such). */
const CUT_OFF_GRACE_MS = 2000;

/** Refused calls recorded per trace; later ones are only counted (a thief may call in a loop). */
export const MAX_REFUSED_RECORDED = 32;

/** One call between `start` and its settling: what recording and releasing it need. */
interface CallInFlight {
  request: ModelRequest;
  meta: HandleMeta;
  startedAt: number;
  /** Bytes it reserves of the rollout's budget until it settles. */
  cost: number;
}

/** What a call's record (model, sampling, usage, timing) adds to a trace, at most, besides its nodes. */
const CALL_RECORD_BYTES = 1024;

/**
 * The size of a request that did not come over HTTP (an in-process call), estimated without
 * serializing it: the characters of its texts and tool-call arguments, plus a little per message
 * (the exact size of what it adds is counted once it is recorded).
 */
function requestBytes(request: ModelRequest): number {
  let bytes = 0;
  for (const message of request.messages) {
    const content = message.content;
    if (typeof content === 'string') bytes += content.length + 64;
    else bytes += safeJsonLength(content) + 64;
    if (message.role === 'assistant' && message.toolCalls) {
      for (const call of message.toolCalls) bytes += call.arguments.length + call.name.length + 64;
    }
  }
  if (request.tools?.length) bytes += safeJsonLength(request.tools);
  return bytes;
}

/** The JSON length of `value`, or the longest body on the wire when it cannot be serialized. */
function safeJsonLength(value: unknown): number {
  try {
    return JSON.stringify(value ?? null).length;
  } catch {
    return 32 * 1024 * 1024;
  }
}

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

/** A `LimitError` as is, a `RangeError` (a stack overflow) as a `LimitError`, anything else null. */
function localError(error: unknown): LimitError | null {
  if (LimitError.isInstance(error)) return error;
  if (error instanceof RangeError) {
    return new LimitError(`the request could not be processed (${error.message}): a message or tool schema nests too deeply`, {
      cause: error,
      statusCode: 400,
    });
  }
  return null;
}

function statusOf(error: unknown): number | undefined {
  const e = error as { statusCode?: unknown; status?: unknown };
  const status = e?.statusCode ?? e?.status;
  return typeof status === 'number' ? status : undefined;
}

function requestKey(request: ModelRequest): string {
  return sha256(canonicalJson({ m: request.messages, t: request.tools, c: request.toolChoice }));
}
