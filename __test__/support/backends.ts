// The journal backends the behavioural suite runs against, from one source:
// each spec loops over BACKENDS (describe.each) and asks its backend for a
// fresh journal target. A target knows how to open that journal in-process
// (HookRuntime.open options, HookJournal.open argument), in a child process
// (one JSON argv, see children/target.mjs), from the CLI (--db ...), how to
// read every persisted byte for the secrecy scans, how to read its rows with
// an independent client (no addon), and how to remove itself.
//
// PostgreSQL needs LOOPX_TEST_PG_URL (the vitest globalSetup starts a
// throwaway server and sets it). Without it every postgres case FAILS with a
// message saying so: a missing server must never look like a pass.
import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import Database from 'better-sqlite3'
import pg from 'pg'

import { HookJournal, type HookRuntimeOptions, type JournalTarget as LibJournalTarget } from '../../lib/index.js'
import { PG_INTEGRITY_SQL, RECEIPT_SQL, RECEIPT_SQL_PG } from './journal_sql'

export type BackendName = 'sqlite' | 'postgres'

export interface PgJournalOptions {
  connectionString: string
  schema: string
}

/** What HookJournal.open / openReadOnly take for a target (the library's JournalTarget). */
export type JournalArg = LibJournalTarget

export interface Haystack {
  name: string
  bytes: Buffer
}

/** A journal's rows as an independent client reads them (crash and multi-process checks). */
export interface RawJournal {
  rows: {
    seq: number
    dispatch_id: string
    state: string
    attempts: number
    receipt_id: string
    receipt: string | null
  }[]
  intents: { intent_id: string; dispatch_id: string }[]
  failures: number
  /** 'ok', or what is wrong. */
  integrity: string
}

/** Open options a test varies; `inlineCommit` is SQLite's alone (PostgreSQL refuses it). */
export type TargetExtra = Pick<HookRuntimeOptions, 'synchronous' | 'inlineCommit'>

/** A test journal and everything the suite does with it (the library's JournalTarget is only `journal` here). */
export interface JournalTarget {
  readonly backend: BackendName
  /** HookRuntime.open options for this journal (`synchronous`: SQLite's pragma; on PostgreSQL, synchronous_commit off for 'normal'). */
  runtimeOptions(extra?: TargetExtra): HookRuntimeOptions
  /** HookJournal.open / openReadOnly argument. */
  readonly journal: JournalArg
  /** `--db ...` arguments of the CLI. */
  readonly cliArgs: string[]
  /** One argv item a child passes to children/target.mjs: the same open options, as JSON. */
  childArg(extra?: TargetExtra): string
  /** Every persisted byte: SQLite the journal file, -wal, -shm, -journal; PostgreSQL a full pg_dump of the schema. */
  persistedBytes(): Haystack[]
  /** The rows, read without the addon (better-sqlite3 / node-postgres). */
  readRaw(): Promise<RawJournal>
  /** Whether the journal exists (SQLite: its file; PostgreSQL: its schema). */
  exists(): Promise<boolean>
  /**
   * The `socket:[inode]` links of /proc/self/fd that are the journal's own
   * connections (TCP to the PostgreSQL server's port); none for SQLite.
   */
  journalSockets(): Set<string>
  /**
   * The journal's server sessions of live process `pid` (its TCP ports to the
   * PostgreSQL server), read from /proc just before a SIGKILL; none for SQLite.
   */
  sessionsOf(pid: number): number[]
  /**
   * Resolves once none of those sessions is left on the server. A killed
   * client's COMMIT may already be on its way: PostgreSQL settles it (commits
   * or rolls back) when it reads it, so "the journal as the crash left it"
   * is the journal after that. SQLite: at once (the process was the writer).
   */
  sessionsGone(sessions: number[]): Promise<void>
  cleanup(): Promise<void>
}

export interface Backend {
  readonly name: BackendName
  /** A fresh journal that does not exist yet; `label` names the file (SQLite) or tags the schema (PostgreSQL). */
  target(label?: string): JournalTarget
}

/** Every regular file under `dir`, recursively (none when it does not exist). */
export function filesUnder(dir: string): Haystack[] {
  if (!existsSync(dir)) return []
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .map((name) => join(dir, name))
    .filter((p) => existsSync(p) && statSync(p).isFile())
    .map((p) => ({ name: p, bytes: readFileSync(p) }))
}

// ---------------------------------------------------------------- SQLite

