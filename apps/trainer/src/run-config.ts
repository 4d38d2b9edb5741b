import { readFile } from 'node:fs/promises';
import { OpponentPoolConfigSchema } from '@troupe/prime-rl/orchestrator';
import { TrainerConfigSchema } from '@troupe/prime-rl/trainer';
import { ConfigError } from '@troupe/verifiers';
import { normalizeConfigKeys, normalizeSet, rejectPrototypeKeys, snakeConfigKey } from '@troupe/verifiers/internal';
import { parse as parseToml } from 'smol-toml';
import { z } from 'zod';
import {
  checkTransportSections,
  type InferenceSection,
  InferenceSectionSchema,
  type TransportSection,
  TransportSectionSchema,
} from './transport-config.ts';

/**
 * A run config error: the core's {@link ConfigError} (its message and `path` name the field,
 * `train.source[0].ratio`).
 * @deprecated use `ConfigError` from `@troupe/verifiers` (the same class).
 */
export const RunConfigError = ConfigError;
/** @deprecated use `ConfigError` from `@troupe/verifiers`. */
export type RunConfigError = ConfigError;

/** `algorithm.teacher.baseUrl[0]` → `algorithm.teacher.base_url[0]`: a key path as a config file spells it. */
function snakePath(path: string): string {
  return path
    .split('.')
    .map((segment) => segment.replace(/^[^[]+/, (key) => snakeConfigKey(key)))
    .join('.');
}

/**
 * A source's config error re-rooted under the source's field and spelled as the file spells it:
 * `algorithm.teacher.baseUrl: …` from `createAlgorithm` becomes
 * `train.source[0].algorithm.teacher.base_url: …`, every issue and `path` alike.
 */
export function underField(field: string, error: unknown): ConfigError {
  if (ConfigError.isInstance(error) && error.issues?.length) {
    const issues = error.issues.map((issue) => ({ path: `${field}.${snakePath(issue.path)}`, message: issue.message }));
    return new ConfigError(issues.map((issue) => `${issue.path}: ${issue.message}`).join('; '), { issues });
  }
  const message = (error as Error).message;
  if (ConfigError.isInstance(error) && error.path) {
    const path = `${field}.${snakePath(error.path)}`;
    const rest = message.startsWith(`${error.path}: `) ? message.slice(error.path.length + 2) : message;
    return new ConfigError(`${path}: ${rest}`, { path });
  }
  return new ConfigError(`${field}.${message}`, { path: field });
}

/** How a role of a source is played: the trainable policy, a frozen endpoint, a frozen checkpoint, or an opponent pool. */
export const RoleBindingSchema = z
  .object({
    /**
     * The trainable policy the role plays: `main` (the default: `[policy]`), or a name under
     * `[policies]`. Several roles on one policy = self-play; roles on different policies each train their own.
     */
    policy: z.string().min(1).optional(),
    /** A frozen OpenAI-compatible endpoint. */
    model: z
      .object({ baseUrl: z.string().url(), name: z.string().min(1), apiKey: z.string().optional() })
      .strict()
      .optional(),
    /** A frozen copy of an embedded policy (a run's `checkpoint/` directory). */
    checkpoint: z.string().min(1).optional(),
    /** Past snapshots of a trainable policy (`of`), one drawn per episode; never trained on. */
    pool: OpponentPoolConfigSchema.optional(),
    /** false: the role plays its policy but its traces never train. */
    trainable: z.boolean().optional(),
  })
  // Other keys (harness, runtime, sampling, …) are the role's agent config.
  .loose()
  .refine((b) => [b.policy, b.model, b.checkpoint, b.pool].filter((x) => x !== undefined).length <= 1, {
    message: 'give one of policy, model, checkpoint or pool',
  });
/**
 * How one role of a source is played, as {@link RoleBindingSchema} parses it: at most one of
 * `policy`, `model`, `checkpoint` or `pool` (none: the trainable policy), plus the role's own agent
 * config keys.
 */
export type RoleBinding = z.infer<typeof RoleBindingSchema>;

/**
 * Whether a role's traces train its policy: it plays a trainable policy (no `model`, `checkpoint` or
 * `pool`) and is not marked `trainable = false`. The one predicate both the config check and the
 * run's frozen-role set use.
 */
export function isTrainedRole(binding: RoleBinding): boolean {
  return (
    binding.model === undefined && binding.checkpoint === undefined && binding.pool === undefined && binding.trainable !== false
  );
}

/** One `[[train.source]]` / `[[eval.source]]`. */
export const SourceConfigSchema = z
  .object({
    /** A registry id, an `@troupe/env-<id>` package, or a module path (`./envs/my-env.ts`). */
    env: z.string().min(1),
    /** Name in metric keys (default: the env id). */
    name: z.string().min(1).optional(),
    /** This source's share of each step's groups, relative to the other sources' ratios (default 1). */
    ratio: z.number().positive().default(1),
    /** The env's own options. */
    options: z.record(z.string(), z.unknown()).default({}),
    /** A taskset id / JSONL path (default: the env's own taskset). */
    taskset: z.union([z.string(), z.object({ id: z.string() }).loose()]).optional(),
    /** The algorithm (`type` = grpo | hierarchical-grpo | rae | max-rl). */
    algorithm: z.object({ type: z.string() }).loose().default({ type: 'grpo' }),
    /** Episodes per task. */
    groupSize: z.number().int().positive().default(8),
    /** How each role of the env is played, by role name (default: every role is the trainable policy). */
    roles: z.record(z.string(), RoleBindingSchema).default({}),
  })
  .strict();
/**
 * One `[[train.source]]` / `[[eval.source]]` after parsing, defaults applied (`ratio` 1, `groupSize`
 * 8, `algorithm` grpo); see {@link SourceConfigSchema}.
 */
export type SourceConfig = z.infer<typeof SourceConfigSchema>;

/** `[policy]`: the embedded policy's shape, tokenizer and sampling, or `engine = "external"`. */
export const PolicySectionSchema = z
  .object({
    /**
     * `embedded` (default): the small policy trained and served in this process or by `pnpm trainer
     * serve-*`. `external`: prime-rl's own trainer and vLLM (needs `[transport]` and `[inference]`);
     * the orchestrator never reads the weights, and the shape fields below are unused.
     */
    engine: z.enum(['embedded', 'external']).default('embedded'),
    dModel: z.number().int().positive().default(32),
    layers: z.number().int().positive().default(1),
    heads: z.number().int().positive().default(4),
    ffnMult: z.number().int().positive().default(2),
    initStd: z.number().positive().default(0.1),
    /** Tasks per source whose rendered prompts build the vocabulary. */
    vocabSample: z.number().int().positive().default(1000),
    /** Extra words of the vocabulary. */
    vocabulary: z.array(z.string()).default([]),
    /** Fixed context length (default: from the sources). */
    contextLength: z.number().int().positive().optional(),
    temperature: z.number().positive().default(1),
    /** Reply tokens (a role's `sampling.maxTokens` may lower it). */
    maxTokens: z.number().int().positive().default(1),
    maxBatch: z.number().int().positive().default(512),
    maxWaitMs: z.number().min(0).default(0),
    /**
     * The onnxruntime that serves the embedded policy: `auto` (default) runs onnxruntime-node when it
     * is installed (native, faster; `npm install onnxruntime-node`), else onnxruntime-web (WebAssembly,
     * installed with @troupe/trainer, no download at install time).
     */
    onnxRuntime: z.enum(['auto', 'onnxruntime-node', 'onnxruntime-web']).default('auto'),
  })
  .strict();

/** `[trainer]`: optimizer, loss and schedule of the embedded trainer. */
export const TrainerSectionSchema = TrainerConfigSchema.extend({
  /** Train in a worker thread (overlaps rollouts and training). */
  workerThread: z.boolean().default(true),
  lrFinalFraction: z.number().min(0).max(1).default(1),
  lrDecayFraction: z.number().gt(0).max(1).default(1),
  momentumAtFloor: z.number().min(0).lt(1).nullable().default(null),
  refKlTauStart: z.number().min(0).nullable().default(null),
  refKlDecayFraction: z.number().gt(0).max(1).default(0.2),
}).strict();

/** A policy name: a key of `[policies]`, a word usable in file names and metric keys. */
const POLICY_NAME = /^[a-z][a-z0-9_-]{0,63}$/;

/**
 * `[policies.<name>]`: one trainable policy, with the keys of `[policy]`, and its own optional
 * `trainer` (overrides of the top-level `[trainer]`), `inference` and `transport` sections.
 */
export const NamedPolicySchema = PolicySectionSchema.extend({
  /** Overrides of the top-level `[trainer]` for this policy (lr, ref_kl_tau, …). */
  trainer: z.record(z.string(), z.unknown()).default({}),
  /** This policy's inference servers (as the top-level `[inference]` is `main`'s). */
  inference: InferenceSectionSchema,
  /** This policy's transport to its trainer process (as the top-level `[transport]` is `main`'s). */
  transport: TransportSectionSchema,
}).strict();

/** One trainable policy of a run, resolved: its `[policy]` keys, trainer, inference and transport. */
export interface ResolvedPolicy {
  /** The policy's name (`main` for `[policy]`). */
  name: string;
  policy: z.output<typeof PolicySectionSchema>;
  trainer: z.output<typeof TrainerSectionSchema>;
  inference: InferenceSection;
  transport: TransportSection;
}

/** A training run: sources, policy, trainer and orchestrator settings. */
export const RunConfigSchema = z
  .object({
    seed: z.number().int().default(0),
    maxSteps: z.number().int().positive().default(100),
    /**
     * Wall-clock budget in seconds (`--time-budget`): stop at the first step boundary at or after
     * it, evaluated and checkpointed; learning-rate and KL schedules still run over `maxSteps`.
     */
    maxSeconds: z.number().positive().optional(),
    /** Groups per step, shared across the train sources by ratio. */
    groupsPerStep: z.number().int().positive().default(8),
    maxAsync: z.number().int().nonnegative().default(1),
    maxOffPolicySteps: z.number().int().nonnegative().default(8),
    filterZeroAdvantages: z.boolean().default(true),
    checkpointEvery: z.number().int().nonnegative().default(25),
    /**
     * Stop the run (exit 4) after this many consecutive steps in which every episode failed; a first
     * step whose every episode failed stops it at once.
     */
    stopAfterFailedSteps: z.number().int().positive().default(5),
    /** Append every N-th step's scored episodes to `<out>/traces.jsonl` for `troupe view` (0 = never). */
    tracesEvery: z.number().int().nonnegative().default(0),
    /** Steps whose checkpoint is also kept, as `checkpoint-step-<N>/` (e.g. `[100, 300, 700]` for cross-play). */
    keepCheckpoints: z.array(z.number().int().positive()).default([]),
    train: z.object({ source: z.array(SourceConfigSchema).min(1), evalEvery: z.number().int().positive().default(1) }).strict(),
    /** Sources evaluated every `interval` steps, never trained on. */
    eval: z
      .object({
        interval: z.number().int().positive().default(10),
        /** Groups (tasks × group_size episodes) per evaluation of each eval source: its first tasks, every time. */
        groups: z.number().int().positive().default(8),
        source: z.array(SourceConfigSchema).default([]),
      })
      .strict()
      .optional(),
    policy: PolicySectionSchema.prefault({}),
    trainer: TrainerSectionSchema.prefault({}),
    /** `[transport]`: in-process (default), or prime-rl's wire to a trainer process (transport-config.ts). */
    transport: TransportSectionSchema,
    /** `[inference]`: external OpenAI-compatible policy servers (with a trainer process). */
    inference: InferenceSectionSchema,
    /**
     * `[policies.<name>]`: further trainable policies, each with its own trainer and inference
     * (`[policy]` is `[policies.main]`). A role binds one with `policy = "<name>"`.
     */
    policies: z.record(z.string(), NamedPolicySchema).default({}),
  })
  .strict()
  .superRefine((config, context) => {
    checkPolicyBindings(config, context);
    for (const [name, entry] of Object.entries(config.policies)) {
      if (!POLICY_NAME.test(name))
        context.addIssue({
          code: 'custom',
          path: ['policies', name],
          message: 'a policy name is lower case letters, digits, - and _ (at most 64), starting with a letter',
        });
      const trainer = TrainerSectionSchema.safeParse({ ...config.trainer, ...entry.trainer });
      for (const issue of trainer.success ? [] : trainer.error.issues)
        context.addIssue({ code: 'custom', path: ['policies', name, 'trainer', ...issue.path], message: issue.message });
      const problem = checkTransportSections({ transport: entry.transport, inference: entry.inference, policy: entry });
      if (problem) context.addIssue({ code: 'custom', path: ['policies', name, ...problem.path], message: problem.message });
    }
    const problem = checkTransportSections(config);
    if (problem) context.addIssue({ code: 'custom', path: problem.path, message: problem.message });
    checkSharedServers(config, context);
    // One vLLM fleet serves one version at a time: no snapshots of past versions to draw from.
    if (config.policy.engine === 'external')
      config.train.source.forEach((source, i) => {
        for (const [role, binding] of Object.entries(source.roles))
          if (binding.pool)
            context.addIssue({
              code: 'custom',
              path: ['train', 'source', i, 'roles', role, 'pool'],
              message: 'opponent pools need the embedded policy (policy.engine = "external" serves one version at a time)',
            });
      });
    // Over prime-rl's wire every token is sent with policy.temperature: a trainable role sampled at
    // another temperature would be trained against the wrong distribution, so it is refused.
    if (config.transport.type === 'in-process') return;
    config.train.source.forEach((source, i) => {
      for (const [role, binding] of Object.entries(source.roles)) {
        const temperature = (binding as { sampling?: { temperature?: unknown } }).sampling?.temperature;
        if (isTrainedRole(binding) && temperature !== undefined && temperature !== config.policy.temperature) {
          context.addIssue({
            code: 'custom',
            path: ['train', 'source', i, 'roles', role, 'sampling', 'temperature'],
            message: `${String(temperature)} differs from policy.temperature (${config.policy.temperature}); with a trainer process every token is trained at policy.temperature, so a trainable role cannot sample at another`,
          });
        }
      }
    });
  });
/**
 * Policies whose `[inference]` share a server are LoRA adapters of its one base model: each needs
 * its own `lora_name` (one vLLM holds one set of base weights; prime-rl's `/load_lora_adapter`).
 */
function checkSharedServers(
  config: {
    inference?: { baseUrls: string[]; loraName?: string | undefined } | undefined;
    policies: Record<string, { inference?: { baseUrls: string[]; loraName?: string | undefined } | undefined }>;
  },
  context: z.RefinementCtx,
): void {
  const entries = [
    ...(config.inference ? [{ path: ['inference'], name: 'main', inference: config.inference }] : []),
    ...Object.entries(config.policies).flatMap(([name, entry]) =>
      entry.inference ? [{ path: ['policies', name, 'inference'], name, inference: entry.inference }] : [],
    ),
  ];
  const key = (url: string) => url.replace(/\/+$/, '');
  for (const entry of entries) {
    const sharing = entries.filter(
      (other) => other !== entry && other.inference.baseUrls.some((url) => entry.inference.baseUrls.map(key).includes(key(url))),
    );
    if (sharing.length === 0) continue;
    const others = sharing.map((other) => `policy ${other.name}`).join(', ');
    const lora = entry.inference.loraName;
    if (!lora)
      context.addIssue({
        code: 'custom',
        path: [...entry.path, 'loraName'],
        message: `policy ${entry.name} shares an inference server with ${others}; policies on one server are LoRA adapters of its model: give each its own lora_name`,
      });
    else if (sharing.some((other) => other.inference.loraName === lora))
      context.addIssue({
        code: 'custom',
        path: [...entry.path, 'loraName'],
        message: `"${lora}" is also the lora_name of ${sharing
          .filter((o) => o.inference.loraName === lora)
          .map((o) => `policy ${o.name}`)
          .join(', ')} on the same server; each policy needs its own adapter`,
      });
  }
}

/** Every policy a role or a pool names is one the run trains. */
function checkPolicyBindings(
  config: { train: { source: SourceConfig[] }; policies: Record<string, unknown> },
  context: z.RefinementCtx,
): void {
  const known = new Set(['main', ...Object.keys(config.policies)]);
  for (const [i, source] of config.train.source.entries())
    for (const [role, binding] of Object.entries(source.roles)) {
      const named = binding.policy ?? binding.pool?.of;
      if (named !== undefined && !known.has(named))
        context.addIssue({
          code: 'custom',
          path: ['train', 'source', i, 'roles', role, ...(binding.policy !== undefined ? ['policy'] : ['pool', 'of'])],
          message: `no policy ${named} (policies: ${[...known].join(', ')}; add [policies.${named}])`,
        });
    }
}

/**
 * A whole run config after {@link parseRunConfig}: camelCase keys, defaults applied, the transport
 * sections checked against each other; see {@link RunConfigSchema} for the fields.
 */
export type RunConfig = z.infer<typeof RunConfigSchema>;

const camel = (key: string) => key.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());

