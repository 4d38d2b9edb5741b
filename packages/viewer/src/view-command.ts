import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ConfigError } from '@troupe/verifiers';

const isRun = (dir: string) => existsSync(join(dir, 'traces.jsonl'));

const onWarning = (warning: string) => process.stderr.write(`warning: ${warning}\n`);

/** `troupe view --help`. */
export const VIEW_HELP = `troupe view <run-dir> [--html FILE] [--port N] [--host HOST]
troupe view <folder>
troupe view <run-a> <run-b> --html FILE

Serves a run on loopback (127.0.0.1, a random port unless --port) until Ctrl-C, or writes the same
page as one self-contained HTML file (--html: opens offline). A folder: every run below it, listed,
any two compared. Two run directories with --html: the two runs compared in one file.

Options:
      --html FILE   write one self-contained HTML file instead of serving
      --port N      listen on port N (0 to 65535; default: a free port)
      --host HOST   a loopback address to listen on (default 127.0.0.1)
  -h, --help
`;

/**
 * `troupe view`: serves a run (`<run-dir>`) or every run below a folder (`<folder>`, with a
 * comparison of two) on loopback, or writes one HTML file (`--html`: a run, or two runs compared).
 * `help` (default {@link VIEW_HELP}) is printed for `--help`.
 */
export async function viewCommand(options: { args: string[]; help?: string }): Promise<number> {
  const { values, positionals } = parseArgs({
    args: options.args,
    options: {
      html: { type: 'string' },
      port: { type: 'string' },
      host: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    allowPositionals: true,
  });
  if (values.help) {
    process.stdout.write(options.help ?? VIEW_HELP);
    return 0;
  }
  if (positionals.length === 0) throw new ConfigError('troupe view <run-dir>: name a run directory (or a folder of runs)');
  if (positionals.length > 2)
    throw new ConfigError(`troupe view takes one run directory, a folder, or two runs to compare; got ${positionals.length}`);
  if (positionals.length === 2) return writeComparison([positionals[0]!, positionals[1]!], values.html);
  const dir = positionals[0]!;
  const listen = { ...listenOptions(values), onWarning };
  let served: { url: string; close: () => Promise<void> };
  if (isRun(dir)) {
    if (values.html) {
      const { writeHtmlReport } = await import('./write-html-report.ts');
      await writeHtmlReport({ runDir: dir, outFile: values.html, onWarning });
      process.stdout.write(`wrote ${values.html} (self-contained: opens offline)\n`);
      return 0;
    }
    served = await (await import('./serve-run.ts')).serveRun({ runDir: dir, ...listen });
  } else {
    if (!existsSync(dir)) throw new ConfigError(`${dir} does not exist`);
    if (values.html)
      throw new ConfigError(`${dir} is a folder of runs (no traces.jsonl): --html takes one run directory, or two to compare`);
    served = await (await import('./serve-run-folder.ts')).serveRunFolder({ folder: dir, ...listen });
  }
  process.stdout.write(`viewing ${dir} at ${served.url} (Ctrl-C to stop)\n`);
  await new Promise<void>((resolve) => process.once('SIGINT', () => resolve()));
  await served.close();
  return 0;
}

/** `troupe view <run-a> <run-b> --html FILE`: the two runs compared in one self-contained file. */
async function writeComparison(runDirs: [string, string], html: string | undefined): Promise<number> {
  for (const dir of runDirs) if (!isRun(dir)) throw new ConfigError(`${dir} has no traces.jsonl (is it a run directory?)`);
  if (!html)
    throw new ConfigError(
      'troupe view <run-a> <run-b> needs --html FILE; to compare served runs, run troupe view on their parent folder',
    );
  const { writeCompareReport } = await import('./write-compare-report.ts');
  await writeCompareReport({ runDirs, outFile: html, onWarning });
  process.stdout.write(`wrote ${html} (self-contained: opens offline)\n`);
  return 0;
}

/** `--port` (checked: 0 to 65535) and `--host`, as the servers take them. */
function listenOptions(values: { port?: string | undefined; host?: string | undefined }) {
  const port = values.port === undefined ? undefined : Number(values.port);
  if (port !== undefined && (!Number.isInteger(port) || port < 0 || port > 65535)) {
    throw new ConfigError(`--port must be an integer from 0 to 65535, got ${JSON.stringify(values.port)}`);
  }
  return {
    ...(port !== undefined ? { port } : {}),
    ...(values.host ? { host: values.host as '127.0.0.1' } : {}),
  };
}
