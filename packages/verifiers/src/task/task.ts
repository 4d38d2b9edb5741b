import { z } from 'zod';
import { ConfigError } from '../errors/troupe-error.ts';
import { contentText, type Message, MessageSchema } from '../model/messages.ts';
import type { Sandbox } from '../runtime/runtime.ts';
import type { ToolDefinition } from '../tools/mcp-server.ts';
import type { Trace } from '../trace/trace.ts';
import { canonicalJson, sha256 } from '../util/hash.ts';

/**
 * Per-stage time limits of a task, in seconds (each positive), used for a stage the agent config
 * sets no timeout for.
 */
export const TaskTimeoutSchema = z.object({
  /** Harness and task setup in the sandbox (seconds). */
  setup: z.number().positive().optional(),
  /** The agent's run (seconds). */
  agent: z.number().positive().optional(),
  /** The task's `finalize` hook (seconds). */
  finalize: z.number().positive().optional(),
  /** Rewards and metrics (seconds). */
  scoring: z.number().positive().optional(),
});

/** The data of one task. Unknown fields (such as `answer`) are kept. */
export const TaskDataSchema = z
  .object({
    idx: z.number().int().optional(),
    name: z.string().optional(),
    description: z.string().optional(),
    /** A string, a list of messages, or null when the user opens the conversation. */
    prompt: z.union([z.string(), z.array(MessageSchema), z.null()]),
    systemPrompt: z.string().optional(),
    image: z.string().optional(),
    workdir: z.string().optional(),
    /** Paths (in the sandbox) carried across sandboxes, e.g. to a judge. */
    artifacts: z.array(z.string()).optional(),
    /** Seconds per stage. */
    timeout: TaskTimeoutSchema.optional(),
    info: z.record(z.string(), z.unknown()).optional(),
  })
  .loose();
/** The data of one task as {@link TaskDataSchema} parses it; unknown fields (such as `answer`) are kept. */
export type TaskData = z.infer<typeof TaskDataSchema>;

/** What a reward, metric or hook receives. */
export interface TaskContext<D extends TaskData = TaskData> {
  task: Task<D>;
  trace: Trace;
  /** The sandbox the agent ran in, when it is still alive. */
  sandbox?: Sandbox;
}

/** A named reward: returns a score (or a map of scores); the trace's reward is Σ score·weight. */
export interface RewardFunction<D extends TaskData = TaskData> {
  name: string;
  weight?: number;
  /** Higher runs first. */
  priority?: number;
  /** Set when the function needs the sandbox; skipped (left null) when there is none. */
  needsSandbox?: boolean;
  fn(context: TaskContext<D>): number | Record<string, number> | Promise<number | Record<string, number>>;
}

/** A named, unweighted metric. */
export type MetricFunction<D extends TaskData = TaskData> = Omit<RewardFunction<D>, 'weight'>;

/**
 * What `new Task(data, options)` takes besides the data: its key, the rewards, metrics and hooks that
 * score a run, and the tools it serves.
 */
export interface TaskOptions<D extends TaskData> {
  /** A durable id, unique in the taskset; defaults to the content hash. */
  key?: string;
  /** Reward functions; the trace's reward is Σ score·weight. */
  rewards?: RewardFunction<D>[];
  /** Metric functions (recorded, not summed into the reward). */
  metrics?: MetricFunction<D>[];
  /** Runs in the sandbox before the agent (e.g. writes files). */
  setup?(context: TaskContext<D>): Promise<void> | void;
  /** Runs after the agent, before scoring. */
  finalize?(context: TaskContext<D>): Promise<void> | void;
  /** The task cannot run on a process runtime. */
  needsContainer?: boolean;
  /** Type name recorded on traces. */
  type?: string;
  /**
   * Tools the agent serves over MCP (server `troupe`, so the model sees `mcp__troupe__<name>`)
   * to a harness with `supportsMcp`; any other harness is refused, naming both.
   */
  tools?: readonly ToolDefinition[];
}

/** The data object `Task.patched` just built and validated (the next constructor call takes it as is). */
let validatedData: object | null = null;

const optionalString = (v: unknown) => v === undefined || typeof v === 'string';
const isPlainRecord = (v: unknown) =>
  typeof v === 'object' && v !== null && (Object.getPrototypeOf(v) === Object.prototype || Object.getPrototypeOf(v) === null);
