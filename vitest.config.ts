import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'test/**/*.test.tsx'],
    // Run after this suite, one file at a time, by vitest.faults.config.ts.
    exclude: ['test/faults/**', '**/node_modules/**'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Two cores: more workers only fight over the same databases and broker.
    maxWorkers: 2,
  },
});
