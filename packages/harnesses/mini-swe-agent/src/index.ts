export * from './mini-swe-agent-harness.ts';
