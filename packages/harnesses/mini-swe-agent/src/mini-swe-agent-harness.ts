import { defineProgramHarness, foldedPrompt, installScript, uvToolInstall, withV1 } from '@troupe/program-kit';

/**
 * mini-swe-agent's `mini` CLI in yolo mode (`-y`, `--exit-immediately`), from PyPI via uv (pinned
 * 2.4.6): one bash tool, linear history. Its litellm calls go to interception as an
 * OpenAI-compatible provider (`openai/<model>` with `OPENAI_API_BASE` / `OPENAI_API_KEY`); cost
 * tracking is set to ignore unknown models and the first-run setup is skipped (`MSWEA_CONFIGURED`).
 */
export const MiniSweAgentHarness = defineProgramHarness({
  id: 'mini_swe_agent',
  defaultVersion: '2.4.6',
  dialect: 'chat',
  program: (version) => `mini-swe-agent ${version} (PyPI, via uv) + litellm`,
  install: installScript((version) => uvToolInstall(`mini-swe-agent==${version}`)),
  launch: ({ launch, scratch, prompt }) => {
    const globalConfig = `${scratch}/mswea`;
    return {
      argv: [
        'mini',
        '-y',
        '--exit-immediately',
        '-m',
        `openai/${launch.endpoint.model}`,
        '-o',
        `${scratch}/trajectory.json`,
        '-t',
        foldedPrompt(prompt),
      ],
      env: {
        HOME: `${scratch}/home`,
        MSWEA_GLOBAL_CONFIG_DIR: globalConfig,
        MSWEA_CONFIGURED: 'true',
        MSWEA_COST_TRACKING: 'ignore_errors',
        LITELLM_LOCAL_MODEL_COST_MAP: 'True',
        OPENAI_API_BASE: withV1(launch.endpoint.baseUrl),
        OPENAI_BASE_URL: withV1(launch.endpoint.baseUrl),
        OPENAI_API_KEY: launch.endpoint.secret,
      },
      files: [{ path: `${globalConfig}/.env`, content: 'MSWEA_CONFIGURED=true\n' }],
    };
  },
});

/** Builds the harness from untyped options (validated; errors name the field). */
export const { createHarness } = MiniSweAgentHarness;
