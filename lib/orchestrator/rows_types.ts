/**
 * The Turn journal's public record types: what its rows read back as. Both
 * the journal and its row mappers use them, so they sit below both.
 */
import type { SettlementIdentity, WritebackReceipt } from '../../bindings/index'
import type { WritebackKind } from './validate.js'

/** The ordered primary steps of a Turn settlement. The hook phase is not one of them. */
export const PRIMARY_STEPS = ['validate', 'durable_writeback', 'quota_spend'] as const
export type PrimaryStepName = (typeof PRIMARY_STEPS)[number]

/** One committed writeback as the Turn journal holds it. */
export interface CommittedRecord {
  settlement: SettlementIdentity
  receipt: WritebackReceipt
  eventKind: WritebackKind
  factRefs: string[]
}

export interface QuotaSpend {
  receiptId: string
  effectId: string
  units: number
  spentAt: string
}

/** One provider outcome of a completed hook dispatch, as its marker keeps it. */
export interface MarkerOutcome {
  hookId: string
  dispatchId: string
  outcome: string
  failureCode: string | null
}

/** What a completed hook dispatch left in the Turn journal: codes and ids only. */
export interface DispatchMarker {
  receiptId: string
  admitted: boolean
  /** The core's refusal code, `hooks_not_configured`, or null when admitted. */
  refusal: string | null
  outcomes: MarkerOutcome[]
  completedAt: string
}

export interface StepRow {
  effectId: string
  ordinal: number
  step: PrimaryStepName
  status: string
  updatedAt: string
}

/** A settlement as the Turn journal holds it (a row, not a contract document: camelCase). */
export interface SettlementRecord {
  effectId: string
  goalId: string
  agentId: string
  todoId: string
  turnInstanceId: string
  eventKind: string
  stateRevision: string
  factRefs: string[]
  requestDigest: string
  createdAt: string
}

/** Every row of the Turn journal, for inspection and tests. */
export interface TurnJournalContents {
  settlements: SettlementRecord[]
  steps: StepRow[]
  /** The committed receipts, as the dispatch request carries them (contract spelling). */
  receipts: WritebackReceipt[]
  quotaSpends: QuotaSpend[]
  dispatchMarkers: DispatchMarker[]
}
