import type { Message } from '../model/messages.ts';
import { connectMcpServers, type McpConnection } from '../tools/mcp-client.ts';
import type { Harness, HarnessCapabilities, HarnessLaunchContext, HarnessResult, HarnessSession } from './harness.ts';
import { type LoopTool, runToolLoop } from './tool-loop.ts';

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
  private async mcp(context: HarnessLaunchContext): Promise<McpConnection> {
    if (!this.capabilities.supportsMcp || !context.mcpServers) return { tools: [], close: async () => {} };
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

  async session(context: HarnessLaunchContext): Promise<HarnessSession> {
    const messages: Message[] = [...context.messages];
    const mcp = await this.mcp(context);
    const tools = [...this.tools(context), ...mcp.tools];
    let terminated = false;
    return {
      async turn(incoming?: Message[]) {
        if (terminated) return { messages: [], terminated: true };
        if (incoming) messages.push(...incoming);
        const result = await runToolLoop({ endpoint: context.endpoint, messages, tools, signal: context.signal });
        if (result.stopped) {
          terminated = true;
          return { messages: [], terminated: true };
        }
        return { messages: result.added, terminated: false };
      },
      async close() {
        terminated = true;
        await mcp.close();
      },
    };
  }
}

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