/** Tables keyed by names the user chose (roles, policies): the names are kept as written. */
const NAMED_TABLES = new Set(['roles', 'policies']);

/** Keys written snake_case (TOML style) become camelCase, but the names of `roles` and `policies`; values are untouched. */
export function camelKeys(value: unknown, named = false): unknown {
  if (Array.isArray(value)) return value.map((v) => camelKeys(v));
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>).map(([k, v]) => {
        const key = named ? k : camel(k);
        return [key, camelKeys(v, !named && NAMED_TABLES.has(key))];
      }),
    );
  }
  return value;
}

/** Applies `--set a.b=value` (a JSON value, else the string); numeric segments index arrays (`train.source.0.ratio=2`). */
export function applySet(config: Record<string, unknown>, assignment: string): void {
  const eq = assignment.indexOf('=');
  if (eq <= 0) throw new ConfigError(`--set ${assignment}: expected path=value`, { path: assignment });
  const raw = assignment.slice(eq + 1);
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    parsed = raw;
  }
  const normalized = normalizeSet(assignment.slice(0, eq), parsed);
  const path = normalized.path.split('.');
  const value = normalized.value;
  let at: Record<string, unknown> = config;
  path.slice(0, -1).forEach((segment, i) => {
    const next = at[segment];
    if (next === undefined || next === null || typeof next !== 'object') {
      at[segment] = /^\d+$/.test(path[i + 1] ?? '') ? [] : {};
    }
    at = at[segment] as Record<string, unknown>;
  });
  at[path.at(-1) as string] = value;
}

