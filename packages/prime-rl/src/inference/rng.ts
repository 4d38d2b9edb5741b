/**
 * A seeded PRNG (mulberry32) whose whole state is one 32-bit integer, so it can be saved in a
 * checkpoint and restored exactly.
 */
export class Rng {
  private a: number;

  constructor(seed: number) {
    this.a = seed >>> 0;
  }

  /** A float in [0, 1). */
  next(): number {
    this.a = (this.a + 0x6d2b79f5) >>> 0;
    let t = this.a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  get state(): number {
    return this.a;
  }

  set state(value: number) {
    this.a = value >>> 0;
  }
}
