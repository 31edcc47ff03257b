// Shared turn-start fixtures for the diagnostics and OpenTelemetry suites: a
// registration per capability (from the RFC example), a receipt for an input,
// a valid request.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'

import type {
  TurnStartHookInput,
  TurnStartHookRegistration,
  TurnStartReceipt,
  TurnStartRequest,
} from '../../lib/index.js'

const example = JSON.parse(
  readFileSync(join(__dirname, '..', '..', 'examples', 'turn_start_registration.json'), 'utf8'),
) as TurnStartHookRegistration

/** The RFC example's registration, owned by `capability` (hook `<capability>.turn_start_read`). */
export function turnStartRegistration(capability: string, timeoutMs = 500): TurnStartHookRegistration {
  const r = structuredClone(example)
  r.capability_id = capability
  r.hook_id = `${capability}.turn_start_read`
  r.required_read.command = `loopx inbox read --pending --capability ${capability}`
  r.budget.timeout_ms = timeoutMs
  return r
}

/** A valid receipt of the hook `input` names: `empty` unless `fields` say otherwise. */
export function turnStartReceipt(input: TurnStartHookInput, fields: Partial<TurnStartReceipt> = {}): TurnStartReceipt {
  return {
    schema_version: 'loopx_turn_start_hook_receipt_v0',
    hook_id: input.hook_id,
    status: 'empty',
    error_code: null,
    agent_read_required: false,
    observations_new: 0,
    pending: 0,
    direct_questions: 0,
    verified_replies: 0,
    routes_ok: 1,
    routes_failed: 0,
    reactions_added: 0,
    external_writes_performed: 0,
    ...fields,
  }
}

export function turnStartRequest(turn = 'turn_diag_1'): TurnStartRequest {
  return {
    turn: { goal_id: 'goal_diag', agent_id: 'agent_diag', turn_instance_id: turn },
    quota: { max_units: 3 },
  }
}
