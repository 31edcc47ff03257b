// LoopX's own capability-hook test (tests/control_plane_ts/capability_hooks.test.ts)
// re-expressed against the loopx-shipped-v0 dialect: its post-writeback and
// turn-start cases, each `follows "..."` case named after the LoopX test it
// follows. Where LoopX's validator throws, the shipped validator refuses, at
// the member LoopX's message names; where LoopX admits, it admits. Each case
// also shows what a host then observes from a dispatch: the transaction of
// loopx-hooks/loopx for a post-writeback hook, ShippedTurnStart for a
// turn-start one. The interaction-projection cases are not here: this package
// has no interaction-projection hooks. Nor are two turn-start cases that read
// the result from the validator's answer (docs/dialects.md, "LoopX's own tests").
import { afterEach, describe, expect, it } from 'vitest'

import {
  ShippedTurnStart,
  validateShippedHookInput,
  validateShippedReceipt,
  validateShippedRegistration,
  validateShippedResult,
  validateShippedTurnStartRegistration,
  type ShippedRegistration,
  type ShippedTurnStartRegistrationV1,
  type ShippedTurnStartResult,
  type ValidationResult,
} from '../lib/index.js'
import {
  Roots,
  evaluate,
  failureCodes,
  finalize,
  finalized,
  plantReceipt,
  request,
  returned,
  type Doc,
  type TransactionResult,
} from './support/loopx_transaction.js'
import { turnStartRegistration, turnStartResult } from './support/loopx_turn_start.js'

const roots = new Roots()
afterEach(() => roots.cleanup())

const HOOK = 'periodic_report.stage_completion'

/** LoopX's periodic-report registration as its test writes it: two event kinds, a weekly policy. */
function registration(): ShippedRegistration {
  return {
    schema_version: 'loopx_post_writeback_capability_hook_registration_v0',
    hook_id: HOOK,
    capability_id: 'periodic-report',
    policy_version: 'weekly-v1',
    phase: 'post_writeback',
    event_kinds: ['refresh_state', 'todo_complete'],
    intent_kinds: ['periodic_report.trigger_evaluation'],
    budget: { max_invocations_per_dispatch: 1, max_input_bytes: 65_536, max_result_bytes: 16_384 },
    failure_policy: 'isolate',
    requested_read_scope: ['stage_completion'],
    requested_write_scope: [],
  }
}

/** A ready hook input whose receipt is a rollout event, as LoopX's test builds it. */
function hookInput(): Doc & { receipt: Doc; identity: Doc } {
  return {
    schema_version: 'loopx_post_writeback_capability_hook_input_v0',
    receipt: {
      schema_version: 'loopx_rollout_event_v0',
      event_id: 'evt-stage-1',
      event_kind: 'refresh_state',
      status: 'appended',
      recorded_at: '2026-08-30T01:00:00+08:00',
      durable: true,
    },
    identity: {
      goal_id: 'goal-1',
      agent_id: 'agent-1',
      todo_id: 'todo-1',
      turn_instance_id: 'turn-1',
      effect_id: 'goal-1:agent-1:todo-1:turn-1',
    },
    state_version: 'vision-revision-2',
    projection: {
      stage_completion: { schema_version: 'periodic_report_stage_completion_receipt_v0', stage_identity: 'stage-123' },
    },
  }
}

function hookResult(): Doc & { intent: Doc } {
  return {
    schema_version: 'loopx_post_writeback_capability_hook_result_v0',
    hook_id: HOOK,
    capability_id: 'periodic-report',
    phase: 'post_writeback',
    status: 'intent',
    intent: {
      schema_version: 'loopx_capability_intent_v0',
      intent_kind: 'periodic_report.trigger_evaluation',
      idempotency_key: 'periodic-report:stage-123',
      source_receipt_id: 'evt-stage-1',
      payload: { stage_identity: 'stage-123' },
      requested_write_scope: [],
    },
  }
}

