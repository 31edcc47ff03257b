// LoopX's operator-inbox turn-start documents as its capability_hooks test
// writes them, shared by the specs that re-express that test
// (loopx_capability_hooks*.spec.ts).
import type { ShippedTurnStartRegistrationV1, ShippedTurnStartResult } from '../../lib/index.js'

const INBOX = 'operator_inbox.turn_start_sync'

/**
 * LoopX's operator-inbox turn-start registration; `fields` may plant what
 * the contract refuses (a refusal case builds its document so).
 */
export function turnStartRegistration(fields: Record<string, unknown> = {}): ShippedTurnStartRegistrationV1 {
  return {
    schema_version: 'loopx_turn_start_capability_hook_registration_v1',
    hook_id: INBOX,
    capability_id: 'operator-inbox',
    phase: 'turn_start',
    budget: { max_invocations_per_dispatch: 1, max_result_bytes: 16_384 },
    failure_policy: 'isolate',
    requested_read_scope: ['provider_history'],
    requested_write_scope: ['owner_private_inbox', 'owner_private_cursor'],
    required_read: {
      kind: 'operator_inbox',
      command: 'loopx inbox drain --goal-id fixture',
      reason: 'read newly synchronized operator evidence',
      ordering: 'before_work',
    },
    ...fields,
  } as ShippedTurnStartRegistrationV1
}

/** An `observed` result of that hook. */
export function turnStartResult(fields: Partial<ShippedTurnStartResult> = {}): ShippedTurnStartResult {
  return {
    schema_version: 'loopx_turn_start_capability_hook_result_v0',
    hook_id: INBOX,
    capability_id: 'operator-inbox',
    phase: 'turn_start',
    status: 'observed',
    observation_count: 2,
    agent_read_required: true,
    external_reads_performed: true,
    external_writes_performed: false,
    local_private_state_mutated: true,
    private_content_returned: false,
    provider_payload_returned: false,
    error_code: null,
    ...fields,
  }
}
