// @troupe/prime-rl/policy: the tokenizer and the small decoder-only transformer (tfjs).
export * from './backend.ts';
export * from './config.ts';
export * from './model.ts';
export * from './tokenizer.ts';
