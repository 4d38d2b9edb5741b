import {
  foldedPrompt,
  notRunHereInfo,
  parseHarnessOptions,
  SandboxProgramHarness,
  SandboxProgramOptionsSchema,
  uvToolInstall,
  withV1,
} from '@troupe/harness-kit';
import { z } from 'zod';
import { browserUseRunner } from './runner-script.ts';

/** The pinned release (not run here: PyPI and vendor downloads are unreachable from this machine). */
export const BROWSER_HARNESS_VERSION = '0.1.8';

/** Options of the `browser_use` harness (`version` defaults to 0.1.8). */
export const BrowserUseHarnessOptionsSchema = SandboxProgramOptionsSchema.extend({
  /** Attach to this Chrome DevTools endpoint instead of starting Chromium. */
  cdpUrl: z.string().url().optional(),
}).strict();
export type BrowserUseHarnessOptions = z.infer<typeof BrowserUseHarnessOptionsSchema>;

/**
 * A chat loop with one `browser` tool that runs Python against a live Chromium through
 * browser-harness 0.1.8 over CDP, as the Python original does. A PEP 723 runner script does the
 * loop (OpenAI chat to interception) and starts headless Chromium unless `cdpUrl` is given.
 */
export class BrowserUseHarness extends SandboxProgramHarness {
  constructor(options: BrowserUseHarnessOptions = {}) {
    const version = options.version ?? BROWSER_HARNESS_VERSION;
    const cdpUrl = options.cdpUrl;
    super(
      {
        id: 'browser_use',
        info: notRunHereInfo({
          id: 'browser_use',
          program: `browser-harness ${version} (PyPI, via uv) + Chromium over CDP`,
          version,
          dialect: 'chat',
        }),
        installScript: `${uvToolInstall(`browser-harness==${version}`)}\nif ! command -v chromium >/dev/null 2>&1; then (apt-get update && apt-get install -y chromium) >/dev/null; fi`,
        plan: ({ launch, scratch, prompt }) => {
          const runner = `${scratch}/browser_use_runner.py`;
          const argv = [
            'uv',
            'run',
            '--script',
            runner,
            '--base-url',
            withV1(launch.endpoint.baseUrl),
            '--model',
            launch.endpoint.model,
            '--prompt-file',
            `${scratch}/prompt.md`,
          ];
          if (cdpUrl) argv.push('--cdp-url', cdpUrl);
          return {
            argv,
            env: { HOME: `${scratch}/home`, OPENAI_API_KEY: launch.endpoint.secret },
            files: [
              { path: runner, content: browserUseRunner(BROWSER_HARNESS_VERSION), mode: '700' },
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
export function createHarness(options: unknown = {}): BrowserUseHarness {
  return new BrowserUseHarness(
    parseHarnessOptions({ harnessId: 'browser_use', schema: BrowserUseHarnessOptionsSchema, value: options }),
  );
}
