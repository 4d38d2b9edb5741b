// Test utilities: the scripted model server and conformance suites.
export * from './fault-injection.ts';
export * from './intercepted-rollout.ts';
export * from './node-process.ts';
export * from './process-alive.ts';
export * from './say-word-env.ts';
export * from './scripted-model-server.ts';
export * from './scripted-tokens.ts';
export * from './harness-conformance.ts';
