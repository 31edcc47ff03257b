/**
 * The Turn journal's public record types: what its rows read back as. Both
 * the journal and its row mappers use them, so they sit below both.
 */
import type { SettlementIdentity, WritebackReceipt } from '../../bindings/index'
import type { WritebackKind } from './validate.js'

/** The ordered primary steps of a Turn settlement. The hook phase is not one of them. */
export const PRIMARY_STEPS = ['validate', 'durable_writeback', 'quota_spend'] as const
/** One of `PRIMARY_STEPS`. */
export type PrimaryStepName = (typeof PRIMARY_STEPS)[number]

/** One committed writeback as the Turn journal holds it. */
export interface CommittedRecord {
  /** The settlement the writeback belongs to (contract spelling). */
  settlement: SettlementIdentity
  /** The committed primary receipt (contract spelling). */
  receipt: WritebackReceipt
  /** The event the writeback recorded. */
  eventKind: WritebackKind
  /** The event's fact refs. */
  factRefs: string[]
}

/** One quota spend of a settled Turn effect. */
export interface QuotaSpend {
  /** The primary receipt that spent it. */
  receiptId: string
  /** The effect it was spent for. */
  effectId: string
  /** Units spent (`QUOTA_UNITS_PER_SETTLEMENT`). */
  units: number
  /** When it was spent (epoch ms). */
  spentAt: number
}

/** One provider outcome of a completed hook dispatch, as its marker keeps it. */
export interface MarkerOutcome {
  /** The hook. */
  hookId: string
  /** Its dispatch's `pwh_` id. */
  dispatchId: string
  /** Its outcome kind (`recorded`, `failed`, ...). */
  outcome: string
  /** Its RFC failure code when it failed, else null. */
  failureCode: string | null
}

/** What a completed hook dispatch left in the Turn journal: codes and ids only. */
export interface DispatchMarker {
  /** The committed receipt dispatched. */
  receiptId: string
  /** Whether the core admitted the dispatch. */
  admitted: boolean
  /** The core's refusal code, `hooks_not_configured`, or null when admitted. */
  refusal: string | null
  /** Each hook's outcome, in the dispatch outcome's order. */
  outcomes: MarkerOutcome[]
  /** When the dispatch completed (epoch ms). */
  completedAt: number
}

/** One primary step of one effect, as the Turn journal holds it. */
export interface StepRow {
  /** The effect settled. */
  effectId: string
  /** The step's place in `PRIMARY_STEPS`, from 1. */
  ordinal: number
  /** The step. */
  step: PrimaryStepName
  /** Its status as stored (`passed`, `committed`, `pending`, `spent`, ...). */
  status: string
  /** When it last changed (epoch ms). */
  updatedAt: number
}

/** A settlement as the Turn journal holds it (a row, not a contract document: camelCase). */
export interface SettlementRecord {
  /** The primary effect settled. */
  effectId: string
  /** The Goal's id. */
  goalId: string
  /** The Agent's id. */
  agentId: string
  /** The Todo's id. */
  todoId: string
  /** The Turn instance's id. */
  turnInstanceId: string
  /** The event the writeback recorded. */
  eventKind: string
  /** The state revision the writeback committed. */
  stateRevision: string
  /** The event's fact refs. */
  factRefs: string[]
  /** The digest of the validated request: the same effect with another request is an `effect_conflict`. */
  requestDigest: string
  /** When it was settled (epoch ms). */
  createdAt: number
}

/** Every row of the Turn journal, for inspection and tests. */
export interface TurnJournalContents {
  /** Every settlement. */
  settlements: SettlementRecord[]
  /** Every primary step row. */
  steps: StepRow[]
  /** The committed receipts, as the dispatch request carries them (contract spelling). */
  receipts: WritebackReceipt[]
  /** Every quota spend. */
  quotaSpends: QuotaSpend[]
  /** Every completed dispatch's marker. */
  dispatchMarkers: DispatchMarker[]
}
