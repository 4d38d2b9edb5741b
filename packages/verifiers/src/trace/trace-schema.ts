import { z } from 'zod';
import { MessageSchema, ToolDefinitionSchema } from '../model/messages.ts';
import { UsageSchema } from '../model/model-client.ts';

/** Version of the serialized trace form. Bumped on any breaking change. */
export const TRACE_VERSION = 1;

export const TraceErrorSchema = z.object({
  type: z.string(),
  message: z.string(),
  statusCode: z.number().int().optional(),
  stack: z.string().optional(),
  /** Which stage failed: boot, setup, agent, finalize, scoring, model, env. */
  stage: z.string().optional(),
});
export type TraceError = z.infer<typeof TraceErrorSchema>;

/**
 * One message in the trace's message graph. Nodes are de-duplicated by content under the same
 * parent, so a divergence (compaction, a sub-agent) forms a new branch.
 */
export const MessageNodeSchema = z.object({
  id: z.number().int().nonnegative(),
  parent: z.number().int().nonnegative().nullable(),
  message: MessageSchema,
  /** True when the model sampled this message (an assistant reply recorded from a call). */
  sampled: z.boolean(),
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
  /** Set by a training algorithm: one advantage per sampled token. */
  advantages: z.array(z.number()).optional(),
});
export type MessageNode = z.infer<typeof MessageNodeSchema>;

export const ModelCallSchema = z.object({
  /** The sampled node this call produced (absent when the call failed). */
  node: z.number().int().nonnegative().optional(),
  /** The last prompt node of the request. */
  promptNode: z.number().int().nonnegative().nullable().optional(),
  model: z.string(),
  dialect: z.string(),
  sampling: z.record(z.string(), z.unknown()),
  finishReason: z.enum(['stop', 'length', 'tool_calls']).optional(),
  usage: UsageSchema.optional(),
  startedAt: z.number(),
  durationMs: z.number(),
  error: TraceErrorSchema.optional(),
  /** Number of tools offered in the request. */
  numTools: z.number().int().nonnegative().optional(),
  /** Version of the policy weights that served the call (set by a trainer's inference; absent otherwise). */
  policyVersion: z.number().int().nonnegative().optional(),
});
export type ModelCall = z.infer<typeof ModelCallSchema>;

export const RewardSchema = z.object({ score: z.number(), weight: z.number() });
export type Reward = z.infer<typeof RewardSchema>;

export const STOP_CONDITIONS = [
  'agent_completed',
  'user_closed',
  'max_turns',
  'max_input_tokens',
  'max_output_tokens',
  'max_total_tokens',
  'context_length',
  'timeout',
  'error',
] as const;
export type StopCondition = (typeof STOP_CONDITIONS)[number] | (string & {});

export const TraceTaskSchema = z.object({
  key: z.string(),
  hash: z.string(),
  data: z.record(z.string(), z.unknown()),
});

export const TraceAgentSchema = z.object({
  name: z.string(),
  trainable: z.boolean(),
  model: z.string().optional(),
  harness: z.string().optional(),
  runtime: z.string().optional(),
  /** The resolved agent config (secrets removed). */
  config: z.record(z.string(), z.unknown()).optional(),
});

export const TimingSchema = z.object({
  boot: z.number().optional(),
  setup: z.number().optional(),
  agent: z.number().optional(),
  model: z.number().optional(),
  finalize: z.number().optional(),
  scoring: z.number().optional(),
});

/** The serialized (JSON) form of a Trace. */
export const TraceRecordSchema = z.object({
  version: z.literal(TRACE_VERSION),
  id: z.string(),
  task: TraceTaskSchema,
  agent: TraceAgentSchema,
  tools: z.array(ToolDefinitionSchema).default([]),
  nodes: z.array(MessageNodeSchema),
  calls: z.array(ModelCallSchema),
  rewards: z.record(z.string(), RewardSchema.nullable()),
  metrics: z.record(z.string(), z.number().nullable()),
  info: z.record(z.string(), z.unknown()),
  extraUsage: z.array(UsageSchema).default([]),
  isCompleted: z.boolean(),
  ok: z.boolean(),
  stopCondition: z.string().nullable(),
  errors: z.array(TraceErrorSchema),
  timing: TimingSchema,
  startedAt: z.number(),
  endedAt: z.number().nullable(),
});
export type TraceRecord = z.infer<typeof TraceRecordSchema>;
