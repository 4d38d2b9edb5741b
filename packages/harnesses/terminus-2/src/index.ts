export * from './terminus-2-harness.ts';
