import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['__test__/**/*.spec.ts'],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    // Tests spawn child processes and share a native addon; forks isolate them.
    pool: 'forks',
    // One throwaway PostgreSQL server for the run, unless LOOPX_TEST_PG_URL names one (scripts/pg-server.mjs).
    globalSetup: ['./__test__/pg_global_setup.ts'],
  },
})
