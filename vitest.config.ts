import { relative, sep } from 'node:path';
import { defineConfig } from 'vitest/config';

// The in-repo dev loop runs on sources: the `@troupe/source` export condition resolves every
// workspace package to its `src/*.ts` (no build needed). Child processes that tests spawn
// (`node --import tsx …`, worker threads) inherit the condition through NODE_OPTIONS.
const sourceCondition = '@troupe/source';
if (!(process.env.NODE_OPTIONS ?? '').includes(`--conditions=${sourceCondition}`)) {
  process.env.NODE_OPTIONS = `${process.env.NODE_OPTIONS ?? ''} --conditions=${sourceCondition}`.trim();
}

// Globs are relative to the repository root, whatever the working directory; run from a
// package folder (`pnpm --filter <pkg> test`), only that package's tests are collected.
const repo = import.meta.dirname;
const here = relative(repo, process.cwd()).split(sep).join('/');
const scope = here && !here.startsWith('..') ? here : '{packages,apps,tests}';
const exclude = ['**/node_modules/**', '**/dist/**', '**/.cache/**'];
const conditions = [sourceCondition, 'module', 'node', 'development|production'];

export default defineConfig({
  root: repo,
  resolve: { conditions },
  ssr: { resolve: { conditions, externalConditions: [sourceCondition] } },
  test: {
    testTimeout: 60_000,
    hookTimeout: 180_000,
    // Test kinds by suffix, one project each. `pnpm test` runs unit + integration (the README's
    // one command), `pnpm test:unit` is the fast loop, `pnpm test:reliability` the long suites.
    projects: [
      {
        // Beside the code; in-process, loopback servers at most.
        extends: true,
        test: {
          name: 'unit',
          include: [`${scope}/**/*.test.ts`],
          exclude: [...exclude, '**/*.integration.test.ts', '**/*.reliability.test.ts'],
        },
      },
      {
        // Real programs: the harness CLIs, Docker, Chromium, python, and our own CLIs run end to
        // end in child processes. Without the program (no TROUPE_DOCKER_HOST, no Chromium) a
        // suite says it is skipped.
        extends: true,
        test: {
          name: 'integration',
          include: [`${scope}/**/*.integration.test.ts`],
          exclude,
          testTimeout: 120_000,
          hookTimeout: 300_000,
        },
      },
      {
        extends: true,
        test: {
          name: 'reliability',
          include: [`${scope}/**/*.reliability.test.ts`],
          exclude,
          testTimeout: 600_000,
          hookTimeout: 600_000,
        },
      },
    ],
  },
});
