import { type PluggedScorers, withPluggedScorers } from '../env/reward-modules.ts';
import { ConfigError, HarnessError, SandboxError, TroupeError } from '../errors/troupe-error.ts';
import type { Harness, HarnessLaunchContext, HarnessSession, ModelEndpoint } from '../harness/harness.ts';
import { type HandleMeta, type RolloutLimits, RolloutSession } from '../interception/rollout-session.ts';
import { contentText, type Message } from '../model/messages.ts';
import type { ModelClient } from '../model/model-client.ts';
import type { Runtime, Sandbox } from '../runtime/runtime.ts';
import { scoreTrace } from '../task/scoring.ts';
import type { Task } from '../task/task.ts';
import { assertHarnessSupportsTools, serveTaskTools } from '../tools/mcp-server.ts';
import { assertHarnessSupportsMcpServers, type McpServerSpec, mergeMcpServers } from '../tools/mcp-servers.ts';
import { Trace } from '../trace/trace.ts';
import { sleep, withDeadline, withTimeout } from '../util/timeout.ts';
import type { ResolvedAgentConfig } from './agent-config.ts';

/** Where HTTP programs reach interception; the agent registers each rollout's session. */
export interface InterceptionHost {
  register(session: RolloutSession): { baseUrl: string };
  unregister(session: RolloutSession): void;
}

/**
 * What `new Agent(options)` takes: the resolved config, the model and its client, the harness and
 * runtime it runs with, and how to reach interception.
 */
export interface AgentOptions {
  /** The role name stamped on traces (default `agent`). */
  name?: string;
  /** The parsed agent config (limits, timeouts, retries, sampling). */
  config: ResolvedAgentConfig;
  /** The model name its calls use. */
  model: string;
  /** The client that answers its model calls (behind interception). */
  client: ModelClient;
  /** The program (or built-in loop) that plays the agent. */
  harness: Harness;
  /** Where its sandboxes come from. */
  runtime: Runtime;
  /** Gives the interception server (started lazily by the caller; only HTTP programs need it). */
  interception?: () => Promise<InterceptionHost>;
  /** Whether its traces may be trained on (stamped on `trace.agent.trainable`; default: the config's `trainable`, else true). */
  trainable?: boolean;
  /** Receives progress and diagnostic lines (default: dropped). */
  log?: (line: string) => void;
  /** Rewards, metrics and stops plugged from config (`env/reward-modules.ts`). */
  plugged?: PluggedScorers;
}

/** Per-run options of `agent.run(task, options)`. */
export interface RunOptions {
  /** A borrowed sandbox: never started or stopped by the agent, and never retried on. */
  sandbox?: Sandbox;
  /** Aborts the run: the program is stopped, no retry starts, and the trace records why it ended. */
  signal?: AbortSignal;
  /** Called with the live trace as soon as it exists. */
  onTrace?: (trace: Trace) => void;
}

/** One segment of an interaction. */
export interface Segment {
  /** The sampled assistant messages and the tool results that follow them (empty when terminated). */
  messages: Message[];
  terminated: boolean;
  /** Text of the last sampled assistant message of this segment ('' when none). */
  lastReply: string;
}

/** A turn-by-turn conversation with an agent (`agent.interaction(task)`). */
export interface Interaction {
  readonly trace: Trace;
  /** Strict alternation: a prompted task opens with `turn()`, a prompt-less one with `turn(message)`. */
  turn(message?: string | Message[]): Promise<Segment>;
  /** Stops with `user_closed`, runs finalize and scoring, and releases the sandbox. */
  close(): Promise<Trace>;
}

/**
 * An agent is a value: harness × model × runtime, with limits and timeouts. `run(task)` boots a
 * sandbox, sets up, launches the harness against interception, finalizes and scores.
 */
export class Agent {
  readonly name: string;
  readonly config: ResolvedAgentConfig;
  readonly model: string;
  readonly harness: Harness;
  readonly runtime: Runtime;
  trainable: boolean;
  private readonly client: ModelClient;
  private readonly interception?: () => Promise<InterceptionHost>;
  private readonly log: (line: string) => void;
  private readonly plugged?: PluggedScorers;

