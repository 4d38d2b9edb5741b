// Batches of samples.
export { BatchBuilderConfigSchema, type BatchBuilderConfig, type TrainingBatch, BatchBuilder } from './batch-builder.ts';
// Packing micro batches.
export { packMicroBatches, type PackMicroBatchesOptions, type MicroBatch, type PackResult } from './pack-micro-batches.ts';
// Traces to training samples.
export {
  traceToSamples,
  appendTraceSamples,
  tokenChains,
  episodesToSamples,
  type TraceToSamplesOptions,
  type TraceSampleTally,
} from './trace-to-samples.ts';
// The training sample.
export { trainedTokenCount, TrainingSampleSchema, type TrainingSample } from './training-sample.ts';
// Dropping samples with no signal.
export { filterZeroAdvantages, type ZeroAdvantageFilterResult } from './zero-advantage-filter.ts';
