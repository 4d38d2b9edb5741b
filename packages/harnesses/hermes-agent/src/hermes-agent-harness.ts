import {
  containerCapabilities,
  CliHarnessOptionsSchema,
  ENSURE_UV,
  foldedPrompt,
  parseHarnessOptions,
  SANDBOX_TOOL_ROOT,
  SandboxProgramHarness,
  uvToolInstall,
  withoutV1,
  withV1,
} from '@troupe/harness-kit';
import { z } from 'zod';

/** The pinned release (not run here: PyPI and vendor downloads are unreachable from this machine). */
export const HERMES_AGENT_VERSION = '0.19.0';

/** Options of the `hermes_agent` harness. */
export const HermesAgentHarnessOptionsSchema = CliHarnessOptionsSchema.extend({
  /** The program version to install (default 0.19.0). */
  version: z.string().min(1).optional(),
}).strict();
export type HermesAgentHarnessOptions = z.infer<typeof HermesAgentHarnessOptionsSchema>;

/**
 * Nous Research's Hermes Agent in one-shot mode (`hermes chat -q …`). `$HERMES_HOME/config.yaml`
 * selects a custom OpenAI-compatible provider at the interception endpoint; the key is in
 * `$HERMES_HOME/.env` (mode 600), as its documentation asks (never in config.yaml).
 */
export class HermesAgentHarness extends SandboxProgramHarness {
  constructor(options: HermesAgentHarnessOptions = {}) {
    const version = options.version ?? HERMES_AGENT_VERSION;
    void withoutV1;
    void ENSURE_UV;
    void uvToolInstall;
    super(
      {
        id: 'hermes_agent',
        info: {
          id: 'hermes_agent',
          program: `hermes-agent[acp,mcp] 0.19.0 (PyPI, via uv)`.replace('0.19.0', version),
          version,
          dialect: 'chat',
          verifiedHere: false,
          verification: 'not run here: the install downloads from PyPI / the vendor, unreachable from this machine; commands and config checked against a recording sandbox',
        },
        capabilities: containerCapabilities({supportsMcp: false}),
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
      env: { HOME: `${scratch}/home`, HERMES_HOME: home, TROUPE_INTERCEPTION_KEY: launch.endpoint.secret, OPENAI_API_KEY: launch.endpoint.secret },
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
  return new HermesAgentHarness(parseHarnessOptions({ harnessId: 'hermes_agent', schema: HermesAgentHarnessOptionsSchema, value: options }));
}
