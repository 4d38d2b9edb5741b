// Test utilities: the scripted model server and conformance suites.
export {
  FAULT_KINDS,
  type FaultKind,
  FaultOptionsSchema,
  type FaultOptions,
  seededRandom,
  FaultPlan,
} from './fault-injection.ts';
// Intercepted rollouts.
export { startInterceptedRollout, type InterceptedRolloutOptions, type InterceptedRollout } from './intercepted-rollout.ts';
// Running node processes.
export { runNode, type NodeProcessResult } from './node-process.ts';
// Process liveness.
export { processAlive, hostPidsWith } from './process-alive.ts';
// A real run directory in a moment, and the hostile files a reader of one must refuse.
export {
  calculatorClient,
  calculatorEval,
  type CalculatorEvalOptions,
  insertHugeLine,
  plantHostileFile,
} from './calculator-run.ts';
// A small env for tests.
export { sayWordEnv } from './say-word-env.ts';
// Game seats played by a scripted model, and a run's episodes.
export { legalActionServer, runEpisodes } from './game-seats.ts';
// The scripted model server.
export {
  scriptedClient,
  type ScriptedReply,
  type ScriptContext,
  type ScriptFunction,
  type ScriptedModelServerOptions,
  type ScriptedRequestLog,
  ScriptedModelServer,
  type ScriptedClient,
} from './scripted-model-server.ts';
// Scripted tokens.
export {
  wordTokenId,
  messageBodyTokens,
  scriptedPromptTokens,
  scriptedCompletionTokens,
  scriptedLogprob,
  SCRIPTED_TOKENS,
} from './scripted-tokens.ts';
// The harness conformance suite.
export {
  callPrompt,
  runHarnessConformance,
  runRecordedHarnessConformance,
  type HarnessRigOptions,
  type HarnessRigRun,
  HarnessRig,
  type ConformanceCheck,
  type RecordedExec,
  RecordingSandbox,
  type RecordedExpectations,
} from './harness-conformance.ts';
