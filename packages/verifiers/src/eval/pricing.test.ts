import { afterEach, describe, expect, it } from 'vitest';
import { type InterceptedRollout, startInterceptedRollout } from '../testing/intercepted-rollout.ts';
import { Episode } from '../trace/episode.ts';
import { usageCost } from './pricing.ts';
import { summarize } from './summary.ts';

let rollout: InterceptedRollout | undefined;
afterEach(async () => {
  await rollout?.close();
  rollout = undefined;
});

async function programCall(baseUrl: string, secret: string, body: Record<string, unknown>) {
  const response = await fetch(`${baseUrl}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}` },
    body: JSON.stringify({ model: 'whatever', messages: [{ role: 'user', content: 'hi' }], ...body }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

describe('sampling beyond temperature', () => {
  it('imposes top_p, top_k, min_p, seed, stop, reasoning_effort and the extra table on the harness request', async () => {
    rollout = await startInterceptedRollout({
      script: ['ok'],
      sampling: {
        topP: 0.9,
        topK: 40,
        minP: 0.05,
        seed: 7,
        stop: ['END'],
        reasoningEffort: 'high',
        extra: { repetition_penalty: 1.1, chat_template_kwargs: { enable_thinking: false } },
      },
    });
    // The program asks for other values: the run's sampling wins.
    const reply = await programCall(rollout.baseUrl, rollout.session.secret, { top_p: 0.2, top_k: 5, seed: 1 });
    expect(reply.status).toBe(200);
    const sent = rollout.model.requests.find((r) => r.dialect === 'chat')?.body as Record<string, unknown>;
    expect(sent).toMatchObject({
      model: 'policy-model',
      top_p: 0.9,
      top_k: 40,
      min_p: 0.05,
      seed: 7,
      stop: ['END'],
      reasoning_effort: 'high',
      repetition_penalty: 1.1,
      chat_template_kwargs: { enable_thinking: false },
    });
    expect(rollout.trace.calls[0]?.sampling).toMatchObject({ topP: 0.9, topK: 40, minP: 0.05, seed: 7 });
  });
});

describe('usage with cached and reasoning tokens and the provider cost', () => {
  it('records prompt_tokens_details.cached_tokens, completion_tokens_details.reasoning_tokens and usage.cost', async () => {
    rollout = await startInterceptedRollout({
      script: [
        {
          content: 'ok',
          usage: { promptTokens: 80, cachedInputTokens: 20, completionTokens: 30, reasoningTokens: 12, cost: 0.0042 },
        },
      ],
    });
    await programCall(rollout.baseUrl, rollout.session.secret, {});
    // Over the wire the scripted server sent prompt_tokens 100 (cache included), as OpenAI does.
    expect(rollout.trace.calls[0]?.usage).toEqual({
      promptTokens: 80,
      cachedInputTokens: 20,
      completionTokens: 30,
      reasoningTokens: 12,
      cost: 0.0042,
    });
    expect(rollout.trace.usage.cost).toBe(0.0042);
  });

  it('prices usage from the table when the provider sends no cost, and never invents a cost for an unknown model', () => {
    const usage = {
      promptTokens: 1_000_000,
      cachedInputTokens: 1_000_000,
      completionTokens: 1_000_000,
      reasoningTokens: 500_000,
    };
    const prices = { m: { input: 2, cachedInput: 0.5, output: 8, reasoning: 10 } };
    expect(usageCost(usage, 'm', prices)).toBeCloseTo(2 + 0.5 + 0.5 * 8 + 0.5 * 10, 10);
    expect(usageCost(usage, 'other', prices)).toBeUndefined();
    expect(usageCost({ ...usage, cost: 0.25 }, 'm', prices)).toBe(0.25);
  });

  it('summary.json shows cost per role and judge cost apart', async () => {
    rollout = await startInterceptedRollout({
      script: [{ content: 'ok', usage: { promptTokens: 1000, completionTokens: 500 } }],
      runModel: 'priced-model',
    });
    await programCall(rollout.baseUrl, rollout.session.secret, {});
    const trace = rollout.trace;
    // What a single-call judge leaves on the trace (see judges/rubric-judge.ts).
    trace.info.judgeCalls = [
      { judge: 'rubric', model: 'judge-model', durationMs: 1, usage: { promptTokens: 100, completionTokens: 10, cost: 0.01 } },
    ];
    const episode = new Episode({ env: { id: 'e' }, task: trace.task, group: { id: 'g', index: 0 } });
    episode.traces.push(trace);
    const summary = summarize({
      episodes: [episode],
      env: 'e',
      model: 'priced-model',
      prices: { 'priced-model': { input: 1, output: 4 } },
    });
    expect(summary.costByRole.solver?.agent).toBeCloseTo((1000 * 1 + 500 * 4) / 1e6, 12);
    expect(summary.costByRole.solver?.judge).toBeCloseTo(0.01, 12);
    expect(summary.judgeCost).toBeCloseTo(0.01, 12);
    expect(summary.cost).toBeCloseTo(0.003 + 0.01, 12);
    const unpriced = summarize({ episodes: [episode], env: 'e', model: 'priced-model' });
    expect(unpriced.costByRole.solver).toMatchObject({ agent: null, unpriced: 1 });
  });
});
