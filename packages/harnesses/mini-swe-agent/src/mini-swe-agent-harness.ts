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
export const MINI_SWE_AGENT_VERSION = '2.4.6';

/** Options of the `mini_swe_agent` harness (`version` defaults to 2.4.6). */
export const MiniSweAgentHarnessOptionsSchema = SandboxProgramOptionsSchema;
export type MiniSweAgentHarnessOptions = SandboxProgramOptions;

/**
 * mini-swe-agent's `mini` CLI in yolo mode (`-y`, `--exit-immediately`): one bash tool,
 * linear history. Its litellm calls go to interception as an OpenAI-compatible provider
 * (`openai/<model>` with `OPENAI_API_BASE` / `OPENAI_API_KEY`); cost tracking is set to ignore
 * unknown models and the first-run setup is skipped (`MSWEA_CONFIGURED`).
 */
export class MiniSweAgentHarness extends SandboxProgramHarness {
  constructor(options: MiniSweAgentHarnessOptions = {}) {
    const version = options.version ?? MINI_SWE_AGENT_VERSION;
    super(
      {
        id: 'mini_swe_agent',
        info: notRunHereInfo({
          id: 'mini_swe_agent',
          program: `mini-swe-agent ${version} (PyPI, via uv) + litellm`,
          version,
          dialect: 'chat',
        }),
        installScript: uvToolInstall(`mini-swe-agent==${version}`),
        plan: ({ launch, scratch, prompt }) => {
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
      },
      options,
    );
  }
}

/** Builds the harness from untyped options (validated; errors name the field). */
export function createHarness(options: unknown = {}): MiniSweAgentHarness {
  return new MiniSweAgentHarness(
    parseHarnessOptions({ harnessId: 'mini_swe_agent', schema: MiniSweAgentHarnessOptionsSchema, value: options }),
  );
}
