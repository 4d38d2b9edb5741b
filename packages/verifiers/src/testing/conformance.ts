// @troupe/verifiers/conformance: the vitest suites a runtime plugin runs against its sandboxes.
// Needs vitest (an optional peer dependency); `@troupe/verifiers/testing` does not.

// The judge conformance suite.
export { describeJudgeConformance, type JudgeConformanceKit, type JudgeConformanceOptions } from './judge-conformance.ts';
// The sandbox conformance suite.
export { describeSandboxConformance, type SandboxConformanceOptions } from './sandbox-conformance.ts';
