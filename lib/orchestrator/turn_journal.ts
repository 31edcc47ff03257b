/**
 * The reference Turn journal: the primary settlement's own SQLite file,
 * separate from the hook journal. It holds settlements with their ordered
 * primary steps, the committed durable-writeback receipts, quota spends, and
 * one dispatch marker per receipt whose hook dispatch completed.
 *
 * Storage is better-sqlite3 (an optional peer dependency of the package,
 * needed only by `loopx-hooks/orchestrator`; the core addon does not use it).
 * Writes are `BEGIN IMMEDIATE` transactions in WAL mode with
 * synchronous=FULL, so a receipt is durable when its transaction commits.
 *
 * Every stored value is an id the primary validation accepted (opaque refs),
 * a digest, a code or a timestamp: no prose, path, URL or exception text.
 */
import { createHash } from 'node:crypto'
import type BetterSqlite3 from 'better-sqlite3'

import { canonicalJson, LoopxHooksError, type LoopxHooksErrorCode } from '../index.js'
import { claimSqliteFile, loadSqlitePeer, precheckSqliteFile } from '../sqlite_claim.js'
import type { DispatchRequest, IntegrityVerdict } from '../../bindings/index'
import { expectMembers } from '../args.js'
import { quotaSpendEligible, QUOTA_UNITS_PER_SETTLEMENT } from './quota.js'
import type { ValidWriteback, WritebackKind } from './validate.js'
import {
  PRIMARY_STEPS,
  type CommittedRecord,
  type DispatchMarker,
  type MarkerOutcome,
  type PrimaryStepName,
  type QuotaSpend,
  type SettlementRecord,
  type StepRow,
  type TurnJournalContents,
} from './rows_types.js'
import {
  receiptOf,
  markerOf,
  settlementOf,
  spendOf,
  stepOf,
  storedOutcomes,
  type MarkerRow,
  type ReceiptRow,
  type SettlementRow,
  type SpendRow,
  type StepSqlRow,
} from './turn_rows.js'

type Database = BetterSqlite3.Database

export {
  PRIMARY_STEPS,
  type CommittedRecord,
  type DispatchMarker,
  type MarkerOutcome,
  type PrimaryStepName,
  type QuotaSpend,
  type SettlementRecord,
  type StepRow,
  type TurnJournalContents,
}

/** The Turn journal's schema name, stamped in its meta table. */
export const TURN_JOURNAL_SCHEMA = 'loopx_reference_turn_journal_v1'

export type WritebackResult =
  { status: 'committed' | 'replayed'; record: CommittedRecord } | { status: 'rejected'; code: 'effect_conflict' }

export type SpendResult =
  { status: 'spent' | 'already_spent'; spend: QuotaSpend } | { status: 'not_eligible'; spend: null }

const SCHEMA = `
CREATE TABLE IF NOT EXISTS turn_journal_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;
CREATE TABLE IF NOT EXISTS settlements (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  effect_id TEXT NOT NULL UNIQUE,
  goal_id TEXT NOT NULL,
  agent_id TEXT NOT NULL,
  todo_id TEXT NOT NULL,
  turn_instance_id TEXT NOT NULL,
  event_kind TEXT NOT NULL CHECK (event_kind IN ('todo_completed', 'replan_recorded')),
  state_revision TEXT NOT NULL,
  fact_refs TEXT NOT NULL,
  request_digest TEXT NOT NULL,
  created_at TEXT NOT NULL
) STRICT;
CREATE TABLE IF NOT EXISTS settlement_steps (
  effect_id TEXT NOT NULL REFERENCES settlements (effect_id),
  ordinal INTEGER NOT NULL,
  step TEXT NOT NULL CHECK (step IN ('validate', 'durable_writeback', 'quota_spend')),
  status TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  PRIMARY KEY (effect_id, ordinal)
) STRICT;
CREATE TABLE IF NOT EXISTS receipts (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  receipt_id TEXT NOT NULL UNIQUE,
  effect_id TEXT NOT NULL UNIQUE REFERENCES settlements (effect_id),
  step_kind TEXT NOT NULL CHECK (step_kind = 'durable_writeback'),
  status TEXT NOT NULL CHECK (status = 'committed'),
  checkpointed INTEGER NOT NULL CHECK (checkpointed IN (0, 1)),
  state_revision TEXT NOT NULL,
  committed_at TEXT NOT NULL
) STRICT;
CREATE TABLE IF NOT EXISTS quota_spends (
  receipt_id TEXT PRIMARY KEY REFERENCES receipts (receipt_id),
  effect_id TEXT NOT NULL,
  units INTEGER NOT NULL,
  spent_at TEXT NOT NULL
) STRICT;
CREATE TABLE IF NOT EXISTS dispatch_markers (
  receipt_id TEXT PRIMARY KEY REFERENCES receipts (receipt_id),
  admitted INTEGER NOT NULL,
  refusal TEXT,
  outcomes TEXT NOT NULL,
  completed_at TEXT NOT NULL
) STRICT;
`