  constructor(options: AgentOptions) {
    this.name = options.name ?? 'agent';
    this.config = options.config;
    this.model = options.model;
    this.client = options.client;
    this.harness = options.harness;
    this.runtime = options.runtime;
    this.trainable = options.trainable ?? options.config.trainable ?? true;
    if (options.interception) this.interception = options.interception;
    this.log = options.log ?? (() => {});
    if (options.plugged) this.plugged = options.plugged;
    if (this.harness.capabilities.needsContainer && !this.runtime.capabilities.container) {
      throw new ConfigError(
        `harness ${this.harness.id} needs a container runtime, but ${this.name}.runtime is ${JSON.stringify(this.runtime.id)}; use e.g. runtime = "docker"`,
      );
    }
    assertHarnessSupportsMcpServers(this.harness, this.config.mcpServers, `${this.name}.mcpServers`);
  }

  /** A fresh sandbox for `task` (the caller stops it). */
  async provision(task?: Task): Promise<Sandbox> {
    try {
      return await this.runtime.createSandbox(sandboxSpec(task));
    } catch (error) {
      throw this.bootError(error);
    }
  }

  /**
   * The run's sandbox: the caller's, else a new one for `task` (as {@link provision} makes it);
   * null when creating it failed (recorded on the trace, stage `boot`). Times the boot.
   */
  private boot(task: Task, trace: Trace, options: RunOptions): Promise<Sandbox | null> {
    // Not `async`: one reaction on the runtime's promise (no async frame per seat).
    const bootStart = Date.now();
    if (options.sandbox) {
      trace.timing.boot = (Date.now() - bootStart) / 1000;
      return Promise.resolve(options.sandbox);
    }
    let creating: Promise<Sandbox>;
    try {
      creating = this.runtime.createSandbox(sandboxSpec(task));
    } catch (error) {
      creating = Promise.reject(error);
    }
    return creating.then(
      (sandbox) => {
        trace.timing.boot = (Date.now() - bootStart) / 1000;
        return sandbox;
      },
      (error: unknown) => {
        trace.recordError(this.bootError(error), 'boot');
        trace.timing.boot = (Date.now() - bootStart) / 1000;
        return null;
      },
    );
  }

  /** A failure to create a sandbox, as a `SandboxError` naming the runtime. */
  private bootError(error: unknown): unknown {
    return SandboxError.is(error)
      ? error
      : new SandboxError(`could not create a ${this.runtime.id} sandbox: ${(error as Error).message}`, { cause: error });
  }

  /**
   * A sandbox for `task`, booted and set up exactly as `run` does it: provisioned from the task's
   * image and workdir, then the task's and the harness's setup under the setup timeout. No
   * harness is launched and no model is reached (`troupe debug`). The caller stops the sandbox;
   * when setup fails it is stopped here and the classified error is thrown.
   */
  async openSandbox(task: Task, options: { signal?: AbortSignal } = {}): Promise<Sandbox> {
    const sandbox = await this.provision(task);
    try {
      await this.setUp(task, this.newTrace(task), sandbox, options.signal);
    } catch (error) {
      const classified = await this.classify(error, sandbox);
      await sandbox.stop().catch(ignore);
      throw classified;
    }
    return sandbox;
  }

  /** Runs the task to program exit. Retried whole while an error matches `retries`. */
  async run(task: Task, options: RunOptions = {}): Promise<Trace> {
    // A task with tools on a harness without MCP is a pairing error: refused before any sandbox.
    assertHarnessSupportsTools(this.harness, task);
    const retries = this.config.retries;
    const earlier: Trace['errors'] = [];
    for (let attempt = 0; ; attempt++) {
      const trace = await this.runOnce(task, options);
      if (earlier.length) trace.errors.unshift(...earlier);
      const canRetry = retries && !options.sandbox && attempt < retries.maxRetries && !options.signal?.aborted;
      if (!canRetry || trace.ok || !trace.errors.some((e) => matchesRetry(e.type, retries))) return trace;
      earlier.push(...trace.errors.slice(earlier.length).map((e) => ({ ...e, message: `[attempt ${attempt}] ${e.message}` })));
      await sleep(Math.min(500 * 2 ** attempt, 30_000) * (0.5 + Math.random()), options.signal);
    }
  }

  private newTrace(task: Task): Trace {
    return new Trace({
      task: task.record,
      agent: {
        name: this.name,
        trainable: this.trainable,
        model: this.model,
        harness: this.harness.id,
        runtime: this.runtime.id,
        config: this.traceConfig(),
      },
    });
  }

