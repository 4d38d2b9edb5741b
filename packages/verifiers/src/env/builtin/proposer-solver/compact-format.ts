import { ConfigError, ParseError } from '../../../errors/troupe-error.ts';
import type { Message } from '../../../model/messages.ts';
import { Task } from '../../../task/task.ts';
import { Taskset } from '../../../task/taskset.ts';
import { seededRandom } from '../../../util/random.ts';

/**
 * The compact problem format a tiny policy can learn: a topic is a rule over a short digit
 * sequence; the proposer writes the sequence (its length is the difficulty it chooses) and then
 * its claimed answer, one digit per token; each solver answers with one digit.
 */
export const COMPACT_RULES = [
  { name: 'largest', words: 'largest digit', apply: (d: readonly number[]) => Math.max(...d) },
  { name: 'smallest', words: 'smallest digit', apply: (d: readonly number[]) => Math.min(...d) },
  { name: 'sum-mod-10', words: 'sum mod ten', apply: (d: readonly number[]) => d.reduce((a, b) => a + b, 0) % 10 },
] as const;
export type CompactRule = (typeof COMPACT_RULES)[number];

/** The longest sequence a proposer can write (its reply is at most this + 1 tokens). */
export const COMPACT_MAX_LENGTH = 8;
/** The words a reply is made of. */
export const DIGIT_WORDS = ['0', '1', '2', '3', '4', '5', '6', '7', '8', '9'] as const;

/** A compact proposal: the digit sequence and the claimed answer. */
export interface CompactProposal {
  digits: number[];
  answer: number;
}

function ruleOf(name: string): CompactRule {
  const rule = COMPACT_RULES.find((r) => r.name === name);
  if (!rule) throw new ConfigError(`proposer-solver compact: unknown rule ${JSON.stringify(name)}`, { path: 'rule' });
  return rule;
}

/** The proposer's prompt for a rule. */
export function compactProposerPrompt(rule: CompactRule): string {
  return `propose ${rule.words}`;
}

/** A solver's prompt for a proposed sequence. */
export function compactSolverPrompt(rule: CompactRule, digits: readonly number[]): string {
  return `${rule.words} of ${digits.join(' ')} ?`;
}

/**
 * Parses a compact proposer reply: digit words only, at least two (a sequence of ≥ 1 digit,
 * then the answer), the sequence at most `COMPACT_MAX_LENGTH` long. Anything else is a ParseError.
 */
export function parseCompactProposal(reply: string): CompactProposal {
  const words = reply.trim().split(/\s+/).filter(Boolean);
  if (words.length < 2) throw new ParseError(`the compact proposal needs digits then an answer, got ${JSON.stringify(reply)}`);
  const numbers = digitWords(reply, words);
  const digits = numbers.slice(0, -1);
  if (digits.length > COMPACT_MAX_LENGTH)
    throw new ParseError(`the compact proposal is longer than ${COMPACT_MAX_LENGTH} digits`);
  return { digits, answer: numbers.at(-1) as number };
}

/**
 * Parses a compact proposer reply without a claim (`claims: 'executed'`): the sequence only, 1 to
 * `COMPACT_MAX_LENGTH` digit words; the answer is the rule executed on it. Anything else is a ParseError.
 */
export function parseCompactSequence(reply: string): number[] {
  const words = reply.trim().split(/\s+/).filter(Boolean);
  if (words.length < 1) throw new ParseError(`the compact proposal needs at least one digit, got ${JSON.stringify(reply)}`);
  const digits = digitWords(reply, words);
  if (digits.length > COMPACT_MAX_LENGTH)
    throw new ParseError(`the compact proposal is longer than ${COMPACT_MAX_LENGTH} digits`);
  return digits;
}

function digitWords(reply: string, words: readonly string[]): number[] {
  if (!words.every((w) => /^\d$/.test(w)))
    throw new ParseError(`the compact proposal must be single digits, got ${JSON.stringify(reply)}`);
  return words.map(Number);
}

/** The true answer of a rule on a sequence (the env uses it only for the `valid` metric and the probe). */
export function compactTruth(ruleName: string, digits: readonly number[]): number {
  return ruleOf(ruleName).apply(digits);
}

export interface CompactSeedData extends Record<string, unknown> {
  prompt: string;
  info: { rule: string };
}

/** `proposer-solver-compact`: one proposer task per rule. */
export function compactSeeds(): Taskset<CompactSeedData> {
  return Taskset.fromTasks(
    'proposer-solver-compact',
    COMPACT_RULES.map(
      (rule, idx) =>
        new Task<CompactSeedData>(
          { idx, name: rule.name, prompt: compactProposerPrompt(rule), info: { rule: rule.name } },
          { key: rule.name, type: 'compact-rule' },
        ),
    ),
  );
}

