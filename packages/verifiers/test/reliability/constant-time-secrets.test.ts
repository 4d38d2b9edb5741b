import * as crypto from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';
import { RolloutSession } from '../../src/interception/rollout-session.ts';
import { Trace } from '../../src/trace/trace.ts';

vi.mock('node:crypto', async (importOriginal) => {
  const original = await importOriginal<typeof import('node:crypto')>();
  return { ...original, timingSafeEqual: vi.fn(original.timingSafeEqual) };
});

const session = () =>
  new RolloutSession({
    trace: new Trace({ task: { key: 't', hash: 'h', data: {} }, agent: { name: 'a', trainable: true } }),
    client: { complete: async () => Promise.reject(new Error('unused')) } as never,
    model: 'm',
  });

describe('rollout secrets', () => {
  it('are compared with crypto.timingSafeEqual on every same-length candidate', () => {
    const s = session();
    const spy = vi.mocked(crypto.timingSafeEqual);
    spy.mockClear();
    const wrong = `${s.secret.slice(0, -1)}${s.secret.endsWith('A') ? 'B' : 'A'}`;
    expect(s.matches(wrong)).toBe(false);
    expect(s.matches(s.secret)).toBe(true);
    expect(spy).toHaveBeenCalledTimes(2);
  });

  it('refuse prefixes and extensions of the secret without comparing byte by byte', () => {
    const s = session();
    expect(s.matches(s.secret.slice(0, 10))).toBe(false);
    expect(s.matches(`${s.secret}x`)).toBe(false);
    expect(s.matches('')).toBe(false);
  });

  it('carry 192 bits of randomness and differ between rollouts', () => {
    const secrets = new Set(Array.from({ length: 200 }, () => session().secret));
    expect(secrets.size).toBe(200);
    for (const secret of secrets) expect(Buffer.from(secret.replace(/^rs-/, ''), 'base64url')).toHaveLength(24);
  });
});