  /**
   * The config as traces record it (no client; MCP servers' env values redacted): made once per
   * agent and frozen, shared by its traces (a copy per trace was made per seat per hand). Nested
   * objects were shared with the agent's config before as well (the copy was shallow).
   */
  private traceConfig(): Record<string, unknown> {
    if (this.recordedConfig) return this.recordedConfig;
    const { client: _client, ...config } = this.config;
    // A stdio MCP server's env may carry credentials: its values never land on the trace.
    if (config.mcpServers) {
      config.mcpServers = Object.fromEntries(
        Object.entries(config.mcpServers).map(([name, spec]) => [
          name,
          'env' in spec && spec.env
            ? { ...spec, env: Object.fromEntries(Object.keys(spec.env).map((k) => [k, '[redacted]'])) }
            : spec,
        ]),
      );
    }
    this.recordedConfig = Object.freeze(config) as Record<string, unknown>;
    return this.recordedConfig;
  }

  private recordedConfig: Record<string, unknown> | undefined;
  /** The rollout limits of this agent's runs (from its config; read-only). */
  private sessionLimits: RolloutLimits | undefined;

  private async runOnce(task: Task, options: RunOptions): Promise<Trace> {
    const trace = this.newTrace(task);
    options.onTrace?.(trace);
    const prepared = await this.prepare(task, trace, options);
    if (!prepared) return this.close(task, trace, undefined, options);
    const { sandbox, context, release } = prepared;
    try {
      const started = Date.now();
      try {
        const result = await withDeadline(
          {
            seconds: this.config.timeout?.rollout ?? task.data.timeout?.agent ?? null,
            stage: 'agent',
            ...(options.signal ? { parent: options.signal } : {}),
          },
          (signal) => this.harness.launch({ ...context, signal }),
        );
        if (result.exitCode !== 0 && trace.stopCondition === null) {
          // A program that exits because its model calls failed: the provider error is the cause.
          if (prepared.session.providerError) trace.recordError(prepared.session.providerError, 'agent');
          else await this.recordExitFailure(trace, sandbox, result, context);
        } else if (trace.ok && !(await sandbox.alive().catch(notAlive))) {
          // The program finished, but its sandbox did not survive the run (directory removed, container gone).
          trace.recordError(new SandboxError(`sandbox ${sandbox.id} died while ${this.harness.id} ran`), 'agent');
        }
      } catch (error) {
        if (trace.stopCondition === null || trace.stopCondition === 'agent_completed') {
          trace.recordError(prepared.session.providerError ?? (await this.classify(error, sandbox)), 'agent');
        }
      } finally {
        trace.timing.agent = (Date.now() - started) / 1000;
      }
      trace.stop('agent_completed');
      const releasing = release();
      if (releasing) await releasing;
      try {
        return await this.close(task, trace, sandbox, options);
      } finally {
        prepared.unregister();
      }
    } finally {
      if (!options.sandbox) await sandbox.stop().catch((error) => this.log(`sandbox stop failed: ${(error as Error).message}`));
    }
  }

  /**
   * Boot, setup and interception registration; null when a stage failed (recorded on the trace).
   * The runtime is awaited here, not through `provision` (one async frame less per seat).
   */
  private async prepare(task: Task, trace: Trace, options: RunOptions): Promise<PreparedRun | null> {
    const sandbox = await this.boot(task, trace, options);
    if (!sandbox) return null;
    const setupStart = Date.now();
    try {
      // Nothing to set up (game seats, chat-only roles): no async frame per seat.
      if (this.harness.setup || task.setup) await this.setUp(task, trace, sandbox, options.signal);
    } catch (error) {
      trace.recordError(await this.classify(error, sandbox), 'setup');
      if (!options.sandbox) await sandbox.stop().catch(ignore);
      return null;
    } finally {
      trace.timing.setup = (Date.now() - setupStart) / 1000;
    }
    const session = this.rolloutSession(trace);
    // An in-process harness calls the session directly: no async frame for its endpoint.
    const { endpoint, host } = this.harness.inProcess
      ? { endpoint: this.directEndpoint(session, 'in-process://interception/v1'), host: undefined }
      : await this.endpointFor(session, sandbox);
    let mcp: Awaited<ReturnType<Agent['mcpServersFor']>>;
    try {
      // No task tools and no configured servers: nothing to serve or reach (the common case).
      mcp =
        task.tools.length === 0 && !this.config.mcpServers
          ? NO_MCP_SERVERS
          : await this.mcpServersFor(task, trace, sandbox, session);
    } catch (error) {
      host?.unregister(session);
      trace.recordError(error, 'setup');
      if (!options.sandbox) await sandbox.stop().catch(ignore);
      return null;
    }
    return this.assemble(task, trace, sandbox, session, endpoint, host, mcp);
  }

