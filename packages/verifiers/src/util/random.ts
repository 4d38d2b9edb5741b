/**
 * A seeded PRNG (mulberry32) whose whole state is one 32-bit integer, so a checkpoint can save and
 * restore it exactly. troupe's one seeded generator: tasksets, games, fault plans, weight
 * initialisation and token sampling all draw from it, so a seed means the same thing everywhere.
 */
export class Rng {
  private a: number;

  constructor(seed: number) {
    this.a = seed >>> 0;
  }

  /** The next unsigned 32-bit integer. */
  nextUint32(): number {
    this.a = (this.a + 0x6d2b79f5) >>> 0;
    let t = this.a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  }

  /** A float in [0, 1). */
  next(): number {
    return this.nextUint32() / 4294967296;
  }

  /** The generator's whole state (an unsigned 32-bit integer), to save in a checkpoint. */
  get state(): number {
    return this.a;
  }

  /** Restores a state read from {@link Rng.state}. */
  set state(value: number) {
    this.a = value >>> 0;
  }
}

/** A function drawing floats in [0, 1) from an {@link Rng} seeded with `seed`; `seed` fixes the sequence. */
export function seededRandom(seed: number): () => number {
  const rng = new Rng(seed);
  return () => rng.next();
}