function sha256(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex')
}

/** better-sqlite3, loaded on first use so the core package never needs it. */
function sqlite(): typeof BetterSqlite3 {
  return loadSqlitePeer<typeof BetterSqlite3>('loopx-hooks/orchestrator')
}

/** Opens an SQLite file for a reference component: WAL, synchronous=FULL, foreign keys, busy timeout. */
function openSqlite(path: string, busyTimeoutMs: number, errorCode: LoopxHooksErrorCode): Database {
  const Database = sqlite()
  let db: Database | undefined
  try {
    db = new Database(path, { timeout: busyTimeoutMs })
    db.pragma('journal_mode = WAL')
    db.pragma('synchronous = FULL')
    db.pragma('foreign_keys = ON')
    return db
  } catch {
    db?.close()
    // The SQLite message may name the file; only the stable code leaves.
    throw new LoopxHooksError(errorCode, 'cannot open the file as an SQLite database')
  }
}

/** Ids, digests and codes only; see the module comment. */
export class TurnJournal {
  readonly #db: Database

  private constructor(db: Database) {
    this.#db = db
  }

  static open(path: string, options: { busyTimeoutMs?: number } = {}): TurnJournal {
    const claim = {
      metaTable: 'turn_journal_meta',
      schema: SCHEMA,
      stamp: TURN_JOURNAL_SCHEMA,
      foreign: () => new LoopxHooksError('ERR_LOOPX_NOT_A_TURN_JOURNAL', 'the file is not a Turn journal'),
    }
    // Another file (a hook journal, a capability store) is refused untouched,
    // before the connection that switches to WAL exists.
    const absolute = precheckSqliteFile(sqlite(), path, claim)
    const db = openSqlite(absolute, options.busyTimeoutMs ?? 5000, 'ERR_LOOPX_NOT_A_TURN_JOURNAL')
    try {
      // Claimed again under the write lock: another process may have raced us.
      claimSqliteFile(db, claim)
    } catch (error) {
      db.close()
      if (error instanceof LoopxHooksError) throw error
      throw new LoopxHooksError('ERR_LOOPX_NOT_A_TURN_JOURNAL', 'the file is not a Turn journal')
    }
    return new TurnJournal(db)
  }