  /** Whether a run needs nothing prepared asynchronously but its sandbox (no setup hooks, in-process, no MCP). */
  private preparesInline(task: Task): boolean {
    return (
      !this.harness.setup && !task.setup && this.harness.inProcess === true && task.tools.length === 0 && !this.config.mcpServers
    );
  }

  /** `prepare` after boot for a run that {@link preparesInline}: no stage to await (setup timing 0). */
  private preparedInline(task: Task, trace: Trace, sandbox: Sandbox): PreparedRun {
    trace.timing.setup = 0;
    const session = this.rolloutSession(trace);
    const endpoint = this.directEndpoint(session, 'in-process://interception/v1');
    return this.assemble(task, trace, sandbox, session, endpoint, undefined, NO_MCP_SERVERS);
  }

  /** The prepared run: the launch context (without its signal) and how to release the session. */
  private assemble(
    task: Task,
    trace: Trace,
    sandbox: Sandbox,
    session: RolloutSession,
    endpoint: ModelEndpoint,
    host: InterceptionHost | undefined,
    mcp: { servers?: Record<string, McpServerSpec>; close: () => Promise<void> },
  ): PreparedRun {
    const context: Omit<HarnessLaunchContext, 'signal'> = {
      task,
      trace,
      sandbox,
      endpoint,
      messages: this.promptMessages(task),
      log: this.log,
    };
    if (mcp.servers) context.mcpServers = mcp.servers;
    return {
      sandbox,
      session,
      context,
      release() {
        if (trace.errors.length) Agent.redactErrors(trace, session.secret); // none: no secret made
        // The session ends with its program: calls in flight are cut off, later ones refused.
        const closing = session.close(trace.stopCondition ?? 'agent_completed');
        // Nothing in flight and no MCP servers (a game seat): nothing to wait for, no promise.
        if (closing || mcp !== NO_MCP_SERVERS) return releaseLater(closing, mcp);
        return undefined;
      },
      unregister() {
        host?.unregister(session);
      },
    };
  }

  /** The rollout session of one run: the agent's model, sampling, plugged stops and limits. */
  private rolloutSession(trace: Trace): RolloutSession {
    return new RolloutSession({
      trace,
      client: this.client,
      model: this.model,
      sampling: this.config.sampling ?? {},
      ...(this.plugged?.stops.length ? { stops: this.plugged.stops } : {}),
      ...(this.harness.capabilities.callsFromOneProcess ? { bindCaller: true } : {}),
      limits: (this.sessionLimits ??= {
        maxTurns: this.config.maxTurns ?? null,
        maxInputTokens: this.config.maxInputTokens ?? null,
        maxOutputTokens: this.config.maxOutputTokens ?? null,
        maxTotalTokens: this.config.maxTotalTokens ?? null,
        ...(this.config.maxTraceBytes !== undefined ? { maxTraceBytes: this.config.maxTraceBytes } : {}),
      }),
    });
  }

  /**
   * The model endpoint a run's harness is given: an external program's session is registered with
   * the interception server (`host`, which unregisters it) at a base URL reachable from the
   * sandbox; an in-process harness calls the session directly.
   */
  private async endpointFor(
    session: RolloutSession,
    sandbox: Sandbox,
  ): Promise<{ endpoint: ModelEndpoint; host: InterceptionHost | undefined }> {
    if (this.harness.inProcess)
      return { endpoint: this.directEndpoint(session, 'in-process://interception/v1'), host: undefined };
    if (!this.interception)
      throw new ConfigError(`harness ${this.harness.id} is an external program and needs an interception server`);
    const host = await this.interception();
    const baseUrl = await sandbox.reachHost(host.register(session).baseUrl);
    return { endpoint: this.directEndpoint(session, baseUrl), host };
  }