/** The rule of a seed task. */
export function compactRuleOf(task: Task): CompactRule {
  return ruleOf(String((task.data.info as { rule?: unknown } | undefined)?.rule));
}

/** The fixed probe set: `perLength` sequences per rule and length 1..COMPACT_MAX_LENGTH, seeded. */
export function compactProbeSet(perLength = 16): { rule: CompactRule; digits: number[]; truth: number }[] {
  const random = seededRandom(20261203);
  const out: { rule: CompactRule; digits: number[]; truth: number }[] = [];
  for (const rule of COMPACT_RULES) {
    for (let length = 1; length <= COMPACT_MAX_LENGTH; length++) {
      for (let k = 0; k < perLength; k++) {
        const digits = Array.from({ length }, () => Math.floor(random() * 10));
        out.push({ rule, digits, truth: rule.apply(digits) });
      }
    }
  }
  return out;
}

/** A policy the probe can read (the orchestrator's evaluation policy). */
export interface CompactReadablePolicy {
  replyProbabilities?(options: { messages: readonly Message[]; replies: readonly string[] }): Promise<number[]>;
}

/**
 * The compact format's training hooks: digits and rule words in the vocabulary, a digit reply
 * head, the longest conversation, and the probe evaluator — greedy accuracy of the policy the
 * solver role plays on the fixed probe set per difficulty (`probe/accuracy/len<k>`), per rule (`probe/accuracy/<rule>`), and the mean.
 */
export const proposerSolverTraining = {
  vocabulary: (options: { format?: string }) =>
    options.format === 'compact'
      ? [...DIGIT_WORDS, ...COMPACT_RULES.flatMap((r) => [compactProposerPrompt(r), compactSolverPrompt(r, [0])])]
      : [],
  replyVocabulary: (options: { format?: string }) => (options.format === 'compact' ? [...DIGIT_WORDS] : undefined),
  maxSequence({
    options,
    renderLength,
    maxTokens,
  }: {
    options: { format?: string };
    renderLength: (messages: readonly Message[]) => number;
    maxTokens: number;
  }): number | undefined {
    if (options.format !== 'compact') return undefined;
    const eight = Array.from({ length: COMPACT_MAX_LENGTH }, () => 0);
    return Math.max(
      ...COMPACT_RULES.map((r) => renderLength([{ role: 'user', content: compactProposerPrompt(r) }]) + maxTokens + 1),
      ...COMPACT_RULES.map((r) => renderLength([{ role: 'user', content: compactSolverPrompt(r, eight) }]) + 2),
    );
  },
  evaluator: (options: { format?: string }) =>
    options.format !== 'compact'
      ? undefined
      : {
          async evaluate({
            policy,
            roles,
          }: {
            policy: CompactReadablePolicy;
            roles?: Readonly<Record<string, CompactReadablePolicy>>;
          }) {
            // The probe asks the solver: the solver role's own policy when the run gives one.
            const solver = roles?.solver ?? policy;
            const read = solver.replyProbabilities;
            if (!read) return { metrics: {} };
            const probes = compactProbeSet();
            const right = new Map<number, number[]>();
            const byRule = new Map<string, number[]>();
            await Promise.all(
              probes.map(async (probe) => {
                const p = await read({
                  messages: [{ role: 'user', content: compactSolverPrompt(probe.rule, probe.digits) }],
                  replies: DIGIT_WORDS,
                });
                const best = p.indexOf(Math.max(...p));
                const list = right.get(probe.digits.length) ?? [];
                list.push(best === probe.truth ? 1 : 0);
                right.set(probe.digits.length, list);
                const rule = byRule.get(probe.rule.name) ?? [];
                rule.push(best === probe.truth ? 1 : 0);
                byRule.set(probe.rule.name, rule);
              }),
            );
            const metrics: Record<string, number> = {};
            for (const rule of COMPACT_RULES) {
              const list = byRule.get(rule.name) ?? [];
              metrics[`probe/accuracy/${rule.name}`] = list.reduce((a, b) => a + b, 0) / list.length;
            }
            let all = 0;
            let n = 0;
            for (const [length, list] of [...right].sort((a, b) => a[0] - b[0])) {
              metrics[`probe/accuracy/len${length}`] = list.reduce((a, b) => a + b, 0) / list.length;
              all += list.reduce((a, b) => a + b, 0);
              n += list.length;
            }
            metrics['probe/accuracy/mean'] = all / n;
            return { metrics };
          },
        },
};
