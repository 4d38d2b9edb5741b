import { defineProgramHarness, foldedPrompt, npmPackage, withV1 } from '@troupe/program-kit';
import { type McpServers, McpServersSchema, mergeMcpServers } from '@troupe/verifiers';
import { z } from 'zod';

/** Name of the environment variable that carries the rollout secret (`env_key` in config.toml). */
export const CODEX_KEY_ENV = 'TROUPE_INTERCEPTION_KEY';

/** A TOML basic string (JSON string escapes are valid TOML). */
function tomlString(value: string): string {
  return JSON.stringify(value);
}

/**
 * The `config.toml` that points codex at interception: one `troupe` provider speaking the
 * Responses API, the key read from `TROUPE_INTERCEPTION_KEY`, retries off, the two switches
 * that stop all egress (analytics, plugins), and that key kept out of the environment of the
 * commands codex runs (`shell_environment_policy.exclude`).
 */
export function codexConfigToml(options: { baseUrl: string; model: string }): string {
  return [
    `model = ${tomlString(options.model)}`,
    'model_provider = "troupe"',
    '',
    '[model_providers.troupe]',
    'name = "troupe"',
    `base_url = ${tomlString(withV1(options.baseUrl))}`,
    `env_key = ${tomlString(CODEX_KEY_ENV)}`,
    'wire_api = "responses"',
    'request_max_retries = 0',
    'stream_max_retries = 0',
    'stream_idle_timeout_ms = 300000',
    '',
    '[analytics]',
    'enabled = false',
    '',
    '[features]',
    'plugins = false',
    '',
    // The commands codex runs get its environment without the rollout secret.
    '[shell_environment_policy]',
    `exclude = [${tomlString(CODEX_KEY_ENV)}]`,
    '',
  ].join('\n');
}

/**
 * The Codex CLI (`@openai/codex` on npm, pinned 0.171.0, the one verified: see docs/harnesses.md)
 * in `codex exec` mode, its Responses-API calls sent to interception. Runs with its own
 * `CODEX_HOME`, no approvals and no inner sandbox (the runtime is the sandbox), `--ephemeral`,
 * stdin closed (codex waits on an open stdin forever).
 */
export const CodexHarness = defineProgramHarness({
  id: 'codex',
  defaultVersion: '0.171.0',
  options: {
    /** Extra top-level `config.toml` settings (`-c key=value` on the command line). */
    config: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).optional(),
    /**
     * MCP servers written as `[mcp_servers.<name>]` in config.toml: a streamable-HTTP url or a stdio
     * command. Joined with the run's servers (the agent's `mcpServers`, a task's tools).
     */
    mcpServers: McpServersSchema.optional(),
  },
  dialect: 'responses',
  program: (version) => `@openai/codex ${version}`,
  install: npmPackage({ packageName: '@openai/codex', bin: 'codex', node: 'none' }),
  capabilities: { supportsMcp: true, callsFromOneProcess: true },
  launch: ({ launch, scratch, prompt, install, options }) => {
    const codexHome = `${scratch}/codex-home`;
    const native = launch.sandbox.runtime === 'local' ? null : nativeCodex(install.binPath);
    const argv = [
      native?.binPath ?? install.binPath,
      'exec',
      '--skip-git-repo-check',
      '--dangerously-bypass-approvals-and-sandbox',
      '--ephemeral',
    ];
    for (const [key, value] of Object.entries(options.config ?? {})) {
      argv.push('-c', `${key}=${typeof value === 'string' ? tomlString(value) : String(value)}`);
    }
    argv.push('--', foldedPrompt(prompt));
    return {
      argv,
      sealed: true,
      env: { HOME: `${scratch}/home`, CODEX_HOME: codexHome, [CODEX_KEY_ENV]: launch.endpoint.secret, ...native?.env },
      files: [
        {
          path: `${codexHome}/config.toml`,
          content:
            codexConfigToml({ baseUrl: launch.endpoint.baseUrl, model: launch.endpoint.model }) +
            codexMcpToml(mergeMcpServers(options.mcpServers, launch.mcpServers)),
        },
      ],
    };
  },
});
export type CodexHarness = InstanceType<typeof CodexHarness>;

/** The npm package of the program (`packageName`, `bin`). */
export const CODEX_PROGRAM = CodexHarness.installer;

/** Builds the harness from untyped options (validated; errors name the field). */
export const { createHarness } = CodexHarness;

/** `[mcp_servers.<name>]` tables for config.toml (`url` for streamable HTTP, `command`/`args` for stdio). */
export function codexMcpToml(servers: McpServers): string {
  const lines: string[] = [];
  for (const [name, s] of Object.entries(servers)) {
    lines.push(`[mcp_servers.${name}]`);
    if ('url' in s) lines.push(`url = ${tomlString(s.url)}`);
    else {
      lines.push(`command = ${tomlString(s.command)}`, `args = [${(s.args ?? []).map(tomlString).join(', ')}]`);
      const env = Object.entries(s.env ?? {}).map(([k, v]) => `${tomlString(k)} = ${tomlString(v)}`);
      if (env.length) lines.push(`env = { ${env.join(', ')} }`);
    }
    lines.push('');
  }
  return lines.join('\n');
}

/**
 * The native codex binary beside the npm launcher `binPath` (`<prefix>/node_modules/.bin/codex`),
 * and the environment the launcher would give it. The launcher is a Node script
 * (`@openai/codex/bin/codex.js`: it finds `@openai/codex-<platform>/vendor/<triple>/bin/codex`,
 * sets `CODEX_MANAGED_BY_NPM=1` and `CODEX_MANAGED_PACKAGE_ROOT`, and execs it), and a container
 * has no Node: there the binary runs directly. The host install matches the host's architecture,
 * which is the container's (one kernel).
 */
export function nativeCodex(binPath: string): { binPath: string; env: Record<string, string> } {
  const modules = binPath.replace(/\/\.bin\/codex$/, '');
  const [platformPackage, triple] =
    process.arch === 'arm64'
      ? ['codex-linux-arm64', 'aarch64-unknown-linux-musl']
      : ['codex-linux-x64', 'x86_64-unknown-linux-musl'];
  return {
    binPath: `${modules}/@openai/${platformPackage}/vendor/${triple}/bin/codex`,
    env: { CODEX_MANAGED_BY_NPM: '1', CODEX_MANAGED_PACKAGE_ROOT: `${modules}/@openai/codex` },
  };
}