/** The verdict's value; fails the test, naming the violations, when it refused. */
function admitted<T>(verdict: ValidationResult<T>): T {
  if (!verdict.ok) throw new Error(`refused: ${JSON.stringify(verdict.violations)}`)
  return verdict.value
}

/** A preflight of `input` for the one hook (the legacy path: a ready hook input, no source). */
const preflight = (root: string | null, input: Doc): Promise<TransactionResult> =>
  evaluate(request(root, { source: null, hook_input: input, registrations: [registration()] }))

/** The dispatch after the hook returned `result` for `input`. */
async function dispatchOf(input: Doc, result: Doc) {
  const pre = await preflight(null, input)
  const outcome = returned(pre.provider_plan[0]!, result)
  return finalized(finalize(null, pre, [outcome], { source: null, hook_input: input, registrations: [registration()] }))
}

/** What a preflight answers for an input the hook's contract refuses: no call, one failure. */
async function refusedAtPreflight(input: Doc) {
  const pre = await preflight(null, input)
  expect(pre.provider_plan).toEqual([])
  expect(failureCodes(pre.dispatch!)).toEqual([[HOOK, 'registration_or_input_rejected']])
}

describe("LoopX's capability-hook cases: post-writeback", () => {
  it('follows "post-writeback hook admits one receipt-bound effect-free intent"', async () => {
    expect(validateShippedRegistration(registration()).ok).toBe(true)
    const input = admitted(validateShippedHookInput(hookInput(), registration()))
    expect(input.receipt.durable).toBe(true)
    const result = admitted(validateShippedResult(hookResult(), registration(), 'evt-stage-1'))
    expect(result.status).toBe('intent')
    expect(result.intent?.source_receipt_id).toBe('evt-stage-1')

    const dispatch = await dispatchOf(hookInput(), hookResult())
    expect(dispatch).toMatchObject({ invoked_count: 1, intent_count: 1, failures: [] })
    expect(dispatch.intents).toEqual([hookResult().intent])
  })

  it('follows "post-writeback hook admits durable Todo completion events"', async () => {
    const input = hookInput()
    input.receipt.event_kind = 'todo_complete'
    expect(admitted(validateShippedHookInput(input, registration())).receipt.event_kind).toBe('todo_complete')

    const pre = await preflight(null, input)
    expect(pre.provider_plan.map((p) => p.hook_input.receipt.event_kind)).toEqual(['todo_complete'])
  })

  it('follows "post-writeback hook rejects pending receipts, undeclared reads, and write authority"', async () => {
    // LoopX: "not an admitted durable event".
    const pending = hookInput()
    pending.receipt.durable = false
    expect(validateShippedHookInput(pending, registration())).toEqual({
      ok: false,
      violations: [{ path: '/receipt/durable', rule: 'not_allowed_value' }],
    })
    await refusedAtPreflight(pending)

    // LoopX: "projection exceeds requested_read_scope".
    const undeclared = { ...hookInput(), projection: { raw_task: 'private' } }
    expect(validateShippedHookInput(undeclared, registration())).toEqual({
      ok: false,
      violations: [{ path: '/projection/raw_task', rule: 'not_allowed_value' }],
    })
    await refusedAtPreflight(undeclared)

    // LoopX: "capability intent cannot grant write scope".
    const withWrite = hookResult()
    withWrite.intent.requested_write_scope = ['lark_send']
    expect(validateShippedResult(withWrite, registration(), 'evt-stage-1')).toEqual({
      ok: false,
      violations: [{ path: '/intent/requested_write_scope/0', rule: 'not_allowed_value' }],
    })
    const dispatch = await dispatchOf(hookInput(), withWrite)
    expect(failureCodes(dispatch)).toEqual([[HOOK, 'contract_rejected']])
    expect(dispatch.intents).toEqual([])
  })

  it('follows "post-writeback hook binds intent to the exact durable receipt"', async () => {
    // LoopX: "capability intent does not bind the durable source receipt".
    const mismatched = hookResult()
    mismatched.intent.source_receipt_id = 'evt-other'
    expect(validateShippedResult(mismatched, registration(), 'evt-stage-1')).toEqual({
      ok: false,
      violations: [{ path: '/intent/source_receipt_id', rule: 'source_receipt_mismatch' }],
    })
    expect(failureCodes(await dispatchOf(hookInput(), mismatched))).toEqual([[HOOK, 'contract_rejected']])

    // LoopX: "post-writeback capability intent must be an object".
    const notAnObject = { ...hookResult(), intent: [] }
    expect(validateShippedResult(notAnObject, registration(), 'evt-stage-1')).toEqual({
      ok: false,
      violations: [{ path: '/intent', rule: 'wrong_type' }],
    })
    expect(failureCodes(await dispatchOf(hookInput(), notAnObject))).toEqual([[HOOK, 'contract_rejected']])
  })

  it('follows "post-writeback hook accepts Todo-less identity but rejects an empty Todo id"', async () => {
    const todoLess = hookInput()
    todoLess.identity.todo_id = null
    expect(admitted(validateShippedHookInput(todoLess, registration())).identity.todo_id).toBeNull()
    const [plan] = (await preflight(null, todoLess)).provider_plan
    expect(plan!.hook_input.identity.todo_id).toBeNull()

    // LoopX: "post-writeback identity todo_id must be a non-empty string".
    const incomplete = hookInput()
    incomplete.identity.todo_id = ''
    expect(validateShippedHookInput(incomplete, registration())).toEqual({
      ok: false,
      violations: [{ path: '/identity/todo_id', rule: 'empty_value' }],
    })
    await refusedAtPreflight(incomplete)
  })

  it('follows "post-writeback sidecar receipt revalidates the exact typed intent"', async () => {
    const root = roots.make()
    const [plan] = (await preflight(root, hookInput())).provider_plan
    const receipt = {
      schema_version: 'loopx_post_writeback_capability_hook_receipt_v0',
      dispatch_id: plan!.dispatch_id,
      hook_id: HOOK,
      capability_id: 'periodic-report',
      source_receipt_id: 'evt-stage-1',
      status: 'intent_recorded',
      intent: hookResult().intent,
      error_code: null,
      attempt_count: 1,
      recorded_at: '2026-08-30T01:00:00+08:00',
    }
    expect(admitted(validateShippedReceipt(receipt)).status).toBe('intent_recorded')
    expect(validateShippedReceipt({ ...receipt, dispatch_id: `pwh_${'a'.repeat(64)}` }).ok).toBe(true)
    // Where the file is, the transaction holds it against this hook and its input: a replay.
    plantReceipt(root, plan!, receipt)
    const replay = await preflight(root, hookInput())
    expect(replay.provider_plan).toEqual([])
    expect(replay.dispatch).toMatchObject({ invoked_count: 0, replayed_hooks: [HOOK], intents: [receipt.intent] })

    // LoopX: "post-writeback sidecar receipt identity is invalid". On its own
    // the receipt contradicts its intent; against the input, it binds another event.
    const other = { ...receipt, source_receipt_id: 'evt-other' }
    expect(validateShippedReceipt(other)).toEqual({
      ok: false,
      violations: [{ path: '/intent/source_receipt_id', rule: 'source_receipt_mismatch' }],
    })
    plantReceipt(root, plan!, other)
    const unbound = await preflight(root, hookInput())
    expect(unbound.provider_plan).toEqual([])
    expect(failureCodes(unbound.dispatch!)).toEqual([[HOOK, 'receipt_conflict']])

    const retryable = { ...receipt, status: 'retryable_failure', intent: null, error_code: 'producer_failed' }
    expect(admitted(validateShippedReceipt({ ...retryable, attempt_count: 2 })).status).toBe('retryable_failure')
    plantReceipt(root, plan!, { ...retryable, attempt_count: 2 })
    const retry = await preflight(root, hookInput())
    expect(retry.provider_plan.map((p) => [p.hook_id, p.attempt_count, p.retry])).toEqual([[HOOK, 3, true]])
  })
})

