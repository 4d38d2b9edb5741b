import { agenticJudgeEnv, contentText, Env, type Episode, InterceptionServer, type ModelRequest, Task } from '@troupe/verifiers';
import { type ScriptedReply, scriptedClient } from '@troupe/verifiers/testing';

const toolNames = (request: ModelRequest) => (request.tools ?? []).map((t) => t.name);
const answered = (request: ModelRequest) => request.messages.some((m) => m.role === 'tool');
const toolResultText = (request: ModelRequest) =>
  request.messages
    .filter((m) => m.role === 'tool')
    .map((m) => contentText(m.content))
    .join('\n');

/** The judge program's own shell tool: its call id, its name, and its arguments for a command. */
export interface JudgeTool {
  id: string;
  name: string;
  arguments: (command: string) => Record<string, unknown>;
}

/** The judge's shell command: re-run the solver's `answer.sh` and print the verdict it implies. */
export function judgeVerdictCommand(): string {
  return `if [ "$(sh answer.sh)" = 42 ]; then v=yes; else v=no; fi; printf '{"verdicts":[{"name":"solved","reason":"sh answer.sh printed %s","verdict":"%s"}]}' "$(sh answer.sh)" "$v"`;
}

/**
 * The scripted model of the agentic-judge integration tests, answering both agents of the episode.
 * The judge (a request offering \`judgeTool.name\`) makes one call of that tool running
 * \`judgeVerdictCommand\`, then gives the verdict it printed as its final reply (the verdict
 * channel), or says it has none. The solver, through the \`bash\` harness, writes \`answer.sh\`
 * printing \`$((6 * 7))\`, then replies \`Done: answer.sh prints 42.\`.
 */
export function agenticJudgeScript(options: { judgeTool: JudgeTool }): (request: ModelRequest) => ScriptedReply | string {
  const { judgeTool } = options;
  return (request) => {
    if (toolNames(request).includes(judgeTool.name)) {
      if (answered(request)) return /\{"verdicts":.*?\}\]\}/.exec(toolResultText(request))?.[0] ?? 'I have no verdict.';
      return { toolCalls: [{ id: judgeTool.id, name: judgeTool.name, arguments: judgeTool.arguments(judgeVerdictCommand()) }] };
    }
    if (answered(request)) return 'Done: answer.sh prints 42.';
    return { toolCalls: [{ name: 'bash', arguments: { command: "printf 'echo $((6 * 7))\\n' > answer.sh" } }] };
  };
}

/**
 * The real-program judge scenario: one `agentic-judge` episode on the `local` runtime whose solver
 * is the `bash` harness and whose judge is the harness table `judge` (loaded by id like any
 * plugin), both answered by `agenticJudgeScript` through a fresh interception server. The task asks
 * for `answer.sh` printing 6 * 7 and restores it to the judge as an artifact. Returns the episode;
 * the servers are closed.
 */
export async function runAgenticJudgeEpisode(options: {
  /** The judge's harness table, e.g. `{ id: 'codex', allowLocal: true, timeoutMs: 240_000 }`. */
  judge: { id: string } & Record<string, unknown>;
  judgeTool: JudgeTool;
}): Promise<Episode> {
  const model = await scriptedClient({ script: agenticJudgeScript({ judgeTool: options.judgeTool }) });
  const interception = new InterceptionServer();
  try {
    await interception.start();
    const env = await Env.create({
      definition: agenticJudgeEnv,
      config: { id: 'agentic-judge', solver: { harness: 'bash' }, judge: { harness: options.judge } },
      run: { model: 'policy-model', client: model.client },
      interception: () => Promise.resolve(interception),
    });
    const task = new Task({ prompt: 'Write a shell script answer.sh that prints 6 * 7.', artifacts: ['answer.sh'] });
    return await env.runEpisode({ task, group: { id: 'g', index: 0 } });
  } finally {
    await interception.close();
    await model.close();
  }
}
