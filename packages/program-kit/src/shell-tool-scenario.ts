import { contentText, type Harness, LocalRuntime, type ModelRequest, type Trace } from '@troupe/verifiers';
import { callPrompt, HarnessRig, type HarnessRigRun } from '@troupe/verifiers/testing';

/** What `runShellToolScenario` saw. */
export interface ShellToolScenarioResult {
  run: HarnessRigRun;
  /** Content of the file the command wrote (null when it is missing). */
  file: string | null;
  /** The tool result the program sent back for the shell call (null when none came back). */
  toolResult: string | null;
  /**
   * The interception dialect of each recorded call. Exactly one call per model turn also shows
   * the program streamed successfully (claude falls back to a second, non-streaming request
   * when a stream is unusable; codex and pi only ever stream).
   */
  dialects: string[];
}

/**
 * The real-program scenario of the integration tests: the scripted model answers the first call
 * with one shell tool call (`toolName` with `toolArguments`, which must write `fileName` in the
 * workdir), and every later call with `finalReply`. Returns the run, the file the program wrote,
 * and the tool result it sent back.
 */
export async function runShellToolScenario(options: {
  harness: Harness;
  toolName: string;
  toolArguments: Record<string, unknown>;
  fileName: string;
  finalReply?: string;
  prompt?: string;
  log?: (line: string) => void;
}): Promise<ShellToolScenarioResult> {
  const finalReply = options.finalReply ?? 'done';
  const script = (request: ModelRequest) => {
    const last = request.messages.at(-1);
    const answered = request.messages.some((m) => m.role === 'tool');
    if (!answered && last?.role !== 'assistant') {
      return { toolCalls: [{ id: 'call_shell_1', name: options.toolName, arguments: options.toolArguments }] };
    }
    return finalReply;
  };
  const rig = await HarnessRig.open({ harness: options.harness, script, ...(options.log ? { log: options.log } : {}) });
  try {
    const run = await rig.launch({ prompt: options.prompt ?? `Create the file ${options.fileName} with the shell.` });
    let file: string | null = null;
    try {
      file = new TextDecoder().decode(await rig.sandbox.readFile(options.fileName));
    } catch {
      file = null;
    }
    return {
      run,
      file,
      toolResult: toolResultOf(run.trace),
      dialects: run.trace.calls.map((call) => call.dialect),
    };
  } finally {
    await rig.close();
  }
}

/** The first tool message in the prompts of a trace's calls. */
function toolResultOf(trace: Trace): string | null {
  for (let index = 0; index < trace.calls.length; index += 1) {
    const tool = callPrompt(trace, index).find((m) => m.role === 'tool');
    if (tool) return contentText(tool.content);
  }
  return null;
}

/** True when the npm registry answers (integration tests skip only when it does not). */
export async function npmRegistryReachable(registry = 'https://registry.npmjs.org/'): Promise<boolean> {
  try {
    const response = await fetch(registry, { method: 'HEAD', signal: AbortSignal.timeout(10_000) });
    return response.status < 500;
  } catch {
    return false;
  }
}

/**
 * Installs the harness's program into the host cache through a sandbox of a new `LocalRuntime`
 * (the setup step of the real-program integration tests). Returns why those tests must skip — the
 * install failed and the npm registry is unreachable — or null when installed; any other install
 * failure is thrown.
 */
export async function installForIntegrationTest(options: {
  harness: Harness;
  /** The npm package named in the skip reason. */
  packageName: string;
  /** Gives up on the install after this long. */
  timeoutMs: number;
}): Promise<string | null> {
  const runtime = new LocalRuntime();
  const sandbox = await runtime.createSandbox();
  try {
    await options.harness.setup?.({ sandbox, log: () => undefined, signal: AbortSignal.timeout(options.timeoutMs) });
    return null;
  } catch (error) {
    if (!(await npmRegistryReachable())) return `npm registry unreachable, cannot install ${options.packageName}`;
    throw error;
  } finally {
    await sandbox.stop();
    await runtime.close?.();
  }
}
