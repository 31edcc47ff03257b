import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['__test__/**/*.spec.ts'],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    // Tests spawn child processes and share a native addon; forks isolate them.
    pool: 'forks',
  },
})
