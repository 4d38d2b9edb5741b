import {
  foldedPrompt,
  notRunHereInfo,
  parseHarnessOptions,
  SANDBOX_TOOL_ROOT,
  SandboxProgramHarness,
  type SandboxProgramOptions,
  SandboxProgramOptionsSchema,
  withV1,
} from '@troupe/harness-kit';

/** The pinned release (not run here: PyPI and vendor downloads are unreachable from this machine). */
export const POOL_VERSION = '1.0.15';

/** Options of the `pool` harness (`version` defaults to 1.0.15). */
export const PoolHarnessOptionsSchema = SandboxProgramOptionsSchema;
export type PoolHarnessOptions = SandboxProgramOptions;

/**
 * Poolside's `pool` agent binary, run headless on one prompt. The binary is downloaded by
 * the vendor's installer; the endpoint is given as an OpenAI-compatible provider through
 * `POOL_BASE_URL` / `POOL_API_KEY` and `$POOL_HOME/config.json`.
 */
export class PoolHarness extends SandboxProgramHarness {
  constructor(options: PoolHarnessOptions = {}) {
    const version = options.version ?? POOL_VERSION;
    super(
      {
        id: 'pool',
        info: notRunHereInfo({ id: 'pool', program: `Poolside pool ${version} (vendor binary)`, version, dialect: 'chat' }),
        installScript: `curl -fsSL https://downloads.poolside.ai/pool/install.sh | env POOL_VERSION=${version} POOL_INSTALL_DIR=${SANDBOX_TOOL_ROOT}/bin sh`,
        plan: ({ launch, scratch, prompt }) => {
          const home = `${scratch}/pool-home`;
          const config = JSON.stringify(
            {
              provider: {
                type: 'openai-compatible',
                baseUrl: withV1(launch.endpoint.baseUrl),
                model: launch.endpoint.model,
                apiKeyEnv: 'POOL_API_KEY',
              },
              telemetry: false,
            },
            null,
            2,
          );
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
      },
      options,
    );
  }
}

/** Builds the harness from untyped options (validated; errors name the field). */
export function createHarness(options: unknown = {}): PoolHarness {
  return new PoolHarness(parseHarnessOptions({ harnessId: 'pool', schema: PoolHarnessOptionsSchema, value: options }));
}
