import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { ConfigError } from '../errors/troupe-error.ts';
import { deepMerge, readConfigFile, setPath } from '../eval/eval-config.ts';
import { writeFileAtomic } from '../eval/eval-runner.ts';
import { readEpisodes } from '../eval/traces-file.ts';
import type { Episode } from '../trace/episode.ts';
import { assertSavedModulesPassedAgain } from '../util/config-keys.ts';

/** `troupe rerun --help`. */
export const RERUN_HELP = `troupe rerun <run-dir> --swap ROLE=MODEL [options]

Counterfactual seat replay: runs a saved run's tasks again — the same tasks, the same rollout
count, the same config — with one role's model replaced, and prints how each role's reward
changed, paired by task and rollout (mean difference with a 95% confidence interval). Tasks are
the recorded ones (for an env that deals from the task's seed: the same deals); the other seats run
their recorded config again, so their replies are sampled anew, not replayed. Writes a new run
directory whose rerun.json names the source run, the swap and the differences.

Options:
      --swap ROLE=MODEL  the role whose seat changes and the model name it gets (required)
  -f, --config FILE      TOML/JSON merged over the run's config.json; required when that config
                         names a module (an env, a reward): a run directory is data, and the
                         modules it names are loaded only when this config names them again
  -b, --base-url URL     endpoint of the swapped seat (default: the seat's recorded endpoint)
      --api-key-var NAME environment variable with the swapped seat's API key
      --run-dir DIR      the new run directory (default <source>--rerun-<role>-<model>)
      --clean            replace --run-dir DIR when it exists
  -c, --concurrency N    episodes at once (default: the recorded run's)
      --no-preflight     skip the endpoint check
  -h, --help
`;

/** One role's paired reward change between the source run and the rerun. */
export interface RoleDifference {
  role: string;
  /** Pairs (task × rollout) where the role was scored in both runs. */
  pairs: number;
  sourceMean: number | null;
  rerunMean: number | null;
  /** Mean of rerun − source over the pairs. */
  meanDifference: number | null;
  /** Half-width of the 95% confidence interval of `meanDifference` (normal approximation). */
  ci95: number | null;
}

/** The role's mean scored reward in one episode, or undefined when it carries none. */
function roleReward(episode: Episode, role: string): number | undefined {
  const rewards = episode.traces
    .filter((trace) => trace.agent.name === role && trace.ok && Object.keys(trace.rewards).length > 0)
    .map((trace) => trace.reward);
  return rewards.length === 0 ? undefined : rewards.reduce((a, b) => a + b, 0) / rewards.length;
}

const pairKey = (episode: Episode) => `${episode.task.key}\u0000${episode.task.hash}\u0000${episode.group.index}`;

/** Per-role paired differences between two runs' episodes (rerun − source). */
export function pairedDifferences(source: Episode[], rerun: Episode[]): RoleDifference[] {
  const roles = new Set<string>();
  for (const episode of [...source, ...rerun]) for (const trace of episode.traces) roles.add(trace.agent.name);
  const rerunByKey = new Map(rerun.map((episode) => [pairKey(episode), episode]));
  const mean = (values: number[]) => (values.length ? values.reduce((a, b) => a + b, 0) / values.length : null);
  return [...roles].sort().map((role) => {
    const before: number[] = [];
    const after: number[] = [];
    for (const episode of source) {
      const other = rerunByKey.get(pairKey(episode));
      const a = roleReward(episode, role);
      const b = other && roleReward(other, role);
      if (a === undefined || b === undefined) continue;
      before.push(a);
      after.push(b);
    }
    const differences = after.map((value, index) => value - (before[index] ?? 0));
    const meanDifference = mean(differences);
    let ci95: number | null = null;
    if (meanDifference !== null && differences.length > 1) {
      const variance = differences.reduce((sum, d) => sum + (d - meanDifference) ** 2, 0) / (differences.length - 1);
      ci95 = 1.96 * Math.sqrt(variance / differences.length);
    }
    return { role, pairs: differences.length, sourceMean: mean(before), rerunMean: mean(after), meanDifference, ci95 };
  });
}

/** The differences as an aligned text table. */
export function formatDifferences(differences: RoleDifference[]): string {
  const f = (value: number | null) => (value === null ? '—' : value.toFixed(4));
  const rows = [
    ['role', 'pairs', 'source', 'rerun', 'difference', '95% CI'],
    ...differences.map((d) => [
      d.role,
      String(d.pairs),
      f(d.sourceMean),
      f(d.rerunMean),
      f(d.meanDifference),
      d.ci95 === null ? '—' : `±${d.ci95.toFixed(4)}`,
    ]),
  ];
  const widths = rows[0]?.map((_, column) => Math.max(...rows.map((row) => row[column]?.length ?? 0))) ?? [];
  return rows.map((row) => row.map((cell, column) => cell.padEnd(widths[column] ?? 0)).join('  ')).join('\n');
}

