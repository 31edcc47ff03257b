/**
 * Claiming an SQLite file for one reference component (the periodic_report
 * trigger store, the orchestrator's Turn journal): a file that already has
 * tables is accepted only when its meta table holds the component's schema
 * stamp, so another component's file (a hook journal, a capability store, a
 * Turn journal) is never written into. Internal to the package.
 */

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

/**
 * In one `BEGIN IMMEDIATE` transaction: refuses (with `claim.foreign()`) a
 * file that has tables and not the stamp, else applies the schema and records
 * the stamp.
 */
export function claimSqliteFile(db: ClaimableDatabase, claim: Claim): void {
  db.transaction(() => {
    const tables = db
      .prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`)
      .pluck()
      .all()
    if (tables.length > 0) {
      const stamp = tables.includes(claim.metaTable)
        ? db.prepare(`SELECT value FROM ${claim.metaTable} WHERE key = 'schema'`).pluck().get()
        : undefined
      if (stamp !== claim.stamp) throw claim.foreign()
    }
    db.exec(claim.schema)
    db.prepare(`INSERT OR IGNORE INTO ${claim.metaTable} (key, value) VALUES ('schema', ?)`).run(claim.stamp)
  }).immediate()
}
