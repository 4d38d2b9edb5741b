import { ConfigError } from '@troupe/verifiers';
import { z } from 'zod';
import type { Algorithm } from './algorithm.ts';
import { configIssues, formatConfigIssues } from './format-issues.ts';
import { Grpo, GrpoConfigSchema } from './grpo.ts';
import { HierarchicalGrpo, HierarchicalGrpoConfigSchema } from './hierarchical-grpo.ts';
import { MaxRl, MaxRlConfigSchema } from './max-rl.ts';
import { Opd, OpdConfigSchema } from './opd.ts';
import { Rae, RaeConfigSchema } from './rae.ts';
import { Sft, SftConfigSchema } from './sft.ts';

/** Config of any built-in algorithm, discriminated on `type`. */
export const AlgorithmConfigSchema = z.discriminatedUnion('type', [
  GrpoConfigSchema,
  HierarchicalGrpoConfigSchema,
  RaeConfigSchema,
  MaxRlConfigSchema,
  SftConfigSchema,
  OpdConfigSchema,
]);
/** Parsed config of a built-in algorithm (defaults filled in). */
export type AlgorithmConfig = z.output<typeof AlgorithmConfigSchema>;
/** Config of a built-in algorithm as written by a user (defaults optional). */
export type AlgorithmConfigInput = z.input<typeof AlgorithmConfigSchema>;

/** How to build one algorithm type: its config schema and a factory. */
export interface AlgorithmDefinition<Config extends { type: string } = { type: string }> {
  type: string;
  /** Validates the whole config object, `type` included. */
  schema: z.ZodType<Config>;
  create(config: Config): Algorithm;
}

const registry = new Map<string, AlgorithmDefinition>();

/**
 * Registers an algorithm type so {@link createAlgorithm} can build it from config. Built-ins:
 * `grpo`, `hierarchical-grpo`, `rae`, `max-rl`, `sft`, `opd`. Registering an existing type throws.
 */
export function registerAlgorithm<Config extends { type: string }>(definition: AlgorithmDefinition<Config>): void {
  if (registry.has(definition.type)) throw new ConfigError(`algorithm type '${definition.type}' is already registered`);
  registry.set(definition.type, definition as unknown as AlgorithmDefinition);
}

/** The registered algorithm types. */
export function algorithmTypes(): string[] {
  return [...registry.keys()];
}

registerAlgorithm({ type: 'grpo', schema: GrpoConfigSchema, create: (config) => new Grpo(config) });
registerAlgorithm({
  type: 'hierarchical-grpo',
  schema: HierarchicalGrpoConfigSchema,
  create: (config) => new HierarchicalGrpo(config),
});
registerAlgorithm({ type: 'rae', schema: RaeConfigSchema, create: (config) => new Rae(config) });
registerAlgorithm({ type: 'max-rl', schema: MaxRlConfigSchema, create: (config) => new MaxRl(config) });
registerAlgorithm({ type: 'sft', schema: SftConfigSchema, create: (config) => new Sft(config) });
registerAlgorithm({ type: 'opd', schema: OpdConfigSchema, create: (config) => new Opd(config) });

/**
 * Builds an algorithm from a config object (e.g. the `[algorithm]` table of a trainer config).
 * Throws a `ConfigError` naming the bad field, e.g. `algorithm.decay: …` or
 * `algorithm.type: unknown algorithm 'ppo'; expected one of grpo, hierarchical-grpo, rae, max-rl, sft, opd`.
 */
export function createAlgorithm(config: unknown): Algorithm {
  if (typeof config !== 'object' || config === null || Array.isArray(config)) {
    throw new ConfigError(`algorithm: expected an object with a \`type\`, got ${JSON.stringify(config)}`, {
      path: 'algorithm',
    });
  }
  const type = (config as { type?: unknown }).type;
  if (typeof type !== 'string') {
    throw new ConfigError(`algorithm.type: required, one of ${algorithmTypes().join(', ')}`, { path: 'algorithm.type' });
  }
  const definition = registry.get(type);
  if (!definition) {
    throw new ConfigError(`algorithm.type: unknown algorithm '${type}'; expected one of ${algorithmTypes().join(', ')}`, {
      path: 'algorithm.type',
    });
  }
  const parsed = definition.schema.safeParse(config);
  if (!parsed.success) {
    const issues = configIssues(parsed.error, 'algorithm');
    throw new ConfigError(formatConfigIssues(issues), { issues });
  }
  return definition.create(parsed.data);
}
