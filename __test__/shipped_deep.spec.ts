// A loopx-shipped-v0 result nested 2,000 levels deep, as LoopX's own test
// ("exact finalize replay admits deeply nested results without collapsing
// siblings") returns one, through HookRuntime.dispatch on each backend: it
// is recorded, replayed byte for byte, and read back from the journal and
// its outbox. Past the dialect's depth (2,048 levels) a result is refused
// as contract_rejected, never a crash, and the sibling hook still records.
import { afterEach, describe, expect, it } from 'vitest'

import {
  HookRuntime,
  type ShippedDispatchResult,
  type ShippedHookInput,
  type ShippedHookResult,
  type ShippedRegistration,
  type ShippedSource,
} from '../lib/index.js'
import { BACKENDS, type Backend, type JournalTarget } from './support/backends.js'

function registration(hookId: string): ShippedRegistration {
  return {
    schema_version: 'loopx_post_writeback_capability_hook_registration_v0',
    hook_id: hookId,
    capability_id: 'periodic-report',
    policy_version: 'v0',
    phase: 'post_writeback',
    event_kinds: ['refresh_state'],
    intent_kinds: ['periodic_report.trigger_evaluation'],
    budget: { max_invocations_per_dispatch: 1, max_input_bytes: 64 * 1024, max_result_bytes: 65_536 },
    failure_policy: 'isolate',
    requested_read_scope: ['stage_completion'],
    requested_write_scope: [],
  }
}

const source: ShippedSource = {
  schema_version: 'loopx_post_writeback_hook_source_v0',
  event_kind: 'refresh_state',
  status: 'committed',
  durable: true,
  identity: { goal_id: 'goal-1', agent_id: 'agent-1', todo_id: null, turn_instance_id: 'turn-1', effect_id: 'e-1' },
  state_version: 'state-v1',
  committed_at: '2026-09-02T12:00:00Z',
  projection: { stage_completion: { transition: 'goal_terminal' } },
}

type Payload = ShippedHookResult['intent'] extends infer I ? (I extends { payload: infer P } ? P : never) : never

function nested(levels: number): Payload {
  let payload: Payload = { leaf: true }
  for (let i = 0; i < levels; i += 1) payload = { next: payload }
  return payload
}

function provider(hookId: string, key: string, payload: Payload) {
  let calls = 0
  const fn = (input: ShippedHookInput): ShippedHookResult => {
    calls += 1
    return {
      schema_version: 'loopx_post_writeback_capability_hook_result_v0',
      hook_id: hookId,
      capability_id: 'periodic-report',
      phase: 'post_writeback',
      status: 'intent',
      intent: {
        schema_version: 'loopx_capability_intent_v0',
        intent_kind: 'periodic_report.trigger_evaluation',
        idempotency_key: key,
        source_receipt_id: input.receipt.event_id,
        payload,
        requested_write_scope: [],
      },
    }
  }
  return { fn, calls: () => calls }
}

const targets: JournalTarget[] = []
afterEach(async () => {
  for (const t of targets.splice(0)) await t.cleanup()
})

async function open(backend: Backend, label: string, hooks: [string, (i: ShippedHookInput) => ShippedHookResult][]) {
  const target = backend.target(label)
  targets.push(target)
  const runtime = await HookRuntime.open({
    ...target.runtimeOptions(),
    dialect: 'loopx-shipped-v0',
    profile: { enabled: true },
  })
  for (const [hookId, fn] of hooks) runtime.register({ registration: registration(hookId), provider: fn })
  return runtime
}

describe.each(BACKENDS.map((b): [string, Backend] => [b.name, b]))('a deep shipped result on %s', (_, backend) => {
  it('is recorded, replayed byte for byte and read back from the journal', async () => {
    const deep = provider('periodic_report.a_deep', 'deep-key', nested(2_000))
    const sibling = provider('periodic_report.b_sibling', 'sibling-key', { leaf: true })
    const runtime = await open(backend, 'deep', [
      ['periodic_report.a_deep', deep.fn],
      ['periodic_report.b_sibling', sibling.fn],
    ])
    try {
      const first: ShippedDispatchResult = await runtime.dispatch(source)
      expect(first.failures).toEqual([])
      expect(first.intent_count).toBe(2)
      const replay: ShippedDispatchResult = await runtime.dispatch(source)
      expect([deep.calls(), sibling.calls()]).toEqual([1, 1])
      expect(replay.replayed_hooks).toEqual(['periodic_report.a_deep', 'periodic_report.b_sibling'])
      expect(JSON.stringify(replay.intents)).toBe(JSON.stringify(first.intents))
      const stored = await runtime.journal.listIntents({})
      expect(stored.items).toHaveLength(2)
      expect(JSON.stringify(stored.items.map((i) => i.intent))).toContain('"leaf":true')
    } finally {
      await runtime.close()
    }
  })

  it('past the dialect depth is contract_rejected and the sibling still records', async () => {
    const runtime = await open(backend, 'too-deep', [
      ['periodic_report.a_deep', provider('periodic_report.a_deep', 'deep-key', nested(3_000)).fn],
      ['periodic_report.b_sibling', provider('periodic_report.b_sibling', 'sibling-key', { leaf: true }).fn],
    ])
    try {
      const result: ShippedDispatchResult = await runtime.dispatch(source)
      expect(result.failures.map((f) => [f.hook_id, f.error_code])).toEqual([
        ['periodic_report.a_deep', 'contract_rejected'],
      ])
      expect(result.intents.map((i) => i.idempotency_key)).toEqual(['sibling-key'])
    } finally {
      await runtime.close()
    }
  })
})