export class SqliteTarget implements JournalTarget {
  readonly backend = 'sqlite'
  readonly dir: string
  readonly path: string
  constructor(label: string) {
    this.dir = mkdtempSync(join(tmpdir(), 'loopx-hooks-test-'))
    this.path = join(this.dir, `${label}.journal`)
  }
  runtimeOptions(extra: TargetExtra = {}): HookRuntimeOptions {
    return { journal: this.path, ...extra }
  }
  get journal(): JournalArg {
    return this.path
  }
  get cliArgs(): string[] {
    return ['--db', this.path]
  }
  childArg(extra: TargetExtra = {}): string {
    return JSON.stringify({ runtime: this.runtimeOptions(extra), journal: this.journal })
  }
  persistedBytes(): Haystack[] {
    // Folders too: the attempt ledgers live in `<journal>-attempts/`.
    return filesUnder(this.dir)
  }
  async readRaw(): Promise<RawJournal> {
    const db = new Database(this.path, { readonly: true, fileMustExist: true })
    try {
      const rows = db
        .prepare(
          `SELECT seq, dispatch_id, state, attempts, receipt_id, ${RECEIPT_SQL} AS receipt FROM dispatches d ORDER BY seq`,
        )
        .all() as RawJournal['rows']
      const intents = db
        .prepare('SELECT intent_id, dispatch_id FROM intents ORDER BY seq')
        .all() as RawJournal['intents']
      const failures = (db.prepare('SELECT count(*) AS n FROM failures').get() as { n: number }).n
      const integrity = String(db.pragma('integrity_check', { simple: true }))
      return { rows, intents, failures, integrity }
    } finally {
      db.close()
    }
  }
  async exists(): Promise<boolean> {
    return existsSync(this.path)
  }
  journalSockets(): Set<string> {
    return new Set()
  }
  sessionsOf(): number[] {
    return []
  }
  async sessionsGone(): Promise<void> {}
  async cleanup(): Promise<void> {
    rmSync(this.dir, { recursive: true, force: true })
  }
}

// ---------------------------------------------------------------- PostgreSQL

/** The test server's connection string; throws (so the case fails) when it is not configured. */
export function pgUrl(): string {
  const url = process.env.LOOPX_TEST_PG_URL
  if (!url)
    throw new Error(
      'LOOPX_TEST_PG_URL is not set: the postgres cases of the journal suite need a PostgreSQL server ' +
        "(vitest's globalSetup starts one; or set LOOPX_TEST_PG_URL=postgres://USER@HOST:PORT/DB, a role allowed to CREATE SCHEMA)",
    )
  return url
}

/** Runs `body` with a node-postgres client on `url`, closed afterwards. */
export async function withPg<T>(url: string, body: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return await body(client)
  } finally {
    await client.end()
  }
}

/** TCP connections (as seen from process `pid`'s network namespace) whose remote port is `port`. */
function tcpToPort(pid: string, port: number): { inode: string; localPort: number }[] {
  const found: { inode: string; localPort: number }[] = []
  // /proc/PID/net/tcp{,6}: `sl local_address rem_address st ... inode`, addresses as HEXIP:HEXPORT.
  for (const table of [`/proc/${pid}/net/tcp`, `/proc/${pid}/net/tcp6`]) {
    let text: string
    try {
      text = readFileSync(table, 'utf8')
    } catch {
      continue
    }
    for (const line of text.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/)
      if (cols.length < 10 || parseInt(cols[2]!.split(':')[1]!, 16) !== port) continue
      found.push({ inode: cols[9]!, localPort: parseInt(cols[1]!.split(':')[1]!, 16) })
    }
  }
  return found
}

const quoteIdent = (name: string) => `"${name.replaceAll('"', '""')}"`