  /** The endpoint of `session` at `baseUrl`, with the in-process transport (`direct`). */
  private directEndpoint(session: RolloutSession, baseUrl: string): ModelEndpoint {
    return new DirectEndpoint(session, baseUrl, this.model);
  }

  /** The task's setup, then the harness's, under the setup timeout. */
  private async setUp(task: Task, trace: Trace, sandbox: Sandbox, parent: AbortSignal | undefined): Promise<void> {
    const stage = { seconds: this.config.timeout?.setup ?? task.data.timeout?.setup ?? null, stage: 'setup' };
    if (this.harness.setup) {
      await withDeadline({ ...stage, ...(parent ? { parent } : {}) }, async (signal) => {
        await task.setup?.({ task, trace, sandbox });
        await this.harness.setup?.({ sandbox, log: this.log, signal });
      });
    } else if (task.setup) {
      // Only the harness's setup takes the signal; without one, the task's setup runs under the timer alone.
      await withTimeout(stage, async () => task.setup?.({ task, trace, sandbox }));
    }
  }

  /**
   * The run's MCP servers: the agent's `mcpServers` plus, when the task declares tools, a
   * loopback server `troupe` serving them (each call and result lands on `trace.info.toolCalls`).
   * URLs are rewritten so that an external program in the sandbox reaches them.
   */
  private async mcpServersFor(
    task: Task,
    trace: Trace,
    sandbox: Sandbox,
    session: RolloutSession,
  ): Promise<{ servers?: Record<string, McpServerSpec>; close: () => Promise<void> }> {
    // The tool server takes the rollout's secret (its URL carries it) and charges its byte budget.
    const served = await serveTaskTools(this.harness, task, trace, session);
    const merged = mergeMcpServers(this.config.mcpServers, served ? { troupe: { url: served.url } } : undefined);
    if (Object.keys(merged).length === 0) return { close: async () => {} };
    const inProcess = this.harness.inProcess === true;
    try {
      const servers: Record<string, McpServerSpec> = {};
      for (const [name, spec] of Object.entries(merged)) {
        servers[name] = 'url' in spec && !inProcess ? { url: await sandbox.reachHost(spec.url) } : spec;
      }
      return { servers, close: async () => served?.close() };
    } catch (error) {
      await served?.close();
      throw error;
    }
  }

  /** The opening messages; the system prompt is folded into the prompt when the harness cannot take one. */
  private promptMessages(task: Task): Message[] {
    const messages = task.promptMessages;
    if (this.harness.capabilities.appendsSystemPrompt || messages[0]?.role !== 'system') return messages;
    const [system, ...rest] = messages;
    const first = rest[0];
    if (first?.role === 'user') {
      return [{ role: 'user', content: `${system?.content}\n\n${contentText(first.content)}` }, ...rest.slice(1)];
    }
    return [{ role: 'user', content: system?.content ?? '' }, ...rest];
  }

  private async recordExitFailure(
    trace: Trace,
    sandbox: Sandbox,
    result: { exitCode: number; stdout: string; stderr: string },
    context: Omit<HarnessLaunchContext, 'signal'>,
  ): Promise<void> {
    const alive = await sandbox.alive().catch(notAlive);
    // A program may print its own key (env dumps, debug logs): the rollout secret never lands on the trace.
    const tail = `${result.stdout}\n${result.stderr}`.split(context.endpoint.secret).join('[rollout secret]').trim().slice(-2000);
    trace.recordError(
      alive
        ? new HarnessError(`${this.harness.id} exited with code ${result.exitCode}: ${tail}`)
        : new SandboxError(`sandbox died while ${this.harness.id} ran (exit ${result.exitCode})`),
      'agent',
    );
  }

  private async classify(error: unknown, sandbox: Sandbox): Promise<unknown> {
    if (TroupeError.isInstance(error)) return error;
    const alive = await sandbox.alive().catch(notAlive);
    if (!alive) return new SandboxError(`sandbox died: ${(error as Error).message ?? String(error)}`, { cause: error });
    return new HarnessError((error as Error).message ?? String(error), { cause: error });
  }

  /** Removes the rollout secret from every error recorded on the trace (messages and stacks). */
  private static redactErrors(trace: Trace, secret: string): void {
    for (const error of trace.errors) {
      if (error.message.includes(secret)) error.message = error.message.split(secret).join('[rollout secret]');
      if (error.stack?.includes(secret)) error.stack = error.stack.split(secret).join('[rollout secret]');
    }
  }

