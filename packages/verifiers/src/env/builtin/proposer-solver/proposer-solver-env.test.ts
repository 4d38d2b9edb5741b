import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ModelRequest } from '../../../model/model-client.ts';
import { type ScriptedClient, type ScriptedReply, scriptedClient } from '../../../testing/scripted-model-server.ts';
import type { Episode } from '../../../trace/episode.ts';
import { Env } from '../../env.ts';
import { proposerSolverEnv, SOLVE_SUFFIX } from './proposer-solver-env.ts';
import { proposerSolverSeeds, SEED_TOPICS } from './seed-topics.ts';

let model: ScriptedClient;
let proposerReply: () => ScriptedReply | string;
let solverReplies: (ScriptedReply | string)[];
let solverCalls = 0;

const textOf = (request: ModelRequest) =>
  request.messages.map((m) => (typeof m.content === 'string' ? m.content : '')).join('\n');

beforeAll(async () => {
  model = await scriptedClient({
    script: (request) => {
      if (textOf(request).includes(SOLVE_SUFFIX)) return solverReplies[solverCalls++ % solverReplies.length] ?? '';
      return proposerReply();
    },
  });
});
afterAll(() => model.close());

async function episode(options: {
  config?: Record<string, unknown>;
  proposer: () => ScriptedReply | string;
  solvers?: (ScriptedReply | string)[];
}): Promise<Episode> {
  proposerReply = options.proposer;
  solverReplies = options.solvers ?? ['0'];
  solverCalls = 0;
  const env = await Env.create({
    definition: proposerSolverEnv,
    config: { id: 'proposer-solver', proposer: { harness: 'null' }, solver: { harness: 'null' }, ...options.config },
    run: { model: 'policy-model', client: model.client },
  });
  const task = (await proposerSolverEnv.taskset?.(env.options))?.at(1);
  if (!task) throw new Error('no seed task');
  return env.runEpisode({ task, group: { id: 'g', index: 0 } });
}

const proposal =
  'I built it in code and checked it.\n{"problem": "What is the least n > 1 with n ≡ 1 (mod 2, 3, 4, 5, 6)?", "answer": 61}';

describe('proposer-solver', () => {
  it('has six seed topics, one task each', () => {
    const seeds = proposerSolverSeeds();
    expect(seeds.size).toBe(6);
    expect(SEED_TOPICS.map((s) => s.topic)).toEqual([
      'rates and mixtures',
      'number theory',
      'combinatorics',
      'geometry',
      'probability',
      'modular arithmetic',
    ]);
    const prompt = seeds.at(1).promptText;
    expect(prompt).toMatch(/number theory/);
    expect(prompt).toMatch(/single integer answer/);
    expect(prompt).toMatch(/verify the answer end to end by computing it in code/);
    expect(prompt).toMatch(/Do not reveal the solution/);
    expect(prompt).toMatch(/\{"problem": .*"answer": <the integer answer>\}/);
  });

  it('runs n solvers on the proposed problem; half solving it gives learnability 1', async () => {
    const result = await episode({ proposer: () => proposal, solvers: ['It is 61', '1,000', 'n = 61.', '60'] });
    expect(result.errors).toEqual([]);
    const proposer = result.traces.find((t) => t.agent.name === 'proposer');
    const solvers = result.traces.filter((t) => t.agent.name === 'solver');
    expect(solvers).toHaveLength(4);
    expect(solvers.map((t) => t.rewards.correct?.score).sort()).toEqual([0, 0, 1, 1]);
    expect(solvers[0]?.messages[0]?.content).toMatch(
      /^What is the least n > 1.*\n\nEnd your reply with just the final integer\.$/s,
    );
    expect(proposer?.metrics.solve_rate).toBe(0.5);
    expect(proposer?.rewards.learnability).toEqual({ score: 1, weight: 1 });
    expect(proposer?.info.proposal).toEqual({ problem: 'What is the least n > 1 with n ≡ 1 (mod 2, 3, 4, 5, 6)?', answer: 61 });
    expect(result.traces.every((t) => t.agent.trainable)).toBe(true);
  });

  it('gives learnability 0 when every solver solves it, and runs n solvers', async () => {
    const result = await episode({ proposer: () => proposal, solvers: ['61'], config: { n: 3 } });
    const proposer = result.traces.find((t) => t.agent.name === 'proposer');
    expect(result.traces.filter((t) => t.agent.name === 'solver')).toHaveLength(3);
    expect(proposer?.metrics.solve_rate).toBe(1);
    expect(proposer?.rewards.learnability).toEqual({ score: 0, weight: 1 });
  });

  it.each([
    ['a bool answer', '{"problem": "Is 61 prime?", "answer": true}', /bool/],
    ['no JSON', 'The answer is 61.', /no JSON line/],
  ])('fails the episode with a ParseError on the proposer trace for %s, running no solver', async (_, reply, message) => {
    const result = await episode({ proposer: () => reply });
    expect(result.ok).toBe(false);
    expect(result.traces.map((t) => t.agent.name)).toEqual(['proposer']);
    const [proposer] = result.traces;
    expect(proposer?.errors[0]).toMatchObject({ type: 'ParseError', stage: 'finalize' });
    expect(proposer?.errors[0]?.message).toMatch(message);
    expect(result.errors[0]?.message).toMatch(/the proposer failed \(ParseError/);
  });

  it('leaves solve_rate and learnability null (not 0) when a solver fails', async () => {
    const result = await episode({
      proposer: () => proposal,
      solvers: ['61', { error: { status: 422, message: 'unprocessable' } }],
      config: { n: 2 },
    });
    expect(result.ok).toBe(false);
    const solvers = result.traces.filter((t) => t.agent.name === 'solver');
    expect(solvers.map((t) => t.ok).sort()).toEqual([false, true]);
    const proposer = result.traces.find((t) => t.agent.name === 'proposer');
    expect(proposer?.metrics.solve_rate).toBeNull();
    expect(proposer?.rewards.learnability).toBeNull();
  });

  it('switches training per role with trainProposer / trainSolver', async () => {
    const result = await episode({ proposer: () => proposal, solvers: ['61'], config: { n: 1, trainProposer: false } });
    expect(result.traces.map((t) => [t.agent.name, t.agent.trainable])).toEqual([
      ['proposer', false],
      ['solver', true],
    ]);
    const onlyProposer = await episode({ proposer: () => proposal, solvers: ['61'], config: { n: 1, trainSolver: false } });
    expect(onlyProposer.traces.map((t) => [t.agent.name, t.agent.trainable])).toEqual([
      ['proposer', true],
      ['solver', false],
    ]);
  });
});
