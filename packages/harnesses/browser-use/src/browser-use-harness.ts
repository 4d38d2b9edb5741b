import { defineProgramHarness, foldedPrompt, installScript, uvToolInstall, withV1 } from '@troupe/program-kit';
import { z } from 'zod';
import { browserUseRunner } from './runner-script.ts';

/**
 * A chat loop with one `browser` tool that runs Python against a live Chromium through
 * browser-harness (PyPI via uv, pinned 0.1.8) over CDP, as the Python original does. A PEP 723
 * runner script does the loop (OpenAI chat to interception) and starts headless Chromium unless
 * `cdpUrl` is given.
 */
export const BrowserUseHarness = defineProgramHarness({
  id: 'browser_use',
  defaultVersion: '0.1.8',
  options: {
    /** Attach to this Chrome DevTools endpoint instead of starting Chromium. */
    cdpUrl: z.string().url().optional(),
  },
  dialect: 'chat',
  program: (version) => `browser-harness ${version} (PyPI, via uv) + Chromium over CDP`,
  install: installScript(
    (version) =>
      `${uvToolInstall(`browser-harness==${version}`)}\nif ! command -v chromium >/dev/null 2>&1; then (apt-get update && apt-get install -y chromium) >/dev/null; fi`,
  ),
  launch: ({ launch, scratch, prompt, options, version }) => {
    const runner = `${scratch}/browser_use_runner.py`;
    const argv = ['uv', 'run', '--script', runner, '--base-url', withV1(launch.endpoint.baseUrl)];
    argv.push('--model', launch.endpoint.model, '--prompt-file', `${scratch}/prompt.md`);
    if (options.cdpUrl) argv.push('--cdp-url', options.cdpUrl);
    return {
      argv,
      env: { HOME: `${scratch}/home`, OPENAI_API_KEY: launch.endpoint.secret },
      files: [
        { path: runner, content: browserUseRunner(version), mode: '700' },
        { path: `${scratch}/prompt.md`, content: foldedPrompt(prompt) },
      ],
    };
  },
});

/** Builds the harness from untyped options (validated; errors name the field). */
export const { createHarness } = BrowserUseHarness;
