import { z } from 'zod';
import { Agent, type Interaction, type InterceptionHost, type RunOptions, type Segment } from '../agent/agent.ts';
import {
  type AgentConfig,
  AgentConfigSchema,
  type ClientConfig,
  deepMerge,
  describeZodError,
  type PluginRef,
  type ResolvedAgentConfig,
  RetriesSchema,
} from '../agent/agent-config.ts';
import { loadHarness, loadRuntime } from '../agent/plugins.ts';
import { ConfigError, EnvError } from '../errors/troupe-error.ts';
import type { Harness } from '../harness/harness.ts';
import type { Message } from '../model/messages.ts';
import type { ModelClient, Sampling } from '../model/model-client.ts';
import type { Runtime, Sandbox } from '../runtime/runtime.ts';
import type { Task } from '../task/task.ts';
import type { Taskset } from '../task/taskset.ts';
import { Episode } from '../trace/episode.ts';
import type { Trace } from '../trace/trace.ts';
import { Semaphore, sleep, withDeadline, withTimeout } from '../util/timeout.ts';
import { loadPluggedScorers } from './reward-modules.ts';

/** Fields every env config has, besides its roles and its own options. */
export const EnvBaseConfigShape = {
  id: z.string().min(1),
  /** A built-in taskset id, a path to a JSONL file, or `{ id, ...options }`. */
  taskset: z.union([z.string(), z.object({ id: z.string() }).loose()]).optional(),
  timeout: z
    .object({ episode: z.number().positive().optional(), finalize: z.number().positive().optional() })
    .strict()
    .optional(),
  retries: RetriesSchema.optional(),
  /** Agent runs at once inside one episode (null = unlimited). */
  maxConcurrentAgents: z.number().int().positive().nullable().optional(),
};

/** What an env's hooks receive about its roles: `agents.<role>`, typed by the role names. */
export type Agents<R extends string> = { readonly [K in R]: EpisodeAgent };

/**
 * What an env's `run` receives for one episode: the task, its roles' agents, the env's parsed
 * options, the episode being recorded and the abort signal.
 */
export interface EnvRunContext<R extends string, O> {
  task: Task;
  agents: Agents<R>;
  options: O;
  episode: Episode;
  signal: AbortSignal;
  /** The env's own runtimes besides its roles' (see `EnvDefinition.runtimes`), by name. */
  runtimes: Readonly<Record<string, Runtime>>;
}

/**
 * An environment: plain async TypeScript over typed roles. Every agent run inside `run` lands
 * in the Episode with its role name and `trainable`; `finalize` records cross-agent rewards.
 */
export interface EnvDefinition<R extends string = string, O extends Record<string, unknown> = Record<string, unknown>> {
  id: string;
  description?: string;
  /** Role name → its default agent config (the role names are the keys; no registration). */
  roles: Record<R, AgentConfig>;
  /** The env's own options (validated; unknown keys are refused). */
  options?: z.ZodType<O>;
  /** Default agent runs at once per episode (null = unlimited; the spec default is 1). */
  maxConcurrentAgents?: number | null;
  /** The env's own taskset, used when the config names none. */
  taskset?: (options: O) => Taskset | Promise<Taskset>;
  /**
   * Runtimes the env uses besides its roles' (a verifier's own sandboxes): name → a runtime
   * reference taken from its options (`"docker"` or `{ id, …options }`), undefined for none.
   * `Env.create` loads them (errors name `env.<name>`), `preflightRuntimes` checks them with the
   * roles' runtimes, and `run` receives them as `runtimes`.
   */
  runtimes?: (options: O) => Record<string, PluginRef | undefined>;
  /** Checks at construction, with the harnesses and runtimes resolved (throw ConfigError). */
  validate?: (context: {
    options: O;
    roles: Record<R, { harness: Harness; runtime: Runtime; config: ResolvedAgentConfig }>;
  }) => void;
  /** Per episode, before `run` (e.g. `agents.judge.trainable = false`). */
  setup?: (context: { agents: Agents<R>; options: O }) => void | Promise<void>;
  run: (context: EnvRunContext<R, O>) => Promise<void>;
  /** Cross-agent rewards and metrics, after `run`. */
  finalize?: (context: { task: Task; episode: Episode; options: O; agents: Agents<R> }) => void | Promise<void>;
  /** Whether a saved episode counts as done on resume (default: ok). */
  complete?: (episode: Episode) => boolean;
}

