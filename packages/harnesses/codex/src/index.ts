export * from './codex-harness.ts';
