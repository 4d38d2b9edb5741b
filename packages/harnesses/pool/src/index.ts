export * from './pool-harness.ts';