/** Declares an env with its roles and options typed from the definition. */
export function defineEnv<R extends string, O extends Record<string, unknown> = Record<string, never>>(
  definition: EnvDefinition<R, O>,
): EnvDefinition<R, O> {
  return definition;
}

/** The run-level model settings that unpinned roles take. */
export interface RunModelSettings {
  model: string;
  client: ModelClient;
  sampling?: Sampling;
  /** Builds a client for a role that pins its own `client` config (the CLI resolves API keys). */
  makeClient?: (config: ClientConfig, model: string) => ModelClient;
}

/**
 * What `Env.create` takes: the definition, the env config (roles, taskset, timeouts, the env's
 * options), the run's model settings and how to reach interception.
 */
export interface CreateEnvOptions<R extends string, O extends Record<string, unknown>> {
  definition: EnvDefinition<R, O>;
  /** The env config: `id`, `taskset`, timeouts, retries, one field per role, and the env's options. */
  config: Record<string, unknown>;
  run: RunModelSettings;
  interception?: () => Promise<InterceptionHost>;
  log?: (line: string) => void;
}

/** A constructed env, ready to run episodes. */
/** One role's effective settings after every layer of config is merged (see `Env.describeRoles`). */
export interface ResolvedRoleSettings {
  /** Model name the role's calls are sent as. */
  model: string;
  /** Harness id. */
  harness: string;
  /** Runtime id. */
  runtime: string;
  /** Model calls per agent run (`null` = no cap). */
  maxTurns: number | null;
  /** Whether the role's traces reach the trainer. */
  trainable: boolean;
}

/**
 * A configured env: one agent per role built from its config, ready to run episodes
 * (`runEpisode`) on tasks of its taskset. Made by `Env.create`, which rejects with a `ConfigError`
 * naming the field for a bad config.
 */
export class Env<R extends string = string, O extends Record<string, unknown> = Record<string, unknown>> {
  readonly definition: EnvDefinition<R, O>;
  readonly id: string;
  readonly options: O;
  readonly config: Record<string, unknown>;
  readonly baseAgents: Record<R, Agent>;
  /** The env's own runtimes besides its roles' (`EnvDefinition.runtimes`), by name. */
  readonly runtimes: Readonly<Record<string, Runtime>>;
  readonly maxConcurrentAgents: number | null;
  readonly timeout: { episode?: number; finalize?: number };
  readonly retries: { maxRetries: number; include: string[]; exclude: string[] };
  private readonly log: (line: string) => void;

  private constructor(init: {
    definition: EnvDefinition<R, O>;
    options: O;
    config: Record<string, unknown>;
    baseAgents: Record<R, Agent>;
    runtimes: Record<string, Runtime>;
    log: (line: string) => void;
  }) {
    this.definition = init.definition;
    this.id = init.definition.id;
    this.options = init.options;
    this.config = init.config;
    this.baseAgents = init.baseAgents;
    this.runtimes = init.runtimes;
    this.log = init.log;
    const base = init.config as { maxConcurrentAgents?: number | null; timeout?: Env['timeout']; retries?: Env['retries'] };
    this.maxConcurrentAgents =
      base.maxConcurrentAgents !== undefined
        ? base.maxConcurrentAgents
        : // A definition's null means unlimited; only an absent value takes the spec default 1.
          init.definition.maxConcurrentAgents !== undefined
          ? init.definition.maxConcurrentAgents
          : 1;
    this.timeout = base.timeout ?? {};
    this.retries = base.retries ?? { maxRetries: 0, include: [], exclude: [] };
  }

