import type { Message } from '../model/messages.ts';
import type { ModelResponse } from '../model/model-client.ts';
import { connectMcpServers, type McpConnection } from '../tools/mcp-client.ts';
import type { Harness, HarnessCapabilities, HarnessLaunchContext, HarnessResult, HarnessSession } from './harness.ts';
import { isInterceptionStop, type LoopTool, loopRequest, runToolLoop } from './tool-loop.ts';

/**
 * Our own loop with tools: `null` offers none (chat only, one model call per turn); `bash`
 * offers a `bash` and an `edit` tool. Both run in process and reach the model through the
 * interception handler directly (no socket), recording exactly what an HTTP program would.
 */
export abstract class LoopHarness implements Harness {
  abstract readonly id: string;
  abstract readonly capabilities: HarnessCapabilities;
  /** Built-in loops run in process and use the direct transport. */
  readonly inProcess = true;

  protected abstract tools(context: HarnessLaunchContext): LoopTool[];

  /** The MCP servers' tools (`mcp__<server>__<tool>`), for loops with `supportsMcp`. */
  private mcp(context: HarnessLaunchContext): Promise<McpConnection> | McpConnection {
    if (!this.capabilities.supportsMcp || !context.mcpServers) return NO_MCP;
    return connectMcpServers(context.mcpServers);
  }

  async launch(context: HarnessLaunchContext): Promise<HarnessResult> {
    const messages = [...context.messages];
    const mcp = await this.mcp(context);
    try {
      const result = await runToolLoop({
        endpoint: context.endpoint,
        messages,
        tools: [...this.tools(context), ...mcp.tools],
        signal: context.signal,
      });
      const last = result.added.findLast((m) => m.role === 'assistant');
      return { exitCode: 0, stdout: last?.role === 'assistant' ? (last.content ?? '') : '', stderr: '' };
    } finally {
      await mcp.close();
    }
  }

  session(context: HarnessLaunchContext): Promise<HarnessSession> {
    // No MCP to reach (the `null` loop, game seats): no connection to await, open or close, and
    // no async frame.
    const connecting = this.mcp(context);
    if (connecting === NO_MCP) {
      try {
        return Promise.resolve(new LoopSession(context, [...this.tools(context)], NO_MCP));
      } catch (error) {
        return Promise.reject(error);
      }
    }
    return this.sessionWithMcp(context, connecting);
  }

  private async sessionWithMcp(context: HarnessLaunchContext, connecting: Promise<McpConnection> | McpConnection) {
    const mcp = await connecting;
    return new LoopSession(context, [...this.tools(context), ...mcp.tools], mcp);
  }
}

/**
 * One turn-by-turn session of a loop harness. Without tools (the `null` loop: game seats, user
 * simulators) a turn is one model call made here, without the tool loop's frame, map and copies:
 * exactly what `runToolLoop` does when no tool can be called.
 */
class LoopSession implements HarnessSession {
  private readonly messages: Message[];
  private readonly callOptions: { signal: AbortSignal };
  private terminated = false;

  constructor(
    private readonly context: HarnessLaunchContext,
    private readonly tools: LoopTool[],
    private readonly mcp: McpConnection,
  ) {
    this.messages = [...context.messages];
    this.callOptions = { signal: context.signal };
    // Assigned here, not as class fields: under tsx (esbuild `keepNames`) a field's arrow is
    // named with a defineProperty per session, which also turns the function into dictionary mode.
    this.replied = (response) => {
      const reply = response.message;
      this.messages.push(reply);
      return { messages: [reply], terminated: false };
    };
    this.refused = (error) => {
      if (!isInterceptionStop(error)) throw error;
      this.terminated = true;
      return { messages: [], terminated: true };
    };
  }

  /** A chat-only turn's answer: its reply appended to the conversation. */
  private readonly replied: (response: ModelResponse) => { messages: Message[]; terminated: boolean };
  /** A chat-only turn's failure: interception's refusal ends the session (a terminated segment); other errors reject. */
  private readonly refused: (error: unknown) => { messages: Message[]; terminated: boolean };

  turn(incoming?: Message[]): Promise<{ messages: Message[]; terminated: boolean }> {
    if (this.terminated) return Promise.resolve({ messages: [], terminated: true });
    const { messages } = this;
    if (incoming) messages.push(...incoming);
    if (this.tools.length > 0) return this.loopTurn();
    // Chat only: one model call and one reaction on the endpoint's promise (what `callLoopModel`
    // does, without its own reaction in between: no async frame and one promise per turn).
    try {
      this.context.signal.throwIfAborted();
      const { endpoint } = this.context;
      return endpoint.direct(loopRequest(endpoint, messages, this.tools), this.callOptions).then(this.replied, this.refused);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** A turn of the tool loop: model calls and tool runs until a reply calls no tool. */
  private async loopTurn(): Promise<{ messages: Message[]; terminated: boolean }> {
    const { messages, context } = this;
    const result = await runToolLoop({ endpoint: context.endpoint, messages, tools: this.tools, signal: context.signal });
    if (result.stopped) {
      this.terminated = true;
      return { messages: [], terminated: true };
    }
    return { messages: result.added, terminated: false };
  }

  close(): Promise<void> {
    this.terminated = true;
    return this.mcp === NO_MCP ? DONE : this.mcp.close();
  }
}

/** The MCP connection of a loop without MCP servers (shared: nothing to close). */
const NO_MCP: McpConnection = { tools: [], close: () => DONE };
const DONE = Promise.resolve();

/** `null`: chat only, no tools, never executes code. For user simulators and game seats. */
export class NullHarness extends LoopHarness {
  readonly id = 'null';
  readonly capabilities: HarnessCapabilities = {
    executesCode: false,
    needsContainer: false,
    supportsMcp: false,
    supportsResume: true,
    supportsSkills: false,
    appendsSystemPrompt: true,
  };
  protected tools(): LoopTool[] {
    return [];
  }
}
