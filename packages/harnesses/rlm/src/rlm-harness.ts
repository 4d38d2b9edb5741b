import { defineProgramHarness, foldedPrompt, installScript, uvToolInstall, withV1 } from '@troupe/program-kit';
import { z } from 'zod';

/**
 * nano-rlm, a recursive language model: the root model works in an IPython REPL and may call
 * sub-models (`maxDepth`). Installed from git with uv (`version` is a git ref, default `main`); its
 * OpenAI-compatible calls go to interception (`OPENAI_BASE_URL` / `OPENAI_API_KEY`).
 */
export const RlmHarness = defineProgramHarness({
  id: 'rlm',
  defaultVersion: 'main',
  options: {
    /** Recursion depth of sub-model calls (default 1). */
    maxDepth: z.number().int().nonnegative().optional(),
  },
  dialect: 'chat',
  program: (version) => `nano-rlm (git ${version} of PrimeIntellect-ai/nano-rlm, via uv)`,
  install: installScript((version) => uvToolInstall(`git+https://github.com/PrimeIntellect-ai/nano-rlm@${version}`)),
  launch: ({ launch, scratch, prompt, options }) => ({
    argv: [
      'rlm',
      '--model',
      launch.endpoint.model,
      '--max-depth',
      String(options.maxDepth ?? 1),
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
});

/** Builds the harness from untyped options (validated; errors name the field). */
export const { createHarness } = RlmHarness;
