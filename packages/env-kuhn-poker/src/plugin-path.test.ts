import { envIds, importEnv, loadEnvDefinition } from '@troupe/verifiers';
import { describe, expect, it } from 'vitest';
import * as pkg from './index.ts';
import { kuhnInfoSetMessages } from './prompts.ts';

describe('@troupe/env-kuhn-poker through the env plugin path', () => {
  it('is no built-in of the core: `kuhn-poker` resolves to this package by its name', async () => {
    expect(envIds()).not.toContain('kuhn-poker');
    const imported = await importEnv('kuhn-poker');
    expect(imported.where).toBe('@troupe/env-kuhn-poker');
    expect(imported.definition.id).toBe('kuhn-poker');
    expect(imported.module?.training).toBe(pkg.kuhnTraining);
    expect(imported.module?.opponents).toBe(pkg.kuhnOpponents);
    expect((await loadEnvDefinition('kuhn_poker')).id).toBe('kuhn-poker');
  });

  it('declares its training hooks and fixed opponents on the definition too (a registerEnv caller keeps them)', () => {
    const definition = pkg.default as typeof pkg.kuhnPokerEnv;
    expect(definition.training).toBe(pkg.kuhnTraining);
    expect(Object.keys(definition.opponents)).toEqual(['uniform', 'equilibrium']);
  });

  it('its fixed opponents play legal actions and report the table they sample from', async () => {
    const table = pkg.kuhnEquilibrium(1 / 6);
    const equilibrium = pkg.kuhnOpponents.equilibrium.create({ seed: 1 });
    const messages = kuhnInfoSetMessages('K', ['bet']);
    expect(await equilibrium.replyProbabilities({ messages, replies: ['[fold]', '[call]'] })).toEqual([...table.Kb]);
    for (let i = 0; i < 20; i++) {
      const reply = await equilibrium.client.complete({ model: 'equilibrium', messages, sampling: {} });
      expect(['[fold]', '[call]']).toContain(reply.message.content);
    }
    await expect(equilibrium.replyProbabilities({ messages: [{ role: 'user', content: 'hi' }], replies: [] })).rejects.toThrow(
      /not a Kuhn poker information set/,
    );
  });
});
