import { describeAgenticJudgeHarness } from '@troupe/program-kit/testing';
import { ClaudeCodeHarness } from './claude-code-harness.ts';

// An `agentic-judge` episode whose judge is the real Claude Code CLI on the `local` runtime: the
// judge answers through Claude Code's own Anthropic-messages dialect, with one Bash call, then a
// final text reply.
describeAgenticJudgeHarness({
  harness: ClaudeCodeHarness,
  dialect: 'messages',
  judgeTool: {
    id: 'toolu_judge_1',
    name: 'Bash',
    arguments: (command) => ({ command, description: 'verify and write the verdict' }),
  },
});
