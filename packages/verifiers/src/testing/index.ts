// Test utilities: the scripted model server and conformance suites.
export * from './fault-injection.ts';
export * from './intercepted-rollout.ts';
export * from './process-alive.ts';
export * from './scripted-model-server.ts';
export * from './scripted-tokens.ts';
export * from './harness-conformance.ts';
