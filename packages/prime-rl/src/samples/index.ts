export * from './batch-builder.ts';
export * from './pack-micro-batches.ts';
export * from './trace-to-samples.ts';
export * from './training-sample.ts';
export * from './zero-advantage-filter.ts';
