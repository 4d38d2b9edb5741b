export * from './filesystem.ts';
export * from './micro-batch.ts';
export * from './prepare-batch.ts';
export * from './wire-sample.ts';
export * from './zmq.ts';
export * from './inference-admin.ts';
export * from './inference-pool.ts';
export * from './weight-relay.ts';
