// A document declared on its own `as const` (every array readonly, every
// string a literal) is taken wherever the package takes a document: by
// defineHook, HookRuntime.register and dispatch, TurnStartKernel.register and
// dispatchTurnStart, ShippedTurnStart.register, ShippedHookRuntime.register
// and dispatch, and the validators, whose context arguments are typed too.
// A provider may answer an `as const` result.
import {
  HookRuntime,
  IntentKinds,
  ShippedHookRuntime,
  ShippedTurnStart,
  TurnStartKernel,
  defineHook,
  notApplicable,
  validateHookInput,
  validateHookResult,
  validateRegistration,
  validateShippedRegistration,
  validateTurnStartRegistration,
} from '../../lib/index.js'
import { kindA } from './kinds.js'

const registration = {
  schema_version: 'loopx_post_writeback_capability_hook_registration_v0',
  hook_id: 'periodic_report.runtime_trigger',
  capability_id: 'periodic_report',
  phase: 'post_writeback',
  event_kinds: ['todo_completed'],
  intent_kinds: ['periodic_report.trigger_evaluation'],
  requested_read_scope: ['settlement_identity'],
  budget: { max_invocations_per_dispatch: 1, max_intents_per_dispatch: 2, max_result_bytes: 16384, timeout_ms: 1000 },
  failure_policy: 'isolate',
} as const

const request = {
  settlement: { goal_id: 'g', agent_id: 'a', todo_id: 't', turn_instance_id: 'u', effect_id: 'e' },
  receipt: {
    receipt_id: 'r',
    effect_id: 'e',
    step_kind: 'durable_writeback',
    status: 'committed',
    checkpointed: true,
    state_revision: 'rev',
    committed_at: '2026-08-26T00:00:00Z',
  },
  event: { event_kind: 'todo_completed', fact_refs: ['fact_1'] },
} as const

const notApplicableResult = {
  schema_version: 'loopx_post_writeback_hook_result_v0',
  hook_id: 'periodic_report.runtime_trigger',
  status: 'not_applicable',
  intents: [],
} as const

export const defined = defineHook({ kinds: [kindA], registration, provider: () => notApplicable() })

export async function postWriteback(runtime: HookRuntime): Promise<void> {
  runtime.register(defined)
  runtime.register({ registration, provider: () => notApplicableResult })
  await runtime.dispatch(request)
  await runtime.dispatchMany([request, request] as const)
  const kinds = new IntentKinds([kindA])
  validateRegistration(registration, kinds)
  validateHookInput({}, registration)
  validateHookResult(notApplicableResult, registration, 'pwh_x', kinds)
}

const turnStartRegistration = {
  schema_version: 'loopx_turn_start_capability_hook_registration_v0',
  hook_id: 'team_inbox.turn_start_read',
  capability_id: 'team_inbox',
  phase: 'turn_start',
  required_read: { command: 'loopx inbox read --pending' },
  write_scopes: ['owner_private_inbox'],
  budget: { timeout_ms: 5000, max_attempts_per_dispatch: 4, max_routes: 2 },
  failure_policy: 'isolate',
} as const

const emptyReceipt = {
  schema_version: 'loopx_turn_start_hook_receipt_v0',
  hook_id: 'team_inbox.turn_start_read',
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
} as const

const turnStartRequest = {
  turn: { goal_id: 'g', agent_id: 'a', turn_instance_id: 'u' },
  quota: { max_units: 1 },
} as const

export async function turnStart(kernel: TurnStartKernel): Promise<void> {
  kernel.register({ registration: turnStartRegistration, provider: () => emptyReceipt })
  await kernel.dispatchTurnStart(turnStartRequest)
  validateTurnStartRegistration(turnStartRegistration)
}

const shippedTurnStartRegistration = {
  schema_version: 'loopx_turn_start_capability_hook_registration_v1',
  hook_id: 'team_inbox.turn_start_read',
  capability_id: 'team_inbox',
  phase: 'turn_start',
  budget: { max_invocations_per_dispatch: 1, max_result_bytes: 4096 },
  failure_policy: 'isolate',
  requested_read_scope: ['goal'],
  requested_write_scope: ['owner_private_inbox'],
  required_read: null,
} as const

declare const shippedTurnStartResult: Parameters<ShippedTurnStart['register']>[0]['provider'] extends (
  ...args: never[]
) => infer R
  ? Awaited<R>
  : never

export function shippedTurnStart(turnStart: ShippedTurnStart): void {
  turnStart.register({ registration: shippedTurnStartRegistration, provider: () => shippedTurnStartResult })
}

const shippedRegistration = {
  schema_version: 'loopx_post_writeback_capability_hook_registration_v0',
  hook_id: 'periodic_report.runtime_trigger',
  capability_id: 'periodic_report',
  policy_version: 'v1',
  phase: 'post_writeback',
  event_kinds: ['todo_completed'],
  intent_kinds: ['periodic_report.trigger_evaluation'],
  budget: { max_invocations_per_dispatch: 1, max_input_bytes: 4096, max_result_bytes: 4096 },
  failure_policy: 'isolate',
  requested_read_scope: ['todo_id'],
  requested_write_scope: [],
} as const

declare const shippedResult: Awaited<ReturnType<Parameters<ShippedHookRuntime['register']>[0]['provider']>>
declare const shippedSource: Parameters<ShippedHookRuntime['dispatch']>[0]

export async function shipped(runtime: ShippedHookRuntime): Promise<void> {
  runtime.register({ registration: shippedRegistration, provider: () => shippedResult })
  await runtime.dispatch(shippedSource)
  validateShippedRegistration(shippedRegistration)
}
