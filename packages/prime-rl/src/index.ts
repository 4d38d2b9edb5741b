// @troupe/prime-rl: credit assignment (algorithms), training samples, batch formats and metrics.
// Loads neither tfjs nor onnxruntime: the embedded engines live under `@troupe/prime-rl/policy`,
// `/trainer` and `/inference`; the training loop under `/orchestrator`; the prime-rl wire under
// `/transport`.
export * from './algorithms/index.ts';
export * from './metrics/index.ts';
export * from './samples/index.ts';
