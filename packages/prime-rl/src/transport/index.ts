// Filesystem senders and readers.
export {
  rolloutStepDir,
  rolloutRankPath,
  broadcastStepDir,
  readRollouts,
  waitForFile,
  stableBroadcastSteps,
  FilesystemRolloutSender,
  type ReadRolloutsOptions,
} from './filesystem.ts';
// MicroBatch msgpack in prime-rl's field order.
export {
  encodeMicroBatches,
  decodeMicroBatches,
  type WireSample,
  type SampleProvenance,
  type WireMicroBatch,
  MICRO_BATCH_FIELDS,
  MsgpackWriter,
} from './micro-batch.ts';
// prime-rl's prepare_batch packing.
export {
  binCost,
  denseModelCostCoefficients,
  prepareBatch,
  planBatch,
  plannedSequenceLengths,
  balancedPartition,
  type BinCost,
  type PrepareBatchOptions,
  type PlannedMicroBatch,
} from './prepare-batch.ts';
// Samples on the wire.
export { toWireSample, traceToWireSamples, type TraceToWireSamplesOptions } from './wire-sample.ts';
// ZMQ senders and readers.
export { loadZmq, zmqTopic, type ZmqRolloutSenderOptions, ZmqRolloutSender, ZmqRolloutReceiver } from './zmq.ts';
// The inference server's admin routes.
export {
  adminRoot,
  isLive,
  AdminRetrySchema,
  type AdminRetry,
  AdminCallError,
  type InferenceAdminOptions,
  InferenceAdmin,
} from './inference-admin.ts';
// A least-outstanding vLLM pool.
export { type PolicySpan, type RecordedCall, type InferencePoolOptions, InferencePool, RolloutClient } from './inference-pool.ts';
// Weight updates.
export { type VersionedInference, type BroadcastWeightRelayOptions, BroadcastWeightRelay } from './weight-relay.ts';
// Transport config.
export {
  parseTransportConfig,
  TransportConfigSchema,
  type TransportConfig,
  InferenceEndpointsSchema,
  type InferenceEndpoints,
} from './config.ts';
// The link to a prime-rl trainer.
export { openExternalPolicy, type SentStep, RolloutLink, type ExternalPolicy } from './prime-rl-link.ts';
// Planned encoding.
export { encodePlannedMicroBatches, packAndEncode } from './encode-planned.ts';
// Loopback transport.
export {
  writeRunModel,
  readRunModel,
  clearRunDir,
  writeBroadcast,
  readBroadcast,
  pruneBroadcasts,
  unpackMicroBatches,
  type RunModel,
  RUN_MODEL_FILE,
  type UnpackedSample,
} from './loopback.ts';
// Sample export (troupe.batch JSONL).
export {
  sampleExportPath,
  serializeSampleExport,
  writeSampleExport,
  parseSampleExport,
  readSampleExport,
  SAMPLE_EXPORT_FORMAT,
  SAMPLE_EXPORT_VERSION,
  SampleExportHeaderSchema,
  type SampleExportHeader,
  ExportedSampleSchema,
  type ExportedSample,
  type SampleExport,
  type SerializeSampleExportOptions,
} from './sample-export.ts';
// Errors of a served model.
export { ServedModelError } from '../errors/served-model-error.ts';
// Resuming an external-engine run.
export { trainerCheckpointSteps, checkExternalResume, ResumeStepMismatchError } from './external-resume.ts';