  /**
   * The durable writeback: settlement, its ordered steps and the committed,
   * checkpointed receipt in one transaction. The same request again is a
   * replay returning the original receipt; another request for the same
   * effect is rejected (`effect_conflict`) and changes nothing.
   */
  writeback(request: ValidWriteback, committedAt: string): WritebackResult {
    const requestDigest = sha256(canonicalJson({ domain: 'loopx_reference_turn_request_v0', ...request }))
    return this.#db
      .transaction((): WritebackResult => {
        const existing = this.#db
          .prepare(`SELECT request_digest FROM settlements WHERE effect_id = ?`)
          .pluck()
          .get(request.effectId) as string | undefined
        if (existing !== undefined) {
          if (existing !== requestDigest) return { status: 'rejected', code: 'effect_conflict' }
          return { status: 'replayed', record: this.#record(request.effectId)! }
        }
        const receiptId =
          'rcpt_' +
          sha256(
            canonicalJson({
              domain: 'loopx_reference_turn_receipt_v0',
              effect_id: request.effectId,
              goal_id: request.goalId,
              agent_id: request.agentId,
              todo_id: request.todoId,
              turn_instance_id: request.turnInstanceId,
              event_kind: request.kind,
              state_revision: request.stateRevision,
            }),
          )
        this.#db
          .prepare(
            `INSERT INTO settlements (effect_id, goal_id, agent_id, todo_id, turn_instance_id, event_kind, state_revision, fact_refs, request_digest, created_at)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
          )
          .run(
            request.effectId,
            request.goalId,
            request.agentId,
            request.todoId,
            request.turnInstanceId,
            request.kind,
            request.stateRevision,
            JSON.stringify(request.factRefs),
            requestDigest,
            committedAt,
          )
        const step = this.#db.prepare(
          `INSERT INTO settlement_steps (effect_id, ordinal, step, status, updated_at) VALUES (?, ?, ?, ?, ?)`,
        )
        step.run(request.effectId, 1, 'validate', 'passed', committedAt)
        step.run(request.effectId, 2, 'durable_writeback', 'committed', committedAt)
        step.run(request.effectId, 3, 'quota_spend', 'pending', committedAt)
        this.#db
          .prepare(
            `INSERT INTO receipts (receipt_id, effect_id, step_kind, status, checkpointed, state_revision, committed_at)
             VALUES (?, ?, 'durable_writeback', 'committed', 1, ?, ?)`,
          )
          .run(receiptId, request.effectId, request.stateRevision, committedAt)
        return { status: 'committed', record: this.#record(request.effectId)! }
      })
      .immediate()
  }

  /** The quota-spend step: eligibility from the primary receipt and settlement alone; once per receipt. */
  spend(receiptId: string, at: string): SpendResult {
    return this.#db
      .transaction((): SpendResult => {
        const record = this.#recordByReceipt(receiptId)
        if (!record) throw new LoopxHooksError('ERR_LOOPX_UNKNOWN_RECEIPT', 'no committed receipt with this id')
        const spent = this.#db.prepare(`SELECT * FROM quota_spends WHERE receipt_id = ?`).get(receiptId) as
          SpendRow | undefined
        if (spent) return { status: 'already_spent', spend: spendOf(spent) }
        const setStep = this.#db.prepare(
          `UPDATE settlement_steps SET status = ?, updated_at = ? WHERE effect_id = ? AND ordinal = 3`,
        )
        if (!quotaSpendEligible(record.receipt, record.settlement)) {
          setStep.run('not_eligible', at, record.settlement.effect_id)
          return { status: 'not_eligible', spend: null }
        }
        const spend: QuotaSpend = {
          receiptId,
          effectId: record.receipt.effect_id,
          units: QUOTA_UNITS_PER_SETTLEMENT,
          spentAt: Date.parse(at),
        }
        this.#db
          .prepare(`INSERT INTO quota_spends (receipt_id, effect_id, units, spent_at) VALUES (?, ?, ?, ?)`)
          .run(spend.receiptId, spend.effectId, spend.units, at)
        setStep.run('spent', at, record.settlement.effect_id)
        return { status: 'spent', spend }
      })
      .immediate()
  }

  /** Records that the hook dispatch of `receiptId` completed (first marker wins). */
  markDispatched(marker: DispatchMarker): void {
    this.#db
      .prepare(
        `INSERT OR IGNORE INTO dispatch_markers (receipt_id, admitted, refusal, outcomes, completed_at) VALUES (?, ?, ?, ?, ?)`,
      )
      .run(
        marker.receiptId,
        marker.admitted ? 1 : 0,
        marker.refusal,
        storedOutcomes(marker.outcomes),
        new Date(marker.completedAt).toISOString(),
      )
  }

  /** Committed receipts whose quota-spend step has not run, oldest first. */
  unspent(): string[] {
    return this.#db
      .prepare(
        `SELECT r.receipt_id FROM receipts r JOIN settlement_steps s ON s.effect_id = r.effect_id AND s.ordinal = 3
         WHERE s.status = 'pending' ORDER BY r.seq`,
      )
      .pluck()
      .all() as string[]
  }

  /** Committed receipts with no dispatch marker, oldest first. */
  undispatched(): CommittedRecord[] {
    const ids = this.#db
      .prepare(
        `SELECT r.receipt_id FROM receipts r LEFT JOIN dispatch_markers m ON m.receipt_id = r.receipt_id WHERE m.receipt_id IS NULL ORDER BY r.seq`,
      )
      .pluck()
      .all() as string[]
    return ids.map((id) => this.#recordByReceipt(id)!)
  }

  record(effectId: string): CommittedRecord | null {
    return this.#record(effectId)
  }

  marker(receiptId: string): DispatchMarker | null {
    const row = this.#db.prepare(`SELECT * FROM dispatch_markers WHERE receipt_id = ?`).get(receiptId) as
      MarkerRow | undefined
    return row ? markerOf(row) : null
  }

  contents(): TurnJournalContents {
    const settlements = (this.#db.prepare(`SELECT * FROM settlements ORDER BY seq`).all() as SettlementRow[]).map(
      settlementOf,
    )
    const steps = (
      this.#db.prepare(`SELECT * FROM settlement_steps ORDER BY effect_id, ordinal`).all() as StepSqlRow[]
    ).map(stepOf)
    const receipts = (this.#db.prepare(`SELECT * FROM receipts ORDER BY seq`).all() as ReceiptRow[]).map(receiptOf)
    const quotaSpends = (this.#db.prepare(`SELECT * FROM quota_spends ORDER BY rowid`).all() as SpendRow[]).map(spendOf)
    const dispatchMarkers = (
      this.#db.prepare(`SELECT * FROM dispatch_markers ORDER BY rowid`).all() as MarkerRow[]
    ).map(markerOf)
    return { settlements, steps, receipts, quotaSpends, dispatchMarkers }
  }

  /** SQLite's `PRAGMA integrity_check` as a verdict: `ok` with no messages, or SQLite's messages. */
  integrity(): IntegrityVerdict {
    const rows = this.#db.pragma('integrity_check') as { integrity_check: string }[]
    const messages = rows.map((r) => r.integrity_check).filter((m) => m !== 'ok')
    return { ok: messages.length === 0, messages }
  }

  get open(): boolean {
    return this.#db.open
  }

  close(): void {
    if (this.#db.open) this.#db.close()
  }

  #record(effectId: string): CommittedRecord | null {
    const id = this.#db.prepare(`SELECT receipt_id FROM receipts WHERE effect_id = ?`).pluck().get(effectId) as
      string | undefined
    return id === undefined ? null : this.#recordByReceipt(id)
  }

  #recordByReceipt(receiptId: string): CommittedRecord | null {
    const r = this.#db.prepare(`SELECT * FROM receipts WHERE receipt_id = ?`).get(receiptId) as ReceiptRow | undefined
    if (!r) return null
    const s = this.#db.prepare(`SELECT * FROM settlements WHERE effect_id = ?`).get(r.effect_id) as SettlementRow
    return {
      settlement: {
        goal_id: s.goal_id,
        agent_id: s.agent_id,
        todo_id: s.todo_id,
        turn_instance_id: s.turn_instance_id,
        effect_id: s.effect_id,
      },
      receipt: receiptOf(r),
      eventKind: s.event_kind as WritebackKind,
      factRefs: JSON.parse(s.fact_refs) as string[],
    }
  }
}

const RECORD_MEMBERS = { settlement: 'object', receipt: 'object', eventKind: 'string', factRefs: 'array' } as const

/** The dispatch request of a committed record: the same ids every time it is rebuilt. */
export function dispatchRequestOf(record: CommittedRecord): DispatchRequest {
  expectMembers('dispatchRequestOf', 'record', record, RECORD_MEMBERS, 'object')
  return {
    settlement: { ...record.settlement },
    receipt: { ...record.receipt },
    event: { event_kind: record.eventKind, fact_refs: [...record.factRefs] },
  }
}