  /**
   * Finalize then score (skipped when the run failed). With no finalize hook and nothing to score
   * (a game seat) no stage runs: their timings are 0, with no async frame.
   */
  private close(task: Task, trace: Trace, sandbox: Sandbox | undefined, options: RunOptions): Promise<Trace> {
    const scored = withPluggedScorers(task, this.plugged);
    if (!hasStages(task, scored)) return Promise.resolve(this.closed(trace));
    return this.finalizeAndScore(task, scored, trace, sandbox, options);
  }

  /** Marks `trace` closed with no stage run: finalize and scoring timings 0 (when it is ok). */
  private closed(trace: Trace): Trace {
    if (trace.ok) {
      trace.timing.finalize = 0;
      trace.timing.scoring = 0;
    }
    trace.isCompleted = true;
    trace.endedAt = Date.now();
    return trace;
  }

  /** `close` with a stage to run: `scored` is `task` with the plugged scorers (computed once, by `close`). */
  private async finalizeAndScore(
    task: Task,
    scored: Task,
    trace: Trace,
    sandbox: Sandbox | undefined,
    options: RunOptions,
  ): Promise<Trace> {
    // A stage with nothing to run (no finalize hook; no rewards or metrics) is skipped, its timing 0.
    if (trace.ok) {
      const finalizeStart = Date.now();
      if (task.finalize) {
        try {
          await withTimeout(
            { seconds: this.config.timeout?.finalize ?? task.data.timeout?.finalize ?? null, stage: 'finalize' },
            async () => task.finalize?.({ task, trace, ...(sandbox ? { sandbox } : {}) }),
          );
        } catch (error) {
          trace.recordError(error, 'finalize');
        }
      }
      trace.timing.finalize = (Date.now() - finalizeStart) / 1000;
    }
    if (trace.ok) {
      const scoringStart = Date.now();
      if (scored.metrics.length || scored.rewards.length) {
        try {
          await withTimeout(
            { seconds: this.config.timeout?.scoring ?? task.data.timeout?.scoring ?? null, stage: 'scoring' },
            () => scoreTrace({ task: scored, trace, ...(sandbox ? { sandbox } : {}) }),
          );
        } catch (error) {
          trace.recordError(error, 'scoring');
        }
      }
      trace.timing.scoring = (Date.now() - scoringStart) / 1000;
    }
    void options;
    trace.isCompleted = true;
    trace.endedAt = Date.now();
    return trace;
  }

  /**
   * Opens a turn-by-turn interaction. The harness must support resume. Exiting (`close`) stops
   * with `user_closed` and runs finalize and scoring. No retries.
   */
  async interaction(task: Task, options: RunOptions = {}): Promise<Interaction> {
    if (!this.harness.capabilities.supportsResume || !this.harness.session) {
      throw new ConfigError(`harness ${this.harness.id} cannot resume, so ${this.name}.interaction() is not available`);
    }
    assertHarnessSupportsTools(this.harness, task);
    const trace = this.newTrace(task);
    options.onTrace?.(trace);
    // Prepared and opened here (one async frame per seat; a run with nothing but its sandbox to
    // await is booted here too). When either fails, the trace is closed (and a sandbox of the
    // agent's own stopped) before the error is thrown.
    let prepared: PreparedRun | null = null;
    if (this.preparesInline(task)) {
      const sandbox = await this.boot(task, trace, options);
      if (sandbox) prepared = this.preparedInline(task, trace, sandbox);
    } else prepared = await this.prepare(task, trace, options);
    if (!prepared) {
      await this.close(task, trace, undefined, options);
      throw new HarnessError(`${this.name}: could not open an interaction: ${trace.errors.at(-1)?.message ?? 'unknown error'}`);
    }
    const { sandbox, context, release } = prepared;
    // The caller's signal itself (it aborts the session with the same reason a linked controller
    // would, without a controller and a listener per seat); one already aborted was never relayed.
    // The context is this run's own: the signal is set on it rather than on a copy.
    const launch = context as HarnessLaunchContext;
    launch.signal = options.signal && !options.signal.aborted ? options.signal : new AbortController().signal;
    let session: HarnessSession;
    try {
      session = await this.harness.session!(launch);
    } catch (error) {
      trace.recordError(await this.classify(error, sandbox), 'agent');
      const releasing = release();
      if (releasing) await releasing;
      await this.close(task, trace, sandbox, options);
      prepared.unregister();
      if (!options.sandbox) await sandbox.stop().catch(ignore);
      throw error;
    }
    return this.liveInteraction({ task, trace, options, prepared, session });
  }

