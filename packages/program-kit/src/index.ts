// The agentic-judge scenario harnesses are checked against.
export {
  judgeVerdictCommand,
  agenticJudgeScript,
  runAgenticJudgeEpisode,
  thiefScript,
  thiefJudgeScript,
  runThiefJudgeEpisode,
  type JudgeTool,
} from './agentic-judge-scenario.ts';
// CLI program harnesses.
export {
  withoutV1,
  withV1,
  type HarnessInfo,
  type PlannedFile,
  type LaunchPlan,
  type PlanContext,
  TIMEOUT_EXIT_CODE,
  WITH_PATH_SCRIPT,
  CliHarness,
} from './cli-harness.ts';
// Harness options.
export { parseHarnessOptions, CliHarnessOptionsSchema, type CliHarnessOptions } from './harness-options.ts';
// Installing programs on the host.
export { defaultHarnessCacheDir, installNpmPackages, type HostInstall } from './host-install.ts';
// Install scripts.
export { runInstallScript } from './install-script.ts';
// npm-installed programs.
export { provisionNpmProgram, NODE_24, type NpmProgram, type ProvisionedProgram, SANDBOX_INSTALL_ROOT } from './npm-program.ts';
// defineProgramHarness.
export {
  installScript,
  npmPackage,
  defineProgramHarness,
  SANDBOX_TOOL_ROOT,
  RECORDED_ONLY_VERIFICATION,
  REAL_CLI_VERIFICATION,
  type InstallRequest,
  type ProgramInstaller,
  type ProgramHarnessOptions,
  type ProgramLaunchContext,
  type ProgramHarnessSpec,
  ProgramHarness,
  type ProgramHarnessClass,
} from './program-harness.ts';
// Prompts for programs.
export { promptParts, foldedPrompt, type PromptParts } from './prompt.ts';
// Files in sandboxes.
export { writeSandboxFile, makeScratchDir, removeScratchDir, WRITE_FILE_SCRIPT } from './sandbox-files.ts';
// Programs run in sandboxes.
export {
  uvToolInstall,
  recordedOnlyInfo,
  containerCapabilities,
  ENSURE_UV,
  SandboxProgramOptionsSchema,
  type SandboxProgramOptions,
  type SandboxProgramSpec,
  SandboxProgramHarness,
} from './sandbox-program.ts';
// Shell helpers.
export { shellQuote, shellCommand } from './shell.ts';
// The shell-tool scenario.
export {
  runShellToolScenario,
  npmRegistryReachable,
  installForIntegrationTest,
  type ShellToolScenarioResult,
} from './shell-tool-scenario.ts';
