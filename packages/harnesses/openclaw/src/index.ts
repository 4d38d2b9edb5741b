export * from './openclaw-harness.ts';
