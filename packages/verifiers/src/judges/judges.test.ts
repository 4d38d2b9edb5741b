import { afterEach, describe, expect, it } from 'vitest';
import { OpenAICompatibleClient } from '../model/openai-client.ts';
import { scoreTrace } from '../task/scoring.ts';
import { Task } from '../task/task.ts';
import { type ScriptedClient, scriptedClient } from '../testing/scripted-model-server.ts';
import { Trace } from '../trace/trace.ts';
import { referenceJudge } from './reference-judge.ts';
import { rubricJudge } from './rubric-judge.ts';

let scripted: ScriptedClient | undefined;
afterEach(async () => {
  await scripted?.close();
  scripted = undefined;
});

/** A trace whose agent answered `reply` to `prompt`, recorded as interception would. */
function answered(task: Task, reply: string): Trace {
  const trace = new Trace({
    task: { key: task.key, hash: task.hash, data: { ...task.data } },
    agent: { name: 'solver', trainable: true },
  });
  trace.recordCall(
    { model: 'policy', messages: task.promptMessages, sampling: {} },
    {
      id: 'c1',
      model: 'policy',
      message: { role: 'assistant', content: reply },
      finishReason: 'stop',
      usage: { promptTokens: 5, completionTokens: 3 },
    },
    { dialect: 'chat', startedAt: 0, durationMs: 1 },
  );
  return trace;
}

const criteria = [
  { name: 'correct', text: 'The final answer is 4.', weight: 3 },
  { name: 'style', text: 'The answer is terse.', choices: ['poor', 'ok', 'good'] },
];

describe('rubricJudge', () => {
  it('makes one call, records per-criterion metrics and returns the weighted mean; the call stays apart from the agent calls', async () => {
    scripted = await scriptedClient({
      script: [
        {
          content:
            'Here you go:\n```json\n{"verdicts": [{"name": "correct", "reason": "says 4", "verdict": "yes"}, {"name": "style", "reason": "short", "verdict": "ok"}]}\n```',
          usage: { promptTokens: 200, completionTokens: 40, cost: 0.002 },
        },
      ],
      model: 'judge-model',
    });
    const reward = rubricJudge({ criteria, model: scripted.client, weight: 2 });
    const task = new Task({ prompt: 'What is 2+2?' }, { rewards: [reward] });
    const trace = answered(task, 'It is 4.');
    await scoreTrace({ task, trace });
    expect(trace.ok).toBe(true);
    expect(trace.metrics).toEqual({ 'rubric/correct': 1, 'rubric/style': 0.5 });
    expect(trace.rewards.rubric).toEqual({ score: (3 * 1 + 1 * 0.5) / 4, weight: 2 });
    expect(scripted.server.calls).toBe(1);
    const prompt = JSON.stringify(scripted.server.requests[0]?.body);
    expect(prompt).toContain('What is 2+2?');
    expect(prompt).toContain('It is 4.');
    expect(prompt).toContain('\\"poor\\", \\"ok\\", \\"good\\"');
    // Apart from the agent: not a call or a node of the trace (never trainable), but its usage counts.
    expect(trace.calls).toHaveLength(1);
    expect(trace.nodes.filter((n) => n.sampled)).toHaveLength(1);
    expect(trace.info.judgeCalls).toMatchObject([{ judge: 'rubric', model: 'judge-model', usage: { cost: 0.002 } }]);
    expect(trace.extraUsage).toEqual([{ promptTokens: 200, completionTokens: 40, cost: 0.002 }]);
  });

  it('turns a malformed verdict into a trace error, never a 0', async () => {
    scripted = await scriptedClient({
      script: [
        '{"verdicts": [{"name": "correct", "verdict": "maybe"}, {"name": "style", "verdict": "ok"}]}',
        'I think it is fine.',
        '{"verdicts": [{"name": "correct", "verdict": "no", "verdict": "yes"}, {"name": "style", "verdict": "ok"}]}',
      ],
    });
    for (const expected of [
      /verdict "maybe" is not one of no, yes/,
      /no \{"verdicts": \[\.\.\.\]\} object/,
      /the judge verdict.*"verdict"/,
    ]) {
      const task = new Task({ prompt: 'What is 2+2?' }, { rewards: [rubricJudge({ criteria, model: scripted.client })] });
      const trace = answered(task, '4');
      await scoreTrace({ task, trace });
      expect(trace.ok).toBe(false);
      expect(trace.rewards.rubric).toBeNull();
      expect(trace.metrics['rubric/correct']).toBeNull();
      expect(trace.errors[0]).toMatchObject({ type: 'RewardError', stage: 'scoring' });
      expect(trace.errors[0]?.message).toMatch(expected);
    }
  });

  it('records an unreachable judge model as a trace error naming the judge', async () => {
    scripted = await scriptedClient({ script: [] });
    const baseUrl = scripted.server.baseUrl;
    await scripted.close();
    scripted = undefined;
    const client = new OpenAICompatibleClient({ baseUrl, apiKey: 'k', model: 'gone', retry: { maxRetries: 0 } });
    const task = new Task({ prompt: 'q' }, { rewards: [rubricJudge({ criteria, model: client })] });
    const trace = answered(task, '4');
    await scoreTrace({ task, trace });
    expect(trace.ok).toBe(false);
    expect(trace.rewards.rubric).toBeNull();
    expect(trace.errors[0]?.message).toMatch(/judge rubric: model call to gone failed/);
    expect(trace.info.judgeCalls).toMatchObject([{ judge: 'rubric', error: { type: 'ProviderError' } }]);
  });
});

describe('referenceJudge', () => {
  it('asks yes/no against the task reference: yes scores 1, no scores 0, anything else is a trace error', async () => {
    scripted = await scriptedClient({ script: ['Yes.', 'no', 'The answer looks right to me'] });
    const scores: (number | null)[] = [];
    for (const reply of ['four', 'five', '4']) {
      const task = new Task({ prompt: 'What is 2+2?', answer: 4 }, { rewards: [referenceJudge({ model: scripted.client })] });
      const trace = answered(task, reply);
      await scoreTrace({ task, trace });
      scores.push(trace.rewards.reference?.score ?? null);
      if (scores.length === 3) expect(trace.errors[0]?.message).toMatch(/expected yes or no/);
    }
    expect(scores).toEqual([1, 0, null]);
    expect(JSON.stringify(scripted.server.requests[0]?.body)).toContain('# Reference answer\\n4');
  });

  it('refuses a task without the reference field instead of scoring it', async () => {
    scripted = await scriptedClient({ script: ['yes'] });
    const task = new Task({ prompt: 'q' }, { rewards: [referenceJudge({ model: scripted.client })] });
    const trace = answered(task, 'x');
    await scoreTrace({ task, trace });
    expect(trace.errors[0]?.message).toMatch(/no reference field "answer"/);
    expect(scripted.server.calls).toBe(0);
  });
});
