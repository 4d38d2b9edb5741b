import { ParseError, SandboxError } from '../../errors/troupe-error.ts';
import type { Sandbox } from '../../runtime/runtime.ts';

/** Where the judge's files live, as commands in the sandbox see them. */
export interface JudgePaths {
  /** The solver's trace, written for the judge (`/tmp/trace.json` under the sandbox's root). */
  trace: string;
  /** The directory holding it (`/tmp`). */
  directory: string;
}

/**
 * The framework's own commands in a sandbox run `/bin/sh` by absolute path with a fixed `PATH`:
 * a solver that planted an `sh` earlier on the sandbox's `PATH` is never run by them.
 */
const FRAMEWORK_SHELL = '/bin/sh';
const FRAMEWORK_ENV = { PATH: '/usr/bin:/bin', ENV: '', BASH_ENV: '' };

/**
 * The judge's paths in `sandbox`. A container's `/tmp` is its own; a `local` sandbox is a host
 * directory whose commands see the host filesystem, so its `/tmp` is `$SANDBOX_ROOT/tmp` (the
 * local file APIs map `/tmp/x` to the same place). Asking the sandbox for `$SANDBOX_ROOT` keeps
 * this runtime-agnostic: a runtime that does not set it has its own `/`.
 */
export async function judgePaths(sandbox: Sandbox): Promise<JudgePaths> {
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell parameter expansion, not a template.
  const result = await sandbox.exec([FRAMEWORK_SHELL, '-c', 'printf %s "${SANDBOX_ROOT:-}"'], { env: FRAMEWORK_ENV });
  if (result.exitCode !== 0) throw new SandboxError(`cannot inspect sandbox ${sandbox.id}: ${result.stderr.trim()}`);
  const root = result.stdout.trim().replace(/\/+$/, '');
  const directory = `${root}/tmp`;
  return { directory, trace: `${directory}/trace.json` };
}

/**
 * Clears the ground before the judge starts: the judge's directory must be a real directory (a
 * symlink planted in its place is removed, never followed), a stale or planted trace is removed
 * with `rm` (which unlinks a symlink instead of following it), and the solver's trace is written
 * fresh through the sandbox's file API. Every path is passed as an argument, never spliced into
 * the script.
 */
export async function prepareJudgeWorkspace(options: { sandbox: Sandbox; paths: JudgePaths; traceJson: string }): Promise<void> {
  const { sandbox, paths } = options;
  const script = [
    'set -e',
    'if [ -L "$1" ] || { [ -e "$1" ] && [ ! -d "$1" ]; }; then rm -f -- "$1"; fi',
    'mkdir -p -- "$1"',
    'rm -rf -- "$2"',
    'if [ -e "$2" ] || [ -L "$2" ]; then echo "still present after rm" >&2; exit 1; fi',
  ].join('\n');
  const result = await sandbox.exec([FRAMEWORK_SHELL, '-c', script, 'sh', paths.directory, paths.trace], {
    env: FRAMEWORK_ENV,
  });
  if (result.exitCode !== 0) {
    throw new SandboxError(
      `could not clear the judge's files in sandbox ${sandbox.id}: ${`${result.stdout}\n${result.stderr}`.trim().slice(-500)}`,
    );
  }
  await sandbox.writeFile(paths.trace, options.traceJson);
}

/** Largest verdict reply read (characters). */
export const MAX_VERDICT_CHARS = 256 * 1024;

/**
 * The verdict JSON in the judge's final reply: the whole reply when it is one JSON object, else
 * the single fenced block (```json … ```) that ends it. No reply, several fenced blocks, or text
 * after the fence is a `ParseError` on the judge's trace (never a 0).
 */
export function verdictText(reply: string): string {
  const text = reply.trim();
  if (!text) throw new ParseError('the judge gave no final reply, so there is no verdict');
  if (text.length > MAX_VERDICT_CHARS) {
    throw new ParseError(`the judge's final reply is ${text.length} characters (limit ${MAX_VERDICT_CHARS})`);
  }
  if (text.startsWith('{')) return text;
  const fences = [...text.matchAll(/```(?:json)?[ \t]*\n([\s\S]*?)\n[ \t]*```/g)];
  if (fences.length === 0) {
    throw new ParseError('the judge\'s final reply holds no verdict: reply with one JSON object {"verdicts": [...]}');
  }
  if (fences.length > 1) throw new ParseError(`the judge's final reply holds ${fences.length} fenced blocks; give exactly one verdict`);
  const [fence] = fences as [RegExpExecArray];
  if (text.slice(fence.index + fence[0].length).trim()) {
    throw new ParseError("text follows the judge's verdict; the verdict must end the final reply");
  }
  return (fence[1] as string).trim();
}