function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const p of path)
    out += typeof p === 'number' ? `[${p}]` : out ? `.${snakeConfigKey(String(p))}` : snakeConfigKey(String(p));
  return out || '(root)';
}

/** Parses a run config object; the error names the field path of every problem. */
export function parseRunConfig(input: unknown): RunConfig {
  const raw = camelKeys(input) as Record<string, unknown> | null;
  const named = raw?.policies as Record<string, unknown> | undefined;
  if (raw && typeof raw === 'object' && raw.policy !== undefined && named && typeof named === 'object' && 'main' in named)
    throw new ConfigError('policies.main: [policy] is [policies.main]; give one of them', { path: 'policies.main' });
  const parsed = RunConfigSchema.safeParse(raw);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => ({ path: formatPath(i.path), message: i.message }));
    throw new ConfigError(issues.map((i) => `${i.path}: ${i.message}`).join('; '), { issues });
  }
  const config = parsed.data;
  // [policies.main] is [policy] (+ [trainer] overrides, [inference], [transport]): kept in one place.
  const main = config.policies.main;
  if (main) {
    const resolved = resolvePolicy(config, 'main', main);
    delete config.policies.main;
    Object.assign(config, {
      policy: resolved.policy,
      trainer: resolved.trainer,
      inference: resolved.inference,
      transport: resolved.transport,
    });
  }
  return config;
}

