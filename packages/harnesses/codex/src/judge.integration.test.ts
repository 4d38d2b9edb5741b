import { describeAgenticJudgeHarness } from '@troupe/program-kit/testing';
import { CodexHarness } from './codex-harness.ts';

// An `agentic-judge` episode whose judge is the real Codex CLI on the `local` runtime: the judge
// answers through Codex's own OpenAI-responses dialect, with one exec_command call, then a final
// text reply.
describeAgenticJudgeHarness({
  harness: CodexHarness,
  dialect: 'responses',
  judgeTool: { id: 'call_judge_1', name: 'exec_command', arguments: (cmd) => ({ cmd }) },
});
