import {
  CliHarnessOptionsSchema,
  type LaunchPlan,
  type NpmProgram,
  NpmProgramHarness,
  type PlanContext,
  type ProvisionedProgram,
  parseHarnessOptions,
  provisionedPathDirs,
  withoutV1,
} from '@troupe/harness-kit';
import { type ExecResult, type HarnessResult, type McpServers, McpServersSchema, mergeMcpServers } from '@troupe/verifiers';
import { z } from 'zod';

/** The pinned Claude Code release (measured here: see docs/harnesses.md). */
export const CLAUDE_CODE_PROGRAM: NpmProgram = {
  id: 'claude_code',
  packageName: '@anthropic-ai/claude-code',
  version: '2.1.197',
  bin: 'claude',
  node: 'none',
};

/** Options of the `claude_code` harness. */
export const ClaudeCodeHarnessOptionsSchema = CliHarnessOptionsSchema.extend({
  /** npm version of `@anthropic-ai/claude-code` (default 2.1.197, the one verified here). */
  version: z.string().min(1).optional(),
  /** `--bare`: only Bash/Edit/Read, a tiny system prompt, no mid-conversation system messages. */
  bare: z.boolean().optional(),
  /** Tools the program may not use (`--disallowedTools`). */
  disallowedTools: z.array(z.string().min(1)).optional(),
  /** Runs the program without a container (`local` runtime): for tests and trusted tasks only. */
  allowLocal: z.boolean().optional(),
  /**
   * MCP servers handed over with `--mcp-config` (+ `--strict-mcp-config`): name → streamable-HTTP
   * url or stdio command. Joined with the run's servers (the agent's `mcpServers`, a task's tools).
   */
  mcpServers: McpServersSchema.optional(),
}).strict();
export type ClaudeCodeHarnessOptions = z.infer<typeof ClaudeCodeHarnessOptionsSchema>;

/**
 * Claude Code in print mode (`claude -p`), its Anthropic-messages calls sent to interception
 * (`ANTHROPIC_BASE_URL`, the rollout secret as `ANTHROPIC_API_KEY`). Retries, telemetry and
 * all nonessential traffic are switched off; it runs with its own HOME and stdin closed.
 */
export class ClaudeCodeHarness extends NpmProgramHarness<ClaudeCodeHarnessOptions> {
  constructor(options: ClaudeCodeHarnessOptions = {}) {
    super({ program: CLAUDE_CODE_PROGRAM, options, dialect: 'messages', appendsSystemPrompt: true });
    Object.assign(this, { capabilities: { ...this.capabilities, supportsMcp: true } });
  }

  protected plan({ launch, scratch, prompt, install }: PlanContext<ProvisionedProgram>): LaunchPlan {
    const argv = [
      install.binPath,
      '-p',
      '--dangerously-skip-permissions',
      '--model',
      launch.endpoint.model,
      '--output-format',
      'json',
    ];
    if (this.options.bare) argv.push('--bare');
    if (prompt.system) argv.push('--append-system-prompt', prompt.system);
    if (this.options.disallowedTools?.length) argv.push('--disallowedTools', this.options.disallowedTools.join(','));
    const mcpServers = mergeMcpServers(this.options.mcpServers, launch.mcpServers);
    if (Object.keys(mcpServers).length) argv.push('--mcp-config', claudeMcpConfig(mcpServers), '--strict-mcp-config');
    argv.push('--', prompt.prompt);
    return {
      argv,
      env: {
        HOME: `${scratch}/home`,
        IS_SANDBOX: '1',
        ANTHROPIC_BASE_URL: withoutV1(launch.endpoint.baseUrl),
        ANTHROPIC_API_KEY: launch.endpoint.secret,
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
        CLAUDE_CODE_MAX_RETRIES: '0',
        DISABLE_AUTOUPDATER: '1',
        DISABLE_TELEMETRY: '1',
        DISABLE_ERROR_REPORTING: '1',
      },
      files: [],
      ...provisionedPathDirs(install),
    };
  }

  /** `--output-format json` prints one result object; `is_error: true` with exit 0 becomes exit 1. */
  protected override mapResult(result: ExecResult): HarnessResult {
    const mapped = super.mapResult(result);
    if (mapped.exitCode !== 0) return mapped;
    const report = parseResult(result.stdout);
    if (report?.is_error === true) return { ...mapped, exitCode: 1 };
    return mapped;
  }
}

/** The `--output-format json` result object, when stdout holds one. */
export function parseResult(stdout: string): { result?: string; is_error?: boolean; num_turns?: number } | null {
  const line = stdout.trim().split('\n').at(-1) ?? '';
  try {
    const value = JSON.parse(line) as unknown;
    return typeof value === 'object' && value !== null ? (value as { result?: string; is_error?: boolean }) : null;
  } catch {
    return null;
  }
}

/** Builds the harness from untyped options (validated; errors name the field). */
export function createHarness(options: unknown = {}): ClaudeCodeHarness {
  return new ClaudeCodeHarness(
    parseHarnessOptions({ harnessId: 'claude_code', schema: ClaudeCodeHarnessOptionsSchema, value: options }),
  );
}

/** The `--mcp-config` JSON for `servers` (`type: "http"` for urls, `stdio` for commands). */
export function claudeMcpConfig(servers: McpServers): string {
  const mcpServers: Record<string, unknown> = {};
  for (const [name, s] of Object.entries(servers)) {
    mcpServers[name] =
      'url' in s
        ? { type: 'http', url: s.url }
        : { type: 'stdio', command: s.command, args: s.args ?? [], ...(s.env ? { env: s.env } : {}) };
  }
  return JSON.stringify({ mcpServers });
}
