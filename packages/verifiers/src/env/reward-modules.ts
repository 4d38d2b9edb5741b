import { existsSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { z } from 'zod';
import { ConfigError } from '../errors/troupe-error.ts';
import { type JudgeModel, referenceJudge, rubricJudge } from '../judges/index.ts';
import type { ModelClient, ModelRequest } from '../model/model-client.ts';
import { SamplingSchema } from '../model/model-client.ts';
import type { MetricFunction, RewardFunction, Task } from '../task/task.ts';
import type { Trace } from '../trace/trace.ts';
import type { StopCondition } from '../trace/trace-schema.ts';

/**
 * A reward, metric or stop loaded from a module: `module` is a path (relative to the working
 * directory, or absolute) or a package name; `export` names the export (default `default`).
 * The export is a function `({ task, trace, sandbox }) => number | { name: number }`, or a
 * `{ name, fn, weight?, priority? }` reward object; with `options` it is a factory called with
 * them that returns one of those.
 */
export const ModuleScorerSchema = z
  .object({
    module: z.string().min(1),
    export: z.string().min(1).default('default'),
    /** Reward / metric / stop name (default: the function's `name`, else the export name). */
    name: z.string().min(1).optional(),
    weight: z.number().optional(),
    priority: z.number().optional(),
    options: z.record(z.string(), z.unknown()).optional(),
  })
  .strict();

/** A single-call judge from config: `judge = "rubric"` (with `criteria`) or `judge = "reference"`. */
export const JudgeScorerSchema = z
  .object({
    judge: z.enum(['rubric', 'reference']),
    name: z.string().min(1).optional(),
    weight: z.number().optional(),
    priority: z.number().optional(),
    /** The judge's model (default: the role's model on the role's client). */
    model: z.string().min(1).optional(),
    sampling: SamplingSchema.optional(),
    criteria: z
      .array(
        z
          .object({
            name: z.string().min(1),
            text: z.string().min(1),
            weight: z.number().nonnegative().optional(),
            choices: z.array(z.string()).optional(),
          })
          .strict(),
      )
      .optional(),
    view: z.enum(['last_reply', 'full_trace']).optional(),
    questionField: z.string().optional(),
    answerField: z.string().optional(),
    referenceField: z.string().optional(),
  })
  .strict();

/** One `[[env.<role>.rewards]]` entry: a module function (`module`) or a single-call judge (`judge`). */
export const RewardEntrySchema = z
  .object({
    ...JudgeScorerSchema.shape,
    judge: JudgeScorerSchema.shape.judge.optional(),
    module: z.string().min(1).optional(),
    export: z.string().min(1).optional(),
    options: z.record(z.string(), z.unknown()).optional(),
  })
  .strict()
  .refine((entry) => (entry.module === undefined) !== (entry.judge === undefined), {
    message: 'set either module = "<path>" or judge = "rubric" | "reference"',
  });
/**
 * One reward entry of a role, as written: `module` (+ `export`, `options`) or `judge` (`rubric` /
 * `reference` with its judge settings), never both; see {@link RewardEntrySchema}.
 */
export type RewardEntry = z.input<typeof RewardEntrySchema>;

/** A stop function: returns a condition name (or true = the entry's name) to stop the rollout before a call. */
export type StopFunction = (trace: Trace, request: ModelRequest) => StopCondition | boolean | null | undefined;

/** Rewards, metrics and stops plugged into a role from config. */
export interface PluggedScorers {
  rewards: RewardFunction[];
  metrics: MetricFunction[];
  stops: ((trace: Trace, request: ModelRequest) => StopCondition | null | undefined)[];
}

/**
 * Imports a user module by path or package name: `.mjs` / `.js` with plain `import()`, a `.ts` /
 * `.mts` file through tsx's `tsImport` (the same loader `--env ./my-env.ts` uses; scoped to that
 * import). A `.ts` file outside a `"type": "module"` package loads as CommonJS, its exports under
 * `default`: they are lifted. A URL (`data:`, `http:`, `file:`, any scheme) is refused.
 */
export async function importUserModule(specifier: string, baseDir: string): Promise<Record<string, unknown>> {
  // A module is a file or an installed package: a `data:` or remote URL would run whatever a config names.
  if (/^[a-zA-Z][a-zA-Z0-9+.-]*:/.test(specifier) && !isAbsolute(specifier))
    throw new ConfigError(
      `module ${JSON.stringify(specifier.slice(0, 80))}: a URL is refused; name a file path or an installed package`,
    );
  const isPath = specifier.startsWith('.') || isAbsolute(specifier);
  const file = isPath ? resolve(baseDir, specifier) : undefined;
  if (file && !existsSync(file)) throw new ConfigError(`module ${specifier} not found (no file ${file})`);
  const target = file ? pathToFileURL(file).href : specifier;
  try {
    if (file && /\.(m|c)?ts$/.test(file)) {
      const { tsImport } = await import('tsx/esm/api');
      const module = (await tsImport(target, import.meta.url)) as Record<string, unknown>;
      const inner = module.default;
      return inner && typeof inner === 'object' ? { ...(inner as Record<string, unknown>), ...module } : module;
    }
    return (await import(target)) as Record<string, unknown>;
  } catch (error) {
    if ((error as { code?: string }).code === 'ERR_MODULE_NOT_FOUND' && !file)
      throw new ConfigError(`module ${specifier} not found (from ${baseDir})`);
    throw error;
  }
}

type ScoreFn = RewardFunction['fn'];

async function moduleFunction(
  entry: z.output<typeof ModuleScorerSchema>,
  field: string,
  baseDir: string,
): Promise<{ fn: unknown; name: string; defaults: Partial<RewardFunction> }> {
  const module = await importUserModule(entry.module, baseDir);
  if (!(entry.export in module))
    throw new ConfigError(
      `${field}: ${entry.module} has no export ${JSON.stringify(entry.export)} (exports: ${Object.keys(module).join(', ') || 'none'})`,
    );
  let value = module[entry.export];
  if (entry.options) {
    if (typeof value !== 'function') throw new ConfigError(`${field}: ${entry.module}#${entry.export} is not a factory function`);
    value = await (value as (options: unknown) => unknown)(entry.options);
  }
  if (value && typeof value === 'object' && typeof (value as RewardFunction).fn === 'function') {
    const object = value as RewardFunction;
    return { fn: object.fn.bind(object), name: entry.name ?? object.name ?? entry.export, defaults: object };
  }
  if (typeof value !== 'function')
    throw new ConfigError(`${field}: ${entry.module}#${entry.export} is not a function or a { name, fn } object`);
  const fnName = (value as { name?: string }).name;
  return {
    fn: value,
    name: entry.name ?? (entry.export === 'default' && fnName && fnName !== 'default' ? fnName : entry.export),
    defaults: {},
  };
}

/** Context a config's judge entries need: the role's client and model, and a way to build another client. */
export interface ScorerLoadContext {
  /** Where relative module paths start (default the working directory). */
  baseDir?: string;
  client: ModelClient;
  model: string;
}

/** Loads `[[env.<role>.rewards]]`, `.metrics` and `.stops` entries; errors name the field path. */
export async function loadPluggedScorers(
  config: { rewards?: unknown; metrics?: unknown; stops?: unknown },
  field: string,
  context: ScorerLoadContext,
): Promise<PluggedScorers | undefined> {
  if (config.rewards === undefined && config.metrics === undefined && config.stops === undefined) return undefined;
  const baseDir = context.baseDir ?? process.cwd();
  const out: PluggedScorers = { rewards: [], metrics: [], stops: [] };
  const parse = <S extends z.ZodType>(schema: S, value: unknown, path: string): z.output<S>[] => {
    const parsed = z.array(schema).safeParse(value ?? []);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new ConfigError(`invalid config: ${path}.${issue?.path.join('.')}: ${issue?.message}`);
    }
    return parsed.data;
  };
  for (const [index, entry] of parse(RewardEntrySchema, config.rewards, `${field}.rewards`).entries()) {
    const path = `${field}.rewards.${index}`;
    if (entry.judge !== undefined) {
      out.rewards.push(judgeFromEntry({ ...entry, judge: entry.judge }, path, context));
      continue;
    }
    const loaded = await moduleFunction(
      {
        module: entry.module as string,
        export: entry.export ?? 'default',
        ...(entry.name ? { name: entry.name } : {}),
        ...(entry.options ? { options: entry.options } : {}),
      },
      path,
      baseDir,
    );
    const weight = entry.weight ?? loaded.defaults.weight;
    const priority = entry.priority ?? loaded.defaults.priority;
    out.rewards.push({
      name: loaded.name,
      ...(weight !== undefined ? { weight } : {}),
      ...(priority !== undefined ? { priority } : {}),
      ...(loaded.defaults.needsSandbox ? { needsSandbox: true } : {}),
      fn: loaded.fn as ScoreFn,
    });
  }
  for (const [index, entry] of parse(ModuleScorerSchema, config.metrics, `${field}.metrics`).entries()) {
    const path = `${field}.metrics.${index}`;
    if (entry.weight !== undefined) throw new ConfigError(`invalid config: ${path}.weight: metrics are unweighted`);
    const loaded = await moduleFunction(entry, path, baseDir);
    const priority = entry.priority ?? loaded.defaults.priority;
    out.metrics.push({ name: loaded.name, ...(priority !== undefined ? { priority } : {}), fn: loaded.fn as ScoreFn });
  }
  for (const [index, entry] of parse(ModuleScorerSchema, config.stops, `${field}.stops`).entries()) {
    const loaded = await moduleFunction(entry, `${field}.stops.${index}`, baseDir);
    const stop = loaded.fn as StopFunction;
    out.stops.push((trace, request) => {
      const result = stop(trace, request);
      if (result === true) return loaded.name;
      return result || null;
    });
  }
  return out;
}

