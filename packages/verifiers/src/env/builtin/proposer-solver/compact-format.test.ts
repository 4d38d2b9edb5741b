import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ModelRequest } from '../../../model/model-client.ts';
import { type ScriptedClient, scriptedClient } from '../../../testing/scripted-model-server.ts';
import { Env } from '../../env.ts';
import {
  compactProbeSet,
  compactTruth,
  parseCompactProposal,
  parseCompactSequence,
  proposerSolverTraining,
} from './compact-format.ts';
import { proposerSolverEnv } from './proposer-solver-env.ts';

let model: ScriptedClient;
let proposerReply = '3 9 1 9';
let solverReplies: string[] = [];
let calls = 0;
const textOf = (request: ModelRequest) =>
  request.messages.map((m) => (typeof m.content === 'string' ? m.content : '')).join('\n');

beforeAll(async () => {
  model = await scriptedClient({
    script: (request) =>
      textOf(request).startsWith('propose') ? proposerReply : (solverReplies[calls++ % solverReplies.length] ?? ''),
  });
});
afterAll(() => model.close());

describe('proposer-solver, compact format', () => {
  it('parses digits then the claimed answer, and refuses anything else', () => {
    expect(parseCompactProposal('3 9 1 9')).toEqual({ digits: [3, 9, 1], answer: 9 });
    expect(() => parseCompactProposal('7')).toThrow(/digits then an answer/);
    expect(() => parseCompactProposal('3 x 1')).toThrow(/single digits/);
    expect(() => parseCompactProposal('1 2 3 4 5 6 7 8 9 0')).toThrow(/longer than 8/);
    expect(compactTruth('sum-mod-10', [9, 9, 5])).toBe(3);
  });

  it('rewards solvers matching the claim, the proposer 4p(1−p), and records difficulty and validity', async () => {
    solverReplies = ['9', '9', '1', '4'];
    calls = 0;
    const env = await Env.create({
      definition: proposerSolverEnv,
      config: { id: 'proposer-solver', format: 'compact', proposer: { harness: 'null' }, solver: { harness: 'null' } },
      run: { model: 'm', client: model.client },
    });
    const tasks = await proposerSolverEnv.taskset?.(env.options);
    const task = tasks?.at(0); // largest digit
    if (!task) throw new Error('no seed task');
    const episode = await env.runEpisode({ task, group: { id: 'g', index: 0 } });
    expect(episode.ok).toBe(true);
    const proposer = episode.byAgent.proposer?.[0];
    const solvers = episode.byAgent.solver ?? [];
    expect(solvers.map((t) => t.rewards.correct?.score).sort()).toEqual([0, 0, 1, 1]);
    expect(proposer?.metrics.solve_rate).toBe(0.5);
    expect(proposer?.rewards.learnability?.score).toBe(1);
    expect(proposer?.metrics.difficulty).toBe(3);
    expect(proposer?.metrics.valid).toBe(1);
    expect(JSON.stringify(solvers[0]?.toJSON())).toContain('largest digit of 3 9 1 ?');
  });

  async function compactEpisode(config: Record<string, unknown>) {
    calls = 0;
    const env = await Env.create({
      definition: proposerSolverEnv,
      config: { id: 'proposer-solver', format: 'compact', proposer: { harness: 'null' }, solver: { harness: 'null' }, ...config },
      run: { model: 'm', client: model.client },
    });
    const task = (await proposerSolverEnv.taskset?.(env.options))?.at(0); // largest digit
    if (!task) throw new Error('no seed task');
    return env.runEpisode({ task, group: { id: 'g', index: 0 } });
  }

  it("with claims = 'verified', a wrong claim is an invalid problem: learnability 0, valid 0, no solver runs, no error", async () => {
    proposerReply = '3 9 1 5'; // largest digit of 3 9 1 is 9, not 5
    solverReplies = ['5', '5', '1', '4'];
    const episode = await compactEpisode({ claims: 'verified' });
    expect(episode.ok).toBe(true);
    expect(episode.errors).toEqual([]);
    expect(episode.traces.map((t) => t.agent.name)).toEqual(['proposer']);
    expect(calls).toBe(0);
    const [proposer] = episode.traces;
    expect(proposer?.agent.trainable).toBe(true);
    expect(proposer?.metrics.valid).toBe(0);
    expect(proposer?.metrics.difficulty).toBe(3);
    expect(proposer?.metrics.solve_rate).toBeNull();
    expect(proposer?.rewards.learnability).toEqual({ score: 0, weight: 1 });
  });

  it("with claims = 'trusted' (the literal rules), the same wrong claim is posed and solvers matching it are right", async () => {
    proposerReply = '3 9 1 5';
    solverReplies = ['5', '5', '1', '4'];
    const episode = await compactEpisode({});
    const solvers = episode.byAgent.solver ?? [];
    expect(solvers.map((t) => t.rewards.correct?.score).sort()).toEqual([0, 0, 1, 1]);
    const proposer = episode.byAgent.proposer?.[0];
    expect(proposer?.metrics.valid).toBe(0);
    expect(proposer?.rewards.learnability?.score).toBe(1);
  });

  it("with claims = 'verified', a right claim plays as before: solvers scored against it, learnability 4p(1−p)", async () => {
    proposerReply = '3 9 1 9';
    solverReplies = ['9', '2', '9', '9'];
    const episode = await compactEpisode({ claims: 'verified', n: 4 });
    const solvers = episode.byAgent.solver ?? [];
    expect(solvers.map((t) => [t.rewards.correct?.score, t.agent.trainable])).toEqual(expect.arrayContaining([[1, true]]));
    expect(solvers.map((t) => t.rewards.correct?.score).sort()).toEqual([0, 1, 1, 1]);
    const proposer = episode.byAgent.proposer?.[0];
    expect(proposer?.metrics.valid).toBe(1);
    expect(proposer?.metrics.solve_rate).toBe(0.75);
    expect(proposer?.rewards.learnability?.score).toBeCloseTo(0.75);
  });

  it("with claims = 'executed', the proposer writes the sequence alone and the answer is the rule run on it", async () => {
    proposerReply = '3 9 1 5'; // no claim: the sequence is 3 9 1 5, whose largest digit is 9
    solverReplies = ['5', '9', '9', '9'];
    const episode = await compactEpisode({ claims: 'executed' });
    expect(episode.ok).toBe(true);
    const solvers = episode.byAgent.solver ?? [];
    expect(JSON.stringify(solvers[0]?.toJSON())).toContain('largest digit of 3 9 1 5 ?');
    expect(solvers.map((t) => t.rewards.correct?.score).sort()).toEqual([0, 1, 1, 1]);
    const proposer = episode.byAgent.proposer?.[0];
    expect(proposer?.info.proposal).toEqual({ digits: [3, 9, 1, 5], answer: 9 });
    expect(proposer?.metrics).toMatchObject({ difficulty: 4, valid: 1, solve_rate: 0.75 });
    expect(proposer?.rewards.learnability?.score).toBeCloseTo(0.75);
    expect(() => parseCompactSequence('')).toThrow(/at least one digit/);
    expect(() => parseCompactSequence('1 2 3 4 5 6 7 8 9')).toThrow(/longer than 8/);
    expect(parseCompactSequence('7')).toEqual([7]);
  });

  it("refuses claims = 'verified' without the compact format, naming the field", async () => {
    await expect(
      Env.create({
        definition: proposerSolverEnv,
        config: { id: 'proposer-solver', claims: 'verified', proposer: { harness: 'null' }, solver: { harness: 'null' } },
        run: { model: 'm', client: model.client },
      }),
    ).rejects.toThrow(/claims.*compact/s);
  });

  it('declares a digit reply head only in the compact format, and a fixed probe set per length', () => {
    expect(proposerSolverTraining.replyVocabulary({ format: 'compact' })).toHaveLength(10);
    expect(proposerSolverTraining.replyVocabulary({ format: 'json' })).toBeUndefined();
    const probe = compactProbeSet();
    expect(probe).toHaveLength(3 * 8 * 16);
    expect(compactProbeSet()).toEqual(probe);
  });

  it('scores the probe set per length, per rule and overall from the policy’s greedy digit', async () => {
    // A policy that knows the largest-digit rule and answers 0 to everything else.
    const policy = {
      async replyProbabilities({ messages }: { messages: readonly { content: unknown }[] }) {
        const text = String(messages[0]?.content);
        const digits = text
          .replace(/^.* of /, '')
          .replace(' ?', '')
          .split(' ')
          .map(Number);
        const best = text.startsWith('largest digit') ? Math.max(...digits) : 0;
        return Array.from({ length: 10 }, (_, d) => (d === best ? 0.9 : 0.01));
      },
    };
    const evaluator = proposerSolverTraining.evaluator({ format: 'compact' });
    const { metrics } = (await evaluator?.evaluate({ policy })) ?? { metrics: {} };
    const probe = compactProbeSet();
    const share = (rule: string) => {
      const mine = probe.filter((p) => p.rule.name === rule);
      return mine.filter((p) => p.truth === 0).length / mine.length;
    };
    expect(metrics['probe/accuracy/largest']).toBe(1);
    expect(metrics['probe/accuracy/smallest']).toBeCloseTo(share('smallest'));
    expect(metrics['probe/accuracy/sum-mod-10']).toBeCloseTo(share('sum-mod-10'));
    expect(metrics['probe/accuracy/mean']).toBeCloseTo((1 + share('smallest') + share('sum-mod-10')) / 3);
    expect(Object.keys(metrics).filter((k) => /len\d$/.test(k))).toHaveLength(8);
    expect(proposerSolverTraining.evaluator({ format: 'json' })).toBeUndefined();
  });
});
