// LoopX's periodic-report hook in the shipped dialect (loopx-shipped-v0), as
// the runtime tests drive it: its source, its registration and a producer
// that proposes one intent keyed by the stage.
import type { ShippedHookInput, ShippedHookResult, ShippedRegistration, ShippedSource } from '../../lib/index.js'

export const STAGE = 'periodic_report.stage_completion'

/** A committed `todo_complete` source whose projection names `stage`. */
export function periodicSource(stage: string, todoId: string | null = `todo-${stage}`): ShippedSource {
  return {
    schema_version: 'loopx_post_writeback_hook_source_v0',
    event_kind: 'todo_complete',
    status: 'committed',
    durable: true,
    identity: { goal_id: 'goal-1', agent_id: 'agent-1', todo_id: todoId, turn_instance_id: 'turn-1', effect_id: 'e-1' },
    state_version: 'state-v1',
    receipt_id: null,
    committed_at: '2026-09-02T12:00:00Z',
    projection: { stage_completion: stage },
  }
}

/** The periodic-report registration of `hookId`, for `todo_complete` and `refresh_state`. */
export function periodicRegistration(hookId: string = STAGE): ShippedRegistration {
  return {
    schema_version: 'loopx_post_writeback_capability_hook_registration_v0',
    hook_id: hookId,
    capability_id: 'periodic-report',
    policy_version: 'v0',
    phase: 'post_writeback',
    event_kinds: ['refresh_state', 'todo_complete'],
    intent_kinds: ['periodic_report.deliver'],
    budget: { max_invocations_per_dispatch: 1, max_input_bytes: 16384, max_result_bytes: 8192 },
    failure_policy: 'isolate',
    requested_read_scope: ['stage_completion'],
    requested_write_scope: [],
  }
}

/** The producer's answer to `input`: one intent keyed by the stage, with `payload` beside the stage. */
export function periodicResult(
  input: ShippedHookInput,
  payload: Record<string, unknown> = {},
  hookId: string = STAGE,
): ShippedHookResult {
  return {
    schema_version: 'loopx_post_writeback_capability_hook_result_v0',
    hook_id: hookId,
    capability_id: 'periodic-report',
    phase: 'post_writeback',
    status: 'intent',
    intent: {
      schema_version: 'loopx_capability_intent_v0',
      intent_kind: 'periodic_report.deliver',
      idempotency_key: `periodic-report:${String(input.projection.stage_completion)}`,
      source_receipt_id: input.receipt.event_id,
      payload: { stage: input.projection.stage_completion ?? null, ...payload },
      requested_write_scope: [],
    },
  }
}
