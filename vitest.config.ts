import { defineConfig } from 'vitest/config';

const exclude = ['**/node_modules/**', '**/dist/**', '**/.cache/**'];

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 120_000,
    projects: [
      {
        test: {
          name: 'unit',
          testTimeout: 60_000,
          hookTimeout: 180_000,
          include: ['packages/**/*.test.ts', 'apps/**/*.test.ts'],
          exclude: [...exclude, '**/*.reliability.test.ts'],
        },
      },
      {
        test: {
          name: 'reliability',
          include: ['packages/**/*.reliability.test.ts', 'apps/**/*.reliability.test.ts'],
          exclude,
          testTimeout: 600_000,
          hookTimeout: 600_000,
        },
      },
    ],
  },
});
