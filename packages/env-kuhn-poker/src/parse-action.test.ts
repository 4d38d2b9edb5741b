import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { KUHN_ACTIONS, type KuhnAction, kuhnLegalActions } from './game.ts';
import { kuhnParseAction } from './prompts.ts';

describe('the Kuhn action parser under random model replies', () => {
  const histories: KuhnAction[][] = [[], ['check'], ['bet'], ['check', 'bet']];

  it('kuhnParseAction returns a legal action or null for any reply, and never throws', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ maxLength: 400 }),
          fc
            .array(fc.oneof(fc.string(), fc.constantFrom(...KUHN_ACTIONS.map((a) => `[${a}]`), '[', ']', '[[bet]]', '[BET]')), {
              maxLength: 12,
            })
            .map((parts) => parts.join(' ')),
        ),
        fc.constantFrom(...histories),
        (reply, history) => {
          const action = kuhnParseAction(reply, history);
          if (action !== null) expect(kuhnLegalActions(history)).toContain(action);
        },
      ),
      { numRuns: 2000 },
    );
  });
});
