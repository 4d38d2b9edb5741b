// @troupe/prime-rl/inference: ONNX export of the policy and the onnxruntime engine (a ModelClient).
export { type BatchRequest, type MicroBatcherStats, MicroBatcher } from './micro-batcher.ts';
// ONNX export of a policy.
export { exportOnnx, ONNX_OPSET } from './onnx-export.ts';
// onnxruntime inference.
export { loadOnnxRuntime, type OnnxRuntimeChoice, ONNX_RUNTIMES, OnnxRuntimeError, OnnxPolicy } from './onnx-policy.ts';
// A ModelClient over the embedded policy.
export { type PolicyModelClientOptions, PolicyModelClient } from './policy-model-client.ts';
// Seeded sampling randomness.
export { Rng } from './rng.ts';
// Token sampling.
export { sampleToken } from './sampling.ts';
