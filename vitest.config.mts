import { dirname, join, relative, resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'

import type { Plugin } from 'vite'
import { defineConfig } from 'vitest/config'

const root = dirname(fileURLToPath(import.meta.url))
const lib = join(root, 'lib') + sep
const dist = join(root, 'dist')

/**
 * The tests run the compiled package, as a user does: an import of
 * `../lib/<x>.js` (type-checked against lib/<x>.ts by tsconfig.json) loads
 * dist/<x>.js, which `tsc -b tsconfig.build.json` (scripts/setup.sh) emits.
 * The sources themselves cannot run here: lib/addon.ts loads the addon's
 * CommonJS loader with `require`. The typed example imports the package by
 * its name, which is dist/index.js too.
 */
const runCompiled: Plugin = {
  name: 'loopx-hooks:lib-to-dist',
  enforce: 'pre',
  resolveId(source, importer) {
    if (source === 'loopx-hooks') return join(dist, 'index.js')
    if (!importer || !source.startsWith('.') || !source.endsWith('.js')) return null
    const path = resolve(dirname(importer), source)
    return path.startsWith(lib) ? join(dist, relative(lib, path)) : null
  },
}

export default defineConfig({
  plugins: [runCompiled],
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
