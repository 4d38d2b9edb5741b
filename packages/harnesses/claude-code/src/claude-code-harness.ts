import { defineProgramHarness, npmPackage, withoutV1 } from '@troupe/program-kit';
import { type McpServers, McpServersSchema, mergeMcpServers } from '@troupe/verifiers';
import { z } from 'zod';

/**
 * Claude Code (`@anthropic-ai/claude-code` on npm, pinned 2.1.197, the one verified: see
 * docs/harnesses.md) in print mode (`claude -p`), its Anthropic-messages calls sent to
 * interception (`ANTHROPIC_BASE_URL`, the rollout secret as `ANTHROPIC_API_KEY`). Retries,
 * telemetry and all nonessential traffic are switched off; it runs with its own HOME and stdin
 * closed, and its commands run through {@link SCRUB_ENV_SCRIPT} (without the rollout secret).
 * `--output-format json` prints one result object; `is_error: true` with exit 0 becomes exit 1.
 */
export const ClaudeCodeHarness = defineProgramHarness({
  id: 'claude_code',
  defaultVersion: '2.1.197',
  options: {
    /** `--bare`: only Bash/Edit/Read, a tiny system prompt, no mid-conversation system messages. */
    bare: z.boolean().optional(),
    /** Tools the program may not use (`--disallowedTools`). */
    disallowedTools: z.array(z.string().min(1)).optional(),
    /**
     * MCP servers handed over with `--mcp-config` (+ `--strict-mcp-config`): name → streamable-HTTP
     * url or stdio command. Joined with the run's servers (the agent's `mcpServers`, a task's tools).
     */
    mcpServers: McpServersSchema.optional(),
  },
  dialect: 'messages',
  program: (version) => `@anthropic-ai/claude-code ${version}`,
  install: npmPackage({ packageName: '@anthropic-ai/claude-code', bin: 'claude', node: 'none' }),
  capabilities: { appendsSystemPrompt: true, supportsMcp: true, callsFromOneProcess: true },
  launch: ({ launch, scratch, prompt, install, options }) => {
    const argv = [
      install.binPath,
      '-p',
      '--dangerously-skip-permissions',
      '--model',
      launch.endpoint.model,
      '--output-format',
      'json',
    ];
    if (options.bare) argv.push('--bare');
    if (prompt.system) argv.push('--append-system-prompt', prompt.system);
    if (options.disallowedTools?.length) argv.push('--disallowedTools', options.disallowedTools.join(','));
    const mcpServers = mergeMcpServers(options.mcpServers, launch.mcpServers);
    if (Object.keys(mcpServers).length) argv.push('--mcp-config', claudeMcpConfig(mcpServers), '--strict-mcp-config');
    argv.push('--', prompt.prompt);
    const scrub = `${scratch}/scrub-env`;
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
        CLAUDE_CODE_SHELL_PREFIX: scrub,
      },
      files: [{ path: scrub, content: SCRUB_ENV_SCRIPT, mode: '700' }],
      sealed: true,
    };
  },
  mapResult: (mapped, result) =>
    mapped.exitCode === 0 && parseResult(result.stdout)?.is_error === true ? { ...mapped, exitCode: 1 } : mapped,
});
export type ClaudeCodeHarness = InstanceType<typeof ClaudeCodeHarness>;

/**
 * The shell prefix Claude Code runs every command through (`CLAUDE_CODE_SHELL_PREFIX`: it runs
 * `'<prefix>' '<command line>'` for its Bash tool, hooks and stdio MCP servers): the command line
 * runs in the user's shell without the rollout secret and endpoint in its environment.
 */
const SCRUB_ENV_SCRIPT = [
  '#!/bin/sh',
  'unset ANTHROPIC_API_KEY ANTHROPIC_AUTH_TOKEN ANTHROPIC_BASE_URL CLAUDE_CODE_SHELL_PREFIX',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell parameter expansion, not a template.
  'exec "${SHELL:-/bin/sh}" -c "$1"',
  '',
].join('\n');

/** The npm package of the program (`packageName`, `bin`). */
export const CLAUDE_CODE_PROGRAM = ClaudeCodeHarness.installer;

/** Builds the harness from untyped options (validated; errors name the field). */
export const { createHarness } = ClaudeCodeHarness;

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