/**
 * Checks that accept a field's value only where {@link TaskDataSchema} surely does (a string, null,
 * an integer, a plain object for `info`); anything else (a message list, timeouts, artifacts, a
 * bad value) goes through the schema, which also words the error. Parsing with zod allocated
 * ≈1 KB per task, and a game makes three tasks per hand.
 */
const PLAIN_FIELDS: Record<string, ((v: unknown) => boolean) | undefined> = {
  idx: (v) => v === undefined || Number.isSafeInteger(v),
  name: optionalString,
  description: optionalString,
  prompt: (v) => v === null || typeof v === 'string',
  systemPrompt: optionalString,
  image: optionalString,
  workdir: optionalString,
  // A record keyed by strings: zod refuses symbol keys.
  info: (v) => v === undefined || (isPlainRecord(v) && Object.getOwnPropertySymbols(v).length === 0),
};

/** True when `data` surely parses: an object whose known fields all pass {@link PLAIN_FIELDS} (`prompt` is required). */
function plainlyValid(data: unknown): boolean {
  if (!isPlainRecord(data)) return false;
  const record = data as Record<string, unknown>;
  if (!('prompt' in record)) return false;
  for (const key in record) {
    if (!Object.hasOwn(TaskDataSchema.shape, key)) continue;
    const check = PLAIN_FIELDS[key];
    if (check === undefined || !check(record[key])) return false;
  }
  return true;
}

/** The error of invalid task data, naming the field (`prefix` + the issue's path). */
function invalidTaskData(issue: z.core.$ZodIssue | undefined, prefix: PropertyKey[]): ConfigError {
  const path = [...prefix, ...(issue?.path ?? [])].join('.');
  return new ConfigError(`invalid task data at ${path || '(root)'}: ${issue?.message}`, { path: path || '(root)' });
}

/** A task: frozen data plus the rewards, metrics and hooks that score a run on it. */
export class Task<D extends TaskData = TaskData> {
  readonly data: Readonly<D>;
  /** The content hash, computed when first read (a game seat's task is made per hand and rarely hashed). */
  private contentHash: string | undefined;
  readonly key: string;
  readonly type: string;
  readonly rewards: RewardFunction<D>[];
  readonly metrics: MetricFunction<D>[];
  setup?(context: TaskContext<D>): Promise<void> | void;
  finalize?(context: TaskContext<D>): Promise<void> | void;
  readonly needsContainer: boolean;
  readonly tools: readonly ToolDefinition[];

  constructor(data: D, options: TaskOptions<D> = {}) {
    if (validatedData === data) {
      // From `with` / `derive`: a fresh object whose fields were validated (the patch just now).
      validatedData = null;
      this.data = Object.freeze(data);
    } else {
      if (!plainlyValid(data)) {
        const parsed = TaskDataSchema.safeParse(data);
        if (!parsed.success) throw invalidTaskData(parsed.error.issues[0], []);
      }
      this.data = Object.freeze({ ...data });
    }
    this.key = options.key ?? (data.name ? String(data.name) : this.hash.slice(0, 16));
    this.type = options.type ?? 'task';
    this.rewards = options.rewards ?? [];
    this.metrics = options.metrics ?? [];
    if (options.setup) this.setup = options.setup;
    if (options.finalize) this.finalize = options.finalize;
    this.needsContainer = options.needsContainer ?? false;
    this.tools = options.tools ?? [];
  }

  /** The prompt as text: the string, or the text parts joined by blank lines. */
  get promptText(): string {
    const prompt = this.data.prompt;
    if (prompt === null) return '';
    if (typeof prompt === 'string') return prompt;
    return prompt
      .map((m) => (m.role === 'assistant' ? (m.content ?? '') : contentText(m.content)))
      .filter(Boolean)
      .join('\n\n');
  }

  /** The prompt as messages (system prompt first when set). */
  get promptMessages(): Message[] {
    const out: Message[] = [];
    if (this.data.systemPrompt) out.push({ role: 'system', content: this.data.systemPrompt });
    const prompt = this.data.prompt as TaskData['prompt'];
    if (typeof prompt === 'string') out.push({ role: 'user', content: prompt });
    else if (prompt) out.push(...prompt);
    return out;
  }