const observed: ShippedTurnStartResult = turnStartResult()

/** The required read of an admitted registration (a v1 one: v0 has none). */
function admittedRead(registration: ShippedTurnStartRegistrationV1) {
  const value = admitted(validateShippedTurnStartRegistration(registration))
  return 'required_read' in value ? value.required_read : undefined
}

/** One turn-start dispatch of `registration` answering `observed`, and how often the provider ran. */
async function turnStart(registration: ShippedTurnStartRegistrationV1) {
  const dispatcher = new ShippedTurnStart()
  let calls = 0
  dispatcher.register({
    registration,
    provider: () => {
      calls += 1
      return observed
    },
  })
  return { dispatch: (await dispatcher.dispatch()).document, calls }
}

describe("LoopX's capability-hook cases: turn-start", () => {
  it('follows "turn-start read commands retain explicit routes with a bounded byte budget"', async () => {
    const read = { kind: 'capability_intent', reason: 'Read due report facts', ordering: 'before_work' as const }
    const command = `loopx --registry /${'project/'.repeat(35)}registry.json --runtime-root /${'runtime/'.repeat(35)}state periodic-report consume-pending --goal-id example --agent-id reporter`
    expect(command.length).toBeGreaterThan(360)
    expect(command.length).toBeLessThan(1024)
    const explicit = turnStartRegistration({ required_read: { ...read, command } })
    expect(admittedRead(explicit)).toEqual({ ...read, command })
    const { dispatch } = await turnStart(explicit)
    expect(dispatch.required_reads.map((r) => r.command)).toEqual([command])

    // LoopX: "required_read is outside the admitted envelope": past 1024 UTF-8
    // bytes (1025 ASCII, 342 three-byte characters), or a second line.
    for (const [invalid, rule] of [
      ['x'.repeat(1025), 'too_long'],
      ['界'.repeat(342), 'too_long'],
      ['loopx\nother-command', 'not_allowed_value'],
    ] as const) {
      const refused = turnStartRegistration({ required_read: { ...read, command: invalid } })
      expect(validateShippedTurnStartRegistration(refused)).toEqual({
        ok: false,
        violations: [{ path: '/required_read/command', rule }],
      })
      const { dispatch: isolated, calls } = await turnStart(refused)
      expect(calls).toBe(0)
      expect(isolated.failures.map((f) => f.error_code)).toEqual(['registration_rejected'])
    }
  })

  it('follows "turn-start reads can opt into a bounded prompt budget without changing defaults"', async () => {
    const registration = turnStartRegistration()
    const read = registration.required_read!
    expect(admittedRead(registration)).toEqual(read)
    const budgeted = { ...read, prompt_budget_bytes: 1_536 }
    const withBudget = { ...registration, required_read: budgeted }
    expect(admittedRead(withBudget)).toEqual(budgeted)
    const { dispatch } = await turnStart(withBudget)
    expect(dispatch.required_reads).toMatchObject([budgeted])

    // LoopX: "turn-start prompt budget must be an integer from 1 to 2048 bytes".
    for (const [value, rule] of [
      [0, 'out_of_range'],
      [-1, 'out_of_range'],
      [2_049, 'out_of_range'],
      [1.5, 'wrong_type'],
      [true, 'wrong_type'],
      ['1536', 'wrong_type'],
      [null, 'wrong_type'],
    ] as const) {
      expect(
        validateShippedTurnStartRegistration({
          ...registration,
          required_read: { ...read, prompt_budget_bytes: value },
        }),
      ).toEqual({ ok: false, violations: [{ path: '/required_read/prompt_budget_bytes', rule }] })
    }
    // LoopX: "turn-start required read exceeds its declared prompt budget".
    const tight = { ...registration, required_read: { ...read, prompt_budget_bytes: 64 } }
    expect(validateShippedTurnStartRegistration(tight)).toEqual({
      ok: false,
      violations: [{ path: '/required_read', rule: 'too_long' }],
    })
    const { dispatch: isolated, calls } = await turnStart(tight)
    expect(calls).toBe(0)
    expect(isolated.failures.map((f) => f.error_code)).toEqual(['registration_rejected'])
  })
})
