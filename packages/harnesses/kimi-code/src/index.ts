export * from './kimi-code-harness.ts';
