// The soak's view of a journal, read without the addon (better-sqlite3 /
// node-postgres) through one connection kept for the whole run: the rows of
// the identities a round touched, the unfinished rows, whole-journal counts
// and the integrity verdict. Reading only what a round touched keeps a round
// cheap however large the journal grows; the counts still cover every row.
import Database from 'better-sqlite3'
import pg from 'pg'

import { PostgresTarget, SqliteTarget, type JournalTarget } from '../__test__/support/backends'
import { PG_INTEGRITY_SQL, RECEIPT_SQL, RECEIPT_SQL_PG } from '../__test__/support/journal_sql'

export interface Row {
  seq: number
  dispatch_id: string
  state: string
  attempts: number
  receipt_id: string
  /** The final receipt as JSON text, null unless final. */
  receipt: string | null
}

export interface Totals {
  rows: number
  receipts: number
  notFinal: number
  intents: number
  intentIds: number
  /** Rows of the failures table (failed attempts, kept after the identity is final). */
  failures: number
}

export interface Reader {
  /** The rows of these dispatch ids, with their intents' ids (in order). */
  rowsOf(dispatchIds: string[]): Promise<{ rows: Row[]; intents: { intent_id: string; dispatch_id: string }[] }>
  /** Rows not final (checkpointed or failed), oldest first. */
  unfinished(): Promise<Row[]>
  /** The dispatch ids among these that have a failure row. */
  failedOf(dispatchIds: string[]): Promise<Set<string>>
  totals(): Promise<Totals>
  /** Every row, for the final check. */
  all(): Promise<{ rows: Row[]; intents: { intent_id: string; dispatch_id: string }[] }>
  /** 'ok', or what is wrong (SQLite: integrity_check and foreign_key_check; PostgreSQL: the invariant SQL). */
  integrity(): Promise<string>
  close(): Promise<void>
}

const COLS = 'seq, dispatch_id, state, attempts, receipt_id'

class SqliteReader implements Reader {
  #db: Database.Database | null = null
  constructor(readonly path: string) {}
  get #conn(): Database.Database {
    return (this.#db ??= new Database(this.path, { readonly: true, fileMustExist: true }))
  }
  async rowsOf(ids: string[]) {
    const list = JSON.stringify(ids)
    const rows = this.#conn
      .prepare(
        `SELECT ${COLS}, ${RECEIPT_SQL} AS receipt FROM dispatches d WHERE dispatch_id IN (SELECT value FROM json_each(?)) ORDER BY seq`,
      )
      .all(list) as Row[]
    const intents = this.#conn
      .prepare(
        'SELECT intent_id, dispatch_id FROM intents WHERE dispatch_id IN (SELECT value FROM json_each(?)) ORDER BY seq',
      )
      .all(list) as { intent_id: string; dispatch_id: string }[]
    return { rows, intents }
  }
  async unfinished() {
    return this.#conn
      .prepare(`SELECT ${COLS}, NULL AS receipt FROM dispatches WHERE state IN ('checkpointed', 'failed') ORDER BY seq`)
      .all() as Row[]
  }
  async failedOf(ids: string[]) {
    const rows = this.#conn
      .prepare('SELECT DISTINCT dispatch_id FROM failures WHERE dispatch_id IN (SELECT value FROM json_each(?))')
      .all(JSON.stringify(ids)) as { dispatch_id: string }[]
    return new Set(rows.map((r) => r.dispatch_id))
  }
  async totals() {
    return this.#conn
      .prepare(
        `SELECT (SELECT count(*) FROM dispatches) AS rows, (SELECT count(DISTINCT receipt_id) FROM dispatches) AS receipts,
           (SELECT count(*) FROM dispatches WHERE state IN ('checkpointed', 'failed')) AS notFinal,
           (SELECT count(*) FROM intents) AS intents, (SELECT count(DISTINCT intent_id) FROM intents) AS intentIds,
           (SELECT count(*) FROM failures) AS failures`,
      )
      .get() as Totals
  }
  async all() {
    const rows = this.#conn
      .prepare(`SELECT ${COLS}, ${RECEIPT_SQL} AS receipt FROM dispatches d ORDER BY seq`)
      .all() as Row[]
    const intents = this.#conn.prepare('SELECT intent_id, dispatch_id FROM intents ORDER BY seq').all() as {
      intent_id: string
      dispatch_id: string
    }[]
    return { rows, intents }
  }
  async integrity() {
    const verdict = String(this.#conn.pragma('integrity_check', { simple: true }))
    const orphans = this.#conn.pragma('foreign_key_check') as unknown[]
    return verdict === 'ok' && orphans.length === 0 ? 'ok' : `${verdict}; ${orphans.length} foreign key violations`
  }
  async close() {
    this.#db?.close()
  }
}