  /** The role names, in definition order. */
  get roles(): R[] {
    return [...this.roleNames];
  }

  private get roleNames(): readonly R[] {
    this.roleList ??= Object.keys(this.definition.roles) as R[];
    return this.roleList;
  }

  private roleList: R[] | undefined;

  /**
   * The settings that will apply to each role once defaults, config file and flags are merged:
   * what `troupe validate` prints so a user sees, e.g., that a frozen judge stays frozen.
   */
  describeRoles(): Record<R, ResolvedRoleSettings> {
    const out = {} as Record<R, ResolvedRoleSettings>;
    for (const name of this.roles) {
      const agent = this.baseAgents[name];
      out[name] = {
        model: agent.model,
        harness: agent.harness.id,
        runtime: agent.runtime.id,
        maxTurns: agent.config.maxTurns ?? null,
        trainable: agent.trainable,
      };
    }
    return out;
  }

  /**
   * Validates the config (errors name the field), deep-merges each role's config over its
   * default, fills unpinned model / client / sampling from the run, resolves harnesses and
   * runtimes, and runs the env's pairing checks.
   */
  static async create<R extends string, O extends Record<string, unknown>>(options: CreateEnvOptions<R, O>): Promise<Env<R, O>> {
    const { definition } = options;
    const roleNames = Object.keys(definition.roles) as R[];
    if (roleNames.length === 0) throw new ConfigError(`env ${definition.id} declares no roles`);
    for (const name of roleNames) {
      if (name in EnvBaseConfigShape) throw new ConfigError(`env ${definition.id}: role ${name} shadows a base config field`);
    }
    const raw = { ...options.config };
    if ('harness' in raw) {
      throw new ConfigError(`env.harness is not a field: set the harness per role, e.g. env.${roleNames[0]}.harness`);
    }
    const baseParsed = z.object(EnvBaseConfigShape).loose().safeParse(raw);
    if (!baseParsed.success) throw new ConfigError(`invalid env config: ${describeZodError(baseParsed.error, 'env')}`);
    const { envOptions, roleInput } = Env.splitConfig(definition, roleNames, raw);
    const resolved = {} as Record<R, { harness: Harness; runtime: Runtime; config: ResolvedAgentConfig }>;
    const baseAgents = {} as Record<R, Agent>;
    for (const name of roleNames) {
      const role = await Env.resolveRole(options, name, roleInput[name]);
      resolved[name] = role.resolved;
      baseAgents[name] = role.agent;
    }
    definition.validate?.({ options: envOptions, roles: resolved });
    const runtimes = await Env.loadOwnRuntimes(definition, envOptions);
    const config = { ...baseParsed.data, ...raw, ...envOptions };
    return new Env({ definition, options: envOptions, config, baseAgents, runtimes, log: options.log ?? (() => {}) });
  }

  /** The env's own runtimes (`EnvDefinition.runtimes`), loaded; a bad reference is a ConfigError naming `env.<name>`. */
  private static async loadOwnRuntimes<R extends string, O extends Record<string, unknown>>(
    definition: EnvDefinition<R, O>,
    options: O,
  ): Promise<Record<string, Runtime>> {
    const runtimes: Record<string, Runtime> = {};
    for (const [name, ref] of Object.entries(definition.runtimes?.(options) ?? {})) {
      if (ref === undefined) continue;
      try {
        runtimes[name] = await loadRuntime(ref);
      } catch (error) {
        throw new ConfigError(`invalid env config: env.${name}: ${(error as Error).message}`, { cause: error });
      }
    }
    return runtimes;
  }

