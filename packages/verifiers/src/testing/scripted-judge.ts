// Scripted roles for agentic-judge tests: the pieces the env's own tests and the judge conformance
// suite share (not exported from the package's entry points).
import type { ModelRequest } from '../model/model-client.ts';
import type { ScriptedReply } from './scripted-model-server.ts';

/** A reply that runs `command` through the `bash` tool. */
export const bash = (command: string): ScriptedReply => ({ toolCalls: [{ name: 'bash', arguments: { command } }] });

/** The request's message texts, joined by newlines. */
export const textOf = (request: ModelRequest) =>
  request.messages.map((m) => (typeof m.content === 'string' ? m.content : '')).join('\n');

/** The contents of the request's tool results, in order. */
export const toolOutputs = (request: ModelRequest) =>
  request.messages.filter((m) => m.role === 'tool').map((m) => String(m.content));

/** The stdout of the last tool result, unfenced ('' when it printed nothing). */
export const lastStdout = (request: ModelRequest) =>
  /stdout:\n<<<(\S+)\n([\s\S]*?)\n\1>>>/.exec(toolOutputs(request).at(-1) ?? '')?.[2]?.trim() ?? '';

/** The judge's scratch file for its draft verdict (a shell word; `/tmp` of the sandbox). */
// biome-ignore lint/suspicious/noTemplateCurlyInString: a shell parameter expansion, not a template.
export const DRAFT = '"${SANDBOX_ROOT:-}/tmp/judge-draft.json"';

/**
 * A judge that runs `command` (which may write a draft verdict to the path it is given), reads the
 * draft back, and gives what it read as its final reply — the verdict channel — or says it has none.
 */
export const judgeRunning =
  (command: (draftPath: string) => string) =>
  (request: ModelRequest, turn: number): ScriptedReply | string => {
    if (turn === 0) return bash(command(DRAFT));
    if (turn === 1) return bash(`cat ${DRAFT} 2>/dev/null || true`);
    return lastStdout(request) || 'I have no verdict.';
  };

/** A judge that writes a `solved` verdict of `answer` to its draft and gives it as its reply. */
export const writeVerdict = (answer: string) =>
  judgeRunning(
    (path) =>
      `printf '%s' '${JSON.stringify({ verdicts: [{ name: 'solved', reason: 'I ran it and checked the output.', verdict: answer }] })}' > ${path}`,
  );
