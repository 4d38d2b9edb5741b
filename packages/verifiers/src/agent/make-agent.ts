import { z } from 'zod';
import { ConfigError } from '../errors/troupe-error.ts';
import type { Harness } from '../harness/harness.ts';
import { lazyInterceptionServer } from '../interception/interception-server.ts';
import type { ModelClient } from '../model/model-client.ts';
import { OpenAICompatibleClient } from '../model/openai-client.ts';
import type { Runtime } from '../runtime/runtime.ts';
import { Task, type TaskData } from '../task/task.ts';
import type { Trace } from '../trace/trace.ts';
import { Agent, type Interaction, type RunOptions } from './agent.ts';
import { AgentConfigSchema, ClientConfigSchema, describeZodError, type ResolvedAgentConfig } from './agent-config.ts';
import { loadHarness, loadRuntime } from './plugins.ts';

/**
 * `Symbol.asyncDispose` where the runtime has it (Node ≥ 20.4 does, as
 * `Symbol.for('nodejs.asyncDispose')`); the registered symbol otherwise, so that
 * `await using` lowered by a compiler finds the same key.
 */
export const asyncDisposeSymbol: symbol = (Symbol as { asyncDispose?: symbol }).asyncDispose ?? Symbol.for('nodejs.asyncDispose');

const isModelClient = (value: unknown): value is ModelClient =>
  typeof value === 'object' && value !== null && typeof (value as { complete?: unknown }).complete === 'function';

/**
 * What `makeAgent` takes: the same fields a role's `AgentConfig` has (`model`, `client`,
 * `sampling`, `harness`, `runtime`, limits, timeouts, retries, `trainable`), with `model`
 * required, plus the conveniences a script needs: `baseUrl` (instead of a `client` table),
 * `apiKey` (read it from the environment yourself; nothing below the CLI reads `process.env`),
 * a ready `ModelClient` as `client`, and `name` (the role name stamped on traces).
 */
export const MakeAgentConfigSchema = AgentConfigSchema.omit({ client: true })
  .extend({
    model: z.string().min(1),
    /** A client table (`{ baseUrl, headers, maxRetries, timeoutMs }`) or a ready `ModelClient`. */
    client: z.union([ClientConfigSchema, z.custom<ModelClient>(isModelClient, 'expected a ModelClient')]).optional(),
    /** Shorthand for `client: { baseUrl }`. */
    baseUrl: z.string().url().optional(),
    /** API key sent to the model server (default `EMPTY`, which local servers accept). */
    apiKey: z.string().min(1).optional(),
    /** Role name on the traces (default `agent`). */
    name: z.string().min(1).optional(),
  })
  .strict();
/** Input of `makeAgent`. */
export type MakeAgentConfig = z.input<typeof MakeAgentConfigSchema>;

/** What `agent.run(…)` and `agent.interaction(…)` take: a Task, its data, or a prompt string. */
export type TaskInput = Task | TaskData | string;

/** An agent made by `makeAgent`: runs tasks, and owns (and releases) its runtime and interception server. */
export interface MadeAgent {
  /** The underlying agent (harness × model × runtime). */
  readonly agent: Agent;
  readonly model: string;
  readonly harness: Harness;
  readonly runtime: Runtime;
  /** Runs the task to program exit and returns its scored trace. */
  run(task: TaskInput, options?: RunOptions): Promise<Trace>;
  /** A turn-by-turn conversation (the harness must support resume); `close()` on it records the trace. */
  interaction(task: TaskInput, options?: RunOptions): Promise<Interaction>;
  /** Closes open interactions, the interception server and the runtime. Idempotent. */
  close(): Promise<void>;
  /** `await using agent = await makeAgent(…)` calls `close()` at the end of the block. */
  [Symbol.asyncDispose](): Promise<void>;
}

function toTask(input: TaskInput): Task {
  if (input instanceof Task) return input;
  if (typeof input === 'string') return new Task({ prompt: input });
  if (typeof input === 'object' && input !== null && 'prompt' in input) return new Task(input);
  throw new ConfigError('agent.run(task): expected a Task, task data with a `prompt`, or a prompt string');
}

/**
 * One call to make an agent outside an env: validates the config (a bad field fails here,
 * named), resolves the harness and runtime by id (built-ins, `@troupe/harness-<id>` /
 * `@troupe/runtime-<id>` packages, or registered plugins), builds the model client, and
 * starts an interception server on first need.
 *
 * ```ts
 * await using agent = await makeAgent({ model: 'm', baseUrl: 'http://127.0.0.1:8000/v1', harness: 'bash' });
 * const trace = await agent.run('What is 2 + 2?');
 * ```
 */
