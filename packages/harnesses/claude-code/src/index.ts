export * from './claude-code-harness.ts';
