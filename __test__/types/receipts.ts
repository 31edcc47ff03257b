// The closed vocabularies of a dispatch request are string-literal unions:
// the likeliest first typo does not compile.
import type { DispatchRequest, EventFacts, WritebackReceipt } from '../../lib/index.js'

const receipt: WritebackReceipt = {
  receipt_id: 'receipt_1',
  effect_id: 'effect_1',
  step_kind: 'durable_writeback',
  status: 'committed',
  checkpointed: true,
  state_revision: 'rev_1',
  committed_at: '2026-08-26T00:00:00Z',
}

// Every status of RFC 5.1 is a receipt the orchestrator may hold (admission refuses all but committed).
export const statuses: WritebackReceipt['status'][] = ['committed', 'prepared', 'rejected', 'inferred']

// @ts-expect-error 'commited' is not a ReceiptStatus
export const typo: WritebackReceipt = { ...receipt, status: 'commited' }

// @ts-expect-error the step kind is durable_writeback, with an underscore
export const stepTypo: WritebackReceipt = { ...receipt, step_kind: 'durable-writeback' }

// @ts-expect-error 'todo_complete' is not a core event kind
export const eventTypo: EventFacts = { event_kind: 'todo_complete', fact_refs: [] }

export const request: DispatchRequest = {
  settlement: { goal_id: 'g', agent_id: 'a', todo_id: 't', turn_instance_id: 'u', effect_id: 'effect_1' },
  receipt,
  event: { event_kind: 'replan_recorded', fact_refs: [] },
}
