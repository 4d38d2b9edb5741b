import * as tf from '@tensorflow/tfjs';

// Internal to @troupe/prime-rl (not exported by the package).
const engine = tf.engine();

/** Runs one tfjs kernel by name on the active backend (`tf.engine().runKernel`). */
export function run<T extends tf.Tensor>(kernel: string, inputs: tf.NamedTensorMap, attrs: object = {}): T {
  return engine.runKernel(kernel, inputs, attrs as tf.NamedAttrMap) as T;
}
const asTensor = (x: tf.Tensor | number) => (typeof x === 'number' ? tf.scalar(x) : x);

/**
 * The tfjs kernels the trainer runs, called through the engine: tfjs's op wrappers (argument
 * conversion, checks and a named scope per call) cost 15–30 µs a call, several times the kernel
 * on a small tensor, and a training step runs ≈400 of them. The same kernels on the same inputs
 * give the same values; numbers become float32 scalars, as tfjs's ops make them.
 */
export const K = {
  add: <T extends tf.Tensor>(a: tf.Tensor, b: tf.Tensor | number) => run<T>('Add', { a, b: asTensor(b) }),
  sub: <T extends tf.Tensor>(a: tf.Tensor | number, b: tf.Tensor | number) => run<T>('Sub', { a: asTensor(a), b: asTensor(b) }),
  mul: <T extends tf.Tensor>(a: tf.Tensor, b: tf.Tensor | number) => run<T>('Multiply', { a, b: asTensor(b) }),
  div: <T extends tf.Tensor>(a: tf.Tensor | number, b: tf.Tensor | number) =>
    run<T>('RealDiv', { a: asTensor(a), b: asTensor(b) }),
  addN: <T extends tf.Tensor>(xs: T[]) => run<T>('AddN', xs as unknown as tf.NamedTensorMap),
  square: <T extends tf.Tensor>(x: T) => run<T>('Square', { x }),
  exp: <T extends tf.Tensor>(x: T) => run<T>('Exp', { x }),
  neg: <T extends tf.Tensor>(x: T) => run<T>('Neg', { x }),
  sqrt: <T extends tf.Tensor>(x: T) => run<T>('Sqrt', { x }),
  relu: <T extends tf.Tensor>(x: T) => run<T>('Relu', { x }),
  step: <T extends tf.Tensor>(x: T) => run<T>('Step', { x }, { alpha: 0 }),
  softmax: <T extends tf.Tensor>(logits: T) => run<T>('Softmax', { logits }, { dim: logits.rank - 1 }),
  mean: <T extends tf.Tensor>(x: tf.Tensor, axis: number, keepDims: boolean) => run<T>('Mean', { x }, { axis, keepDims }),
  sum: <T extends tf.Tensor>(x: tf.Tensor, axis: number, keepDims: boolean) => run<T>('Sum', { x }, { axis, keepDims }),
  reshape: <T extends tf.Tensor>(x: tf.Tensor, shape: number[]) => run<T>('Reshape', { x }, { shape }),
  transpose: <T extends tf.Tensor>(x: tf.Tensor, perm?: number[]) =>
    run<T>('Transpose', { x }, { perm: perm ?? x.shape.map((_, i) => x.rank - 1 - i) }),
  slice: <T extends tf.Tensor>(x: tf.Tensor, begin: number[], size: number[]) => run<T>('Slice', { x }, { begin, size }),
  concat: <T extends tf.Tensor>(xs: tf.Tensor[], axis = 0) =>
    xs.length === 1 ? (xs[0] as T) : run<T>('Concat', xs as unknown as tf.NamedTensorMap, { axis }),
  matMul: (a: tf.Tensor, b: tf.Tensor) => run<tf.Tensor2D>('BatchMatMul', { a, b }, { transposeA: false, transposeB: false }),
  gatherND: <T extends tf.Tensor>(params: tf.Tensor, indices: tf.Tensor) => run<T>('GatherNd', { params, indices }),
  scatterND: <T extends tf.Tensor>(indices: tf.Tensor, updates: tf.Tensor, shape: number[]) =>
    run<T>('ScatterNd', { indices, updates }, { shape }),
  pad: <T extends tf.Tensor>(x: tf.Tensor, paddings: [number, number][]) =>
    run<T>('PadV2', { x }, { paddings, constantValue: 0 }),
  minimum: <T extends tf.Tensor>(a: tf.Tensor | number, b: tf.Tensor | number) =>
    run<T>('Minimum', { a: asTensor(a), b: asTensor(b) }),
  depthwiseConv2d: (x: tf.Tensor4D, filter: tf.Tensor4D) =>
    run<tf.Tensor4D>('DepthwiseConv2dNative', { x, filter }, { strides: [1, 1], pad: 'valid', dilations: [1, 1] }),
};
