import { defineProgramHarness, foldedPrompt, installScript, uvToolInstall, withV1 } from '@troupe/program-kit';

/**
 * Nous Research's Hermes Agent in one-shot mode (`hermes chat -q …`), `hermes-agent[acp,mcp]`
 * from PyPI via uv (pinned 0.19.0). `$HERMES_HOME/config.yaml` selects a custom OpenAI-compatible
 * provider at the interception endpoint; the key is in `$HERMES_HOME/.env` (mode 600), as its
 * documentation asks (never in config.yaml).
 */
export const HermesAgentHarness = defineProgramHarness({
  id: 'hermes_agent',
  defaultVersion: '0.19.0',
  dialect: 'chat',
  program: (version) => `hermes-agent[acp,mcp] ${version} (PyPI, via uv)`,
  install: installScript((version) => uvToolInstall(`hermes-agent[acp,mcp]==${version}`)),
  launch: ({ launch, scratch, prompt }) => {
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
});

/** Builds the harness from untyped options (validated; errors name the field). */
export const { createHarness } = HermesAgentHarness;
