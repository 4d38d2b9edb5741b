import { existsSync, writeFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { ConfigError } from '../errors/troupe-error.ts';
import { readEpisodes } from '../eval/traces-file.ts';
import { parseFilter } from '../export/export-filter.ts';
import { EXPORT_FORMATS, type ExportFormat, exportRecords } from '../export/export-records.ts';

/** `troupe export --help`. */
export const EXPORT_HELP = `troupe export <run-dir> --format chat|sft|preference [options]

Writes a run's traces as JSONL in the shapes Hugging Face TRL's trainers read, one object a line:
  chat        {"messages": [...], "tools": [...], "metadata": {...}}   every selected trace
  sft         {"messages": [...], "tools": [...], "metadata": {...}}   ok traces, ending on the last reply
  preference  {"prompt": [...], "chosen": [...], "rejected": [...], "metadata": {...}}
              pairs of ok traces of one role within a group (task) whose rewards differ
Messages carry tool calls (tool_calls) and tool results (role "tool"). metadata: run, task, role,
reward, episode, trace, rollout, stop, error, metrics.

Options:
      --format FORMAT    chat, sft or preference (required)
      --role ROLE        only this role; frozen roles (trainable = false) are left out unless named here
      --where EXPR       keep traces where EXPR holds, e.g. "reward >= 1 and error == null"
                         fields: reward, role, error (first error type or null), stop, ok, turns,
                         trainable, metrics.<name>, rewards.<name>; operators: == != < <= > >=
                         and or not ( ); values: numbers, 'strings', true, false, null
      --tokens           keep token ids: input_ids, completion_mask (1 = sampled), logprobs
  -o, --out FILE         write here (default: standard output)
  -h, --help
`;

/** `troupe export`: returns the exit code. */
export async function exportCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: {
      format: { type: 'string' },
      role: { type: 'string' },
      where: { type: 'string' },
      tokens: { type: 'boolean' },
      out: { type: 'string', short: 'o' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
    allowPositionals: true,
  });
  if (values.help) {
    process.stdout.write(EXPORT_HELP);
    return 0;
  }
  const runDir = positionals[0];
  if (!runDir) throw new ConfigError('troupe export <run-dir>: name a run directory');
  if (positionals.length > 1) throw new ConfigError(`troupe export: one run directory, got ${positionals.length}`);
  if (!values.format) throw new ConfigError(`--format is required (${EXPORT_FORMATS.join(', ')})`);
  if (!(EXPORT_FORMATS as readonly string[]).includes(values.format)) {
    throw new ConfigError(`--format must be one of ${EXPORT_FORMATS.join(', ')}, got ${JSON.stringify(values.format)}`);
  }
  // Parse the filter before reading anything, so a malformed one fails fast.
  if (values.where !== undefined) parseFilter(values.where);
  const tracesPath = join(runDir, 'traces.jsonl');
  if (!existsSync(tracesPath)) throw new ConfigError(`${runDir} has no traces.jsonl (is it a run directory?)`);
  const { episodes, badLines } = readEpisodes(tracesPath);
  for (const bad of badLines) process.stderr.write(`warning: skipping line ${bad.line} of traces.jsonl (${bad.reason})\n`);
  const roles = [...new Set(episodes.flatMap((e) => e.traces.map((t) => t.agent.name)))];
  if (values.role !== undefined && !roles.includes(values.role)) {
    throw new ConfigError(`--role ${values.role}: no trace of the run has this role (roles: ${roles.join(', ') || 'none'})`);
  }
  const records = exportRecords(episodes, {
    format: values.format as ExportFormat,
    run: basename(resolve(runDir)),
    ...(values.role !== undefined ? { role: values.role } : {}),
    ...(values.where !== undefined ? { where: values.where } : {}),
    ...(values.tokens ? { tokens: true } : {}),
  });
  if (records.length === 0) {
    const frozen = [...new Set(episodes.flatMap((e) => e.traces.filter((t) => !t.agent.trainable).map((t) => t.agent.name)))];
    process.stderr.write(
      `warning: no ${values.format} records from ${episodes.length} episodes${frozen.length && values.role === undefined ? ` (frozen roles ${frozen.join(', ')} are left out unless named with --role)` : ''}\n`,
    );
  }
  const text = records.map((r) => `${JSON.stringify(r)}\n`).join('');
  if (values.out) {
    writeFileSync(values.out, text);
    process.stderr.write(`wrote ${records.length} ${values.format} records to ${values.out}\n`);
  } else {
    process.stdout.write(text);
  }
  return 0;
}
