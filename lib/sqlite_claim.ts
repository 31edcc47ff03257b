/**
 * Claiming an SQLite file for one reference component (the periodic_report
 * trigger store, the orchestrator's Turn journal): a file that already has
 * tables is accepted only when its meta table holds the component's schema
 * stamp, so another component's file (a hook journal, a capability store, a
 * Turn journal) is never written into. Internal to the package.
 *
 * What a file is (a special file, not SQLite, stamped with an
 * application_id) is the core's file recognition, asked through the addon.
 * The stamp claim itself stays here: it must run inside a `BEGIN IMMEDIATE`
 * transaction of the caller's own better-sqlite3 connection, which the core
 * cannot hold, so checking and stamping are one atomic step for that file.
 */

import { resolve } from 'node:path'

import { probeSqliteFile } from './addon.js'
import { LoopxHooksError } from './errors.js'

/** The peer once it loaded; the probe below runs once per process. */
let peer: unknown
/**
 * Why it did not load, from the first attempt: a second dlopen of the same
 * file only says "did not self-register", without the ABI it was built for.
 */
let failure: string | undefined

/**
 * better-sqlite3, the optional peer, loaded on first use so the core package
 * never needs it; `who` names the component in the error. Its native module
 * loads only at the first `new Database`, so an installed copy built for
 * another Node.js (as after every Node.js upgrade) would surface later as a
 * file SQLite "cannot open". An in-memory database opened here finds that
 * first: `ERR_LOOPX_PEER_MISSING` either way, with the message saying which
 * and how to rebuild.
 */
export function loadSqlitePeer<T>(who: string): T {
  if (peer !== undefined) return peer as T
  let Database: new (path: string) => { close(): unknown }
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- an optional peer, loaded only when it is used
    Database = require('better-sqlite3') as typeof Database
    new Database(':memory:').close()
  } catch (error) {
    const absent =
      (error as { code?: unknown }).code === 'MODULE_NOT_FOUND' && String(error).includes("'better-sqlite3'")
    if (absent)
      throw new LoopxHooksError('ERR_LOOPX_PEER_MISSING', `${who} needs the optional peer dependency better-sqlite3@12`)
    if (failure === undefined) {
      const built = /NODE_MODULE_VERSION (\d+)\./.exec(String(error))?.[1]
      failure = built === undefined ? '' : `: it was built for NODE_MODULE_VERSION ${built}`
    }
    throw new LoopxHooksError(
      'ERR_LOOPX_PEER_MISSING',
      `${who} needs the optional peer dependency better-sqlite3@12, which is installed but failed to load in ` +
        `Node.js ${process.version} (NODE_MODULE_VERSION ${process.versions.modules})${failure}. ` +
        'Rebuild it for this Node.js: `npm rebuild better-sqlite3`',
    )
  }
  peer = Database
  return Database as T
}

/**
 * The part of a better-sqlite3 `Database` a claim uses, so better-sqlite3's
 * types stay out of the declarations.
 */
export interface ClaimableDatabase {
  prepare(sql: string): {
    pluck(): { all(...params: never[]): unknown[]; get(...params: never[]): unknown }
    run(...params: string[]): unknown
  }
  exec(sql: string): unknown
  transaction(fn: () => void): { immediate(): void }
}

export interface Claim {
  /** The component's meta table: `(key TEXT PRIMARY KEY, value TEXT NOT NULL)`, created by `schema`. */
  metaTable: string
  /** The component's schema, idempotent (`CREATE TABLE IF NOT EXISTS`). */
  schema: string
  /** The value stored under key `schema` in the meta table. */
  stamp: string
  /** The error thrown for a file that has tables and not this stamp. */
  foreign: () => Error
}

/** better-sqlite3's constructor, as far as the pre-check uses it. */
export type ReadOnlyOpener = new (
  path: string,
  options: { readonly: true; fileMustExist: true; timeout?: number },
) => ClaimableDatabase & { close(): unknown; pragma(sql: string): unknown }

/** Whether `db` has tables and not the stamp of `claim`. Reads only. */
function foreignTo(db: ClaimableDatabase, claim: Claim): boolean {
  const tables = db
    .prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`)
    .pluck()
    .all()
  if (tables.length === 0) return false
  const stamp = tables.includes(claim.metaTable)
    ? db.prepare(`SELECT value FROM ${claim.metaTable} WHERE key = 'schema'`).pluck().get()
    : undefined
  return stamp !== claim.stamp
}

/**
 * Before a component opens `path` for writing (which switches it to WAL and
 * may checkpoint or roll back what it finds): refuses, leaving the main
 * file, `-wal` and `-journal` byte-identical, a special file
 * (`ERR_LOOPX_NOT_A_FILE`, never opened: a FIFO would block), a non-SQLite
 * file, a file stamped with an application_id (a hook journal, an inbox:
 * read from the header by the core, with plain I/O), and a file whose tables
 * lack the component's stamp (seen from a read-only connection, which cannot
 * roll back, switch or checkpoint anything). Returns the absolute path to
 * open: better-sqlite3 then never reads a `file:` name as a URI.
 */
export function precheckSqliteFile(Database: ReadOnlyOpener, path: string, claim: Claim): string {
  const absolute = resolve(path)
  const found = probeSqliteFile(absolute)
  if (found.kind === 'missing' || found.kind === 'empty') return absolute
  if (found.kind === 'not_sqlite' || found.applicationId !== 0) throw claim.foreign()
  let db: InstanceType<ReadOnlyOpener> | undefined
  let foreign: boolean
  try {
    db = new Database(absolute, { readonly: true, fileMustExist: true })
    foreign = foreignTo(db, claim)
  } catch {
    // Unreadable as a database (or a hot journal only a writer could roll back).
    foreign = true
  } finally {
    db?.close()
  }
  if (foreign) throw claim.foreign()
  return absolute
}

/**
 * In one `BEGIN IMMEDIATE` transaction: refuses (with `claim.foreign()`) a
 * file that has tables and not the stamp, else applies the schema and records
 * the stamp.
 */
export function claimSqliteFile(db: ClaimableDatabase, claim: Claim): void {
  db.transaction(() => {
    if (foreignTo(db, claim)) throw claim.foreign()
    db.exec(claim.schema)
    db.prepare(`INSERT OR IGNORE INTO ${claim.metaTable} (key, value) VALUES ('schema', ?)`).run(claim.stamp)
  }).immediate()
}