  /** The config's fields besides the base ones: each role's config, and the env's own options (parsed). */
  private static splitConfig<R extends string, O extends Record<string, unknown>>(
    definition: EnvDefinition<R, O>,
    roleNames: R[],
    raw: Record<string, unknown>,
  ): { envOptions: O; roleInput: Partial<Record<R, unknown>> } {
    const optionInput: Record<string, unknown> = {};
    const roleInput: Partial<Record<R, unknown>> = {};
    for (const [key, value] of Object.entries(raw)) {
      if (key in EnvBaseConfigShape) continue;
      if ((roleNames as string[]).includes(key)) roleInput[key as R] = value;
      else optionInput[key] = value;
    }
    if (definition.options) {
      const parsed = definition.options.safeParse(optionInput);
      if (!parsed.success) throw new ConfigError(`invalid env config: ${describeZodError(parsed.error, 'env')}`);
      return { envOptions: parsed.data, roleInput };
    }
    if (Object.keys(optionInput).length) {
      throw new ConfigError(
        `invalid env config: env.${Object.keys(optionInput)[0]} is not a field of env ${definition.id} (roles: ${roleNames.join(', ')})`,
      );
    }
    return { envOptions: optionInput as O, roleInput };
  }

  /**
   * One role's agent: its config merged over the role's default and parsed, model / client /
   * sampling filled from the run where unpinned, harness, runtime and plugged scorers loaded.
   */
  private static async resolveRole<R extends string, O extends Record<string, unknown>>(
    options: CreateEnvOptions<R, O>,
    name: R,
    input: unknown,
  ): Promise<{ resolved: { harness: Harness; runtime: Runtime; config: ResolvedAgentConfig }; agent: Agent }> {
    const { definition, run } = options;
    const merged = deepMerge(definition.roles[name], input ?? {});
    const parsed = AgentConfigSchema.safeParse(merged);
    if (!parsed.success) throw new ConfigError(`invalid agent config: ${describeZodError(parsed.error, `env.${name}`)}`);
    const config = parsed.data;
    const model = config.model ?? run.model;
    let client = run.client;
    if (config.client) {
      if (!run.makeClient) throw new ConfigError(`env.${name}.client is set but this run cannot build clients`);
      client = run.makeClient(config.client, model);
    }
    // Otherwise the run's client serves this role; another model name is set per request.
    const sampling = deepMerge(run.sampling ?? {}, config.sampling ?? {});
    const harness = await loadHarness(config.harness ?? 'bash');
    const runtime = await loadRuntime(config.runtime ?? 'local');
    const plugged = await loadPluggedScorers(config, `env.${name}`, { client, model });
    const full: ResolvedAgentConfig = { ...config, model, sampling };
    const agent = new Agent({
      name,
      config: full,
      model,
      client,
      harness,
      runtime,
      ...(options.interception ? { interception: options.interception } : {}),
      ...(options.log ? { log: options.log } : {}),
      ...(plugged ? { plugged } : {}),
    });
    return { resolved: { harness, runtime, config: full }, agent };
  }

  /**
   * Runs one episode: fresh per-episode agents, `setup` and `run` under the episode timeout,
   * then `finalize`. Hook exceptions become `EnvError`s on the episode (the partial episode is
   * kept). Retried whole when an error matches `retries`.
   */
  runEpisode(options: { task: Task; group: { id: string; index: number }; signal?: AbortSignal }): Promise<Episode> {
    // No retries: the one attempt's own promise (attempt 0 is the episode's default), no frame around it.
    if (this.retries.maxRetries <= 0) return this.runEpisodeOnce(options);
    return this.runEpisodeRetried(options);
  }

  /** `runEpisode` with retries: attempts until one is ok, the retries run out or no error matches. */
  private async runEpisodeRetried(options: {
    task: Task;
    group: { id: string; index: number };
    signal?: AbortSignal;
  }): Promise<Episode> {
    for (let attempt = 0; ; attempt++) {
      const episode = await this.runEpisodeOnce(options);
      episode.attempt = attempt;
      if (episode.ok || attempt >= this.retries.maxRetries) return episode;
      const errors = [...episode.errors, ...episode.traces.filter((t) => !t.ok).flatMap((t) => t.errors)];
      const retry = errors.some(
        (e) =>
          !this.retries.exclude.includes(e.type) && (this.retries.include.length === 0 || this.retries.include.includes(e.type)),
      );
      if (!retry || options.signal?.aborted) return episode;
      this.log(`episode ${episode.id} (task ${options.task.key}) failed: ${errors[0]?.type}; retrying (attempt ${attempt + 1})`);
      await sleep(Math.min(500 * 2 ** attempt, 30_000) * (0.5 + Math.random()), options.signal);
    }
  }

