export * from './errors/index.ts';
export * from './harness/harness.ts';
export * from './interception/rollout-session.ts';
export * from './model/messages.ts';
export * from './model/model-client.ts';
export * from './runtime/runtime.ts';
export * from './task/index.ts';
export * from './trace/index.ts';
export * from './util/hash.ts';
export * from './util/config-keys.ts';
export * from './runtime/creation-limiter.ts';
export * from './runtime/local-paths.ts';
export * from './runtime/local-runtime.ts';
export * from './runtime/process-group.ts';
export * from './runtime/runtime-options.ts';
export * from './runtime/sandbox-env.ts';
export * from './interception/interception-server.ts';
export { type CallerProcessFinder, registerRelayedCaller } from './interception/caller-process.ts';
export * from './interception/dialects/index.ts';
export * from './model/openai-client.ts';
export * from './model/retry.ts';
export * from './agent/agent.ts';
export * from './agent/agent-config.ts';
export * from './agent/plugins.ts';
export {
  asyncDisposeSymbol,
  type MadeAgent,
  type MakeAgentConfig,
  MakeAgentConfigSchema,
  makeAgent,
  type TaskInput,
} from './agent/make-agent.ts';
export {
  type ChatMessage,
  EXPORT_FORMATS,
  type ExportFormat,
  type ExportMetadata,
  type ExportOptions,
  exportRecords,
  metadataOf,
  toChatMessages,
  toMessagesRecord,
  traceTokens,
} from './export/export-records.ts';
export { FilterSyntaxError, type FilterFields, filterFields, parseFilter } from './export/export-filter.ts';
export { mergeRuns } from './eval/merge-runs.ts';
export { inShard, parseShard, readShardManifest, type Shard, type ShardManifest } from './eval/shard.ts';
export * from './env/env.ts';
export * from './env/builtin/best-of-n/best-of-n-env.ts';
export * from './env/registry.ts';
export * from './env/builtin/single-agent/single-agent-env.ts';
export * from './eval/eval-runner.ts';
export * from './eval/summary.ts';
export * from './eval/traces-file.ts';
export * from './eval/pricing.ts';
export * from './eval/replay.ts';
export * from './judges/index.ts';
export * from './env/reward-modules.ts';
export * from './harness/bash-harness.ts';
export * from './harness/null-harness.ts';
export * from './harness/tool-loop.ts';
export * from './task/arithmetic.ts';
export * from './util/random.ts';
export * from './util/timeout.ts';
export * from './env/builtin/kuhn-poker/index.ts';
export * from './env/builtin/agentic-judge/agentic-judge-env.ts';
export * from './env/builtin/agentic-judge/rubric.ts';
export * from './env/builtin/agentic-judge/judge-prompt.ts';
export * from './env/builtin/isolated-verifier/isolated-verifier-env.ts';
export * from './env/builtin/proposer-solver/proposer-solver-env.ts';
export * from './env/builtin/proposer-solver/proposal-parser.ts';
export * from './env/builtin/proposer-solver/seed-topics.ts';
export * from './env/builtin/user-sim/user-sim-env.ts';
export * from './env/builtin/user-sim/persona.ts';
export * from './runtime/sandbox-file-tree.ts';
export * from './runtime/exec-pid-wrapper.ts';
export * from './runtime/remote-sandbox.ts';
export * from './runtime/remote-runtime.ts';
export {
  findRuns,
  loadViewerRun,
  type RenderCompareHtmlOptions,
  type RenderRunHtmlOptions,
  type RunListEntry,
  renderCompareHtml,
  renderRunHtml,
  type ServedRun,
  type ServeRunFolderOptions,
  type ServeRunOptions,
  serveRun,
  serveRunFolder,
  type ViewerRun,
  type WriteCompareReportOptions,
  type WriteHtmlReportOptions,
  writeCompareReport,
  writeHtmlReport,
} from './viewer/index.ts';
/** MCP tools: zod tools served to MCP-capable harnesses (issue 17 item 2). */
export { connectMcpServers, type McpConnection, type McpLoopTool, mcpResultText } from './tools/mcp-client.ts';
export {
  assertHarnessSupportsTools,
  assertRunToolsServable,
  defineTool,
  type ServedTools,
  serveTaskTools,
  serveToolsHttp,
  type ToolCallRecord,
  type ToolDefinition,
} from './tools/mcp-server.ts';
export {
  assertHarnessSupportsMcpServers,
  type McpServerSpec,
  McpServerSpecSchema,
  type McpServers,
  McpServersSchema,
  mcpToolName,
  mergeMcpServers,
} from './tools/mcp-servers.ts';