/** The flags of `troupe rerun` (described in `RERUN_HELP`). */
const RERUN_OPTIONS = {
  swap: { type: 'string' },
  config: { type: 'string', short: 'f' },
  'base-url': { type: 'string', short: 'b' },
  'api-key-var': { type: 'string' },
  'run-dir': { type: 'string' },
  clean: { type: 'boolean' },
  concurrency: { type: 'string', short: 'c' },
  'no-preflight': { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

/**
 * `troupe rerun`: re-runs a saved run with one seat swapped through `runEval` (the `troupe eval`
 * command, given its argv) and reports the paired reward change of every role.
 */
export async function rerunCommand(args: string[], runEval: (args: string[]) => Promise<number>): Promise<number> {
  const { values, positionals } = parseArgs({ args, options: RERUN_OPTIONS, allowPositionals: true, strict: true });
  if (values.help) {
    process.stdout.write(RERUN_HELP);
    return 0;
  }
  const [sourceDir, ...extra] = positionals;
  if (!sourceDir || extra.length) throw new ConfigError('troupe rerun: name one run directory (troupe rerun --help)');
  if (!existsSync(join(sourceDir, 'config.json')))
    throw new ConfigError(`${sourceDir}: no config.json there (is it a run directory?)`);
  const { role, model } = parseSwap(values.swap);
  const source = readSourceEpisodes(sourceDir, role);

  const saved = readConfigFile(join(sourceDir, 'config.json'));
  const override = values.config ? readConfigFile(values.config) : {};
  assertSavedModulesPassedAgain({ saved, passed: override, command: `troupe rerun ${sourceDir}` });
  const config = deepMerge(saved, override) as Record<string, unknown>;
  setPath(config, `env.${role}.model`, model);
  if (values['base-url']) setPath(config, `env.${role}.client.baseUrl`, values['base-url']);
  if (values['api-key-var']) setPath(config, `env.${role}.client.apiKeyVar`, values['api-key-var']);
  const safe = (text: string) => text.replace(/[^A-Za-z0-9._-]+/g, '_');
  const runDir = resolve(values['run-dir'] ?? `${sourceDir.replace(/\/+$/, '')}--rerun-${safe(role)}-${safe(model)}`);
  const evalFlags = [
    '--run-dir',
    runDir,
    ...(values.clean ? ['--clean'] : []),
    ...(values.concurrency ? ['-c', values.concurrency] : []),
    ...(values['no-preflight'] ? ['--no-preflight'] : []),
  ];
  const code = await runWithConfig(runEval, config, evalFlags);
  if (!existsSync(join(runDir, 'traces.jsonl'))) return code;
  const rerun = readEpisodes(join(runDir, 'traces.jsonl'));
  const differences = pairedDifferences(source, rerun.episodes);
  const report = { source: resolve(sourceDir), swap: { role, model, baseUrl: values['base-url'] ?? null }, differences };
  writeFileAtomic(join(runDir, 'rerun.json'), `${JSON.stringify(report, null, 2)}\n`);
  process.stdout.write(`\nrerun of ${sourceDir} with ${role} = ${model} (rerun − source, paired by task × rollout):\n`);
  process.stdout.write(`${formatDifferences(differences)}\n`);
  process.stdout.write(`${JSON.stringify(report)}\n`);
  return code;
}

/** `--swap ROLE=MODEL`. */
function parseSwap(text: string | undefined): { role: string; model: string } {
  const swap = /^([^=]+)=(.+)$/.exec(text ?? '');
  if (!swap?.[1] || !swap[2]) throw new ConfigError('--swap: expected ROLE=MODEL, e.g. --swap player1=my-model');
  return { role: swap[1], model: swap[2] };
}

/** The source run's episodes; refused when it has none or no trace of the swapped role. */
function readSourceEpisodes(sourceDir: string, role: string): Episode[] {
  const { episodes } = readEpisodes(join(sourceDir, 'traces.jsonl'));
  if (episodes.length === 0) throw new ConfigError(`${sourceDir}/traces.jsonl holds no episodes`);
  const roles = new Set(episodes.flatMap((episode) => episode.traces.map((trace) => trace.agent.name)));
  if (!roles.has(role))
    throw new ConfigError(`--swap ${role}=…: the run has no role "${role}" (its roles: ${[...roles].sort().join(', ')})`);
  return episodes;
}

/** Runs `troupe eval -f <config written to a scratch file> ...flags`; the scratch file is removed after. */
async function runWithConfig(
  runEval: (args: string[]) => Promise<number>,
  config: Record<string, unknown>,
  flags: string[],
): Promise<number> {
  const scratch = mkdtempSync(join(tmpdir(), 'troupe-rerun-'));
  const configPath = join(scratch, 'config.json');
  writeFileSync(configPath, JSON.stringify(config, null, 2));
  try {
    return await runEval(['-f', configPath, ...flags]);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** Reads a rerun directory's report (for tests and tools). */
export function readRerunReport(runDir: string): { source: string; differences: RoleDifference[] } {
  return JSON.parse(readFileSync(join(runDir, 'rerun.json'), 'utf8'));
}
