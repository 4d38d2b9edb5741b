import {
  foldedPrompt,
  notRunHereInfo,
  parseHarnessOptions,
  SANDBOX_TOOL_ROOT,
  SandboxProgramHarness,
  SandboxProgramOptionsSchema,
  withoutV1,
  withV1,
} from '@troupe/harness-kit';
import { z } from 'zod';

/** The pinned release (not run here: PyPI and vendor downloads are unreachable from this machine). */
export const KIMI_CODE_VERSION = '0.36.0';

/** Options of the `kimi_code` harness (`version` defaults to 0.36.0). */
export const KimiCodeHarnessOptionsSchema = SandboxProgramOptionsSchema.extend({
  /** The API the program speaks to interception (default `chat`). */
  transport: z.enum(['chat', 'responses', 'messages']).optional(),
}).strict();
export type KimiCodeHarnessOptions = z.infer<typeof KimiCodeHarnessOptionsSchema>;

/**
 * Moonshot's Kimi Code CLI in print mode (`kimi --print --yolo -p …`). Its config
 * (`$KIMI_CODE_HOME/config.toml`) declares one `troupe` provider at the interception endpoint
 * in the chosen transport (OpenAI chat by default) and makes it the default model; telemetry off.
 */
export class KimiCodeHarness extends SandboxProgramHarness {
  constructor(options: KimiCodeHarnessOptions = {}) {
    const version = options.version ?? KIMI_CODE_VERSION;
    const transport = options.transport ?? 'chat';
    super(
      {
        id: 'kimi_code',
        info: notRunHereInfo({
          id: 'kimi_code',
          program: `Kimi Code CLI ${version} (vendor installer)`,
          version,
          dialect: transport,
        }),
        installScript: `curl -fsSL https://code.kimi.com/kimi-code/install.sh | env KIMI_CODE_VERSION=${version} KIMI_INSTALL_DIR=${SANDBOX_TOOL_ROOT}/bin bash`,
        plan: ({ launch, scratch, prompt }) => {
          const home = `${scratch}/kimi-home`;
          const type = { chat: 'openai_legacy', responses: 'openai_responses', messages: 'anthropic' }[transport];
          const base = transport === 'messages' ? withoutV1(launch.endpoint.baseUrl) : withV1(launch.endpoint.baseUrl);
          const config = [
            'default_model = "troupe"',
            'default_permission_mode = "auto"',
            'telemetry = false',
            '',
            '[providers.troupe]',
            `type = ${JSON.stringify(type)}`,
            `base_url = ${JSON.stringify(base)}`,
            `api_key = ${JSON.stringify(launch.endpoint.secret)}`,
            '',
            '[models.troupe]',
            'provider = "troupe"',
            `model = ${JSON.stringify(launch.endpoint.model)}`,
            'max_context_size = 131072',
            'capabilities = ["tool_use"]',
            '',
          ].join('\n');
          return {
            argv: ['kimi', '--print', '--yolo', '--output-format', 'text', '-p', foldedPrompt(prompt)],
            env: { HOME: `${scratch}/home`, KIMI_CODE_HOME: home },
            files: [{ path: `${home}/config.toml`, content: config }],
          };
        },
      },
      options,
    );
  }
}

/** Builds the harness from untyped options (validated; errors name the field). */
export function createHarness(options: unknown = {}): KimiCodeHarness {
  return new KimiCodeHarness(
    parseHarnessOptions({ harnessId: 'kimi_code', schema: KimiCodeHarnessOptionsSchema, value: options }),
  );
}
