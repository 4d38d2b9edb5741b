import { ParseError, SandboxError } from '../../errors/troupe-error.ts';
import type { Sandbox } from '../../runtime/runtime.ts';

/** Where the judge's files live, as commands in the sandbox see them. */
export interface JudgePaths {
  /** The verdict the judge writes (`/tmp/verdict.json` under the sandbox's root). */
  verdict: string;
  /** The solver's trace, written for the judge (`/tmp/trace.json` under the sandbox's root). */
  trace: string;
  /** The directory holding both (`/tmp`). */
  directory: string;
}

/**
 * The judge's paths in `sandbox`. A container's `/tmp` is its own; a `local` sandbox is a host
 * directory whose commands see the host filesystem, so its `/tmp` is `$SANDBOX_ROOT/tmp` (the
 * local file APIs map `/tmp/x` to the same place). Asking the sandbox for `$SANDBOX_ROOT` keeps
 * this runtime-agnostic: a runtime that does not set it has its own `/`.
 */
export async function judgePaths(sandbox: Sandbox): Promise<JudgePaths> {
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell parameter expansion, not a template.
  const result = await sandbox.exec(['sh', '-c', 'printf %s "${SANDBOX_ROOT:-}"']);
  if (result.exitCode !== 0) throw new SandboxError(`cannot inspect sandbox ${sandbox.id}: ${result.stderr.trim()}`);
  const root = result.stdout.trim().replace(/\/+$/, '');
  const directory = `${root}/tmp`;
  return { directory, verdict: `${directory}/verdict.json`, trace: `${directory}/trace.json` };
}

/**
 * Clears the ground before the judge starts: the judge's directory must be a real directory (a
 * symlink planted in its place is removed, never followed), then a stale or planted verdict and
 * trace are removed with `rm` (which unlinks a symlink instead of following it), and the solver's
 * trace is written fresh. Every path is passed as an argument, never spliced into the script.
 */
export async function prepareJudgeWorkspace(options: { sandbox: Sandbox; paths: JudgePaths; traceJson: string }): Promise<void> {
  const { sandbox, paths } = options;
  const script = [
    'set -e',
    'if [ -L "$1" ] || { [ -e "$1" ] && [ ! -d "$1" ]; }; then rm -f -- "$1"; fi',
    'mkdir -p -- "$1"',
    'rm -rf -- "$2" "$3"',
    'if [ -e "$2" ] || [ -L "$2" ] || [ -e "$3" ] || [ -L "$3" ]; then echo "still present after rm" >&2; exit 1; fi',
  ].join('\n');
  const result = await sandbox.exec(['sh', '-c', script, 'sh', paths.directory, paths.verdict, paths.trace]);
  if (result.exitCode !== 0) {
    throw new SandboxError(
      `could not clear the judge's files in sandbox ${sandbox.id}: ${`${result.stdout}\n${result.stderr}`.trim().slice(-500)}`,
    );
  }
  await sandbox.writeFile(paths.trace, options.traceJson);
}

/** Largest verdict file read (bytes). */
export const MAX_VERDICT_BYTES = 1024 * 1024;

/**
 * Reads the judge's verdict file without following a symlink: a missing file, a symlink, or
 * anything but a regular file is a `ParseError` on the judge's trace.
 */
export async function readVerdictFile(options: { sandbox: Sandbox; paths: JudgePaths }): Promise<string> {
  const { sandbox, paths } = options;
  const probe = await sandbox.exec([
    'sh',
    '-c',
    'if [ -L "$1" ]; then echo symlink; elif [ ! -e "$1" ]; then echo missing; elif [ ! -f "$1" ]; then echo special; else echo file; fi',
    'sh',
    paths.verdict,
  ]);
  const kind = probe.stdout.trim();
  if (probe.exitCode !== 0) throw new SandboxError(`cannot inspect ${paths.verdict}: ${probe.stderr.trim()}`);
  if (kind === 'missing') throw new ParseError(`the judge wrote no verdict at ${paths.verdict}`);
  if (kind === 'symlink')
    throw new ParseError(`${paths.verdict} is a symlink; the verdict must be a regular file (not followed)`);
  if (kind !== 'file') throw new ParseError(`${paths.verdict} is not a regular file`);
  let bytes: Uint8Array;
  try {
    bytes = await sandbox.readFile(paths.verdict);
  } catch (error) {
    throw new ParseError(`cannot read the verdict at ${paths.verdict}: ${(error as Error).message}`, { cause: error });
  }
  if (bytes.byteLength > MAX_VERDICT_BYTES)
    throw new ParseError(`the verdict file is ${bytes.byteLength} bytes (limit ${MAX_VERDICT_BYTES})`);
  return new TextDecoder().decode(bytes);
}
