import { z } from 'zod';
import { MessageSchema, ToolDefinitionSchema } from '../model/messages.ts';
import { UsageSchema } from '../model/model-client.ts';

/** Version of the serialized trace form. Bumped on any breaking change. */
export const TRACE_VERSION = 1;

/** An error recorded on a trace (a failed call, stage or reward): data, never a silent 0. */
export const TraceErrorSchema = z.object({
  /** The error's class name (`ModelError`, `SandboxError`, `TimeoutError`, …), `Error` when it had none. */
  type: z.string(),
  /** The error's message. */
  message: z.string(),
  /** The HTTP status, when the error came from an HTTP reply. */
  statusCode: z.number().int().optional(),
  /** The first 8 lines of the stack, when there was one. */
  stack: z.string().optional(),
  /** Which stage failed: boot, setup, agent, finalize, scoring, model, env. */
  stage: z.string().optional(),
});
/** An error recorded on a trace; see {@link TraceErrorSchema}. */
export type TraceError = z.infer<typeof TraceErrorSchema>;

/**
 * One message in the trace's message graph. Nodes are de-duplicated by content under the same
 * parent, so a divergence (compaction, a sub-agent) forms a new branch.
 */
export const MessageNodeSchema = z
  .object({
    /** The node's index in `nodes` (0-based). */
    id: z.number().int().nonnegative(),
    /** The id of the message before it in the conversation; null for a first message. */
    parent: z.number().int().nonnegative().nullable(),
    /** The message. */
    message: MessageSchema,
    /** True when the model sampled this message (an assistant reply recorded from a call). */
    sampled: z.boolean(),
    /** When the node was added (Unix epoch, milliseconds). */
    timestamp: z.number(),
    /**
     * Tokens this node adds, on sampled nodes when the server returned token ids: the prompt
     * tokens since the end of `tokenParent` (the scaffold), then the sampled completion tokens.
     */
    tokenIds: z.array(z.number().int()).optional(),
    /** Same length as `tokenIds`; true on sampled completion tokens. */
    mask: z.array(z.boolean()).optional(),
    /** One inference logprob per sampled token (per `true` in `mask`). */
    logprobs: z.array(z.number()).optional(),
    /**
     * The sampled node whose token sequence this node continues; null when this node's prompt
     * does not extend an earlier sampled node's prompt+completion (a new branch starts here).
     */
    tokenParent: z.number().int().nonnegative().nullable().optional(),
    /**
     * Set by a training algorithm that gives every sampled token of this node one value (every
     * built-in algorithm does): that value. A node carries this or `advantages`, not both; read
     * either with {@link sampledAdvantage}.
     */
    advantage: z.number().optional(),
    /** Set by a training algorithm that gives the sampled tokens of this node different values: one per sampled token. */
    advantages: z.array(z.number()).optional(),
  })
  .refine((node) => node.advantage === undefined || node.advantages === undefined, {
    message: 'a node has one advantage (`advantage`) or per-token `advantages`, not both',
    path: ['advantages'],
  });
/** One node of a trace's message graph; see {@link MessageNodeSchema}. */
export type MessageNode = z.infer<typeof MessageNodeSchema>;

/**
 * The advantage of a node's `index`-th sampled token (counting only tokens whose mask bit is set):
 * `advantages[index]` when the node has per-token values, otherwise its one `advantage`; undefined
 * when the node was not scored.
 */
export function sampledAdvantage(node: MessageNode, index: number): number | undefined {
  const advantages = node.advantages;
  return advantages !== undefined ? advantages[index] : node.advantage;
}

/** One model call of the agent, as interception saw it: succeeded (with `node`) or failed (with `error`). */
export const ModelCallSchema = z.object({
  /** The sampled node this call produced (absent when the call failed). */
  node: z.number().int().nonnegative().optional(),
  /** The last prompt node of the request. */
  promptNode: z.number().int().nonnegative().nullable().optional(),
  /** The model named in the request. */
  model: z.string(),
  /** The wire dialect the program spoke (`chat`, `responses`, `messages`; `direct` for an in-process harness calling without HTTP). */
  dialect: z.string(),
  /** The request's sampling parameters (a `Sampling` object). */
  sampling: z.record(z.string(), z.unknown()),
  /** Why sampling stopped (absent when the call failed). */
  finishReason: z.enum(['stop', 'length', 'tool_calls']).optional(),
  /** Tokens used by the call (absent when the call failed). */
  usage: UsageSchema.optional(),
  /** When the call started (Unix epoch, milliseconds). */
  startedAt: z.number(),
  /** How long the call took, request to reply (milliseconds). */
  durationMs: z.number(),
  /** Why the call failed (absent when it succeeded). */
  error: TraceErrorSchema.optional(),
  /** Number of tools offered in the request. */
  numTools: z.number().int().nonnegative().optional(),
  /** Version of the policy weights that served the call (set by a trainer's inference; absent otherwise). */
  policyVersion: z.number().int().nonnegative().optional(),
  /**
   * True for a side call: its request does not extend the program's own conversation (the chain
   * of calls each of whose prompt passes through the previous one's), so its reply is never the
   * trace's final reply. A title or sub-agent request, or a call by code the program ran.
   */
  side: z.literal(true).optional(),
  /**
   * Set when the rollout had ended: `cut_off`, the call was in flight when the program exited (its
   * reply, if one came, was dropped); `refused`, it arrived after (answered 409, its body unread).
   */
  ended: z.enum(['cut_off', 'refused']).optional(),
});
/** One model call of a trace; see {@link ModelCallSchema}. */
export type ModelCall = z.infer<typeof ModelCallSchema>;

