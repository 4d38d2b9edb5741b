import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import type { HarnessCapabilities, HarnessLaunchContext } from './harness.ts';
import { LoopHarness } from './null-harness.ts';
import type { LoopTool } from './tool-loop.ts';

/**
 * Options of the `bash` harness (`harness = { id = "bash", … }`): the tool timeout in seconds, the
 * tool output cap in characters, and whether to offer `edit`.
 */
export const BashHarnessOptionsSchema = z
  .object({
    /** Seconds before a `bash` tool call is killed. */
    toolTimeout: z.number().positive().default(600),
    /** Characters of tool output returned to the model (head and tail kept). */
    maxOutputChars: z.number().int().positive().default(16_000),
    /** Offer the `edit` tool. */
    edit: z.boolean().default(true),
  })
  .strict();
/** The `bash` harness's options as given (every field optional); see {@link BashHarnessOptionsSchema}. */
export type BashHarnessOptions = z.input<typeof BashHarnessOptionsSchema>;

/**
 * `bash`: our own tool loop with a `bash` tool and an `edit` tool, running in the sandbox, plus
 * the tools of the run's MCP servers (`mcp__<server>__<tool>`, through the official MCP client).
 */
export class BashHarness extends LoopHarness {
  readonly id = 'bash';
  readonly capabilities: HarnessCapabilities = {
    executesCode: true,
    needsContainer: false,
    supportsMcp: true,
    supportsResume: true,
    supportsSkills: false,
    appendsSystemPrompt: true,
  };
  private readonly options: z.output<typeof BashHarnessOptionsSchema>;

  constructor(options: BashHarnessOptions = {}) {
    super();
    this.options = BashHarnessOptionsSchema.parse(options);
  }

  protected tools(context: HarnessLaunchContext): LoopTool[] {
    const { sandbox } = context;
    const { toolTimeout, maxOutputChars } = this.options;
    const bash: LoopTool = {
      definition: {
        name: 'bash',
        description: `Run a shell command in the sandbox (working directory ${sandbox.workdir}). Returns exit code, stdout and stderr.`,
        parameters: {
          type: 'object',
          properties: { command: { type: 'string', description: 'The command, run with sh -c.' } },
          required: ['command'],
        },
      },
      run: async (args, signal) => {
        const command = args.command;
        if (typeof command !== 'string' || !command.trim()) return 'error: `command` must be a non-empty string';
        const result = await sandbox.exec(command, { timeoutMs: toolTimeout * 1000, signal });
        const parts = [`exit code: ${result.exitCode}${result.timedOut ? ` (killed after ${toolTimeout}s)` : ''}`];
        // Output is data the command produced, fenced by a fresh nonce it cannot guess, so it
        // cannot imitate a second `exit code:` block or close the fence early.
        if (result.stdout) parts.push(`stdout:\n${fenceOutput(clip(result.stdout, maxOutputChars))}`);
        if (result.stderr) parts.push(`stderr:\n${fenceOutput(clip(result.stderr, maxOutputChars))}`);
        return parts.join('\n');
      },
    };
    if (!this.options.edit) return [bash];
    const edit: LoopTool = {
      definition: {
        name: 'edit',
        description:
          'Create or edit a file. With `old` empty or absent, writes `new` as the whole file; otherwise replaces the single occurrence of `old` with `new`.',
        parameters: {
          type: 'object',
          properties: { path: { type: 'string' }, old: { type: 'string' }, new: { type: 'string' } },
          required: ['path', 'new'],
        },
      },
      run: async (args) => {
        const { path, old: before, new: after } = args;
        if (typeof path !== 'string' || typeof after !== 'string') return 'error: `path` and `new` must be strings';
        if (before === undefined || before === '') {
          await sandbox.writeFile(path, after);
          return `wrote ${path} (${after.length} characters)`;
        }
        if (typeof before !== 'string') return 'error: `old` must be a string';
        const text = new TextDecoder().decode(await sandbox.readFile(path));
        const count = text.split(before).length - 1;
        if (count !== 1) return `error: \`old\` occurs ${count} times in ${path}; it must occur exactly once`;
        await sandbox.writeFile(
          path,
          text.replace(before, () => after),
        );
        return `edited ${path}`;
      },
    };
    return [bash, edit];
  }
}

function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  const half = Math.floor(max / 2);
  return `${text.slice(0, half)}\n… [${text.length - max} characters cut] …\n${text.slice(-half)}`;
}

/**
 * Wraps command output between `<<<out-NONCE` and `out-NONCE>>>` lines; the nonce is random per
 * call, so the output can neither close the fence nor fake the framework's own lines.
 */
export function fenceOutput(text: string): string {
  const nonce = `out-${randomBytes(6).toString('hex')}`;
  return `<<<${nonce}\n${text}\n${nonce}>>>`;
}
