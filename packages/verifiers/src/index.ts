// The public names of @troupe/verifiers, by area. Every name here is a reviewed promise:
// tooling/exports-snapshot.json lists them and CI fails on a change it does not carry (see
// CONTRIBUTING.md). Helpers shared by troupe's own packages live in `@troupe/verifiers/internal`.

// Errors: every error troupe throws is a `TroupeError` subclass; `TroupeError.isInstance` works across package copies.
// The error model and its kinds: src/errors/index.ts and docs/errors.md.
export {
  TroupeError,
  type TroupeErrorType,
  ConfigError,
  type ConfigIssue,
  ProviderError,
  SandboxError,
  HarnessError,
  EnvError,
  LimitError,
  RolloutConcludedError,
  ParseError,
  RewardError,
  TimeoutError,
  InterceptionError,
  WireError,
  TrainerError,
  EngineError,
} from './errors/troupe-error.ts';
export { MalformedReplyError } from './errors/malformed-reply-error.ts';
export { WireRequestError } from './errors/wire-request-error.ts';

// Messages and model clients: the neutral chat shape, the client interface and the OpenAI-compatible client.
export { type AssistantMessage, type Message, type ToolCall, contentText } from './model/messages.ts';
export type { ModelClient, ModelRequest, ModelResponse, ModelCallOptions, Sampling, Usage } from './model/model-client.ts';
export { OpenAICompatibleClient, type OpenAICompatibleClientOptions } from './model/openai-client.ts';
export type { RetryOptions } from './model/retry.ts';

// Tasks and tasksets: what an agent is asked to do, and how its reply is scored.
export {
  Task,
  type TaskData,
  type TaskContext,
  type TaskOptions,
  type RewardFunction,
  type MetricFunction,
} from './task/task.ts';
export { Taskset } from './task/taskset.ts';
export { selectTasks, TaskSelectionSchema, type TaskSelection } from './task/select.ts';
export { arithmeticTaskset } from './task/arithmetic.ts';

// Traces and episodes: what a run records, one trace per agent run, one episode per task attempt.
export { Trace } from './trace/trace.ts';
export type { TraceRecord, TraceError, MessageNode, ModelCall, Reward, StopCondition } from './trace/trace-schema.ts';
export { Episode, type EpisodeRecord } from './trace/episode.ts';
export { readEpisodes, EpisodeWriter } from './eval/traces-file.ts';

// Agents: one agent, configured in code (`makeAgent`) or from a config file.
export { makeAgent, type MakeAgentConfig, type MadeAgent, type TaskInput } from './agent/make-agent.ts';
export { Agent, type AgentOptions, type Interaction, type RunOptions } from './agent/agent.ts';
export type { AgentConfig } from './agent/agent-config.ts';

// Envs: defining an env, and finding one by id or module path.
export {
  defineEnv,
  Env,
  type EnvDefinition,
  type EnvRunContext,
  type Agents,
  EpisodeAgent,
  type CreateEnvOptions,
} from './env/env.ts';
export { registerEnv, registerTaskset, envIds, importEnv, loadEnvDefinition, loadTaskset } from './env/registry.ts';

// Built-in envs.
export { singleAgentEnv } from './env/builtin/single-agent/single-agent-env.ts';
export { bestOfNEnv } from './env/builtin/best-of-n/best-of-n-env.ts';
export { agenticJudgeEnv, sharedAgenticJudgeEnv } from './env/builtin/agentic-judge/agentic-judge-env.ts';
export { createIsolatedVerifierEnv, isolatedVerifierEnv } from './env/builtin/isolated-verifier/isolated-verifier-env.ts';
export { proposerSolverEnv } from './env/builtin/proposer-solver/proposer-solver-env.ts';
export { userSimEnv } from './env/builtin/user-sim/user-sim-env.ts';

// Judges: model-graded rewards.
export { referenceJudge, type ReferenceJudgeOptions } from './judges/reference-judge.ts';
export { rubricJudge, type RubricJudgeOptions, type RubricCriterion } from './judges/rubric-judge.ts';
export type { JudgeModel } from './judges/judge-call.ts';

// Tools and MCP servers given to agents.
export { defineTool, type ToolDefinition, serveToolsHttp, type ServedTools, type ToolCallRecord } from './tools/mcp-server.ts';
export { type McpServers, McpServersSchema, type McpServerSpec, mergeMcpServers } from './tools/mcp-servers.ts';

// Harnesses: the agent programs a rollout runs, and the interception server between them and the model.
export {
  type Harness,
  type HarnessCapabilities,
  type HarnessLaunchContext,
  type HarnessResult,
  type HarnessSession,
  type Dialect,
  type ModelEndpoint,
  defaultCapabilities,
} from './harness/harness.ts';
export { BashHarness } from './harness/bash-harness.ts';
export { NullHarness } from './harness/null-harness.ts';
export { InterceptionServer } from './interception/interception-server.ts';

// Runtimes: where a rollout's sandbox lives.
export {
  type Runtime,
  type Sandbox,
  type SandboxOptions,
  SandboxOptionsSchema,
  type ExecOptions,
  type ExecResult,
  type RuntimeCapabilities,
} from './runtime/runtime.ts';
export { preflightRuntimes } from './runtime/preflight.ts';
export { LocalRuntime } from './runtime/local-runtime.ts';
export { parseRuntimeOptions } from './runtime/runtime-options.ts';
export { RemoteRuntime } from './runtime/remote-runtime.ts';
export { RemoteSandbox } from './runtime/remote-sandbox.ts';

// Plugins: harnesses, runtimes and envs found by package name.
export {
  registerHarness,
  registerRuntime,
  loadHarness,
  loadRuntime,
  type PluginContext,
  setPluginSearchPaths,
  setPluginEnvironment,
} from './agent/plugins.ts';

// Evaluation runs: running a taskset, summarizing, merging shards, replaying judges.
export { runEval, type RunEvalOptions, type EvalResult, type EvalProgress } from './eval/eval-runner.ts';
export { type EvalSummary, type RoleSummary, summarize, formatSummary, passAtK } from './eval/summary.ts';
export { mergeRuns } from './eval/merge-runs.ts';
export { replayRun } from './eval/replay.ts';

// Exporting traces as training data (the shapes Hugging Face TRL reads).
export {
  exportRecords,
  type ExportFormat,
  type ExportOptions,
  EXPORT_FORMATS,
  type ChatMessage,
  toMessagesRecord,
} from './export/export-records.ts';
export { parseFilter, type FilterFields, FilterSyntaxError } from './export/export-filter.ts';
