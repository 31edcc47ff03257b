/**
 * The Turn journal's SQL rows (snake_case columns, as stored) and what the
 * API returns for them (camelCase, the package's naming rule), except the
 * committed receipt, which is part of the dispatch request's contract
 * spelling. A marker's outcomes stay stored as snake_case JSON, so journals
 * written before the rule read the same.
 */
import type { WritebackReceipt } from '../../bindings/index'
import type { DispatchMarker, MarkerOutcome, QuotaSpend, SettlementRecord, StepRow } from './rows_types.js'

export interface SettlementRow {
  seq: number
  effect_id: string
  goal_id: string
  agent_id: string
  todo_id: string
  turn_instance_id: string
  event_kind: string
  state_revision: string
  fact_refs: string
  request_digest: string
  created_at: string
}

export interface ReceiptRow {
  seq: number
  receipt_id: string
  effect_id: string
  /** The table's CHECK holds it to the one admissible step. */
  step_kind: WritebackReceipt['step_kind']
  /** The table's CHECK holds it to `committed`. */
  status: WritebackReceipt['status']
  checkpointed: number
  state_revision: string
  committed_at: string
}

export interface MarkerRow {
  receipt_id: string
  admitted: number
  refusal: string | null
  outcomes: string
  completed_at: string
}

export interface SpendRow {
  receipt_id: string
  effect_id: string
  units: number
  spent_at: string
}

export interface StepSqlRow {
  effect_id: string
  ordinal: number
  step: StepRow['step']
  status: string
  updated_at: string
}

interface StoredOutcome {
  hook_id: string
  dispatch_id: string
  outcome: string
  failure_code: string | null
}

export function receiptOf(r: ReceiptRow): WritebackReceipt {
  return {
    receipt_id: r.receipt_id,
    effect_id: r.effect_id,
    step_kind: r.step_kind,
    status: r.status,
    checkpointed: r.checkpointed === 1,
    state_revision: r.state_revision,
    committed_at: r.committed_at,
  }
}

export function settlementOf(s: SettlementRow): SettlementRecord {
  return {
    effectId: s.effect_id,
    goalId: s.goal_id,
    agentId: s.agent_id,
    todoId: s.todo_id,
    turnInstanceId: s.turn_instance_id,
    eventKind: s.event_kind,
    stateRevision: s.state_revision,
    factRefs: JSON.parse(s.fact_refs) as string[],
    requestDigest: s.request_digest,
    createdAt: Date.parse(s.created_at),
  }
}

export function stepOf(s: StepSqlRow): StepRow {
  return {
    effectId: s.effect_id,
    ordinal: s.ordinal,
    step: s.step,
    status: s.status,
    updatedAt: Date.parse(s.updated_at),
  }
}

export function spendOf(s: SpendRow): QuotaSpend {
  return { receiptId: s.receipt_id, effectId: s.effect_id, units: s.units, spentAt: Date.parse(s.spent_at) }
}

export function storedOutcomes(outcomes: readonly MarkerOutcome[]): string {
  return JSON.stringify(
    outcomes.map((o): StoredOutcome => ({
      hook_id: o.hookId,
      dispatch_id: o.dispatchId,
      outcome: o.outcome,
      failure_code: o.failureCode,
    })),
  )
}

export function markerOf(m: MarkerRow): DispatchMarker {
  return {
    receiptId: m.receipt_id,
    admitted: m.admitted === 1,
    refusal: m.refusal,
    outcomes: (JSON.parse(m.outcomes) as StoredOutcome[]).map((o) => ({
      hookId: o.hook_id,
      dispatchId: o.dispatch_id,
      outcome: o.outcome,
      failureCode: o.failure_code,
    })),
    completedAt: Date.parse(m.completed_at),
  }
}
