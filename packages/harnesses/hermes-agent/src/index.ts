export * from './hermes-agent-harness.ts';