/** `[policies.<name>]` resolved: its trainer overrides applied over the top-level `[trainer]`. */
function resolvePolicy(config: RunConfig, name: string, entry: z.output<typeof NamedPolicySchema>): ResolvedPolicy {
  const { trainer: overrides, inference, transport, ...policy } = entry;
  const trainer = TrainerSectionSchema.safeParse({ ...config.trainer, ...(camelKeys(overrides) as Record<string, unknown>) });
  if (!trainer.success) {
    const issues = trainer.error.issues.map((i) => ({
      path: formatPath(['policies', name, 'trainer', ...i.path]),
      message: i.message,
    }));
    throw new ConfigError(issues.map((i) => `${i.path}: ${i.message}`).join('; '), { issues });
  }
  return { name, policy, trainer: trainer.data, inference, transport };
}

/** Reads a TOML (or `.json`) run config file as a raw object (camelCase keys). */
export async function readRunConfigFile(path: string): Promise<Record<string, unknown>> {
  const text = await readFile(path, 'utf8');
  try {
    const raw = path.endsWith('.json') ? JSON.parse(text) : parseToml(text);
    rejectPrototypeKeys(raw, path);
    return normalizeConfigKeys(raw, { where: path }) as Record<string, unknown>;
  } catch (error) {
    throw new ConfigError(`${path}: ${(error as Error).message.replace(`${path}: `, '')}`, { cause: error });
  }
}

/**
 * Every trainable policy a run config defines, by name: `main` (`[policy]`, `[trainer]`,
 * `[inference]`, `[transport]`), then each `[policies.<name>]` with its trainer overrides applied
 * over `[trainer]`. Which of them the run trains is up to the roles that play them.
 */
export function resolvedPolicies(config: RunConfig): Map<string, ResolvedPolicy> {
  const out = new Map<string, ResolvedPolicy>([
    [
      'main',
      { name: 'main', policy: config.policy, trainer: config.trainer, inference: config.inference, transport: config.transport },
    ],
  ]);
  for (const [name, entry] of Object.entries(config.policies)) out.set(name, resolvePolicy(config, name, entry));
  return out;
}
