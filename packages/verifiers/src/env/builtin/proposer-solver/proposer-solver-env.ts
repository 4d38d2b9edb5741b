import { z } from 'zod';
import { EnvError } from '../../../errors/troupe-error.ts';
import { lastInteger } from '../../../task/arithmetic.ts';
import { Task } from '../../../task/task.ts';
import type { Trace } from '../../../trace/trace.ts';
import { defineEnv } from '../../env.ts';
import {
  compactRuleOf,
  compactSeeds,
  compactSolverPrompt,
  compactTruth,
  parseCompactProposal,
  parseCompactSequence,
  proposerSolverTraining,
} from './compact-format.ts';
import { type Proposal, parseProposal } from './proposal-parser.ts';
import { proposerSolverSeeds } from './seed-topics.ts';

/** Options of `proposer-solver` (keys of `[env]`). */
export const ProposerSolverOptionsSchema = z
  .object({
    /** Solvers per proposed problem (they run concurrently). */
    n: z.number().int().positive().default(4),
    /** Whether the proposer's traces train. */
    trainProposer: z.boolean().default(true),
    /** Whether the solvers' traces train. */
    trainSolver: z.boolean().default(true),
    /**
     * `json` (default): the seed's LLM format (a word problem and `{"problem", "answer"}`).
     * `compact`: a rule over a digit sequence the proposer writes, then its claimed answer, one
     * digit per token; solvers reply with one digit (for tiny trained policies).
     */
    format: z.enum(['json', 'compact']).default('json'),
    /**
     * `trusted` (default, the issue's literal rules): solvers are right when they match the
     * proposer's claimed answer, whatever the truth; the env computes the truth only for the
     * proposer's `valid` metric. `verified` (compact format only): the env executes the rule on the
     * proposed sequence, as the seed's proposer verifies its answer by running its code; a claim
     * that disagrees makes the problem invalid — `valid` 0, learnability 0, no solver runs (so no
     * solver trains on it) — recorded as metrics, not as an error. `executed` (compact only): the
     * proposer writes the sequence alone and the answer is the rule executed on it — what a
     * proposer that verifies end to end before emitting would claim — so every problem is valid.
     */
    claims: z.enum(['trusted', 'verified', 'executed']).default('trusted'),
  })
  .strict()
  .superRefine((options, context) => {
    if (options.claims !== 'trusted' && options.format !== 'compact') {
      context.addIssue({
        code: 'custom',
        path: ['claims'],
        message: `claims = '${options.claims}' needs format = 'compact': the env can execute a compact rule, not a word problem (the json proposer verifies its own answer with code)`,
      });
    }
  });
/** The options of `proposer-solver` after parsing and cross-field checks; see {@link ProposerSolverOptionsSchema}. */
export type ProposerSolverOptions = z.output<typeof ProposerSolverOptionsSchema>;

/** Appended to the proposed problem for each solver. */
export const SOLVE_SUFFIX = 'End your reply with just the final integer.';

/**
 * The data of a solver's task (made by {@link solveTask}): the proposed problem as the prompt, and
 * its integer answer.
 */
export interface SolveTaskData extends Record<string, unknown> {
  prompt: string;
  answer: number;
}

/** The task each solver gets: the problem, reward `correct` = the last integer of the reply equals the answer. */
export function solveTask(options: { proposal: Proposal; from: Task; proposerTrace: string }): Task<SolveTaskData> {
  const { proposal, from } = options;
  return new Task<SolveTaskData>(
    {
      name: `solve:${from.key}`,
      prompt: `${proposal.problem}\n\n${SOLVE_SUFFIX}`,
      answer: proposal.answer,
      info: { ...(from.data.info ?? {}), proposerTrace: options.proposerTrace },
    },
    {
      key: `solve:${from.key}`,
      type: 'solve',
      rewards: [{ name: 'correct', fn: ({ task, trace }) => (lastInteger(trace.lastReply) === task.data.answer ? 1 : 0) }],
    },
  );
}

function executedProposal(rule: string, digits: number[]) {
  return { digits, answer: compactTruth(rule, digits) };
}

function failure(trace: Trace): string {
  const error = trace.errors.at(-1);
  return error ? `${error.type}: ${error.message}` : 'not ok';
}