const quoteIdent = (name: string) => `"${name.replaceAll('"', '""')}"`

class PgReader implements Reader {
  #client: Promise<pg.Client> | null = null
  constructor(
    readonly connectionString: string,
    readonly schema: string,
  ) {}
  async #q<T>(text: string, values: unknown[] = []): Promise<T[]> {
    this.#client ??= (async () => {
      const c = new pg.Client({ connectionString: this.connectionString })
      await c.connect()
      await c.query(`SET search_path TO ${quoteIdent(this.schema)}`)
      return c
    })()
    return (await (await this.#client).query(text, values)).rows as T[]
  }
  async rowsOf(ids: string[]) {
    const rows = await this.#q<Row>(
      `SELECT seq::float8 AS seq, dispatch_id, state, attempts::float8 AS attempts, receipt_id, ${RECEIPT_SQL_PG} AS receipt
       FROM dispatches d WHERE dispatch_id = ANY($1::text[]) ORDER BY seq`,
      [ids],
    )
    const intents = await this.#q<{ intent_id: string; dispatch_id: string }>(
      'SELECT intent_id, dispatch_id FROM intents WHERE dispatch_id = ANY($1::text[]) ORDER BY seq',
      [ids],
    )
    return { rows, intents }
  }
  async unfinished() {
    return this.#q<Row>(
      `SELECT seq::float8 AS seq, dispatch_id, state, attempts::float8 AS attempts, receipt_id, NULL AS receipt
       FROM dispatches WHERE state IN ('checkpointed', 'failed') ORDER BY seq`,
    )
  }
  async failedOf(ids: string[]) {
    const rows = await this.#q<{ dispatch_id: string }>(
      'SELECT DISTINCT dispatch_id FROM failures WHERE dispatch_id = ANY($1::text[])',
      [ids],
    )
    return new Set(rows.map((r) => r.dispatch_id))
  }
  async totals() {
    const [t] = await this.#q<Totals>(
      `SELECT (SELECT count(*) FROM dispatches)::int AS rows, (SELECT count(DISTINCT receipt_id) FROM dispatches)::int AS receipts,
         (SELECT count(*) FROM dispatches WHERE state IN ('checkpointed', 'failed'))::int AS "notFinal",
         (SELECT count(*) FROM intents)::int AS intents, (SELECT count(DISTINCT intent_id) FROM intents)::int AS "intentIds",
         (SELECT count(*) FROM failures)::int AS failures`,
    )
    return t!
  }
  async all() {
    const rows = await this.#q<Row>(
      `SELECT seq::float8 AS seq, dispatch_id, state, attempts::float8 AS attempts, receipt_id, ${RECEIPT_SQL_PG} AS receipt
       FROM dispatches d ORDER BY seq`,
    )
    const intents = await this.#q<{ intent_id: string; dispatch_id: string }>(
      'SELECT intent_id, dispatch_id FROM intents ORDER BY seq',
    )
    return { rows, intents }
  }
  async integrity() {
    const problems = await this.#q<{ problem: string }>(PG_INTEGRITY_SQL)
    return problems.length === 0 ? 'ok' : problems.map((p) => p.problem).join('; ')
  }
  async close() {
    if (this.#client) await (await this.#client).end()
  }
}

export function readerOf(target: JournalTarget): Reader {
  if (target instanceof SqliteTarget) return new SqliteReader(target.path)
  if (target instanceof PostgresTarget) return new PgReader(target.connectionString, target.schema)
  throw new Error(`soak: no reader for a ${target.backend} target`)
}
