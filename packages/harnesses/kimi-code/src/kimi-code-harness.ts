import { defineProgramHarness, foldedPrompt, installScript, SANDBOX_TOOL_ROOT, withoutV1, withV1 } from '@troupe/program-kit';
import { z } from 'zod';

const PROVIDER_TYPE = { chat: 'openai_legacy', responses: 'openai_responses', messages: 'anthropic' } as const;

/**
 * Moonshot's Kimi Code CLI (vendor installer, pinned 0.36.0) in print mode (`kimi --print --yolo
 * -p …`). Its config (`$KIMI_CODE_HOME/config.toml`) declares one `troupe` provider at the
 * interception endpoint in the chosen transport (OpenAI chat by default) and makes it the default
 * model; telemetry off.
 */
export const KimiCodeHarness = defineProgramHarness({
  id: 'kimi_code',
  defaultVersion: '0.36.0',
  options: {
    /** The API the program speaks to interception (default `chat`). */
    transport: z.enum(['chat', 'responses', 'messages']).optional(),
  },
  dialect: (options) => options.transport ?? 'chat',
  program: (version) => `Kimi Code CLI ${version} (vendor installer)`,
  install: installScript(
    (version) =>
      `curl -fsSL https://code.kimi.com/kimi-code/install.sh | env KIMI_CODE_VERSION=${version} KIMI_INSTALL_DIR=${SANDBOX_TOOL_ROOT}/bin bash`,
  ),
  launch: ({ launch, scratch, prompt, options }) => {
    const home = `${scratch}/kimi-home`;
    const transport = options.transport ?? 'chat';
    const base = transport === 'messages' ? withoutV1(launch.endpoint.baseUrl) : withV1(launch.endpoint.baseUrl);
    const config = [
      'default_model = "troupe"',
      'default_permission_mode = "auto"',
      'telemetry = false',
      '',
      '[providers.troupe]',
      `type = ${JSON.stringify(PROVIDER_TYPE[transport])}`,
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
});

/** Builds the harness from untyped options (validated; errors name the field). */
export const { createHarness } = KimiCodeHarness;