/**
 * `proposer-solver`: a proposer invents a problem with an integer answer from a seed topic (and
 * verifies it with code); `n` solvers attempt it concurrently. Solvers earn `correct`; the
 * proposer earns `learnability` = 4p(1−p) with p = `solve_rate`, peaking when half solve it.
 * With `claims: 'verified'` (compact format) a claimed answer the rule does not give is an
 * invalid problem: learnability 0 and no solver runs.
 */
export const proposerSolverEnv = Object.assign(
  defineEnv({
    id: 'proposer-solver',
    description: 'A proposer invents an integer-answer problem; n solvers attempt it; learnability = 4p(1-p).',
    roles: { proposer: {}, solver: {} },
    options: ProposerSolverOptionsSchema as unknown as z.ZodType<ProposerSolverOptions>,
    // The proposer runs alone, then all n solvers at once.
    maxConcurrentAgents: null,
    taskset: (options) => (options.format === 'compact' ? compactSeeds() : proposerSolverSeeds()),
    setup({ agents, options }) {
      agents.proposer.trainable = options.trainProposer;
      agents.solver.trainable = options.trainSolver;
    },
    async run({ task, agents, options, signal }) {
      if (options.format === 'compact') {
        const rule = compactRuleOf(task);
        const proposed = await agents.proposer.run(task, { signal });
        if (!proposed.ok) throw new EnvError(`the proposer failed (${failure(proposed)}), so no problem was posed`);
        const proposal =
          options.claims === 'executed'
            ? executedProposal(rule.name, parseCompactSequence(proposed.lastReply))
            : parseCompactProposal(proposed.lastReply);
        proposed.info.proposal = proposal;
        proposed.recordMetric('difficulty', proposal.digits.length);
        const valid = compactTruth(rule.name, proposal.digits) === proposal.answer;
        proposed.recordMetric('valid', valid ? 1 : 0);
        // A verified claim that is wrong is a broken problem: it is not posed (see finalize).
        if (options.claims === 'verified' && !valid) return;
        const solving = new Task<SolveTaskData>(
          {
            name: `solve:${task.key}`,
            prompt: compactSolverPrompt(rule, proposal.digits),
            answer: proposal.answer,
            info: { rule: rule.name, proposerTrace: proposed.id },
          },
          {
            key: `solve:${task.key}`,
            type: 'solve',
            rewards: [
              { name: 'correct', fn: ({ task: t, trace }) => (trace.lastReply.trim() === String(t.data.answer) ? 1 : 0) },
            ],
          },
        );
        await Promise.all(Array.from({ length: options.n }, () => agents.solver.run(solving, { signal })));
        return;
      }
      const proposing = task.with(
        {},
        {
          finalize: async (context) => {
            await task.finalize?.(context);
            context.trace.info.proposal = parseProposal(context.trace.lastReply);
          },
        },
      );
      const proposed = await agents.proposer.run(proposing, { signal });
      if (!proposed.ok) throw new EnvError(`the proposer failed (${failure(proposed)}), so no problem was posed`);
      const proposal = proposed.info.proposal as Proposal;
      const solving = solveTask({ proposal, from: task, proposerTrace: proposed.id });
      await Promise.all(Array.from({ length: options.n }, () => agents.solver.run(solving, { signal })));
    },
    finalize({ episode, options }) {
      const proposer = episode.traces.find((t) => t.agent.name === 'proposer');
      if (!proposer) return;
      if (options.claims === 'verified' && proposer.metrics.valid === 0) {
        // The verification failed: learnability 0; the solve rate of an unposed problem is unknown.
        proposer.recordMetric('solve_rate', null);
        proposer.recordReward('learnability', 0);
        return;
      }
      const solvers = episode.traces.filter((t) => t.agent.name === 'solver');
      const scores = solvers.map((t) => t.rewards.correct?.score);
      if (solvers.length === 0 || solvers.some((t) => !t.ok) || scores.some((s) => s === undefined)) {
        // A solver failed: the solve rate is unknown, not 0.
        proposer.recordMetric('solve_rate', null);
        proposer.rewards.learnability = null;
        return;
      }
      const rate = (scores as number[]).reduce((a, b) => a + b, 0) / scores.length;
      proposer.recordMetric('solve_rate', rate);
      proposer.recordReward('learnability', 4 * rate * (1 - rate));
    },
  }),
  { training: proposerSolverTraining },
);