export async function makeAgent(config: MakeAgentConfig): Promise<MadeAgent> {
  const parsed = MakeAgentConfigSchema.safeParse(config);
  if (!parsed.success) throw new ConfigError(`makeAgent: ${describeZodError(parsed.error)}`);
  const { client: clientField, baseUrl, apiKey, name, ...rest } = parsed.data;
  if (clientField !== undefined && baseUrl !== undefined) {
    throw new ConfigError('makeAgent: client and baseUrl: set one of them, not both');
  }
  const { client, clientConfig } = modelClientOf({ client: clientField, baseUrl, apiKey, model: rest.model });
  const harness = await loadPlugin('harness', () => loadHarness(rest.harness ?? 'bash'));
  const runtime = await loadPlugin('runtime', () => loadRuntime(rest.runtime ?? 'local'));

  const interception = lazyInterceptionServer();
  let agent: Agent;
  try {
    agent = new Agent({
      ...(name ? { name } : {}),
      config: { ...rest, ...(clientConfig ? { client: clientConfig } : {}) },
      model: rest.model,
      client,
      harness,
      runtime,
      interception: interception.get,
    });
  } catch (error) {
    await runtime.close?.().catch(() => {});
    throw error;
  }
  return madeAgent({ agent, harness, runtime, closeInterception: interception.close });
}

/**
 * The model client of `makeAgent`: the `ModelClient` given as `client`, or an OpenAI-compatible
 * client built from the client table (or `baseUrl`) with `apiKey` (default `EMPTY`); a table is
 * also returned as the config's `client`.
 */
function modelClientOf(options: {
  client: z.output<typeof MakeAgentConfigSchema>['client'];
  baseUrl: string | undefined;
  apiKey: string | undefined;
  model: string;
}): { client: ModelClient; clientConfig?: ResolvedAgentConfig['client'] } {
  if (isModelClient(options.client)) return { client: options.client };
  const table =
    options.client ?? (options.baseUrl !== undefined ? ClientConfigSchema.parse({ baseUrl: options.baseUrl }) : undefined);
  if (!table) throw new ConfigError('makeAgent: client: set client (a client table or a ModelClient) or baseUrl');
  if (table.apiKeyVar !== undefined) {
    throw new ConfigError('makeAgent: client.apiKeyVar: only the CLI reads the environment; pass apiKey instead');
  }
  const client = new OpenAICompatibleClient({
    baseUrl: table.baseUrl,
    apiKey: options.apiKey ?? 'EMPTY',
    model: options.model,
    ...(table.headers ? { headers: table.headers } : {}),
    retry: { maxRetries: table.maxRetries },
    ...(table.timeoutMs ? { timeoutMs: table.timeoutMs } : {}),
  });
  return { client, clientConfig: table };
}

/** Loads the harness or runtime plugin; a failure is a `ConfigError` naming the field. */
async function loadPlugin<T>(field: 'harness' | 'runtime', load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (error) {
    const message = (error as Error).message ?? String(error);
    throw new ConfigError(`makeAgent: ${field}: ${message}`, { cause: error });
  }
}

/** The caller's handle on a made agent: runs and interactions until `close()`, which closes what is open. */
function madeAgent(parts: {
  agent: Agent;
  harness: Harness;
  runtime: Runtime;
  closeInterception: () => Promise<void>;
}): MadeAgent {
  const { agent, harness, runtime } = parts;
  const open = new Set<Interaction>();
  let closing: Promise<void> | undefined;
  const assertOpen = () => {
    if (closing) throw new ConfigError(`${agent.name}: the agent is closed`);
  };
  const made: MadeAgent = {
    agent,
    model: agent.model,
    harness,
    runtime,
    async run(task, options) {
      assertOpen();
      return agent.run(toTask(task), options);
    },
    async interaction(task, options) {
      assertOpen();
      const interaction = await agent.interaction(toTask(task), options);
      open.add(interaction);
      const close = interaction.close.bind(interaction);
      return {
        get trace() {
          return interaction.trace;
        },
        turn: (message) => interaction.turn(message),
        close: async () => {
          open.delete(interaction);
          return close();
        },
      };
    },
    close() {
      closing ??= (async () => {
        await Promise.allSettled([...open].map((interaction) => interaction.close()));
        open.clear();
        await parts.closeInterception();
        await runtime.close?.();
      })();
      return closing;
    },
    [asyncDisposeSymbol as typeof Symbol.asyncDispose]() {
      return made.close();
    },
  };
  return made;
}
