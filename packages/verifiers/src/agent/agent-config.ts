import { z } from 'zod';
import { ModuleScorerSchema, RewardEntrySchema } from '../env/reward-modules.ts';
import { SamplingSchema } from '../model/model-client.ts';
import { McpServersSchema } from '../tools/mcp-servers.ts';

/** How to reach a model server. The API key is named by an environment variable, resolved by the CLI. */
export const ClientConfigSchema = z
  .object({
    /** The wire the server speaks: `openai` (OpenAI-compatible chat completions; the only one). */
    type: z.literal('openai').default('openai'),
    /** The server's base URL, including `/v1`. */
    baseUrl: z.string().url(),
    /** Name of the environment variable holding the key (resolved at the CLI layer only). */
    apiKeyVar: z.string().optional(),
    /** Extra HTTP headers sent with every request. */
    headers: z.record(z.string(), z.string()).optional(),
    /** Retries of a failed call (429, 5xx, resets), with backoff honouring `retry-after` (default 3). */
    maxRetries: z.number().int().nonnegative().default(3),
    /** Per-request timeout in milliseconds (default: none). */
    timeoutMs: z.number().int().positive().optional(),
  })
  .strict();
/**
 * A model server's client config after parsing (`type` openai, `maxRetries` 3 by default; `timeoutMs`
 * per request in milliseconds); see {@link ClientConfigSchema}.
 */
export type ClientConfig = z.infer<typeof ClientConfigSchema>;

/** A plugin reference: an id string, or `{ id, ...options }`. */
export const PluginRefSchema = z.union([z.string().min(1), z.object({ id: z.string().min(1) }).loose()]);
/**
 * A harness or runtime reference in a config: an id (`"codex"`), or `{ id, ...options }` whose other
 * keys are the plugin's options.
 */
export type PluginRef = z.infer<typeof PluginRefSchema>;

const seconds = z.number().positive();

/**
 * Retries of a run (an agent's `retries`) or of an episode (an env's): up to `maxRetries` more
 * attempts while an error matches by type, `include` (empty: any type) less `exclude`.
 */
export const RetriesSchema = z
  .object({
    maxRetries: z.number().int().nonnegative().default(0),
    include: z.array(z.string()).default([]),
    exclude: z.array(z.string()).default([]),
  })
  .strict();

/**
 * One agent = harness × model × runtime, with limits, timeouts and retries. Every field is
 * optional: unpinned fields take the run's model, client and sampling; the harness defaults
 * to `bash` and the runtime to `local`.
 */
export const AgentConfigSchema = z
  .object({
    model: z.string().min(1).optional(),
    client: ClientConfigSchema.optional(),
    /** Deep-merged over the run's sampling. */
    sampling: SamplingSchema.optional(),
    harness: PluginRefSchema.optional(),
    runtime: PluginRefSchema.optional(),
    maxTurns: z.number().int().positive().nullable().optional(),
    maxInputTokens: z.number().int().positive().nullable().optional(),
    maxOutputTokens: z.number().int().positive().nullable().optional(),
    maxTotalTokens: z.number().int().positive().nullable().optional(),
    /**
     * Bytes one run of this agent may record (messages, token ids, calls, tool calls); default
     * 64 MiB, null = unlimited. The call that would pass it is refused and the trace stops with
     * `max_trace_bytes`.
     */
    maxTraceBytes: z.number().int().positive().nullable().optional(),
    /** Seconds per stage; the agent value wins over the task's. */
    timeout: z
      .object({
        setup: seconds.optional(),
        rollout: seconds.optional(),
        finalize: seconds.optional(),
        scoring: seconds.optional(),
      })
      .strict()
      .optional(),
    /** Re-run the whole agent run while an error on the trace matches (by error type). */
    retries: RetriesSchema.optional(),
    /** Whether this agent's traces train (envs set judges, users and frozen opponents false). */
    trainable: z.boolean().optional(),
    /** Rewards plugged from config (`[[env.<role>.rewards]] module = "./r.ts", export = "f", weight = 0.5`, or `judge = "rubric"`). */
    rewards: z.array(RewardEntrySchema).optional(),
    /** Metrics plugged from config by module path. */
    metrics: z.array(ModuleScorerSchema).optional(),
    /** Stop conditions plugged from config by module path (checked before each model call). */
    stops: z.array(ModuleScorerSchema).optional(),
    /**
     * MCP servers every run of this agent gets (`[env.<role>.mcpServers.<name>] url = "…"` or
     * `command` / `args` / `env`): passed to any harness with `supportsMcp`; any other harness is
     * refused when the agent is built.
     */
    mcpServers: McpServersSchema.optional(),
  })
  .strict();
/** An agent config as written (every field optional; times in seconds); see {@link AgentConfigSchema}. */
export type AgentConfig = z.input<typeof AgentConfigSchema>;
/** An agent config after parsing, defaults applied (what `Agent` receives); see {@link AgentConfigSchema}. */
export type ResolvedAgentConfig = z.output<typeof AgentConfigSchema>;

/**
 * Deep merge of plain objects (`override` wins; arrays are replaced). Objects with a null
 * prototype count as plain: TOML parsers (smol-toml) return tables that way, and a `[env.role]`
 * table must merge into the role's defaults exactly as the same JSON object does.
 */
export function deepMerge<T>(base: T, override: unknown): T {
  if (override === undefined) return base;
  if (!isPlain(base) || !isPlain(override)) return override as T;
  const out: Record<string, unknown> = { ...(base as Record<string, unknown>) };
  for (const [key, value] of Object.entries(override)) {
    if (value === undefined) continue;
    out[key] = key in out ? deepMerge(out[key], value) : value;
  }
  return out as T;
}

function isPlain(value: unknown): value is Record<string, unknown> {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    (Object.getPrototypeOf(value) === Object.prototype || Object.getPrototypeOf(value) === null)
  );
}

/** Formats the first zod issue as `path: message`. */
export function describeZodError(error: z.ZodError, prefix = ''): string {
  return error.issues
    .slice(0, 3)
    .map((issue) => {
      const path = [prefix, ...issue.path.map(String)].filter(Boolean).join('.');
      return `${path || '(root)'}: ${issue.message}`;
    })
    .join('; ');
}
