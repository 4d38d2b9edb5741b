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

/** The pinned git ref (not run here: PyPI and vendor downloads are unreachable from this machine). */
export const NANO_RLM_REF = 'main';

/** Options of the `rlm` harness (`version`, a git ref, defaults to main). */
export const RlmHarnessOptionsSchema = SandboxProgramOptionsSchema.extend({
  /** Recursion depth of sub-model calls (default 1). */
  maxDepth: z.number().int().nonnegative().optional(),
}).strict();
export type RlmHarnessOptions = z.infer<typeof RlmHarnessOptionsSchema>;

/**
 * nano-rlm, a recursive language model: the root model works in an IPython REPL and may call
 * sub-models (`max_depth`). Installed from git with uv; its OpenAI-compatible calls go to
 * interception (`OPENAI_BASE_URL` / `OPENAI_API_KEY`).
 */
export class RlmHarness extends SandboxProgramHarness {
  constructor(options: RlmHarnessOptions = {}) {
    const version = options.version ?? NANO_RLM_REF;
    const maxDepth = options.maxDepth ?? 1;
    super(
      {
        id: 'rlm',
        info: notRunHereInfo({
          id: 'rlm',
          program: `nano-rlm (git ${version} of PrimeIntellect-ai/nano-rlm, via uv)`,
          version,
          dialect: 'chat',
        }),
        installScript: uvToolInstall(`git+https://github.com/PrimeIntellect-ai/nano-rlm@${version}`),
        plan: ({ launch, scratch, prompt }) => ({
          argv: [
            'rlm',
            '--model',
            launch.endpoint.model,
            '--max-depth',
            String(maxDepth),
            '--prompt-file',
            `${scratch}/prompt.md`,
          ],
          env: {
            HOME: `${scratch}/home`,
            OPENAI_BASE_URL: withV1(launch.endpoint.baseUrl),
            OPENAI_API_KEY: launch.endpoint.secret,
          },
          files: [{ path: `${scratch}/prompt.md`, content: foldedPrompt(prompt) }],
        }),
      },
      options,
    );
  }
}

/** Builds the harness from untyped options (validated; errors name the field). */
export function createHarness(options: unknown = {}): RlmHarness {
  return new RlmHarness(parseHarnessOptions({ harnessId: 'rlm', schema: RlmHarnessOptionsSchema, value: options }));
}
