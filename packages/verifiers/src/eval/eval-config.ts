import { readFileSync } from 'node:fs';
import { parse as parseToml } from 'smol-toml';
import { z } from 'zod';
import { ClientConfigSchema, deepMerge, describeZodError } from '../agent/agent-config.ts';
import { ConfigError } from '../errors/troupe-error.ts';
import { SamplingSchema } from '../model/model-client.ts';
import { TaskSelectionSchema } from '../task/select.ts';
import { normalizeConfigKeys, normalizeSet, rejectPrototypeKeys } from '../util/config-keys.ts';
import { PriceTableSchema } from './pricing.ts';

/** The whole `troupe eval` config: run-level model settings, counts, outputs, and the env. */
export const EvalConfigSchema = z
  .object({
    model: z.string().min(1, 'set a model name with -m/--model or `model = "…"`'),
    client: ClientConfigSchema.default({
      type: 'openai',
      baseUrl: 'http://127.0.0.1:8000/v1',
      apiKeyVar: 'OPENAI_API_KEY',
      maxRetries: 3,
    }),
    sampling: SamplingSchema.default({}),
    /** Tasks to run (required for infinite tasksets). */
    numTasks: z.number().int().positive().optional(),
    /** Which tasks to run (`[select]`: indices, keys, types, a seeded sample); `numTasks` caps the selection. */
    select: TaskSelectionSchema.optional(),
    /** Episodes per task. */
    rollouts: z.number().int().positive().default(1),
    /** Episodes at once. */
    concurrency: z.number().int().positive().default(32),
    /** Root folder of run directories. */
    outputs: z.string().default('outputs'),
    /** Reward at or above which a sample counts as a pass for pass@k. */
    passThreshold: z.number().default(1),
    /** Model → USD per million tokens (`[prices."<model>"] input = …, output = …`), for providers that send no cost. */
    prices: PriceTableSchema.optional(),
    env: z
      .object({ id: z.string().min(1).default('single-agent') })
      .loose()
      .default({ id: 'single-agent' }),
  })
  .strict();
export type EvalConfig = z.output<typeof EvalConfigSchema>;

/** Reads a TOML or JSON config file; errors name the file and the problem. */
export function readConfigFile(path: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigError(`cannot read config ${path}: ${(error as Error).message}`);
  }
  try {
    const value = path.endsWith('.json') ? JSON.parse(text) : parseToml(text);
    if (!value || typeof value !== 'object' || Array.isArray(value))
      throw new ConfigError('the top level must be a table/object');
    rejectPrototypeKeys(value, `config ${path}`);
    // TOML tables come back with a null prototype: clone into plain objects so the config
    // behaves exactly as the same JSON would everywhere downstream.
    // Keys as the TypeScript API spells them (snake_case in the file; camelCase still read, warned).
    return normalizeConfigKeys(structuredClone(value), { where: path }) as Record<string, unknown>;
  } catch (error) {
    if (ConfigError.isInstance(error)) throw error;
    throw new ConfigError(`config ${path} is not valid ${path.endsWith('.json') ? 'JSON' : 'TOML'}: ${(error as Error).message}`);
  }
}

/** Sets `a.b.c` = value in a nested object (creating tables). */
export function setPath(target: Record<string, unknown>, path: string, value: unknown): void {
  const keys = path.split('.');
  if (keys.some((k) => !k || k === '__proto__' || k === 'constructor' || k === 'prototype')) {
    throw new ConfigError(`--set ${path}: not a valid key path`);
  }
  let node = target;
  for (const key of keys.slice(0, -1)) {
    const next = node[key];
    if (next === undefined) node[key] = {};
    else if (typeof next !== 'object' || next === null || Array.isArray(next))
      throw new ConfigError(`--set ${path}: ${key} is not a table`);
    node = node[key] as Record<string, unknown>;
  }
  node[keys[keys.length - 1] as string] = value;
}

/** A `--set` value: JSON when it parses, else the string. */
export function parseValue(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** Applies `--set PATH=VALUE` entries to a raw config, each value parsed as by {@link parseValue}; a malformed entry is a ConfigError naming it. */
export function applySets(raw: Record<string, unknown>, entries: readonly string[]): void {
  for (const entry of entries) {
    const eq = entry.indexOf('=');
    if (eq <= 0) throw new ConfigError(`--set ${entry}: expected PATH=VALUE`);
    const { path, value } = normalizeSet(entry.slice(0, eq), parseValue(entry.slice(eq + 1)));
    setPath(raw, path, value);
  }
}

/** Validates a merged config; the error names the field. */
export function parseEvalConfig(raw: Record<string, unknown>): EvalConfig {
  const parsed = EvalConfigSchema.safeParse(raw);
  if (!parsed.success) throw new ConfigError(`invalid config: ${describeZodError(parsed.error)}`);
  return parsed.data;
}

export { deepMerge };
