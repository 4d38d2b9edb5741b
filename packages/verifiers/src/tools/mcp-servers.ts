import { z } from 'zod';
import { ConfigError } from '../errors/troupe-error.ts';

/**
 * One MCP server an agent's harness is given: streamable HTTP (`url`) or a stdio `command`
 * (with `args` and extra `env`). A CLI harness spawns a stdio server where the CLI runs (in the
 * sandbox); the in-process `bash` harness spawns it on the host, beside itself.
 */
export const McpServerSpecSchema = z.union([
  z
    .object({
      /** The server's streamable-HTTP endpoint. */
      url: z.string().url(),
    })
    .strict(),
  z
    .object({
      /** The program to spawn (stdio transport). */
      command: z.string().min(1),
      /** Its arguments. */
      args: z.array(z.string()).optional(),
      /** Extra environment variables for it. */
      env: z.record(z.string(), z.string()).optional(),
    })
    .strict(),
]);
/**
 * One MCP server: `{ url }` (streamable HTTP) or `{ command, args?, env? }` (stdio); see
 * {@link McpServerSpecSchema}.
 */
export type McpServerSpec = z.infer<typeof McpServerSpecSchema>;

/** MCP servers by name (`[env.<role>.mcpServers.<name>]`); a name becomes the `mcp__<name>__` tool prefix. */
export const McpServersSchema = z.record(
  z.string().regex(/^[A-Za-z0-9_-]+$/, 'an MCP server name is letters, digits, _ and -'),
  McpServerSpecSchema,
);
/** MCP servers by name; a name becomes the `mcp__<name>__` prefix of its tools. */
export type McpServers = Readonly<Record<string, McpServerSpec>>;

/** The neutral name of a server's tool: `mcp__<server>__<tool>` (Claude Code's and codex's name). */
export function mcpToolName(server: string, tool: string): string {
  return `mcp__${server}__${tool}`;
}

/**
 * Joins server maps (the harness's own options, then the agent's config, then the task's
 * served tools); the same name twice with different specs is a config error naming it.
 */
export function mergeMcpServers(...maps: (McpServers | undefined)[]): Record<string, McpServerSpec> {
  const out: Record<string, McpServerSpec> = {};
  for (const map of maps) {
    for (const [name, spec] of Object.entries(map ?? {})) {
      const seen = out[name];
      if (seen && JSON.stringify(seen) !== JSON.stringify(spec)) {
        throw new ConfigError(`MCP server "${name}" is declared twice with different settings`);
      }
      out[name] = spec;
    }
  }
  return out;
}

/**
 * Refuses, at the door, MCP servers for a harness that cannot take them, naming the harness and
 * the role (`where`).
 */
export function assertHarnessSupportsMcpServers(
  harness: { readonly id: string; readonly capabilities: { readonly supportsMcp: boolean } },
  servers: McpServers | undefined,
  where: string,
): void {
  const names = Object.keys(servers ?? {});
  if (names.length && !harness.capabilities.supportsMcp) {
    throw new ConfigError(
      `${where}: harness "${harness.id}" does not support MCP, but MCP servers are declared (${names.join(', ')}); use a harness with supportsMcp (bash, claude_code, codex) or remove mcpServers`,
    );
  }
}