export class PostgresTarget implements JournalTarget {
  readonly backend = 'postgres'
  readonly connectionString: string
  readonly schema: string
  constructor(connectionString: string, label: string) {
    this.connectionString = connectionString
    // Lower-case letters, digits and '_' only: a plain identifier, never quoted differently by any tool.
    this.schema = `t_${label.toLowerCase().replace(/[^a-z0-9_]/g, '_')}_${randomBytes(6).toString('hex')}`
  }
  get #postgres(): PgJournalOptions {
    return { connectionString: this.connectionString, schema: this.schema }
  }
  runtimeOptions(extra: TargetExtra = {}): HookRuntimeOptions {
    return { journal: { postgres: this.#postgres }, ...extra }
  }
  get journal(): JournalArg {
    return { postgres: this.#postgres }
  }
  get cliArgs(): string[] {
    return ['--db', this.connectionString, '--schema', this.schema]
  }
  childArg(extra: TargetExtra = {}): string {
    return JSON.stringify({ runtime: this.runtimeOptions(extra), journal: this.journal })
  }
  persistedBytes(): Haystack[] {
    // Data and DDL of the schema, as the server holds them (plain format: COPY text of every row).
    const dump = execFileSync('pg_dump', ['--dbname', this.connectionString, '--schema', this.schema], {
      maxBuffer: 256 * 1024 * 1024,
    })
    // The server counts attempts: a PostgreSQL journal writes nothing on the host.
    return [{ name: `pg_dump --schema=${this.schema}`, bytes: dump }]
  }
  async readRaw(): Promise<RawJournal> {
    return withPg(this.connectionString, async (c) => {
      await c.query(`SET search_path TO ${quoteIdent(this.schema)}`)
      const rows = (
        await c.query(
          `SELECT seq::float8 AS seq, dispatch_id, state, attempts::float8 AS attempts, receipt_id, ${RECEIPT_SQL_PG} AS receipt
           FROM dispatches d ORDER BY seq`,
        )
      ).rows as RawJournal['rows']
      const intents = (await c.query('SELECT intent_id, dispatch_id FROM intents ORDER BY seq'))
        .rows as RawJournal['intents']
      const failures = Number((await c.query('SELECT count(*) AS n FROM failures')).rows[0].n)
      const problems = (await c.query(PG_INTEGRITY_SQL)).rows.map((r: { problem: string }) => r.problem)
      return { rows, intents, failures, integrity: problems.length === 0 ? 'ok' : problems.join('; ') }
    })
  }
  async exists(): Promise<boolean> {
    return withPg(this.connectionString, async (c) => {
      const r = await c.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [this.schema])
      return r.rowCount === 1
    })
  }
  get #port(): number {
    return Number(new URL(this.connectionString).port || 5432)
  }
  journalSockets(): Set<string> {
    return new Set(tcpToPort('self', this.#port).map((c) => `socket:[${c.inode}]`))
  }
  sessionsOf(pid: number): number[] {
    const mine = new Set(
      readdirSync(`/proc/${pid}/fd`).flatMap((fd) => {
        try {
          return [readlinkSync(`/proc/${pid}/fd/${fd}`)]
        } catch {
          return []
        }
      }),
    )
    return tcpToPort(String(pid), this.#port)
      .filter((c) => mine.has(`socket:[${c.inode}]`))
      .map((c) => c.localPort)
  }
  async sessionsGone(sessions: number[]): Promise<void> {
    if (sessions.length === 0) return
    await withPg(this.connectionString, async (c) => {
      const until = Date.now() + 30_000
      for (;;) {
        const r = await c.query('SELECT count(*)::int AS n FROM pg_stat_activity WHERE client_port = ANY($1::int[])', [
          sessions,
        ])
        if (r.rows[0].n === 0) return
        if (Date.now() > until) throw new Error(`server sessions of a killed process still open: ${r.rows[0].n}`)
        await new Promise((resolve) => setTimeout(resolve, 10))
      }
    })
  }
  async cleanup(): Promise<void> {
    await withPg(this.connectionString, (c) => c.query(`DROP SCHEMA IF EXISTS ${quoteIdent(this.schema)} CASCADE`))
  }
}

// ---------------------------------------------------------------- the list

export const SQLITE: Backend = { name: 'sqlite', target: (label = 'hooks') => new SqliteTarget(label) }
export const POSTGRES: Backend = { name: 'postgres', target: (label = 'j') => new PostgresTarget(pgUrl(), label) }

/** A fresh journal schema on the server at `url` (a test's own server). */
export const postgresTarget = (url: string, label = 'j') => new PostgresTarget(url, label)

/** Every backend, for `describe.each(BACKENDS)`. */
export const BACKENDS: readonly Backend[] = [SQLITE, POSTGRES]

/** Tracks targets of one suite; `cleanup()` removes them all. */
export class Targets {
  readonly #targets: JournalTarget[] = []
  constructor(readonly backend: Backend) {}
  fresh(label?: string): JournalTarget {
    const t = this.backend.target(label)
    this.#targets.push(t)
    return t
  }
  async cleanup(): Promise<void> {
    for (const t of this.#targets.splice(0)) await t.cleanup()
  }
}

/** HookJournal.open / openReadOnly on a target (a path, or `{ postgres }`). */
export const openJournal = (target: JournalTarget) => HookJournal.open(target.journal)
export const openJournalReadOnly = (target: JournalTarget) => HookJournal.openReadOnly(target.journal)
