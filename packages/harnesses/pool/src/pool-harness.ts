import { defineProgramHarness, foldedPrompt, installScript, SANDBOX_TOOL_ROOT, withV1 } from '@troupe/program-kit';

/**
 * Poolside's `pool` agent binary (pinned 1.0.15), run headless on one prompt. The binary is
 * downloaded by the vendor's installer; the endpoint is given as an OpenAI-compatible provider
 * through `POOL_BASE_URL` / `POOL_API_KEY` and `$POOL_HOME/config.json`.
 */
export const PoolHarness = defineProgramHarness({
  id: 'pool',
  defaultVersion: '1.0.15',
  dialect: 'chat',
  program: (version) => `Poolside pool ${version} (vendor binary)`,
  install: installScript(
    (version) =>
      `curl -fsSL https://downloads.poolside.ai/pool/install.sh | env POOL_VERSION=${version} POOL_INSTALL_DIR=${SANDBOX_TOOL_ROOT}/bin sh`,
  ),
  launch: ({ launch, scratch, prompt }) => {
    const home = `${scratch}/pool-home`;
    const provider = {
      type: 'openai-compatible',
      baseUrl: withV1(launch.endpoint.baseUrl),
      model: launch.endpoint.model,
      apiKeyEnv: 'POOL_API_KEY',
    };
    const config = JSON.stringify({ provider, telemetry: false }, null, 2);
    return {
      argv: ['pool', 'run', '--yes', '--prompt-file', `${scratch}/prompt.md`],
      env: {
        HOME: `${scratch}/home`,
        POOL_HOME: home,
        POOL_BASE_URL: withV1(launch.endpoint.baseUrl),
        POOL_API_KEY: launch.endpoint.secret,
      },
      files: [
        { path: `${home}/config.json`, content: `${config}\n` },
        { path: `${scratch}/prompt.md`, content: foldedPrompt(prompt) },
      ],
    };
  },
});

/** Builds the harness from untyped options (validated; errors name the field). */
export const { createHarness } = PoolHarness;
