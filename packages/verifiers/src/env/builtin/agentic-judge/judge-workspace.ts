import { randomBytes } from 'node:crypto';
import { ParseError, SandboxError } from '../../../errors/troupe-error.ts';
import { contentText } from '../../../model/messages.ts';
import type { Sandbox } from '../../../runtime/runtime.ts';
import type { Trace } from '../../../trace/trace.ts';

/** Where the judge's files live, as commands in the sandbox see them. */
export interface JudgePaths {
  /**
   * The solver's trace, written for the judge: `/tmp/troupe-judge-<nonce>.json` under the
   * sandbox's root. The nonce is fresh per judging, so nothing can be planted there beforehand.
   */
  trace: string;
  /** The directory holding it (`/tmp` under the sandbox's root). */
  directory: string;
}

/**
 * The framework's own commands in a sandbox run `/bin/sh` by absolute path with a fixed `PATH`:
 * a solver that planted an `sh` earlier on the sandbox's `PATH` is never run by them.
 */
const FRAMEWORK_SHELL = '/bin/sh';
const FRAMEWORK_ENV = { PATH: '/usr/bin:/bin', ENV: '', BASH_ENV: '' };

/**
 * The host directory a `local` sandbox maps `/` to (its `root`); '' for runtimes whose commands
 * have their own `/` (containers, cloud sandboxes). Read from the sandbox object, never by
 * running a command in it.
 */
function sandboxRoot(sandbox: Sandbox): string {
  const root = (sandbox as { root?: unknown }).root;
  return sandbox.runtime === 'local' && typeof root === 'string' ? root.replace(/\/+$/, '') : '';
}

/**
 * The judge's paths in `sandbox`. A container's `/tmp` is its own; a `local` sandbox is a host
 * directory whose commands see the host filesystem, so its `/tmp` is `$SANDBOX_ROOT/tmp` (the
 * local file APIs map `/tmp/x` to the same place).
 */
export function judgePaths(sandbox: Sandbox): JudgePaths {
  const directory = `${sandboxRoot(sandbox)}/tmp`;
  return { directory, trace: `${directory}/troupe-judge-${randomBytes(8).toString('hex')}.json` };
}

/**
 * Writes the solver's trace for the judge (every solver process is already dead). On `local`,
 * first checks that each component above `/tmp` (the sandbox root included) is a real directory
 * — a root the solver swapped for a link to a host folder stops here, before anything is
 * touched — and replaces a `/tmp` that is a symlink or a file by a fresh directory (the link is
 * removed, never followed). The trace goes through the sandbox's file API (confined to the
 * sandbox, `O_NOFOLLOW`, hard links refused) to a path named by a fresh nonce. Containers need
 * no command at all: their file API is the engine's archive API.
 */
export async function prepareJudgeWorkspace(options: { sandbox: Sandbox; paths: JudgePaths; traceJson: string }): Promise<void> {
  const { sandbox, paths } = options;
  if (sandboxRoot(sandbox)) {
    const script = [
      'set -e',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell parameter expansion, not a template.
      'p=; IFS=/; for c in ${1%/*}; do [ -n "$c" ] || continue; p="$p/$c"; if [ -L "$p" ] || [ ! -d "$p" ]; then echo "$p is a symlink or not a directory" >&2; exit 3; fi; done; unset IFS',
      'if [ -L "$1" ] || { [ -e "$1" ] && [ ! -d "$1" ]; }; then rm -f -- "$1"; fi',
      'mkdir -p -- "$1"',
    ].join('\n');
    const result = await sandbox.exec([FRAMEWORK_SHELL, '-c', script, 'sh', paths.directory], { env: FRAMEWORK_ENV });
    if (result.exitCode !== 0) {
      throw new SandboxError(
        `could not prepare the judge's directory in sandbox ${sandbox.id}: ${`${result.stdout}\n${result.stderr}`.trim().slice(-500)}`,
      );
    }
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
  const text = trimAscii(reply);
  if (!text) throw new ParseError('the judge gave no final reply, so there is no verdict');
  if (text.length > MAX_VERDICT_CHARS) {
    throw new ParseError(`the judge's final reply is ${text.length} characters (limit ${MAX_VERDICT_CHARS})`);
  }
  // No fence: the whole reply must be the JSON object (the strict parser refuses anything else).
  if (!text.includes('```')) return text;
  const fences = [...text.matchAll(/```(?:json)?[ \t]*\n([\s\S]*?)\n[ \t]*```/g)];
  if (fences.length === 0) {
    throw new ParseError('the judge\'s final reply holds no verdict: reply with one JSON object {"verdicts": [...]}');
  }
  if (fences.length > 1)
    throw new ParseError(`the judge's final reply holds ${fences.length} fenced blocks; give exactly one verdict`);
  const [fence] = fences as [RegExpExecArray];
  if (text.slice(fence.index + fence[0].length).trim()) {
    throw new ParseError("text follows the judge's verdict; the verdict must end the final reply");
  }
  return trimAscii(fence[1] as string);
}

/** Trims ASCII whitespace only: `String.trim()` would also drop a BOM or NBSP, which the strict parser must see (and refuse). */
function trimAscii(text: string): string {
  return text.replace(/^[ \t\r\n]+|[ \t\r\n]+$/g, '');
}

/**
 * The judge's final reply, as the model produced it (untrimmed): the content of the last message
 * of its trace, which must be an assistant message without tool calls. Interception recorded it
 * from the model's response; no program in a sandbox can write it.
 */
export function judgeFinalReply(trace: Trace): string {
  const last = trace.messages.at(-1);
  if (last?.role !== 'assistant') {
    throw new ParseError('the judge ended without a final reply, so there is no verdict');
  }
  if (last.toolCalls?.length) throw new ParseError('the judge ended on a tool call, not on a final reply with its verdict');
  return contentText(last.content);
}
