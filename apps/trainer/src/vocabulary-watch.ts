import type { StepMetrics } from '@troupe/prime-rl/orchestrator';
import type { Episode, Taskset } from '@troupe/verifiers';

/** Steps in a row whose every reward is 0 before the loud warning. */
export const ZERO_REWARD_STEPS = 10;

/** What to do about words the policy cannot emit, said where the user meets it. */
const VOCABULARY_HINT =
  'the embedded policy emits only words of its vocabulary (the env\'s training.vocabulary, [policy] vocabulary, the words of the first [policy] vocab_sample prompts): add the rewarded words to [policy] vocabulary = ["…"] (docs/training.md#the-vocabulary-trap-policy-vocabulary)';

/** The words of a task's declared answer (`data.answer`, a string, number or list of them). */
function answerWords(answer: unknown): string[] {
  if (typeof answer === 'string') return answer.split(/\s+/).filter(Boolean);
  if (typeof answer === 'number' || typeof answer === 'bigint') return [String(answer)];
  if (Array.isArray(answer)) return answer.flatMap(answerWords);
  return [];
}

/**
 * The start check of the vocabulary trap: per source whose tasks declare their answer
 * (`data.answer`), the answer words of its first `sample` tasks that the embedded policy can never
 * emit — unknown to its tokenizer (they were in no prompt, nor in `[policy] vocabulary`), or
 * outside a restricted reply head. One `VocabularyWarning:` line per such source (none when every
 * answer can be said); at most 12 words are listed.
 */
export function vocabularyWarnings(options: {
  sources: readonly { name: string; taskset: Taskset }[];
  /** The tokenizer's id of a word; `unknownId` for a word it does not know. */
  tokenId: (word: string) => number;
  unknownId: number;
  /** The reply head's token ids, when restricted (else every token can be emitted). */
  outputTokens?: readonly number[] | undefined;
  /** Tasks per source to read (the vocabulary's own sample). */
  sample: number;
}): string[] {
  const head = options.outputTokens ? new Set(options.outputTokens) : null;
  const lines: string[] = [];
  for (const { name, taskset } of options.sources) {
    const count = taskset.isInfinite ? options.sample : Math.min(options.sample, taskset.size);
    const missing = new Set<string>();
    let declared = 0;
    for (let i = 0; i < count; i++) {
      const words = answerWords((taskset.at(i).data as { answer?: unknown }).answer);
      if (words.length) declared++;
      for (const word of words) {
        const id = options.tokenId(word);
        if (id === options.unknownId || (head && !head.has(id))) missing.add(word);
      }
    }
    if (!missing.size) continue;
    const listed = [...missing].slice(0, 12).map((w) => JSON.stringify(w));
    const more = missing.size > listed.length ? `, … (${missing.size} in all)` : '';
    lines.push(
      `VocabularyWarning: source ${name}: ${missing.size} answer word(s) of its tasks (${declared} of ${count} declare data.answer) the policy can never emit: ${listed.join(', ')}${more}; reward stays 0 on those tasks — ${VOCABULARY_HINT}`,
    );
  }
  return lines;
}

/**
 * The loud warning of the vocabulary trap: after {@link ZERO_REWARD_STEPS} steps in a row whose
 * every trained role's reward was 0 (`reward/min` and `reward/max` both 0 in every source), one
 * banner through `log`; said once per run.
 */
export class ZeroRewardWatch {
  private zeroSteps = 0;
  private warned = false;
  /** Finished episodes since the last one with a reward other than 0. */
  private zeroEpisodes = 0;

  constructor(private readonly log: (line: string) => void) {}

  /** Notes a finished episode's rewards (every trace's). */
  observe(episode: Episode): void {
    if (!episode.ok) return;
    this.zeroEpisodes = episode.traces.some((trace) => trace.reward !== 0) ? 0 : this.zeroEpisodes + 1;
  }

  /**
   * Why a run whose batches were all empty (every advantage 0) stopped, when every reward was 0:
   * the warning's text with the number of episodes; null when some reward was not 0.
   */
  emptyBatchesCause(): string | null {
    return this.zeroEpisodes > 0 ? zeroRewardMessage(`the last ${this.zeroEpisodes} episodes`) : null;
  }

  /** After each step's metrics line. */
  onStep(metrics: StepMetrics): void {
    let roles = 0;
    let allZero = true;
    for (const [key, value] of Object.entries(metrics)) {
      const bound = /^train\/[^/]+\/[^/]+\/reward\/(min|max)$/.exec(key);
      if (!bound || typeof value !== 'number') continue;
      if (bound[1] === 'max') roles++;
      if (value !== 0) allZero = false;
    }
    this.zeroSteps = roles > 0 && allZero ? this.zeroSteps + 1 : 0;
    if (this.warned || this.zeroSteps < ZERO_REWARD_STEPS) return;
    this.warned = true;
    this.log(
      `\n${'!'.repeat(78)}\n${zeroRewardMessage(`${this.zeroSteps} steps in a row (through step ${metrics.step})`)}\n${'!'.repeat(78)}`,
    );
  }
}

/** The zero-reward warning's text: every reward was 0 over `span`; what that usually means and the fix. */
export function zeroRewardMessage(span: string): string {
  return `ZeroRewardWarning: every episode's reward was 0 for ${span}: there is nothing to learn from. If the rewarded answer is a word the policy cannot say, ${VOCABULARY_HINT}`;
}