  /**
   * Closes an open interaction: stops with `user_closed`, closes the harness session (best
   * effort), releases the rollout session, then finalizes and scores (a seat with nothing to run
   * is closed without awaiting) and stops a sandbox of the agent's own.
   */
  private async closeInteraction(
    task: Task,
    trace: Trace,
    options: RunOptions,
    prepared: PreparedRun,
    session: HarnessSession,
    agentStart: number,
  ): Promise<Trace> {
    const { sandbox, release } = prepared;
    trace.stop('user_closed');
    // Best effort, awaited in place (no `.catch` promise per seat).
    try {
      await session.close();
    } catch {}
    const releasing = release();
    if (releasing) await releasing;
    trace.timing.agent = (Date.now() - agentStart) / 1000;
    try {
      const scored = withPluggedScorers(task, this.plugged);
      if (!hasStages(task, scored)) return this.closed(trace);
      return await this.finalizeAndScore(task, scored, trace, sandbox, options);
    } finally {
      prepared.unregister();
      if (!options.sandbox) {
        try {
          await sandbox.stop();
        } catch {}
      }
    }
  }

  /**
   * A turn that failed: recorded on the trace (the provider error when a model call failed, else
   * the error classified) as a terminated segment; `done` runs once the turn is over.
   */
  private failedTurn(
    error: unknown,
    trace: Trace,
    providerError: unknown,
    sandbox: Sandbox,
    done: () => void,
  ): Segment | Promise<Segment> {
    const failed = (cause: unknown): Segment => {
      done();
      trace.recordError(cause, 'agent');
      return { messages: [], terminated: true, lastReply: '' };
    };
    if (providerError) return failed(providerError);
    return this.classify(error, sandbox).then(failed, (classifyError: unknown) => {
      done();
      throw classifyError;
    });
  }

  /** The caller's side of an open interaction: turns in strict alternation, then `close()`. */
  private liveInteraction(open: {
    task: Task;
    trace: Trace;
    options: RunOptions;
    prepared: PreparedRun;
    session: HarnessSession;
  }): Interaction {
    const { task, trace, options, prepared, session } = open;
    const { sandbox } = prepared;
    const prompted = task.data.prompt !== null;
    let turns = 0;
    let terminated = false;
    let closed = false;
    let busy = false;
    const agentStart = Date.now();
    // Methods rather than arrows (see `Env.episodeAgents`): no per-interaction defineProperty under tsx.
    const agent = this;
    return {
      trace,
      close(): Promise<Trace> {
        if (closed) return Promise.resolve(trace);
        closed = true;
        return agent.closeInteraction(task, trace, options, prepared, session, agentStart);
      },
      turn(message?: string | Message[]): Promise<Segment> {
        // Not `async`: one reaction on the session's turn (no async frame per turn); refusals
        // still arrive as rejections.
        let turning: Promise<{ messages: Message[]; terminated: boolean }>;
        let started = false;
        try {
          const refusal = turnRefusal(agent.name, closed, busy, terminated, turns, prompted, message);
          if (refusal) throw refusal;
          turns++;
          busy = true;
          started = true;
          const incoming: Message[] | undefined =
            message === undefined ? undefined : typeof message === 'string' ? [{ role: 'user', content: message }] : message;
          turning = session.turn(incoming);
        } catch (error) {
          if (!started) return Promise.reject(error);
          turning = Promise.reject(error);
        }
        return turning.then(
          (segment) => {
            busy = false;
            terminated = segment.terminated;
            return { messages: segment.messages, terminated: segment.terminated, lastReply: lastReplyOf(segment.messages) };
          },
          (error: unknown) => {
            terminated = true;
            return agent.failedTurn(error, trace, prepared.session.providerError ?? null, sandbox, () => {
              busy = false;
            });
          },
        );
      },
    };
  }
}

