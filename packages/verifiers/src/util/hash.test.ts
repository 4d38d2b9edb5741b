import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from './hash.ts';

/** The definition canonicalJson must keep: JSON.stringify over a copy with sorted keys and no null / undefined values. */
function reference(value: unknown): string {
  const sortKeys = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(sortKeys);
    if (v && typeof v === 'object') {
      const out: Record<string, unknown> = {};
      for (const key of Object.keys(v).sort()) {
        const x = (v as Record<string, unknown>)[key];
        if (x !== null && x !== undefined) out[key] = sortKeys(x);
      }
      return out;
    }
    return v;
  };
  return JSON.stringify(sortKeys(value));
}

describe('canonicalJson (hashed for task keys and message keys: its text must never change)', () => {
  it('writes what JSON.stringify writes over the sorted copy, for any JSON-like value', () => {
    const key = fc.oneof(
      fc.string(),
      fc.constantFrom('0', '2', '10', '01', '-1', '1.5', '4294967294', '4294967295', 'toString', '__proto__'),
    );
    const leaf = fc.oneof(
      fc.constant(null),
      fc.constant(undefined),
      fc.boolean(),
      fc.double(),
      fc.integer(),
      fc.string(),
      fc.constant(() => 1),
      fc.date({ noInvalidDate: true }),
    );
    const value = fc.letrec((tie) => ({
      node: fc.oneof({ depthSize: 'small' }, leaf, tie('array'), tie('object')),
      array: fc.array(tie('node'), { maxLength: 5 }),
      object: fc.dictionary(key, tie('node'), { maxKeys: 20 }),
    })).node;
    fc.assert(
      fc.property(value, (v) => canonicalJson(v) === reference(v)),
      { numRuns: 2000 },
    );
  });

  it('matches on the shapes hashed in the loop (a seat task, a message) and on key orders V8 reorders', () => {
    for (const v of [
      { idx: 3, prompt: null, info: { seed: 3 }, systemPrompt: 'You hold K.' },
      { r: 'user', c: [{ type: 'text', text: ' hi ' }] },
      { b: 1, a: 2, 10: 'x', 2: 'y', '02': 'z' },
      Array.from({ length: 40 }, (_, i) => ({ [`k${40 - i}`]: i, [i]: i })),
      Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`k${(i * 7) % 40}`, i])),
    ])
      expect(canonicalJson(v)).toBe(reference(v));
    expect(canonicalJson(undefined)).toBe(JSON.stringify(undefined));
    expect(() => canonicalJson({ n: 1n })).toThrow(TypeError);
  });
});
