import { defineConfig } from 'vitest/config';

// The fault suite restarts the shared MariaDB and RabbitMQ: its files run one at a time, after the
// main suite (scripts/test.sh), never beside other tests.
export default defineConfig({
  test: {
    include: ['test/faults/**/*.test.ts'],
    testTimeout: 600_000,
    hookTimeout: 180_000,
    pool: 'forks',
    fileParallelism: false,
    maxWorkers: 1,
  },
});