/** The MCP servers of a run that has none. */
/** A run made ready by `prepare`: its sandbox, the harness's launch context, the rollout session, and how to release them. */
interface PreparedRun {
  sandbox: Sandbox;
  context: Omit<HarnessLaunchContext, 'signal'>;
  session: RolloutSession;
  /**
   * Closes the session (its program exited: calls in flight cut off, later ones refused) and the
   * MCP servers; a promise only when something must be waited for.
   */
  release: () => Promise<void> | undefined;
  /**
   * Unregisters the session from the interception server, once the trace is finalized and scored:
   * until then a call that arrives is refused and counted on the trace (after, it gets 409 only).
   */
  unregister: () => void;
}

/** The sandbox spec of `task`: its image and workdir when set. */
function sandboxSpec(task: Task | undefined): { image?: string; workdir?: string } {
  const spec: { image?: string; workdir?: string } = {};
  if (task?.data.image) spec.image = task.data.image;
  if (task?.data.workdir) spec.workdir = task.data.workdir;
  return spec;
}

/** `release` when a call in flight is being cut off or MCP servers must be closed. */
async function releaseLater(closing: Promise<void> | undefined, mcp: { close: () => Promise<void> }): Promise<void> {
  if (closing) await closing;
  if (mcp !== NO_MCP_SERVERS) await mcp.close();
}

/** The meta of an in-process call without a signal (shared: `handle` never writes to it). */
const DIRECT = { dialect: 'direct' } as const;

/**
 * A run's model endpoint with the in-process transport. Its `secret` is read from the session when
 * read (an in-process loop never reads it, so none is made); `direct` closes over the session, so
 * it may be called detached.
 */
class DirectEndpoint implements ModelEndpoint {
  readonly direct: ModelEndpoint['direct'];

  constructor(
    private readonly session: RolloutSession,
    readonly baseUrl: string,
    readonly model: string,
  ) {
    // An arrow assigned to a member (no name to keep under tsx): lighter than a bound function.
    this.direct = (request, o) => session.handle(request, o?.signal ? this.metaFor(o.signal) : DIRECT);
  }

  /** The meta of a call with `signal`: the last one made when the signal is the same (a session's calls share one). */
  private metaFor(signal: AbortSignal): HandleMeta {
    if (this.meta?.signal !== signal) this.meta = { dialect: 'direct', signal };
    return this.meta;
  }

  private meta: HandleMeta | undefined;

  get secret(): string {
    return this.session.secret;
  }
}

/** Why `turn(message)` is refused in an interaction's state (strict alternation), or null when it may run. */
function turnRefusal(
  name: string,
  closed: boolean,
  busy: boolean,
  terminated: boolean,
  turns: number,
  prompted: boolean,
  message: string | Message[] | undefined,
): ConfigError | null {
  if (closed) return new ConfigError(`${name}: turn() after close()`);
  if (busy) return new ConfigError(`${name}: turn() while another turn is running (strict alternation)`);
  if (terminated) return new ConfigError(`${name}: turn() after a terminated segment`);
  if (turns === 0 && prompted && message !== undefined) {
    return new ConfigError(`${name}: the task has a prompt, so the first turn() takes no message`);
  }
  if ((turns > 0 || !prompted) && message === undefined) {
    return new ConfigError(`${name}: turn() needs a message${turns === 0 ? ' (the task has no prompt)' : ''}`);
  }
  return null;
}

/** Text of the last assistant message, trimmed ('' when there is none). */
function lastReplyOf(messages: readonly Message[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i] as Message;
    if (message.role === 'assistant') return contentText(message.content).trim();
  }
  return '';
}

/** Whether closing a run on `task` runs a stage: a finalize hook, or rewards or metrics (`scored`: with the plugged ones). */
function hasStages(task: Task, scored: Task): boolean {
  return Boolean(task.finalize) || scored.metrics.length > 0 || scored.rewards.length > 0;
}

/** For `.catch` of a best-effort stop or close (one function, not a closure per call). */
function ignore(): void {}

/** For `.catch` of a liveness probe: a sandbox that cannot answer is not alive. */
function notAlive(): boolean {
  return false;
}

const NO_MCP_SERVERS: { servers?: Record<string, McpServerSpec>; close: () => Promise<void> } = { close: async () => {} };

function matchesRetry(type: string, retries: { include: string[]; exclude: string[] }): boolean {
  if (retries.exclude.includes(type)) return false;
  return retries.include.length === 0 || retries.include.includes(type);
}
