// Single-call judges usable as reward functions.
export * from './judge-call.ts';
export * from './reference-judge.ts';
export * from './rubric-judge.ts';
