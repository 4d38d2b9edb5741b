import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { type ClientConfig, ClientConfigSchema } from '../agent/agent-config.ts';
import { loadTaskset } from '../env/registry.ts';
import { ConfigError } from '../errors/troupe-error.ts';
import { deepMerge, readConfigFile } from '../eval/eval-config.ts';
import { PriceTableSchema } from '../eval/pricing.ts';
import { formatReplayReport, replayRun } from '../eval/replay.ts';
import { formatSummary } from '../eval/summary.ts';
import { makeClient } from '../model/make-client.ts';
import type { Task } from '../task/task.ts';
import { assertSavedModulesPassedAgain } from '../util/config-keys.ts';

const HELP = `troupe replay <run-dir> [options] — re-score a run's saved traces without re-running agents

Options:
  -f, --config FILE       TOML/JSON merged over the run's config.json: [[env.<role>.rewards]] entries
                          (module = "./r.ts", export = "f", weight = 0.5, or judge = "rubric" | "reference")
                          replace the saved lists; list the old ones too to add rather than replace
  -k, --num-rescores K    run every reward and judge K times per trace (default 1); the report gives
                          per criterion the mean, the spread and the agreement between rescores
  -o, --out DIR           the new run directory (default <run-dir>--replay-<8 hex>)
      --clean             replace --out when it exists
  -m, --model NAME        judges' default model (default the run's model)
  -b, --base-url URL      judges' endpoint (default the run's client)
      --api-key-var NAME  environment variable holding the judges' API key
  -h, --help
`;

/** The flags of `troupe replay` (described in `HELP`). */
const REPLAY_OPTIONS = {
  config: { type: 'string', short: 'f' },
  'num-rescores': { type: 'string', short: 'k' },
  out: { type: 'string', short: 'o' },
  clean: { type: 'boolean' },
  model: { type: 'string', short: 'm' },
  'base-url': { type: 'string', short: 'b' },
  'api-key-var': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** `troupe replay <run> [--config f] [--num-rescores K]`: a new run directory naming its source. */
export async function replayCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args, options: REPLAY_OPTIONS, allowPositionals: true, strict: true });
  if (values.help) {
    process.stdout.write(HELP);
    return 0;
  }
  const sourceDir = positionals[0];
  if (!sourceDir || positionals.length > 1) throw new ConfigError('troupe replay <run-dir>: name exactly one run directory');
  if (!existsSync(join(sourceDir, 'traces.jsonl')))
    throw new ConfigError(`troupe replay ${sourceDir}: no traces.jsonl there (is it a run directory?)`);
  const numRescores = values['num-rescores'] === undefined ? 1 : Number(values['num-rescores']);
  if (!Number.isInteger(numRescores) || numRescores < 1)
    throw new ConfigError(`--num-rescores must be a positive integer, got ${JSON.stringify(values['num-rescores'])}`);
  const override = values.config ? readConfigFile(values.config) : {};
  const saved = savedConfig(sourceDir);
  // A run directory is data: its modules (rewards, tasksets, an env file) are loaded only when --config names them now.
  assertSavedModulesPassedAgain({ saved, passed: override, command: `troupe replay ${sourceDir}` });
  const merged = deepMerge(saved, override) as Record<string, unknown>;
  const model = values.model ?? (typeof merged.model === 'string' ? merged.model : undefined);
  if (!model) throw new ConfigError('troupe replay: the run names no model; give the judges one with -m/--model');
  const client = judgeClientConfig(merged, values);
  const prices = merged.prices === undefined ? undefined : PriceTableSchema.safeParse(merged.prices);
  if (prices && !prices.success)
    throw new ConfigError(`invalid config: prices.${prices.error.issues[0]?.path.join('.')}: ${prices.error.issues[0]?.message}`);
  const result = await replayRun({
    sourceDir,
    ...(values.out ? { outDir: values.out } : {}),
    ...(values.clean ? { clean: true } : {}),
    ...(values.config ? { config: override } : {}),
    numRescores,
    client: makeClient(client, model),
    model,
    tasks: await tasksOf(merged),
    ...(prices?.success ? { prices: prices.data } : {}),
    ...(typeof merged.passThreshold === 'number' ? { passThreshold: merged.passThreshold } : {}),
  });
  process.stdout.write(`${formatSummary(result.summary)}\n${formatReplayReport(result.summary.replay)}\n`);
  process.stdout.write(`\nrun directory: ${result.outDir}\n  source:  ${result.summary.replay.source}\n`);
  return 0;
}

/** The run's `config.json` (`{}` when it has none: a run without one still replays with --config). */
function savedConfig(sourceDir: string): Record<string, unknown> {
  try {
    return readConfigFile(join(sourceDir, 'config.json'));
  } catch {
    return {};
  }
}

/** The judges' client: the run's (or the default endpoint), with `--base-url` and `--api-key-var` over it. */
function judgeClientConfig(
  merged: Record<string, unknown>,
  values: { 'base-url'?: string | undefined; 'api-key-var'?: string | undefined },
): ClientConfig {
  const clientRaw = deepMerge((merged.client ?? { baseUrl: 'http://127.0.0.1:8000/v1' }) as Record<string, unknown>, {
    ...(values['base-url'] ? { baseUrl: values['base-url'] } : {}),
    ...(values['api-key-var'] ? { apiKeyVar: values['api-key-var'] } : {}),
  });
  const clientParsed = ClientConfigSchema.safeParse(clientRaw);
  if (!clientParsed.success) throw new ConfigError(`invalid config: client: ${clientParsed.error.issues[0]?.message}`);
  return clientParsed.data;
}

/** The run's taskset by key (its own rewards score the replayed traces), when it can be loaded and is finite. */
async function tasksOf(config: Record<string, unknown>): Promise<Map<string, Task>> {
  const env = (config.env ?? {}) as { id?: string; taskset?: string | { id: string } };
  const ref =
    env.taskset ?? (env.id === undefined || env.id === 'single-agent' || env.id === 'best-of-n' ? 'arithmetic' : undefined);
  const tasks = new Map<string, Task>();
  if (ref === undefined) return tasks;
  try {
    const taskset = await loadTaskset(ref);
    if (taskset.isInfinite) return tasks;
    for (const task of taskset) tasks.set(task.key, task as Task);
  } catch (error) {
    process.stderr.write(
      `warning: taskset ${JSON.stringify(ref)} not loaded (${(error as Error).message}); only config rewards re-score\n`,
    );
  }
  return tasks;
}
