/**
 * Loads the package under test. The bench compiles to `.bench/out/` (ESM),
 * so it reaches the package by absolute path from the repository root: the
 * compiled `dist/index.js` (CommonJS), which loads the addon named by
 * `NAPI_RS_NATIVE_LIBRARY_PATH` when `bench/bench.mjs` set it (a release build).
 */
import { existsSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

import type { DispatchOutcome, DispatchRequest } from '../bindings/index.js'

/**
 * The part of the package the bench uses, declared here rather than imported
 * from lib/*.ts, so that compiling the bench never depends on work in
 * progress elsewhere in lib/.
 */
export interface PgJournal {
  connectionString: string
  schema?: string
}

export interface Package {
  HookRuntime: {
    open(options: {
      /** A SQLite file path, or a PostgreSQL journal. */
      journal: string | { postgres: PgJournal }
      synchronous?: 'full' | 'normal'
      profile?: { enabled?: boolean; replay?: 'return' | 'verify' }
      attemptLedger?: boolean
      inlineCommit?: boolean
    }): Promise<{
      defineIntentKind(definition: unknown): void
      register(hook: { registration: unknown; provider: (input: any) => unknown }): void
      dispatch(request: DispatchRequest): Promise<DispatchOutcome>
      journal: { listDispatches(query: object): Promise<unknown> }
      metrics(): { writer: { wakes: number } }
      close(): Promise<void>
    }>
  }
  HookJournal: {
    open(path: string | { postgres: PgJournal }): Promise<{
      listDispatches(query: object): Promise<{ items: Array<{ receipt: unknown }> }>
      listIntents(query: object): Promise<{ items: Array<{ intent: unknown }> }>
      close(): Promise<void>
    }>
  }
  IntentKinds: new (definitions: unknown[]) => object
  validateRegistration(doc: unknown, kinds: object): { ok: boolean }
  validateHookResult(doc: unknown, registration: unknown, dispatchId: string, kinds: object): { ok: boolean }
}

function findRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url))
  for (;;) {
    const manifest = join(dir, 'package.json')
    if (existsSync(manifest) && JSON.parse(readFileSync(manifest, 'utf8')).name === 'loopx-hooks') return dir
    const up = dirname(dir)
    if (up === dir) throw new Error('bench: cannot find the loopx-hooks package root')
    dir = up
  }
}

export const ROOT = process.env.LOOPX_BENCH_ROOT ?? findRoot()
export const require = createRequire(join(ROOT, 'package.json'))
export const pkg: Package = require(join(ROOT, 'dist', 'index.js'))
