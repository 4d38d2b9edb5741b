import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { ConfigError } from '../errors/troupe-error.ts';
import { mergeRuns } from '../eval/merge-runs.ts';
import { formatSummary } from '../eval/summary.ts';

/** `troupe merge --help`. */
export const MERGE_HELP = `troupe merge <shard-run-dir>... --out DIR

Merges the run directories of one sharded eval (troupe eval --shard i/n, one per shard, any order)
into one run directory: traces.jsonl in the single-process order (task by task, rollout by
rollout), config.json, summary.json recomputed over every episode (wallSeconds: the slowest
shard), and each shard's log as logs/shard-<i>.log. Refused when a shard is missing or twice,
the shards' configs differ, or a shard has not finished its slice (resume it first).

Options:
  -o, --out DIR          the merged run directory (must not hold a run already)
  -h, --help
`;

/** `troupe merge`: returns the exit code. */
export async function mergeCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: { out: { type: 'string', short: 'o' }, help: { type: 'boolean', short: 'h' } },
    strict: true,
    allowPositionals: true,
  });
  if (values.help) {
    process.stdout.write(MERGE_HELP);
    return 0;
  }
  if (!values.out) throw new ConfigError('troupe merge: --out DIR is required');
  const summary = mergeRuns({ dirs: positionals, outDir: values.out });
  process.stdout.write(`${formatSummary(summary)}\n\nmerged ${positionals.length} shards into ${resolve(values.out)}\n`);
  return 0;
}
