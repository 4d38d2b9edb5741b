import { Episode } from '@troupe/verifiers';
import { Trace } from '@troupe/verifiers';
import { judgeEpisode } from './fixture-run.ts';

/**
 * Fixtures for the viewer's RL views: an episode recorded from a training rollout (token ids,
 * mask, logprobs, advantages, the policy version), and two runs of the same tasks to compare.
 */

const START = Date.UTC(2025, 5, 2, 9, 0, 0);

/** The logprobs the first call's six sampled tokens get (one near-certain, one unlikely). */
export const FIRST_CALL_LOGPROBS = [-0.01, -0.2, -2.5, -0.05, -4.0, -0.7];
/** The advantage every sampled token of the episode gets. */
export const TOKEN_ADVANTAGE = 0.75;
/** What each single-call judge call of run B costs (one per solver trace). */
export const JUDGE_CALL_COST = 0.01;
/** The policy version the calls were served by. */
export const POLICY_VERSION = 3;

/**
 * One trainable trace of two calls recorded through `Trace.recordCall` with token ids (the second
 * call's prompt extends the first's prompt + completion), advantages set as a training algorithm
 * sets them, and the policy version each call was served by (`ModelResponse.policyVersion`).
 */
export function tokenEpisode(): Episode {
  const t = { key: 'count-to-3', hash: 'hcount', data: { question: 'Count to three.' } };
  const episode = new Episode({ id: 'token-episode', env: { id: 'single-agent' }, task: t, group: { id: 'g-token', index: 0 } });
  episode.startedAt = START;
  const trace = new Trace({ id: 'token-trace', task: t, agent: { name: 'policy', trainable: true, model: 'tiny-policy' } });
  const system = { role: 'system' as const, content: 'You count.' };
  const user = { role: 'user' as const, content: 'Count to three.' };
  const first = { role: 'assistant' as const, content: 'one two' };
  const usage = { promptTokens: 5, completionTokens: 6 };
  trace.recordCall(
    { model: 'tiny-policy', messages: [system, user], sampling: { temperature: 1, seed: 7 } },
    {
      id: 'r1',
      model: 'tiny-policy',
      message: first,
      finishReason: 'stop',
      usage,
      promptTokenIds: [101, 102, 103, 104, 105],
      completionTokenIds: [201, 202, 203, 204, 205, 206],
      completionLogprobs: FIRST_CALL_LOGPROBS,
      policyVersion: POLICY_VERSION,
    },
    { dialect: 'openai-chat', startedAt: START + 10, durationMs: 120 },
  );
  const more = { role: 'user' as const, content: 'Go on.' };
  trace.recordCall(
    { model: 'tiny-policy', messages: [system, user, first, more], sampling: { temperature: 1, seed: 7 } },
    {
      id: 'r2',
      model: 'tiny-policy',
      message: { role: 'assistant', content: 'three' },
      finishReason: 'stop',
      usage: { promptTokens: 14, completionTokens: 2 },
      promptTokenIds: [101, 102, 103, 104, 105, 201, 202, 203, 204, 205, 206, 106, 107],
      completionTokenIds: [207, 208],
      completionLogprobs: [-0.3, -0.02],
      policyVersion: POLICY_VERSION,
    },
    { dialect: 'openai-chat', startedAt: START + 200, durationMs: 80 },
  );
  // Both forms an algorithm writes: the first reply one `advantage` for all its tokens (as the
  // built-in algorithms do), the second one value per sampled token.
  let form = 0;
  for (const node of trace.nodes) {
    if (!node.sampled || !node.mask) continue;
    if (form++ === 0) node.advantage = TOKEN_ADVANTAGE;
    else node.advantages = node.mask.filter(Boolean).map(() => TOKEN_ADVANTAGE);
  }
  trace.stop('agent_completed');
  trace.isCompleted = true;
  trace.startedAt = START;
  trace.endedAt = START + 400;
  trace.recordReward('correct', 1);
  episode.traces.push(trace);
  episode.endedAt = START + 400;
  return episode;
}

/**
 * Two runs of the same three judge tasks with two rollouts each: in A the solver solves half of
 * them, in B all but one. B also has a task A lacks (`sum-to-41` only in B).
 */
export function comparedRuns(): { a: Episode[]; b: Episode[] } {
  const a: Episode[] = [];
  const b: Episode[] = [];
  let clock = START;
  for (let index = 0; index < 3; index++) {
    for (let rollout = 0; rollout < 2; rollout++) {
      a.push(judgeEpisode({ index, rollout, solved: (index + rollout) % 2 === 0, start: clock, id: `a-${index}-${rollout}` }));
      b.push(judgeEpisode({ index, rollout, solved: !(index === 2 && rollout === 1), start: clock, id: `b-${index}-${rollout}` }));
      clock += 9000;
    }
  }
  b.push(judgeEpisode({ index: 3, rollout: 0, solved: true, start: clock, id: 'b-3-0' }));
  // In B a single-call judge also scored each solver trace: its cost is the judges' share.
  for (const episode of b)
    for (const trace of episode.traces)
      if (trace.agent.name === 'solver') trace.extraUsage.push({ promptTokens: 50, completionTokens: 5, cost: JUDGE_CALL_COST });
  return { a, b };
}