function judgeFromEntry(entry: z.output<typeof JudgeScorerSchema>, path: string, context: ScorerLoadContext): RewardFunction {
  const model: JudgeModel = {
    client: context.client,
    model: entry.model ?? context.model,
    ...(entry.sampling ? { sampling: entry.sampling } : {}),
  };
  const common = {
    model,
    ...(entry.name ? { name: entry.name } : {}),
    ...(entry.weight !== undefined ? { weight: entry.weight } : {}),
    ...(entry.priority !== undefined ? { priority: entry.priority } : {}),
    ...(entry.view ? { view: entry.view } : {}),
    ...(entry.questionField ? { questionField: entry.questionField } : {}),
  };
  try {
    if (entry.judge === 'reference') {
      return referenceJudge({ ...common, ...(entry.referenceField ? { referenceField: entry.referenceField } : {}) });
    }
    if (!entry.criteria?.length) throw new ConfigError('a rubric judge needs criteria = [{ name, text }]', { path: 'criteria' });
    return rubricJudge({
      ...common,
      criteria: entry.criteria.map((c) => ({
        name: c.name,
        text: c.text,
        ...(c.weight !== undefined ? { weight: c.weight } : {}),
        ...(c.choices ? { choices: c.choices } : {}),
      })),
      ...(entry.answerField ? { answerField: entry.answerField } : {}),
    });
  } catch (error) {
    throw new ConfigError(`invalid config: ${path}: ${(error as Error).message}`);
  }
}

/**
 * The task a role's trace is scored with: the task's own rewards and metrics, with plugged
 * entries added; a plugged entry replaces the task's function of the same name.
 */
export function withPluggedScorers<T extends Task>(task: T, plugged: PluggedScorers | undefined): T {
  if (!plugged || (plugged.rewards.length === 0 && plugged.metrics.length === 0)) return task;
  const rewardNames = new Set(plugged.rewards.map((r) => r.name));
  const metricNames = new Set(plugged.metrics.map((m) => m.name));
  return task.with(
    {},
    {
      rewards: [...task.rewards.filter((r) => !rewardNames.has(r.name)), ...(plugged.rewards as RewardFunction<never>[])],
      metrics: [...task.metrics.filter((m) => !metricNames.has(m.name)), ...(plugged.metrics as MetricFunction<never>[])],
    },
  ) as T;
}
