/**
 * The capability's own store: the trigger reducer's window state and the
 * scheduler's recorded decisions, in a capability-owned SQLite file (never
 * the hook journal or the Turn journal). One transaction per evaluation,
 * keyed by intent_id, so an intent is evaluated at most once whatever the
 * hook journal's outbox says (the executor-side dedupe of RFC section 9).
 *
 * Uses better-sqlite3, the package's optional peer dependency.
 */
import type BetterSqlite3 from 'better-sqlite3'

import { expectArgs, expectMembers, expectOptions } from '../../args.js'
import { LoopxHooksError } from '../../index.js'
import { claimSqliteFile, loadSqlitePeer, precheckSqliteFile } from '../../sqlite_claim.js'
import { TRIGGER_EVENT_MEMBERS } from './event_kinds.js'
import {
  checkPolicy,
  reduceTrigger,
  type TriggerDecision,
  type TriggerEvent,
  type TriggerPolicy,
  type WindowState,
} from './reducer.js'

/** The schema stamp of a trigger store file. */
export const TRIGGER_STORE_SCHEMA = 'loopx_periodic_report_trigger_store_v1'

/** A recorded reducer decision. */
export interface StoredDecision extends TriggerDecision {
  /** When it was decided (epoch ms). */
  decidedAt: number
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS trigger_store_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;
CREATE TABLE IF NOT EXISTS trigger_windows (
  window TEXT PRIMARY KEY,
  completed_segments TEXT NOT NULL,
  promoted INTEGER NOT NULL,
  promoted_by TEXT
) STRICT;
CREATE TABLE IF NOT EXISTS trigger_decisions (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  intent_id TEXT NOT NULL UNIQUE,
  window TEXT NOT NULL,
  transition TEXT NOT NULL,
  segment_ref TEXT NOT NULL,
  decision TEXT NOT NULL CHECK (decision IN ('promote', 'hold')),
  reason TEXT NOT NULL,
  completions INTEGER NOT NULL,
  decided_at TEXT NOT NULL
) STRICT;
`

interface DecisionRow {
  seq: number
  intent_id: string
  window: string
  transition: string
  segment_ref: string
  decision: string
  reason: string
  completions: number
  decided_at: string
}

interface WindowRow {
  window: string
  completed_segments: string
  promoted: number
  promoted_by: string | null
}

function decisionOf(r: DecisionRow): StoredDecision {
  return {
    intentId: r.intent_id,
    window: r.window,
    transition: r.transition as TriggerDecision['transition'],
    segmentRef: r.segment_ref,
    decision: r.decision as TriggerDecision['decision'],
    reason: r.reason as TriggerDecision['reason'],
    completions: r.completions,
    decidedAt: Date.parse(r.decided_at),
  }
}

function windowOf(r: WindowRow): WindowState {
  return {
    window: r.window,
    completedSegments: JSON.parse(r.completed_segments),
    promoted: r.promoted === 1,
    promotedBy: r.promoted_by,
  }
}

/**
 * The capability's own SQLite store (never a journal's file): each window's
 * reducer state and every decision, once per intent_id. Needs better-sqlite3.
 */
export class TriggerStore {
  readonly #connection: BetterSqlite3.Database

  private constructor(db: BetterSqlite3.Database) {
    this.#connection = db
  }

  /** The open connection: a closed store is a coded error, not better-sqlite3's TypeError. */
  get #db(): BetterSqlite3.Database {
    if (!this.#connection.open)
      throw new LoopxHooksError('ERR_LOOPX_TRIGGER_STORE_CLOSED', 'the periodic_report trigger store is closed')
    return this.#connection
  }

  /**
   * Opens (creating on first use) the store file; refuses any other file.
   *
   * @param path - the store's file.
   * @param options - `busyTimeoutMs`, how long to wait for another
   *   process's write lock (default 5000).
   * @throws `ERR_LOOPX_INVALID_ARGUMENT` for arguments that are not what the
   *   signature says; `ERR_LOOPX_PEER_MISSING` without better-sqlite3, or with one
   *   built for another Node.js (the message says which);
   *   `ERR_LOOPX_NOT_A_TRIGGER_STORE` for another file; `ERR_LOOPX_NOT_A_FILE`.
   */
  static open(path: string, options?: { busyTimeoutMs?: number }): TriggerStore {
    expectArgs('TriggerStore.open', { path: [path, 'string'] })
    const { busyTimeoutMs } = expectOptions('TriggerStore.open', 'options', options, { busyTimeoutMs: 'number?' })
    const Database = loadSqlitePeer<typeof BetterSqlite3>('the periodic_report store')
    const claim = {
      metaTable: 'trigger_store_meta',
      schema: SCHEMA,
      stamp: TRIGGER_STORE_SCHEMA,
      foreign: () =>
        new LoopxHooksError('ERR_LOOPX_NOT_A_TRIGGER_STORE', 'the file is not a periodic_report trigger store'),
    }
    // A foreign file is refused untouched, before any connection may write.
    const absolute = precheckSqliteFile(Database, path, claim)
    let db: BetterSqlite3.Database | undefined
    try {
      db = new Database(absolute, { timeout: busyTimeoutMs ?? 5000 })
      db.pragma('journal_mode = WAL')
      db.pragma('synchronous = FULL')
      claimSqliteFile(db, claim)
      return new TriggerStore(db)
    } catch (error) {
      db?.close()
      if (error instanceof LoopxHooksError) throw error
      throw new LoopxHooksError(
        'ERR_LOOPX_NOT_A_TRIGGER_STORE',
        'cannot open the file as a periodic_report trigger store',
      )
    }
  }

  /**
   * Runs the reducer for `event` and records its decision with the new
   * window state, once per intent_id: a second evaluation of the same
   * intent returns the recorded decision and changes nothing.
   *
   * @throws `ERR_LOOPX_INVALID_ARGUMENT` for arguments that are not what the
   *   signature says; `ERR_LOOPX_TRIGGER_STORE_CLOSED` after `close`.
   */
  evaluate(
    event: TriggerEvent,
    policy: TriggerPolicy,
    decidedAt: number,
  ): { duplicate: boolean; decision: StoredDecision } {
    expectMembers('evaluate', 'event', event, TRIGGER_EVENT_MEMBERS, 'object')
    checkPolicy(policy)
    expectArgs('evaluate', { decidedAt: [decidedAt, 'number'] })
    if (!Number.isFinite(decidedAt))
      throw new LoopxHooksError('ERR_LOOPX_INVALID_ARGUMENT', 'evaluate: invalid argument: decidedAt (epoch ms)')
    return this.#db
      .transaction(() => {
        const existing = this.decision(event.intentId)
        if (existing) return { duplicate: true, decision: existing }
        const row = this.#db.prepare(`SELECT * FROM trigger_windows WHERE window = ?`).get(event.window) as
          WindowRow | undefined
        const { state, decision } = reduceTrigger(row ? windowOf(row) : null, event, policy)
        this.#db
          .prepare(
            `INSERT INTO trigger_windows (window, completed_segments, promoted, promoted_by) VALUES (?, ?, ?, ?)
             ON CONFLICT (window) DO UPDATE SET completed_segments = excluded.completed_segments,
               promoted = excluded.promoted, promoted_by = excluded.promoted_by`,
          )
          .run(state.window, JSON.stringify(state.completedSegments), state.promoted ? 1 : 0, state.promotedBy)
        this.#db
          .prepare(
            `INSERT INTO trigger_decisions (intent_id, window, transition, segment_ref, decision, reason, completions, decided_at)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
          )
          .run(
            decision.intentId,
            decision.window,
            decision.transition,
            decision.segmentRef,
            decision.decision,
            decision.reason,
            decision.completions,
            new Date(decidedAt).toISOString(),
          )
        return { duplicate: false, decision: { ...decision, decidedAt } }
      })
      .immediate()
  }

  /**
   * The decision recorded for an intent, or null.
   *
   * @throws `ERR_LOOPX_TRIGGER_STORE_CLOSED` after `close`.
   */
  decision(intentId: string): StoredDecision | null {
    expectArgs('decision', { intentId: [intentId, 'string'] })
    const row = this.#db.prepare(`SELECT * FROM trigger_decisions WHERE intent_id = ?`).get(intentId) as
      DecisionRow | undefined
    return row ? decisionOf(row) : null
  }

  /**
   * Every recorded decision, oldest first.
   *
   * @throws `ERR_LOOPX_TRIGGER_STORE_CLOSED` after `close`.
   */
  decisions(): StoredDecision[] {
    return (this.#db.prepare(`SELECT * FROM trigger_decisions ORDER BY seq`).all() as DecisionRow[]).map(decisionOf)
  }

  /**
   * Every window's state, in window order.
   *
   * @throws `ERR_LOOPX_TRIGGER_STORE_CLOSED` after `close`.
   */
  windows(): WindowState[] {
    return (this.#db.prepare(`SELECT * FROM trigger_windows ORDER BY window`).all() as WindowRow[]).map(windowOf)
  }

  /** Closes the store file. Idempotent. */
  close(): void {
    if (this.#connection.open) this.#connection.close()
  }
}