/** One named reward of a trace; the trace's reward is Σ score·weight over its non-null rewards. */
export const RewardSchema = z.object({
  /** The score the reward function returned (finite; its scale is the function's own). */
  score: z.number(),
  /** The reward's weight in the sum (default 1; 0 records a score that does not count). */
  weight: z.number(),
});
/** One named reward of a trace (`score`, `weight`); see {@link RewardSchema}. */
export type Reward = z.infer<typeof RewardSchema>;

/**
 * Why a trace stopped: the agent finished, the simulated user closed the conversation, a turn,
 * token or byte limit was reached, the context was full, a stage timed out, or an error. Envs may add
 * their own (see {@link StopCondition}).
 */
export const STOP_CONDITIONS = [
  'agent_completed',
  'user_closed',
  'max_turns',
  'max_input_tokens',
  'max_output_tokens',
  'max_total_tokens',
  'max_trace_bytes',
  'context_length',
  'timeout',
  'error',
] as const;
/** One of {@link STOP_CONDITIONS}, or an env's own condition name. */
export type StopCondition = (typeof STOP_CONDITIONS)[number] | (string & {});

/** The task a trace ran: its stamp (`Task.record`). */
export const TraceTaskSchema = z.object({
  /** The task's durable id in its taskset (its `name`, or the first 16 hex digits of `hash`). */
  key: z.string(),
  /** SHA-256 (hex) of the task data's canonical JSON. */
  hash: z.string(),
  /** The task data (`TaskData`, unknown fields kept). */
  data: z.record(z.string(), z.unknown()),
});

/** The agent (role) that produced a trace. */
export const TraceAgentSchema = z.object({
  /** The role name (`agent` for a single-agent env). */
  name: z.string(),
  /** Whether a trainer may learn from this role's samples (false for frozen roles and judges). */
  trainable: z.boolean(),
  /** The model it called, when known. */
  model: z.string().optional(),
  /** The harness id it ran under (`null`, `bash`, `codex`, …). */
  harness: z.string().optional(),
  /** The runtime id its sandbox came from (`local`, `docker`, …). */
  runtime: z.string().optional(),
  /** The resolved agent config (secrets removed). */
  config: z.record(z.string(), z.unknown()).optional(),
});

/**
 * Wall-clock time per stage of an agent run, in SECONDS (fractional; unlike the milliseconds of
 * `ModelCall.durationMs`). A stage that did not run is absent.
 */
export const TimingSchema = z.object({
  /** Creating the sandbox (seconds). */
  boot: z.number().optional(),
  /** Harness and task setup in the sandbox, before the agent timer (seconds). */
  setup: z.number().optional(),
  /** The agent's run, model calls included (seconds). */
  agent: z.number().optional(),
  /** The sum of the model calls' durations (seconds; part of `agent`). */
  model: z.number().optional(),
  /** The task's `finalize` hook (seconds). */
  finalize: z.number().optional(),
  /** Rewards and metrics (seconds). */
  scoring: z.number().optional(),
});

/** The serialized (JSON) form of a Trace. */
export const TraceRecordSchema = z.object({
  /** The trace format version ({@link TRACE_VERSION}). */
  version: z.literal(TRACE_VERSION),
  /** The trace id (a UUID unless the env chose one). */
  id: z.string(),
  /** The task it ran. */
  task: TraceTaskSchema,
  /** The agent (role) that ran it. */
  agent: TraceAgentSchema,
  /** The tools offered to the model. */
  tools: z.array(ToolDefinitionSchema).default([]),
  /** The message graph, indexed by node id. */
  nodes: z.array(MessageNodeSchema),
  /** Every model call, in order. */
  calls: z.array(ModelCallSchema),
  /** Rewards by name; null when not computed (the function threw, or needed a sandbox there was none of). */
  rewards: z.record(z.string(), RewardSchema.nullable()),
  /** Metrics by name (unweighted numbers); null when not computed, as for rewards. */
  metrics: z.record(z.string(), z.number().nullable()),
  /** Free-form facts recorded by envs, judges and tools (e.g. `judgeCalls`, `toolCalls`). */
  info: z.record(z.string(), z.unknown()),
  /** Usage of calls made for the trace but not by the agent (judges); counted in cost, never trained on. */
  extraUsage: z.array(UsageSchema).default([]),
  /** True once the run finished, errors or not; false while it runs or when it was interrupted. */
  isCompleted: z.boolean(),
  /** False when any error was recorded (`errors` is then non-empty). */
  ok: z.boolean(),
  /** Why the run stopped ({@link StopCondition}); null while it runs. */
  stopCondition: z.string().nullable(),
  /** Every error recorded, in order. */
  errors: z.array(TraceErrorSchema),
  /** Seconds per stage. */
  timing: TimingSchema,
  /** When the trace was created (Unix epoch, milliseconds). */
  startedAt: z.number(),
  /** When the run ended (Unix epoch, milliseconds); null while it runs. */
  endedAt: z.number().nullable(),
});
/** The serialized (JSON) form of a Trace, as {@link TraceRecordSchema} parses it. */
export type TraceRecord = z.infer<typeof TraceRecordSchema>;
