import { readFileSync } from 'node:fs';
import { parse as parseToml } from 'smol-toml';
import { z } from 'zod';
import { describeZodError } from '../../../agent/agent-config.ts';
import { ConfigError, ParseError } from '../../../errors/troupe-error.ts';
import { rejectPrototypeKeys } from '../../../util/config-keys.ts';
import { parseStrictJson } from './strict-json.ts';

/** One criterion of a judge rubric: choices are ordered worst → best. */
export const CriterionSchema = z
  .object({
    /** Metric name suffix: `judge/<name>`. */
    name: z.string().regex(/^[A-Za-z0-9_.-]+$/, 'use letters, digits, _ . - only'),
    /** The question the judge answers. */
    text: z.string().min(1),
    /** Weight in the `judge` reward (≥ 0). */
    weight: z.number().min(0).default(1),
    /** At least two distinct answers, worst first. */
    choices: z
      .array(z.string().min(1))
      .min(2)
      .refine((choices) => new Set(choices).size === choices.length, 'choices must be unique'),
  })
  .strict();
/** One rubric criterion after parsing (`weight` default 1); see {@link CriterionSchema}. */
export type Criterion = z.output<typeof CriterionSchema>;

/** A judge rubric: named criteria with weights and ordered choices. */
export const RubricSchema = z
  .object({
    criteria: z
      .array(CriterionSchema)
      .min(1)
      .refine((criteria) => new Set(criteria.map((c) => c.name)).size === criteria.length, 'criterion names must be unique')
      .refine((criteria) => criteria.some((c) => c.weight > 0), 'at least one criterion needs a weight above 0'),
  })
  .strict();
/** A judge rubric after parsing: unique criterion names, at least one with weight above 0; see {@link RubricSchema}. */
export type Rubric = z.output<typeof RubricSchema>;

/** The default rubric: one criterion `solved`, answered `no` or `yes`. */
export const DEFAULT_RUBRIC: Rubric = {
  criteria: [{ name: 'solved', text: 'Did the solver solve the task?', weight: 1, choices: ['no', 'yes'] }],
};

/** Reads a rubric from a `.json` or `.toml` file; errors name the file and the field. */
export function loadRubricFile(path: string): Rubric {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigError(`env.rubric: cannot read ${path}: ${(error as Error).message}`);
  }
  let value: unknown;
  try {
    value = path.endsWith('.toml') ? parseToml(text) : JSON.parse(text);
  } catch (error) {
    throw new ConfigError(
      `env.rubric: ${path} is not valid ${path.endsWith('.toml') ? 'TOML' : 'JSON'}: ${(error as Error).message}`,
    );
  }
  rejectPrototypeKeys(value, `env.rubric (${path})`);
  const parsed = RubricSchema.safeParse(value);
  if (!parsed.success) throw new ConfigError(`env.rubric (${path}): ${describeZodError(parsed.error)}`);
  return parsed.data;
}

/** The verdict file the judge writes: `{"verdicts":[{"name","reason","verdict"}]}`. */
export const VerdictFileSchema = z
  .object({
    verdicts: z.array(
      z
        .object({
          name: z.string(),
          /** One sentence grounded in what the judge observed. */
          reason: z.string().trim().min(1, 'give a reason'),
          verdict: z.string(),
        })
        .strict(),
    ),
  })
  .strict();

/** One validated verdict, with its score `index / (choices − 1)`. */
export interface ScoredVerdict {
  name: string;
  reason: string;
  verdict: string;
  score: number;
  weight: number;
}

/**
 * Parses and validates a verdict file against the rubric. Not JSON, a wrong shape, a missing,
 * duplicate or unknown criterion, or an answer that is not one of the criterion's choices is a
 * `ParseError` (never a 0). Returns the verdicts in rubric order, each with its score.
 */
export function parseVerdicts(options: { text: string; rubric: Rubric }): ScoredVerdict[] {
  const { text, rubric } = options;
  const value = parseStrictJson(text, 'the verdict');
  const parsed = VerdictFileSchema.safeParse(value);
  if (!parsed.success) throw new ParseError(`the verdict: ${describeZodError(parsed.error)}`);
  const byName = new Map<string, { reason: string; verdict: string }>();
  for (const entry of parsed.data.verdicts) {
    if (!rubric.criteria.some((c) => c.name === entry.name)) {
      throw new ParseError(
        `verdict for unknown criterion ${JSON.stringify(entry.name)}; criteria: ${rubric.criteria.map((c) => c.name).join(', ')}`,
      );
    }
    if (byName.has(entry.name)) throw new ParseError(`duplicate verdict for criterion ${JSON.stringify(entry.name)}`);
    byName.set(entry.name, entry);
  }
  return rubric.criteria.map((criterion) => {
    const entry = byName.get(criterion.name);
    if (!entry) throw new ParseError(`no verdict for criterion ${JSON.stringify(criterion.name)}`);
    const verdict = entry.verdict.trim();
    const index = criterion.choices.indexOf(verdict);
    if (index < 0) {
      throw new ParseError(
        `verdict ${JSON.stringify(entry.verdict)} for ${criterion.name} is not one of ${criterion.choices.map((c) => JSON.stringify(c)).join(', ')}`,
      );
    }
    return {
      name: criterion.name,
      reason: entry.reason.trim(),
      verdict,
      score: index / (criterion.choices.length - 1),
      weight: criterion.weight,
    };
  });
}

/** The `judge` reward: Σ weight·score / Σ weight. */
export function judgeScore(verdicts: ScoredVerdict[]): number {
  const total = verdicts.reduce((sum, v) => sum + v.weight, 0);
  if (total <= 0) throw new ParseError('the rubric weights sum to 0');
  return verdicts.reduce((sum, v) => sum + v.weight * v.score, 0) / total;
}