  private async runEpisodeOnce(options: {
    task: Task;
    group: { id: string; index: number };
    signal?: AbortSignal;
  }): Promise<Episode> {
    const { task } = options;
    const episode = new Episode({ env: { id: this.id }, task: task.record, group: options.group });
    const semaphore = new Semaphore(this.maxConcurrentAgents);
    const list = this.roleNames.map((name) => new EpisodeAgent(this.baseAgents[name], episode, semaphore));
    const agents = this.episodeAgents(list);
    try {
      await withDeadline(
        { seconds: this.timeout.episode ?? null, stage: 'episode', ...(options.signal ? { parent: options.signal } : {}) },
        (signal) => {
          for (const agent of list) agent.signal = signal;
          // No setup hook (a game): the run's own promise, without a frame around it.
          if (!this.definition.setup)
            return this.definition.run({ task, agents, options: this.options, episode, signal, runtimes: this.runtimes });
          return this.setUpAndRun({ task, agents, episode, signal });
        },
      );
      if (list.every((agent) => agent.runs === 0)) throw new EnvError(`env ${this.id} ran no agent`);
      // No finalize hook: nothing to run under the finalize timeout.
      if (this.definition.finalize) {
        await withTimeout({ seconds: this.timeout.finalize ?? null, stage: 'finalize' }, async () =>
          this.definition.finalize?.({ task, episode, options: this.options, agents }),
        );
      }
    } catch (error) {
      episode.recordError(
        EnvError.is(error) || (error as Error)?.name === 'TimeoutError'
          ? error
          : new EnvError(`${this.id}: ${(error as Error)?.message ?? String(error)}`, { cause: error }),
        'env',
      );
    }
    if (!episode.ok) {
      // A failed episode marks its clean traces failed, so partial seats never train.
      for (const trace of episode.traces) if (trace.ok) trace.info.episodeFailed = true;
    }
    episode.endedAt = Date.now();
    return episode;
  }

  /** The env's setup hook, then its run. */
  private async setUpAndRun(hooks: { task: Task; agents: Agents<R>; episode: Episode; signal: AbortSignal }): Promise<void> {
    await this.definition.setup?.({ agents: hooks.agents, options: this.options });
    await this.definition.run({ ...hooks, options: this.options, runtimes: this.runtimes });
  }

  /** The episode's agents by role name (`list` in role order), refusing an unknown role by name. */
  private episodeAgents(list: EpisodeAgent[]): Agents<R> {
    const agents = {} as Record<R, EpisodeAgent>;
    for (const agent of list) agents[agent.name as R] = agent;
    // One proxy handler per env, not per episode. Methods, not arrow properties, throughout the
    // per-episode objects: under tsx (esbuild `keepNames`) every arrow stored in a property or a
    // const pays a defineProperty per creation.
    this.agentsHandler ??= {
      get: (target, key) => {
        if (typeof key === 'string' && !(key in target) && key !== 'then' && key !== 'toJSON') {
          throw new ConfigError(`env ${this.id} has no role ${JSON.stringify(key)}; roles: ${this.roles.join(', ')}`);
        }
        return target[key as R];
      },
    };
    return new Proxy(agents, this.agentsHandler) as Agents<R>;
  }

  private agentsHandler: ProxyHandler<Record<R, EpisodeAgent>> | undefined;

  /** Whether a saved episode counts as done on resume. */
  isComplete(episode: Episode): boolean {
    return this.definition.complete ? this.definition.complete(episode) : episode.ok;
  }
}

/**
 * An agent inside one episode: stamps its role name and `trainable` on each trace and appends
 * the trace to the episode when the run returns or the interaction closes.
 */
