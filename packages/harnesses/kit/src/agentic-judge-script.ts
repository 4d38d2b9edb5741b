import { contentText, type ModelRequest } from '@troupe/verifiers';
import type { ScriptedReply } from '@troupe/verifiers/testing';

/** Where the judge prompt asks for the verdict file. */
const VERDICT_PATH = /write the file (\S+) containing/;
const textOf = (request: ModelRequest) => request.messages.map((m) => contentText(m.content)).join('\n');
const toolNames = (request: ModelRequest) => (request.tools ?? []).map((t) => t.name);
const answered = (request: ModelRequest) => request.messages.some((m) => m.role === 'tool');

/** The judge's shell command: re-run the solver's `answer.sh`, then write the verdict where its prompt says. */
export function judgeVerdictCommand(verdictPath: string): string {
  return `if [ "$(sh answer.sh)" = 42 ]; then v=yes; else v=no; fi; printf '{"verdicts":[{"name":"solved","reason":"sh answer.sh printed %s","verdict":"%s"}]}' "$(sh answer.sh)" "$v" > ${verdictPath}`;
}

/**
 * The scripted model of the agentic-judge integration tests, answering both agents of the episode.
 * The judge (a request offering `judgeTool.name`) makes one call of that tool running
 * `judgeVerdictCommand` on the verdict path named in its prompt (a 400 when none is named), then
 * replies `Verdict written.`. The solver, through the `bash` harness, writes `answer.sh` printing
 * `$((6 * 7))`, then replies `Done: answer.sh prints 42.`.
 */
export function agenticJudgeScript(options: {
  /** The program's own shell tool: its call id, its name, and its arguments for a command. */
  judgeTool: { id: string; name: string; arguments: (command: string) => Record<string, unknown> };
}): (request: ModelRequest) => ScriptedReply | string {
  const { judgeTool } = options;
  return (request) => {
    if (toolNames(request).includes(judgeTool.name)) {
      if (answered(request)) return 'Verdict written.';
      const path = VERDICT_PATH.exec(textOf(request))?.[1];
      if (!path) return { error: { status: 400, message: 'the judge prompt names no verdict path' } };
      return {
        toolCalls: [{ id: judgeTool.id, name: judgeTool.name, arguments: judgeTool.arguments(judgeVerdictCommand(path)) }],
      };
    }
    if (answered(request)) return 'Done: answer.sh prints 42.';
    return { toolCalls: [{ name: 'bash', arguments: { command: "printf 'echo $((6 * 7))\\n' > answer.sh" } }] };
  };
}
