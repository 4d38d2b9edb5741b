import {
  foldedPrompt,
  notRunHereInfo,
  parseHarnessOptions,
  SandboxProgramHarness,
  type SandboxProgramOptions,
  SandboxProgramOptionsSchema,
  uvToolInstall,
  withV1,
} from '@troupe/harness-kit';

/** The pinned release (not run here: PyPI and vendor downloads are unreachable from this machine). */
export const HERMES_AGENT_VERSION = '0.19.0';

/** Options of the `hermes_agent` harness (`version` defaults to 0.19.0). */
export const HermesAgentHarnessOptionsSchema = SandboxProgramOptionsSchema;
export type HermesAgentHarnessOptions = SandboxProgramOptions;

/**
 * Nous Research's Hermes Agent in one-shot mode (`hermes chat -q …`). `$HERMES_HOME/config.yaml`
 * selects a custom OpenAI-compatible provider at the interception endpoint; the key is in
 * `$HERMES_HOME/.env` (mode 600), as its documentation asks (never in config.yaml).
 */
export class HermesAgentHarness extends SandboxProgramHarness {
  constructor(options: HermesAgentHarnessOptions = {}) {
    const version = options.version ?? HERMES_AGENT_VERSION;
    super(
      {
        id: 'hermes_agent',
        info: notRunHereInfo({
          id: 'hermes_agent',
          program: `hermes-agent[acp,mcp] ${version} (PyPI, via uv)`,
          version,
          dialect: 'chat',
        }),
        installScript: uvToolInstall(`hermes-agent[acp,mcp]==${version}`),
        plan: ({ launch, scratch, prompt }) => {
          const home = `${scratch}/hermes-home`;
          const config = [
            'model:',
            '  provider: custom',
            `  base_url: ${JSON.stringify(withV1(launch.endpoint.baseUrl))}`,
            `  default: ${JSON.stringify(launch.endpoint.model)}`,
            '  api_key_env: TROUPE_INTERCEPTION_KEY',
            'telemetry:',
            '  enabled: false',
            '',
          ].join('\n');
          return {
            argv: ['hermes', 'chat', '--yolo', '-q', foldedPrompt(prompt)],
            env: {
              HOME: `${scratch}/home`,
              HERMES_HOME: home,
              TROUPE_INTERCEPTION_KEY: launch.endpoint.secret,
              OPENAI_API_KEY: launch.endpoint.secret,
            },
            files: [
              { path: `${home}/config.yaml`, content: config },
              { path: `${home}/.env`, content: `TROUPE_INTERCEPTION_KEY=${launch.endpoint.secret}\n` },
            ],
          };
        },
      },
      options,
    );
  }
}

/** Builds the harness from untyped options (validated; errors name the field). */
export function createHarness(options: unknown = {}): HermesAgentHarness {
  return new HermesAgentHarness(
    parseHarnessOptions({ harnessId: 'hermes_agent', schema: HermesAgentHarnessOptionsSchema, value: options }),
  );
}
