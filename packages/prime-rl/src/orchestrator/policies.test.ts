import { afterAll, describe, expect, it } from 'vitest';
import { echoRun, removeEchoRuns } from './__fixtures__/echo-run.ts';
import { Orchestrator } from './orchestrator.ts';
import { episodesOfPolicy, policiesOfSource, routedEvaluationPolicy } from './policies.ts';
import type { Trainer } from './types.ts';

afterAll(removeEchoRuns);

const noTrainer = {
  description: 'none',
  step: async () => ({ metrics: {}, weights: [] }),
  state: async () => ({ weights: [], optimizer: { step: 0, m: [], v: [] } }),
  close: async () => {},
} as unknown as Trainer;

describe('several policies in the orchestrator', () => {
  it('takes trainer and inference, or policies, and refuses a role or pool bound to a policy it does not train', async () => {
    const { out, inference, source } = await echoRun('troupe-policies-');
    const base = { groupsPerStep: 1, maxSteps: 1, out };
    expect(() => new Orchestrator({ ...base, sources: [source()] })).toThrow(
      /give trainer and inference \(one policy\) or policies/,
    );
    expect(
      () =>
        new Orchestrator({
          ...base,
          sources: [source()],
          trainer: noTrainer,
          inference,
          policies: { a: { trainer: noTrainer, inference } },
        }),
    ).toThrow(/not both/);
    // The echo env's one role plays `main` unless bound: a run of the policies `a` and `b` has no main.
    expect(
      () =>
        new Orchestrator({
          ...base,
          sources: [source({ policies: { speaker: 'c' } })],
          policies: { a: { trainer: noTrainer, inference }, b: { trainer: noTrainer, inference } },
        }),
    ).toThrow(/^sources: echo\.speaker binds policy c, which the run does not train \(policies: a, b\)$/);
    expect(policiesOfSource(source({ policies: { speaker: 'b' } }))).toEqual(['b']);
    expect(policiesOfSource(source({ frozenRoles: new Set(['speaker']) }))).toEqual([]);
  });

  it("gives each policy its roles' traces only, and a routed evaluation client without reply probabilities", async () => {
    const { source } = await echoRun('troupe-policies-');
    const trace = (name: string) => ({ agent: { name } });
    const episode = { id: 'e', env: { id: 'echo' }, traces: [trace('speaker'), trace('listener')] } as never;
    const bound = source({ policies: { speaker: 'a', listener: 'b' } });
    const [forA] = episodesOfPolicy(bound, [episode], 'a');
    expect(forA?.traces.map((t) => t.agent.name)).toEqual(['speaker']);
    expect(forA?.id).toBe('e');
    expect(episodesOfPolicy(bound, [episode], 'c')).toEqual([]);
    const asked: string[] = [];
    const policy = (name: string) => ({
      version: 3,
      client: {
        model: name,
        complete: async () => (asked.push(name), { message: { role: 'assistant', content: name } }) as never,
      },
    });
    const routed = routedEvaluationPolicy(
      new Map([
        ['a', policy('a')],
        ['b', policy('b')],
      ]),
      'a',
    );
    await routed.client.complete({ model: 'b', messages: [] } as never);
    await routed.client.complete({ model: 'unknown', messages: [] } as never);
    expect(asked).toEqual(['b', 'a']);
    await expect(routed.replyProbabilities?.({ messages: [], replies: ['x'] })).rejects.toThrow(/several policies \(a, b\)/);
  });
});