  /**
   * A variant of this task for the SAME role (e.g. the prompt moved into a conversation): some
   * data fields replaced, the same key, rewards, metrics and hooks unless `options` replaces them.
   * For a task handed to ANOTHER role (a critic reading the writer's draft, a judge) use
   * {@link Task.derive}, which scores nothing unless asked.
   */
  with(patch: Partial<D>, options: Partial<TaskOptions<D>> = {}): Task<D> {
    const next: TaskOptions<D> = {
      key: options.key ?? this.key,
      rewards: options.rewards ?? this.rewards,
      metrics: options.metrics ?? this.metrics,
      needsContainer: options.needsContainer ?? this.needsContainer,
      type: options.type ?? this.type,
      tools: options.tools ?? this.tools,
    };
    // Hooks set only when there are some (no temporary objects spread per variant).
    const setup = options.setup ?? this.setup;
    if (setup) next.setup = setup;
    const finalize = options.finalize ?? this.finalize;
    if (finalize) next.finalize = finalize;
    return new Task<D>(this.patched(patch), next);
  }

  /**
   * A task for ANOTHER role, derived from this one: some data fields replaced, the same key (its
   * traces stay grouped with the episode's task) and type, but none of the original's rewards,
   * metrics, setup or finalize — a critic's trace on the writer's task must not be scored by the
   * writer's `correct`. Pass them in `options` to keep any (`{ rewards: task.rewards }`). A role
   * whose traces carry no reward is reported as "not scored".
   */
  derive(patch: Partial<D>, options: Partial<TaskOptions<D>> = {}): Task<D> {
    return new Task<D>(this.patched(patch), {
      ...options,
      key: options.key ?? this.key,
      type: options.type ?? this.type,
      needsContainer: options.needsContainer ?? this.needsContainer,
    });
  }

  /**
   * This task's data with `patch` over it, for the constructor to take as validated: this data
   * was validated when this task was made, so only the patched fields are (a game seat's task per
   * hand re-parsed the whole task before).
   */
  private patched(patch: Partial<D>): D {
    for (const key of Object.keys(patch)) {
      const field = (TaskDataSchema.shape as Record<string, z.ZodType | undefined>)[key];
      if (field === undefined) continue; // unknown fields (such as `answer`) are kept unchecked
      const value = (patch as Record<string, unknown>)[key];
      if (PLAIN_FIELDS[key]?.(value)) continue;
      const parsed = field.safeParse((patch as Record<string, unknown>)[key]);
      if (!parsed.success) throw invalidTaskData(parsed.error.issues[0], [key]);
    }
    const data = { ...this.data, ...patch } as D;
    validatedData = data;
    return data;
  }

  /** SHA-256 of the data's canonical JSON (sorted keys, no null values). */
  get hash(): string {
    this.contentHash ??= sha256(canonicalJson(this.data));
    return this.contentHash;
  }

  /**
   * The `{key, hash, data}` stamp stored on traces and episodes. Its `hash` is an own enumerable
   * getter, read like a field (JSON, spreads, `Object.entries`): hashed only when something reads
   * it, e.g. when the trace is written out; a training step that writes no traces hashes nothing.
   */
  get record(): { key: string; hash: string; data: Record<string, unknown> } {
    return new TaskRecord(this);
  }
}

/**
 * A task's stamp (see {@link Task.record}): `key`, `hash` (an own enumerable getter reading the
 * task's lazily computed hash) and a copy of `data`, in that order. The task it stamps is a private
 * field (not in JSON, spreads or `Object.keys`): a two-seat game makes three records per hand, and a
 * symbol-keyed link cost a second `defineProperty` and its descriptor per record.
 */
class TaskRecord {
  // Declared, not defined: the constructor sets them in the serialized order, `hash` between.
  declare key: string;
  declare hash: string;
  declare data: Record<string, unknown>;
  readonly #task: Task;

  constructor(task: Task) {
    this.key = task.key;
    Object.defineProperty(this, 'hash', RECORD_HASH);
    this.data = { ...task.data };
    this.#task = task;
  }

  /** The hash of the task `record` stamps. */
  static hashOf(record: TaskRecord): string {
    return record.#task.hash;
  }
}

/** The records' `hash`: one shared accessor, defined on each record (own and enumerable). */
const RECORD_HASH: PropertyDescriptor = {
  get(this: TaskRecord): string {
    return TaskRecord.hashOf(this);
  },
  enumerable: true,
  configurable: true,
};
