import { describe, expect, it } from 'vitest';
import { randomUuid } from './uuid.ts';

describe('randomUuid', () => {
  it('gives version-4 UUIDs in randomUUID form, distinct across pool refills', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 2000; i++) {
      const id = randomUuid();
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      seen.add(id);
    }
    expect(seen.size).toBe(2000);
  });

  it('varies every hex digit but the version nibble (no digit stuck across ids)', () => {
    const ids = Array.from({ length: 400 }, () => randomUuid());
    for (let p = 0; p < 36; p++) {
      if ([8, 13, 14, 18, 23].includes(p)) continue;
      expect(new Set(ids.map((id) => id[p])).size).toBeGreaterThan(p === 19 ? 3 : 8);
    }
  });
});
