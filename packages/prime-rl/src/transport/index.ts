export * from './filesystem.ts';
export * from './micro-batch.ts';
export * from './prepare-batch.ts';
export * from './wire-sample.ts';
export * from './zmq.ts';
