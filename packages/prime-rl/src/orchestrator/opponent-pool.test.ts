import type { ModelRequest, ModelResponse } from '@troupe/verifiers';
import { describe, expect, it } from 'vitest';
import { hashUniform, OpponentPool, OpponentPoolConfigSchema, withPoolDraws } from './opponent-pool.ts';
import type { EvaluationPolicy } from './types.ts';

/** A snapshot whose client answers with its own name. */
function snapshot(step: number): { step: number; policy: EvaluationPolicy } {
  const client = {
    model: `snap-${step}`,
    async complete(request: ModelRequest): Promise<ModelResponse> {
      return {
        id: 'x',
        model: request.model,
        message: { role: 'assistant', content: `from ${step}` },
        finishReason: 'stop',
        usage: { promptTokens: 0, completionTokens: 1 },
      };
    },
  };
  return { step, policy: { version: step, client } };
}

const request: ModelRequest = { model: 'pool', messages: [{ role: 'user', content: 'hi' }], sampling: {} };

describe('OpponentPool', () => {
  it('sends each call to the snapshot drawn for the episode in whose async context it runs', async () => {
    const pool = new OpponentPool({ name: 'pool:kuhn/player1', config: { of: 'main' } });
    const [a, b] = await Promise.all([
      withPoolDraws(new Map([[pool, snapshot(25)]]), async () => {
        await new Promise((resolve) => setTimeout(resolve, 5));
        return pool.complete(request);
      }),
      withPoolDraws(new Map([[pool, snapshot(50)]]), () => pool.complete(request)),
    ]);
    expect(a.message.content).toBe('from 25');
    expect(b.message.content).toBe('from 50');
    // The trace records which snapshot played.
    expect(a.model).toBe('pool:kuhn/player1@25');
    await expect(pool.complete(request)).rejects.toThrow(/outside an orchestrator rollout/);
  });

  it('draws uniformly, or with weight i + 1 for the i-th oldest under sample = "recent"', () => {
    const uniform = new OpponentPool({ name: 'u', config: { of: 'main', sample: 'uniform' } });
    const recent = new OpponentPool({ name: 'r', config: { of: 'main', sample: 'recent' } });
    expect([0, 0.24, 0.25, 0.99].map((u) => uniform.pick(4, u))).toEqual([0, 0, 1, 3]);
    // k = 3: weights 1, 2, 3 of 6 → [0, 1/6), [1/6, 1/2), [1/2, 1).
    expect([0, 0.16, 0.17, 0.49, 0.5, 0.999].map((u) => recent.pick(3, u))).toEqual([0, 0, 1, 1, 2, 2]);
    const counts = [0, 0, 0];
    for (let i = 0; i < 6000; i++) counts[recent.pick(3, hashUniform(['draw', i]))]! += 1;
    expect(counts[2]! / counts[0]!).toBeGreaterThan(2.4);
    expect(counts[2]! / counts[0]!).toBeLessThan(3.6);
  });

  it('defaults keep 8, every 25, uniform, and needs the name of the policy it snapshots', () => {
    expect(OpponentPoolConfigSchema.parse({ of: 'main' })).toEqual({ of: 'main', keep: 8, every: 25, sample: 'uniform' });
    expect(OpponentPoolConfigSchema.safeParse({ of: 'judge' }).success).toBe(true);
    expect(OpponentPoolConfigSchema.safeParse({ of: '' }).success).toBe(false);
    expect(OpponentPoolConfigSchema.safeParse({}).success).toBe(false);
    expect(hashUniform([0, 'draw', 1])).toBe(hashUniform([0, 'draw', 1]));
    expect(hashUniform([0, 'draw', 1])).not.toBe(hashUniform([0, 'draw', 2]));
  });
});
