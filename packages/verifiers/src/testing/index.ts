// Test utilities: the scripted model server and conformance suites.
export {};
export * from './sandbox-conformance.ts';
