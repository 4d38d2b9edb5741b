// The seeded PRNG the sampler and the opponent pools draw from is the core's one generator (a subpath that loads nothing else).
export { Rng } from '@troupe/verifiers/random';