export class EpisodeAgent {
  readonly name: string;
  trainable: boolean;
  /** @internal Agent runs and interactions opened (for the "ran no agent" check). */
  runs = 0;
  /**
   * @internal The episode's signal (its deadline, the caller's abort): runs and interactions opened
   * without a signal of their own stop with the episode (and an interaction needs no controller of its own).
   */
  signal: AbortSignal | undefined = undefined;

  constructor(
    readonly agent: Agent,
    private readonly episode: Episode,
    private readonly semaphore: Semaphore,
  ) {
    this.name = agent.name;
    this.trainable = agent.trainable;
  }

  /** @internal Stamps this role's name and `trainable` on a trace of its own. */
  stamp(trace: Trace): void {
    trace.agent.name = this.name;
    trace.agent.trainable = this.trainable;
  }

  /** @internal Stamps a trace of this agent and appends it to the episode. */
  land(trace: Trace): void {
    this.stamp(trace);
    this.episode.traces.push(trace);
  }

  async run(task: Task, options: RunOptions = {}): Promise<Trace> {
    this.runs++;
    const trace = await this.semaphore.run(() =>
      this.agent.run(task, {
        ...options,
        ...(options.signal === undefined && this.signal ? { signal: this.signal } : {}),
        onTrace: (t) => {
          this.stamp(t);
          options.onTrace?.(t);
        },
      }),
    );
    this.stamp(trace);
    this.episode.traces.push(trace);
    return trace;
  }

  /** A fresh sandbox from this agent's runtime (the caller stops it). */
  provision(task?: Task): Promise<Sandbox> {
    return this.agent.provision(task);
  }

  /**
   * A turn-by-turn interaction; the per-episode agent slot is held only while a turn runs.
   * The trace lands in the episode when the interaction closes (also when opening fails).
   */
  interaction(task: Task, options: RunOptions = {}): Promise<Interaction> {
    this.runs++;
    // No async frame and no closures per seat: the opening options and the interaction are
    // objects of their own classes (a game opens two per hand).
    const opening = new SeatOpening(this, options);
    const opened = this.semaphore.unlimited
      ? this.agent.interaction(task, opening)
      : this.semaphore.run(() => this.agent.interaction(task, opening));
    return opened.then(
      (inner) => new EpisodeInteraction(this, inner, this.semaphore),
      (error) => {
        if (opening.live) this.land(opening.live);
        throw error;
      },
    );
  }
}

/**
 * The run options an episode agent opens an interaction with: the caller's sandbox, its signal or
 * else the episode's, and `onTrace` stamping the live trace (kept in case opening fails).
 */
class SeatOpening implements RunOptions {
  sandbox?: Sandbox;
  signal?: AbortSignal;
  live: Trace | undefined = undefined;

  constructor(
    private readonly owner: EpisodeAgent,
    options: RunOptions,
  ) {
    if (options.sandbox !== undefined) this.sandbox = options.sandbox;
    const signal = options.signal ?? owner.signal;
    if (signal !== undefined) this.signal = signal;
  }

  onTrace(trace: Trace): void {
    this.live = trace;
    this.owner.stamp(trace);
  }
}

/** An episode agent's interaction: turns hold the per-episode slot; the trace lands in the episode when it closes. */
class EpisodeInteraction implements Interaction {
  readonly trace: Trace;
  private closed = false;

  constructor(
    private readonly owner: EpisodeAgent,
    private readonly inner: Interaction,
    private readonly semaphore: Semaphore,
  ) {
    this.trace = inner.trace;
  }

  turn(message?: string | Message[]): Promise<Segment> {
    // Unlimited agents per episode (a game): no slot to take, and no closure per turn.
    const inner = this.inner;
    return this.semaphore.unlimited ? inner.turn(message) : this.semaphore.run(() => inner.turn(message));
  }

  close(): Promise<Trace> {
    // One reaction on the inner close (no async frame per seat).
    return this.inner.close().then((trace) => {
      if (!this.closed) {
        this.closed = true;
        this.owner.land(trace);
      }
      return trace;
    });
  }
}
