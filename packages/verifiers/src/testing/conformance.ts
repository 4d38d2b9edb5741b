// @troupe/verifiers/conformance: the vitest suites a runtime plugin runs against its sandboxes.
// Needs vitest (an optional peer dependency); `@troupe/verifiers/testing` does not.

export * from './judge-conformance.ts';
export * from './sandbox-conformance.ts';
