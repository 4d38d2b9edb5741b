// @troupe/prime-rl/inference: ONNX export of the policy and the onnxruntime engine (a ModelClient).
export * from './micro-batcher.ts';
export * from './onnx-export.ts';
export * from './onnx-policy.ts';
export * from './policy-model-client.ts';
export * from './rng.ts';
export * from './sampling.ts';
