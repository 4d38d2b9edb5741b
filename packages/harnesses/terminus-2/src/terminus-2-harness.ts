import { defineProgramHarness, ENSURE_UV, foldedPrompt, installScript, SANDBOX_TOOL_ROOT, withV1 } from '@troupe/program-kit';
import { terminus2Runner } from './runner-script.ts';

/**
 * harbor's Terminus 2 agent (harbor pinned 0.21.0, PyPI via uv) driving a tmux session, run by a
 * PEP 723 runner script (the Python original's approach). Its litellm calls go to interception
 * (`openai/<model>` with `api_base`, key from `OPENAI_API_KEY`). Needs tmux in the image
 * (installed with apt when missing).
 */
export const Terminus2Harness = defineProgramHarness({
  id: 'terminus_2',
  defaultVersion: '0.21.0',
  dialect: 'chat',
  program: (version) => `harbor ${version} Terminus 2 (PyPI, via uv) + tmux`,
  install: installScript(
    (version) =>
      `${ENSURE_UV}\nif ! command -v tmux >/dev/null 2>&1; then (apt-get update && apt-get install -y tmux) >/dev/null; fi\nuv pip install --system --quiet "harbor==${version}" || true\nUV_TOOL_DIR=${SANDBOX_TOOL_ROOT}/uv uv tool install --python 3.12 "harbor==${version}"`,
  ),
  launch: ({ launch, scratch, prompt, version }) => {
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
        { path: runner, content: terminus2Runner(version), mode: '700' },
        { path: `${scratch}/instruction.md`, content: foldedPrompt(prompt) },
      ],
    };
  },
});

/** Builds the harness from untyped options (validated; errors name the field). */
export const { createHarness } = Terminus2Harness;
