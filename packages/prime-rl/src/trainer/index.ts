// @troupe/prime-rl/trainer: loss, optimizer, checkpoints and the worker-thread trainer (tfjs).
export * from './checkpoint.ts';
export * from './config.ts';
export * from './handle.ts';
export * from './trainer.ts';
