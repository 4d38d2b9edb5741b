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
const scope = here && !here.startsWith('..') ? here : '{packages,apps}';
const exclude = ['**/node_modules/**', '**/dist/**', '**/.cache/**'];
const conditions = [sourceCondition, 'module', 'node', 'development|production'];

export default defineConfig({
  root: repo,
  resolve: { conditions },
  ssr: { resolve: { conditions, externalConditions: [sourceCondition] } },
  test: {
    testTimeout: 60_000,
    hookTimeout: 120_000,
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          testTimeout: 60_000,
          hookTimeout: 180_000,
          include: [`${scope}/**/*.test.ts`],
          exclude: [...exclude, '**/*.reliability.test.ts'],
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
