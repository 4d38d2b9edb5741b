import fc from 'fast-check';
import { expect } from 'vitest';
import type { z } from 'zod';

/**
 * The property every quick body check must keep: over `runs` generated bodies, whatever `quick`
 * accepts `schema` accepts too (the quick path may decline more, never accept more). The quick
 * path must be taken often enough for the property to mean something.
 */
export function expectQuickCheckAgrees(
  bodies: fc.Arbitrary<unknown>,
  quick: (body: unknown) => boolean,
  schema: z.ZodType,
  runs = 5000,
): void {
  let accepted = 0;
  fc.assert(
    fc.property(bodies, (body) => {
      if (!quick(body)) return;
      accepted++;
      expect(schema.safeParse(body).success).toBe(true);
    }),
    { numRuns: runs },
  );
  expect(accepted).toBeGreaterThan(50);
}
