export * from './rlm-harness.ts';
