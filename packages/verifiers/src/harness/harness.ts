import type { Message } from '../model/messages.ts';
import type { ModelRequest, ModelResponse } from '../model/model-client.ts';
import type { Sandbox } from '../runtime/runtime.ts';
import type { Task } from '../task/task.ts';
import type { McpServers } from '../tools/mcp-servers.ts';
import type { Trace } from '../trace/trace.ts';

/** What a harness can do; checked when an agent is built (pairing errors fail fast). */
export interface HarnessCapabilities {
  /** The program runs code (a judge must). */
  executesCode: boolean;
  /** The program must run in a container runtime, not `local`. */
  needsContainer: boolean;
  supportsMcp: boolean;
  /** Can continue a conversation with new messages (needed by `agent.interaction`). */
  supportsResume: boolean;
  supportsSkills: boolean;
  /** Takes a system prompt of its own; otherwise it is folded into the prompt. */
  appendsSystemPrompt: boolean;
  /**
   * Every model call of the program comes from the one process that makes its first call (no
   * helper process calls the model): its rollout secret is then bound to that process, and code
   * the program runs cannot call with it (see `RolloutSessionOptions.bindCaller`).
   */
  callsFromOneProcess?: boolean;
}

/** The API dialects interception speaks. */
export type Dialect = 'chat' | 'responses' | 'messages';

/** How a harness reaches the model: always through interception. */
export interface ModelEndpoint {
  /** `http://127.0.0.1:<port>/v1` (already rewritten so that the sandbox can reach it). */
  baseUrl: string;
  /** The rollout secret: bearer token / `x-api-key`. */
  secret: string;
  /** The model name the program should ask for (interception imposes the real one anyway). */
  model: string;
  /**
   * In-process transport to the same interception handler and recording, with no socket.
   * Built-in harnesses may use it; external programs use `baseUrl`.
   */
  direct: (request: ModelRequest, options?: { signal?: AbortSignal }) => Promise<ModelResponse>;
}

/**
 * What a harness's `launch` receives for one run: the task, the live trace, the sandbox, the model
 * endpoint (through interception), the starting messages and the run's limits.
 */
export interface HarnessLaunchContext {
  /** The task being run. */
  task: Task;
  /** The live trace interception records into. */
  trace: Trace;
  /** The sandbox the program runs in. */
  sandbox: Sandbox;
  /** Where the program reaches the model (always interception). */
  endpoint: ModelEndpoint;
  /** The conversation to start from: system prompt (folded if the harness cannot take one), then the prompt. */
  messages: Message[];
  signal: AbortSignal;
  /** Log lines for the run's log (stderr / log file). */
  log: (line: string) => void;
  /**
   * MCP servers for this run (the agent's `mcpServers` and the task's served tools), URLs already
   * rewritten so that the program reaches them; given only to harnesses with `supportsMcp`.
   */
  mcpServers?: McpServers;
}

/**
 * How a harness run ended: the program's exit code and its output, kept for the
 * error message when it failed.
 */
export interface HarnessResult {
  /** 0 on success; non-zero fails the run unless a stop condition already ended it. */
  exitCode: number;
  /** The program's standard output. */
  stdout: string;
  /** The program's standard error. */
  stderr: string;
}

/** A stateful conversation driven turn by turn (for `agent.interaction`). */
export interface HarnessSession {
  /**
   * Appends `messages` (if any) and lets the program run until it waits for input again.
   * Returns the new messages (sampled assistant messages and tool results) and whether the
   * program ended.
   */
  turn(messages?: Message[]): Promise<{ messages: Message[]; terminated: boolean }>;
  close(): Promise<void>;
}

/**
 * The program around the model: our own loops (`null`, `bash`) or an external CLI (Claude
 * Code, Codex, pi …). A harness only ever talks to the model through the endpoint it is given.
 */
export interface Harness {
  readonly id: string;
  readonly capabilities: HarnessCapabilities;
  /**
   * The program runs inside this process and reaches the model through `endpoint.direct` (no
   * socket, no interception server, MCP URLs left as they are): the built-in `null` and `bash`
   * loops. Absent or false: an external program that needs `endpoint.baseUrl`.
   */
  readonly inProcess?: boolean;
  /** Installs the program into the sandbox (before the agent timer starts). */
  setup?(context: { sandbox: Sandbox; log: (line: string) => void; signal: AbortSignal }): Promise<void>;
  /** Runs the program to exit on the task. */
  launch(context: HarnessLaunchContext): Promise<HarnessResult>;
  /** Opens a turn-by-turn session (required when `capabilities.supportsResume`). */
  session?(context: HarnessLaunchContext): Promise<HarnessSession>;
}

/**
 * The capabilities a harness declares unless it says otherwise: it executes code and needs a
 * container, and supports nothing optional (no MCP, resume, skills, appended system prompt).
 */
export const defaultCapabilities: HarnessCapabilities = {
  executesCode: true,
  needsContainer: true,
  supportsMcp: false,
  supportsResume: false,
  supportsSkills: false,
  appendsSystemPrompt: false,
};
