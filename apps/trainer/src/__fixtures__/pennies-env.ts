// A user's own two-seat game, not in the registry: matching pennies. Both seats say heads or
// tails; `matcher` wins 1 when the two agree, `mismatcher` when they differ (zero-sum). The
// module declares two fixed opponents, as a showcase env package does.
import { defineEnv, type ModelClient, type ModelRequest, type ModelResponse, Task, Taskset } from '@troupe/verifiers';

/** `pennies`: seats `matcher` and `mismatcher`; reward `payoff` ±1. */
export const penniesEnv = defineEnv({
  id: 'pennies',
  roles: { matcher: {}, mismatcher: {} },
  taskset: () => Taskset.generate('pennies', (i) => new Task({ idx: i, prompt: 'heads or tails' }, { key: `pennies-${i}` })),
  async run({ task, agents }) {
    const a = await agents.matcher.run(task);
    const b = await agents.mismatcher.run(task);
    const match = a.lastReply.trim() === b.lastReply.trim() ? 1 : -1;
    a.recordReward('payoff', match);
    b.recordReward('payoff', -match);
  },
});

/** A player that always says one word. */
class Always implements ModelClient {
  constructor(readonly model: string) {}
  async complete(_request: ModelRequest): Promise<ModelResponse> {
    return {
      id: this.model,
      model: this.model,
      message: { role: 'assistant', content: this.model },
      finishReason: 'stop',
      usage: { promptTokens: 0, completionTokens: 1 },
    };
  }
}

/** The embedded policy says heads or tails. */
export const training = { replyVocabulary: () => ['heads', 'tails'] };

/** Fixed opponents: `heads` and `tails`, each always saying its name. */
export const opponents = {
  heads: { create: () => ({ client: new Always('heads') }) },
  tails: { create: () => ({ client: new Always('tails') }) },
};
