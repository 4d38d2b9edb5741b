import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Env } from '../../env/env.ts';
import type { ModelRequest } from '../../model/model-client.ts';
import { type ScriptedClient, scriptedClient } from '../../testing/scripted-model-server.ts';
import { compactProbeSet, compactTruth, parseCompactProposal, proposerSolverTraining } from './compact-format.ts';
import { proposerSolverEnv } from './proposer-solver-env.ts';

let model: ScriptedClient;
let solverReplies: string[] = [];
let calls = 0;
const textOf = (request: ModelRequest) =>
  request.messages.map((m) => (typeof m.content === 'string' ? m.content : '')).join('\n');

beforeAll(async () => {
  model = await scriptedClient({
    script: (request) =>
      textOf(request).startsWith('propose') ? '3 9 1 9' : (solverReplies[calls++ % solverReplies.length] ?? ''),
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

  it('declares a digit reply head only in the compact format, and a fixed probe set per length', () => {
    expect(proposerSolverTraining.replyVocabulary({ format: 'compact' })).toHaveLength(10);
    expect(proposerSolverTraining.replyVocabulary({ format: 'json' })).toBeUndefined();
    const probe = compactProbeSet();
    expect(probe).toHaveLength(3 * 8 * 16);
    expect(compactProbeSet()).toEqual(probe);
  });
});
