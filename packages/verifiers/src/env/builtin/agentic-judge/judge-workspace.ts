import { randomBytes } from 'node:crypto';
import { ParseError, SandboxError } from '../../../errors/troupe-error.ts';
import { contentText } from '../../../model/messages.ts';
import type { Sandbox } from '../../../runtime/runtime.ts';
import type { Trace } from '../../../trace/trace.ts';
import { findInvisible } from './strict-json.ts';

/** Where the judge's files live, as commands in the sandbox see them. */
export interface JudgePaths {
  /**
   * The solver's trace, written for the judge: `/tmp/troupe-judge-<nonce>.json` in a container,
   * `$SANDBOX_ROOT/troupe-judge-<nonce>/trace.json` on `local`. The nonce is fresh per judging, so
   * nothing can be planted there beforehand.
   */
  trace: string;
  /**
   * The directory holding it: the container's `/tmp`, or on `local` a fresh directory under the
   * sandbox root that the framework creates itself (a leftover `/tmp` of the solver — a link, a
   * file, an immutable `chattr +i` entry — is never touched, so it cannot stop the judging).
   */
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
 * directory whose commands see the host filesystem, and whose `/tmp` the solver may have left in
 * any state: the judge's files go to a fresh nonce-named directory under the sandbox root instead.
 */
export function judgePaths(sandbox: Sandbox): JudgePaths {
  const nonce = randomBytes(8).toString('hex');
  const root = sandboxRoot(sandbox);
  if (root) {
    const directory = `${root}/troupe-judge-${nonce}`;
    return { directory, trace: `${directory}/trace.json` };
  }
  return { directory: '/tmp', trace: `/tmp/troupe-judge-${nonce}.json` };
}

/**
 * Writes the solver's trace for the judge (every solver process is already dead). On `local`,
 * first checks that each component of the sandbox root is a real directory — a root the solver
 * swapped for a link to a host folder stops here, before anything is touched — then creates the
 * fresh judge directory with `mkdir` (which fails rather than reuse anything already there); a
 * root that refuses a new entry (made immutable with `chattr +i`, or read-only) is a
 * `SandboxError` that says so. The trace goes through the sandbox's file API (confined to the
 * sandbox, `O_NOFOLLOW`, hard links refused) to a path named by a fresh nonce. Containers need
 * no command at all: their file API is the engine's archive API.
 */
export async function prepareJudgeWorkspace(options: { sandbox: Sandbox; paths: JudgePaths; traceJson: string }): Promise<void> {
  const { sandbox, paths } = options;
  if (sandboxRoot(sandbox)) {
    const script = [
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell parameter expansion, not a template.
      'p=; IFS=/; for c in ${1%/*}; do [ -n "$c" ] || continue; p="$p/$c"; if [ -L "$p" ] || [ ! -d "$p" ]; then echo "$p is a symlink or not a directory" >&2; exit 3; fi; done; unset IFS',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell parameter expansion, not a template.
      'mkdir -m 700 -- "$1" 2>/dev/null || { echo "the sandbox root ${1%/*} refused a new directory (immutable, read-only or full)" >&2; exit 4; }',
    ].join('\n');
    const result = await sandbox.exec([FRAMEWORK_SHELL, '-c', script, 'sh', paths.directory], { env: FRAMEWORK_ENV });
    if (result.exitCode !== 0) {
      throw new SandboxError(
        `could not prepare the judge's directory in sandbox ${sandbox.id}: ${`${result.stdout}\n${result.stderr}`.trim().slice(-500)}`,
      );
    }
  }
  try {
    await sandbox.writeFile(paths.trace, options.traceJson);
  } catch (error) {
    throw new SandboxError(
      `could not write the solver's trace for the judge at ${paths.trace} in sandbox ${sandbox.id}: ${(error as Error).message}`,
      { cause: error },
    );
  }
}

/** Largest verdict reply read (characters). */
export const MAX_VERDICT_CHARS = 256 * 1024;

/**
 * The verdict JSON in the judge's final reply: the JSON object that ends it, bare or in a fenced
 * block (```json … ```) that ends it. The reply's prose is free — earlier fences, quoted code,
 * other JSON objects, fences and quotes inside the verdict's own strings — and only the shape of
 * its end is checked: when the reply holds several JSON objects or fenced blocks, the verdict is
 * the one that ends it. No reply, text after the verdict, or a last fenced block that is not one
 * JSON object is a `ParseError` on the judge's trace (never a 0).
 */
export function verdictText(reply: string): string {
  const text = trimAscii(reply);
  if (!text) throw new ParseError('the judge gave no final reply, so there is no verdict');
  if (text.length > MAX_VERDICT_CHARS) {
    throw new ParseError(`the judge's final reply is ${text.length} characters (limit ${MAX_VERDICT_CHARS})`);
  }
  const fenced = closingFence(text);
  if (fenced !== null) {
    // JSON strings hold no raw newline, so a line opening a fence cannot sit inside the verdict:
    // the last such line before the closing fence opens the verdict's block.
    const opening = [...text.slice(0, fenced).matchAll(/^[ \t]*```[A-Za-z]*[ \t]*$/gm)].at(-1);
    if (!opening) throw new ParseError("the judge's final reply ends with a fence that opens no block");
    const body = trimAscii(text.slice(opening.index + opening[0].length, fenced));
    const object = trailingObject(body);
    if (object === null || trimAscii(body.slice(0, body.length - object.length))) {
      throw new ParseError('the fenced block that ends the judge\'s reply is not one JSON object {"verdicts": [...]}');
    }
    return object;
  }
  const object = trailingObject(text);
  if (object === null) {
    if (text.includes('{')) throw new ParseError("text follows the judge's verdict; the verdict must end the final reply");
    throw new ParseError('the judge\'s final reply holds no verdict: end it with one JSON object {"verdicts": [...]}');
  }
  return object;
}

/** The index where a closing fence line (```` ``` ```` alone on the last line) starts, or null. */
function closingFence(text: string): number | null {
  const match = /(?:^|\n)[ \t]*```[ \t]*$/.exec(text);
  if (!match) return null;
  return match.index + (match[0].startsWith('\n') ? 1 : 0);
}

/**
 * The JSON object (brace-balanced, strings skipped) that ends `text`, found by walking back from
 * its last `}` to the `{` that opens it, or null when `text` does not end with `}` or it is not
 * balanced. Walking backward, a `"` starts a string when an even number of backslashes precede
 * it (inside a JSON string every `"` is escaped). The strict parser then checks the whole object.
 */
function trailingObject(text: string): string | null {
  if (!text.endsWith('}')) return null;
  let depth = 0;
  for (let i = text.length - 1; i >= 0; i--) {
    const c = text[i];
    if (c === '"') {
      i = stringStart(text, i);
      if (i < 0) return null;
    } else if (c === '}' || c === ']') {
      depth++;
    } else if (c === '{' || c === '[') {
      depth--;
      if (depth < 0) return null;
      if (depth === 0) return c === '{' ? text.slice(invisiblePrefixStart(text, i)) : null;
    }
  }
  return null;
}

/**
 * Where the verdict starting at `start` is read from: `start`, or earlier when the word it is glued
 * to holds an invisible character (a BOM or zero-width space before the `{`): that is read too,
 * so the strict parser sees it and refuses.
 */
function invisiblePrefixStart(text: string, start: number): number {
  const glued = /[^ \t\r\n]*$/.exec(text.slice(0, start))?.[0] ?? '';
  return glued && findInvisible(glued) ? start - glued.length : start;
}

/** Walking back from the closing quote at `end`: the index of the quote that opens its string, or -1. */
function stringStart(text: string, end: number): number {
  for (let i = end - 1; i >= 0; i--) {
    if (text[i] !== '"') continue;
    let slashes = 0;
    while (text[i - 1 - slashes] === '\\') slashes++;
    if (slashes % 2 === 0) return i;
  }
  return -1;
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
