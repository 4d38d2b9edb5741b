import { describe, expect, it } from 'vitest';
import { KUHN_INFO_SETS, type KuhnPolicyTable, kuhnEquilibrium, kuhnNashConv, uniformKuhnPolicy } from './game.ts';
import { kuhnTablePlayer } from './table-client.ts';
import { kuhnEvaluator, kuhnPolicyTable } from './training.ts';

const uniform = uniformKuhnPolicy();
const equilibrium = kuhnEquilibrium(1 / 6);
const player = (table: KuhnPolicyTable) => kuhnTablePlayer(table, { name: 'table', seed: 1 });

describe('the Kuhn evaluator reads each seat from its own policy', () => {
  it("builds the joint table: player 0's information sets from player0's policy, player 1's from player1's", async () => {
    const joint = await kuhnPolicyTable({
      policy: {},
      prompts: 'rules',
      seats: [player(equilibrium), player(uniform)],
    });
    for (const key of KUHN_INFO_SETS) {
      // Player 1 acts after one action (Jp, Qb, …); player 0 at the root and after check-bet.
      const expected = key.length === 2 ? uniform[key] : equilibrium[key];
      expect(joint[key]).toEqual([...expected]);
    }
  });

  it('scores the joint strategy given roles, and the one policy for both seats without', async () => {
    const seats = { player0: player(uniform), player1: player(equilibrium) };
    const joint = Object.fromEntries(
      KUHN_INFO_SETS.map((key) => [key, key.length === 2 ? equilibrium[key] : uniform[key]]),
    ) as KuhnPolicyTable;
    const { metrics } = await kuhnEvaluator().evaluate({ policy: {}, step: 1, roles: seats });
    expect(metrics.nash_conv).toBeCloseTo(kuhnNashConv(joint), 12);
    // Neither seat's own table: half equilibrium, half uniform.
    expect(metrics.nash_conv).not.toBeCloseTo(kuhnNashConv(uniform), 3);
    expect(metrics.nash_conv).not.toBeCloseTo(0, 3);
    const alone = await kuhnEvaluator().evaluate({ policy: player(uniform), step: 1 });
    expect(alone.metrics.nash_conv).toBeCloseTo(kuhnNashConv(uniform), 12);
  });

  it('names the seat whose policy cannot report reply probabilities', async () => {
    await expect(kuhnEvaluator().evaluate({ policy: {}, step: 1, roles: { player0: player(uniform) } })).rejects.toThrow(
      /policy of player1 cannot report reply probabilities/,
    );
  });
});
