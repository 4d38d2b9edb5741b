import {
  ENSURE_UV,
  foldedPrompt,
  notRunHereInfo,
  parseHarnessOptions,
  SANDBOX_TOOL_ROOT,
  SandboxProgramHarness,
  type SandboxProgramOptions,
  SandboxProgramOptionsSchema,
  withV1,
} from '@troupe/harness-kit';
import { terminus2Runner } from './runner-script.ts';

/** The pinned release (not run here: PyPI and vendor downloads are unreachable from this machine). */
export const HARBOR_VERSION = '0.21.0';

/** Options of the `terminus_2` harness (`version` defaults to 0.21.0). */
export const Terminus2HarnessOptionsSchema = SandboxProgramOptionsSchema;
export type Terminus2HarnessOptions = SandboxProgramOptions;

/**
 * harbor's Terminus 2 agent driving a tmux session, run by a PEP 723 runner script (the
 * Python original's approach). Its litellm calls go to interception (`openai/<model>` with
 * `api_base`, key from `OPENAI_API_KEY`). Needs tmux in the image (installed with apt when missing).
 */
export class Terminus2Harness extends SandboxProgramHarness {
  constructor(options: Terminus2HarnessOptions = {}) {
    const version = options.version ?? HARBOR_VERSION;
    super(
      {
        id: 'terminus_2',
        info: notRunHereInfo({
          id: 'terminus_2',
          program: `harbor ${version} Terminus 2 (PyPI, via uv) + tmux`,
          version,
          dialect: 'chat',
        }),
        installScript: `${ENSURE_UV}\nif ! command -v tmux >/dev/null 2>&1; then (apt-get update && apt-get install -y tmux) >/dev/null; fi\nuv pip install --system --quiet "harbor==${version}" || true\nUV_TOOL_DIR=${SANDBOX_TOOL_ROOT}/uv uv tool install --python 3.12 "harbor==${version}"`,
        plan: ({ launch, scratch, prompt }) => {
          const runner = `${scratch}/terminus2_runner.py`;
          return {
            argv: [
              'uv',
              'run',
              '--script',
              runner,
              '--model',
              `openai/${launch.endpoint.model}`,
              '--api-base',
              withV1(launch.endpoint.baseUrl),
              '--instruction-file',
              `${scratch}/instruction.md`,
              '--logs-dir',
              `${scratch}/logs`,
            ],
            env: { HOME: `${scratch}/home`, OPENAI_API_KEY: launch.endpoint.secret, UV_TOOL_DIR: `${SANDBOX_TOOL_ROOT}/uv` },
            files: [
              { path: runner, content: terminus2Runner(HARBOR_VERSION), mode: '700' },
              { path: `${scratch}/instruction.md`, content: foldedPrompt(prompt) },
            ],
          };
        },
      },
      options,
    );
  }
}

/** Builds the harness from untyped options (validated; errors name the field). */
export function createHarness(options: unknown = {}): Terminus2Harness {
  return new Terminus2Harness(
    parseHarnessOptions({ harnessId: 'terminus_2', schema: Terminus2HarnessOptionsSchema, value: options }),
  );
}
