// A ShippedHookRuntime held to LoopX's own post-writeback transaction
// (loopx/control_plane/post_writeback_hook_transaction.ts), through the
// public API: each test names the LoopX test it follows from
// tests/control_plane_ts/post_writeback_hook_transaction.test.ts. Intent
// keys are reduced in hook_id order over fresh and replayed hooks alike (a
// divergent winner's key stays taken), retried_hooks lists every hook whose
// receipt was retryable, an id blank to JavaScript's trim is refused per
// hook before any provider runs, and a shipped runtime's defaults admit a
// batch by LoopX's transport envelope, here and under serve --stdio.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import {
  HookRuntime,
  type ShippedDispatchResult,
  type ShippedHookInput,
  type ShippedHookResult,
  type ShippedRegistration,
  type ShippedSource,
} from '../lib/index.js'
import { Server } from '../lib/cli/serve.js'
import { library } from '../lib/cli/io.js'

function registration(hookId: string, maxResultBytes = 16 * 1024): ShippedRegistration {
  return {
    schema_version: 'loopx_post_writeback_capability_hook_registration_v0',
    hook_id: hookId,
    capability_id: 'periodic-report',
    policy_version: 'v0',
    phase: 'post_writeback',
    event_kinds: ['refresh_state'],
    intent_kinds: ['periodic_report.trigger_evaluation'],
    budget: { max_invocations_per_dispatch: 1, max_input_bytes: 64 * 1024, max_result_bytes: maxResultBytes },
    failure_policy: 'isolate',
    requested_read_scope: ['stage_completion'],
    requested_write_scope: [],
  }
}

function source(): ShippedSource {
  return {
    schema_version: 'loopx_post_writeback_hook_source_v0',
    event_kind: 'refresh_state',
    status: 'committed',
    durable: true,
    identity: {
      goal_id: 'goal-1',
      agent_id: 'agent-1',
      todo_id: 'todo-1',
      turn_instance_id: 'turn-1',
      effect_id: 'effect-1',
    },
    state_version: 'state-v1',
    committed_at: '2026-09-02T12:00:00Z',
    projection: { stage_completion: { transition: 'goal_terminal' }, project_progress: { items: [] } },
  }
}

/** A provider of `hookId`: one intent keyed `key` (payload padded by `pad` bytes), or not_applicable. */
function provider(hookId: string, key: string | null, pad = 0) {
  const calls: ShippedHookInput[] = []
  const fn = (input: ShippedHookInput): ShippedHookResult => {
    calls.push(input)
    return {
      schema_version: 'loopx_post_writeback_capability_hook_result_v0',
      hook_id: hookId,
      capability_id: 'periodic-report',
      phase: 'post_writeback',
      status: key === null ? 'not_applicable' : 'intent',
      intent:
        key === null
          ? null
          : {
              schema_version: 'loopx_capability_intent_v0',
              intent_kind: 'periodic_report.trigger_evaluation',
              idempotency_key: key,
              source_receipt_id: input.receipt.event_id,
              payload: pad > 0 ? { evidence: 'x'.repeat(pad) } : { generation_authorized: false },
              requested_write_scope: [],
            },
    }
  }
  return { fn, calls }
}

let dir: string
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'loopx-shipped-parity-'))
})
afterEach(() => rmSync(dir, { recursive: true, force: true }))

/** A shipped runtime over this test's journal, with the dialect's defaults (only the phase enabled). */
type Producer = (input: ShippedHookInput) => ShippedHookResult | Promise<ShippedHookResult>

async function open(hooks: [ShippedRegistration, Producer][]) {
  const runtime = await HookRuntime.open({
    dialect: 'loopx-shipped-v0',
    journal: join(dir, 'hooks.sqlite'),
    profile: { enabled: true },
  })
  for (const [r, fn] of hooks) runtime.register({ registration: r, provider: fn })
  return runtime
}

const failures = (r: ShippedDispatchResult) => r.failures.map((f) => [f.hook_id, f.error_code])
const keys = (r: ShippedDispatchResult) => r.intents.map((i) => i.idempotency_key)

describe('loopx-shipped-v0 as LoopX reduces intent keys', () => {
  it('an earlier fresh hook keeps a duplicate intent key ahead of terminal replay', async () => {
    const b = provider('periodic_report.b', 'shared-key')
    let runtime = await open([[registration('periodic_report.b'), b.fn]])
    await runtime.dispatch(source())
    const [bRow] = (await runtime.journal.listDispatches({})).items
    await runtime.close()

    const a = provider('periodic_report.a', 'shared-key')
    runtime = await open([
      [registration('periodic_report.b'), b.fn],
      [registration('periodic_report.a'), a.fn],
    ])
    const dispatch = await runtime.dispatch(source())
    expect(dispatch.intents.map((i) => i.source_receipt_id)).toEqual([a.calls[0]!.receipt.event_id])
    expect(dispatch.replayed_hooks).toEqual([])
    expect(failures(dispatch)).toEqual([['periodic_report.b', 'intent_key_conflict']])
    expect(b.calls).toHaveLength(1)
    expect((await runtime.journal.getDispatch(bRow!.dispatchId))?.receipt).toEqual(bRow!.receipt)
    await runtime.close()
  })

  it('mixed terminal and fresh hooks reduce intents in canonical hook order', async () => {
    let runtime = await open([[registration('periodic_report.b'), provider('periodic_report.b', 'key-b').fn]])
    await runtime.dispatch(source())
    await runtime.close()
    runtime = await open([
      [registration('periodic_report.c'), provider('periodic_report.c', 'key-c').fn],
      [registration('periodic_report.b'), provider('periodic_report.b', 'unused').fn],
      [registration('periodic_report.a'), provider('periodic_report.a', 'key-a').fn],
    ])
    const dispatch = await runtime.dispatch(source())
    expect(keys(dispatch)).toEqual(['key-a', 'key-b', 'key-c'])
    expect(dispatch.replayed_hooks).toEqual(['periodic_report.b'])
    await runtime.close()
  })

  it('a divergent CAS winner reserves its intent key for later hooks', async () => {
    // The winner is a second runtime over the same journal (another host),
    // which records c_race while this dispatch waits in b_blocker.
    let release!: () => void
    const blocked = new Promise<void>((go) => (release = go))
    let entered!: () => void
    const blocking = new Promise<void>((go) => (entered = go))
    const blocker = provider('periodic_report.b_blocker', null)
    const race = provider('periodic_report.c_race', 'divergent-key')
    const duplicate = provider('periodic_report.d_duplicate', 'shared-winner-key')
    const losing = await open([
      [registration('periodic_report.a_marker'), provider('periodic_report.a_marker', null).fn],
      [
        registration('periodic_report.b_blocker'),
        async (input) => {
          entered()
          await blocked
          return blocker.fn(input)
        },
      ],
      [registration('periodic_report.c_race'), race.fn],
      [registration('periodic_report.d_duplicate'), duplicate.fn],
    ])
    const losingDispatch = losing.dispatch(source())
    await blocking
    const winner = await open([
      [registration('periodic_report.c_race'), provider('periodic_report.c_race', 'shared-winner-key').fn],
    ])
    expect(keys(await winner.dispatch(source()))).toEqual(['shared-winner-key'])
    await winner.close()
    release()

    const dispatch = await losingDispatch
    expect(dispatch.invoked_count).toBe(4)
    expect(dispatch.intent_count).toBe(0)
    expect(dispatch.replayed_hooks).toEqual([])
    expect(failures(dispatch)).toEqual([
      ['periodic_report.c_race', 'receipt_conflict'],
      ['periodic_report.d_duplicate', 'intent_key_conflict'],
    ])
    const rows = (await losing.journal.listDispatches({})).items
    const receiptOf = (hookId: string) => rows.find((row) => row.hookId === hookId)?.receipt as Record<string, unknown>
    expect((receiptOf('periodic_report.c_race')['intent'] as Record<string, unknown>)['idempotency_key']).toBe(
      'shared-winner-key',
    )
    expect(receiptOf('periodic_report.d_duplicate')).toMatchObject({
      status: 'retryable_failure',
      error_code: 'intent_key_conflict',
    })
    await losing.close()
  })
})

describe('loopx-shipped-v0 as LoopX lists retried hooks', () => {
  it('an exhausted retry receipt isolates its hook before provider execution', async () => {
    // LoopX's receipt at 10,000 attempts, imported from its sidecar folder.
    const probe = provider('periodic_report.a_exhausted', null)
    let runtime = await HookRuntime.open({
      dialect: 'loopx-shipped-v0',
      journal: join(dir, 'probe.sqlite'),
      profile: { enabled: true },
    })
    runtime.register({ registration: registration('periodic_report.a_exhausted'), provider: probe.fn })
    await runtime.dispatch(source())
    const dispatchId = (await runtime.journal.listDispatches({})).items[0]!.dispatchId
    await runtime.close()
    const root = join(dir, 'runtime')
    const folder = join(root, 'goals', 'goal-1', 'post_writeback_hooks')
    mkdirSync(folder, { recursive: true })
    const exhaustedReceipt = {
      schema_version: 'loopx_post_writeback_capability_hook_receipt_v0',
      dispatch_id: dispatchId,
      hook_id: 'periodic_report.a_exhausted',
      capability_id: 'periodic-report',
      source_receipt_id: probe.calls[0]!.receipt.event_id,
      status: 'retryable_failure',
      intent: null,
      error_code: 'producer_failed',
      attempt_count: 10_000,
      recorded_at: probe.calls[0]!.receipt.recorded_at,
    }
    writeFileSync(join(folder, `${dispatchId}.json`), `${JSON.stringify(exhaustedReceipt)}\n`)

    const exhausted = provider('periodic_report.a_exhausted', 'exhausted-key')
    const fresh = provider('periodic_report.b_fresh', 'fresh-key')
    runtime = await open([
      [registration('periodic_report.a_exhausted'), exhausted.fn],
      [registration('periodic_report.b_fresh'), fresh.fn],
    ])
    expect((await runtime.journal.importSidecars(root)).imported).toBe(1)
    const dispatch = await runtime.dispatch(source())
    expect(exhausted.calls).toHaveLength(0)
    expect(dispatch.invoked_count).toBe(1)
    expect(dispatch.retried_hooks).toEqual(['periodic_report.a_exhausted'])
    expect(failures(dispatch)).toEqual([['periodic_report.a_exhausted', 'journal_write_failed']])
    expect((await runtime.journal.getDispatch(dispatchId))?.receipt).toEqual(exhaustedReceipt)
    expect(keys(dispatch)).toEqual(['fresh-key'])
    await runtime.close()
  })
})

describe('loopx-shipped-v0 as LoopX refuses an id blank to JavaScript', () => {
  it('source and dispatch identities replay the retired Python canonical bytes (the byte-order mark)', async () => {
    const a = provider('periodic_report.a', 'key-a')
    const b = provider('periodic_report.b', null)
    const runtime = await open([
      [registration('periodic_report.a'), a.fn],
      [registration('periodic_report.b'), b.fn],
    ])
    const bom = source()
    bom.identity.agent_id = '\uFEFF'
    bom.state_version = '\uFEFF'
    const dispatch = await runtime.dispatch(bom)
    expect(dispatch.runtime_failure).toBeUndefined()
    expect(dispatch.invoked_count).toBe(0)
    expect(failures(dispatch)).toEqual([
      ['periodic_report.a', 'registration_or_input_rejected'],
      ['periodic_report.b', 'registration_or_input_rejected'],
    ])
    expect(a.calls.length + b.calls.length).toBe(0)
    expect((await runtime.journal.listDispatches({})).items).toEqual([])
    await runtime.close()
  })
})

const envelopeHook = (i: number) => `periodic_report.envelope_${String(i).padStart(2, '0')}`

describe("loopx-shipped-v0 admits a batch by LoopX's envelope", () => {
  it('result envelope admission happens before providers and durable writes', async () => {
    const providers = Array.from({ length: 27 }, (_, i) =>
      provider(envelopeHook(i), `${envelopeHook(i)}-key`, i < 24 ? 60_000 : 0),
    )
    const hooks = (from: number, to: number) =>
      providers
        .slice(from, to)
        .map((p, i): [ShippedRegistration, typeof p.fn] => [registration(envelopeHook(from + i), 65_536), p.fn])

    let runtime = await open(hooks(0, 27))
    const refused = await runtime.dispatch(source())
    expect(refused.runtime_failure).toEqual({
      schema_version: 'loopx_post_writeback_runtime_failure_v0',
      phase: 'preflight',
      error_kind: 'request_rejected',
      diagnostic_code: 'post_writeback_transaction_envelope',
    })
    expect(refused.invoked_count).toBe(0)
    expect(new Set(refused.failures.map((f) => f.error_code))).toEqual(new Set(['runtime_result_invalid']))
    expect(refused.failures).toHaveLength(27)
    expect(providers.every((p) => p.calls.length === 0)).toBe(true)
    expect((await runtime.journal.listDispatches({})).items).toEqual([])
    await runtime.close()

    for (let offset = 0; offset < 27; offset += 8) {
      runtime = await open(hooks(offset, Math.min(offset + 8, 27)))
      const chunk = await runtime.dispatch(source())
      expect(chunk.intent_count).toBe(Math.min(8, 27 - offset))
      expect(chunk.failures).toEqual([])
      await runtime.close()
    }

    runtime = await open(hooks(0, 27))
    const replay = await runtime.dispatch(source())
    expect(replay.intent_count).toBe(27)
    expect(replay.replayed_hooks).toHaveLength(27)
    for (let i = 0; i < 5; i++) {
      const id = `periodic_report.mixed_fresh_${String(i).padStart(2, '0')}`
      runtime.register({ registration: registration(id, 65_536), provider: provider(id, 'k').fn })
    }
    const mixed = await runtime.dispatch(source())
    expect(mixed.runtime_failure?.phase).toBe('preflight')
    expect(mixed.intent_count).toBe(0)
    expect((await runtime.journal.listDispatches({ limit: 100 })).items).toHaveLength(27)
    await runtime.close()
  })

  it('serve --stdio opens a shipped runtime with the same defaults and refuses the batch at prepare', async () => {
    const server = new Server(library(), '0.0.0-test')
    let id = 0
    const send = async (op: string, fields: Record<string, unknown>) =>
      JSON.parse(await server.handle(JSON.stringify({ id: ++id, op, ...fields }))) as Record<string, unknown>
    const registrations = Array.from({ length: 27 }, (_, i) => JSON.stringify(registration(envelopeHook(i), 65_536)))
    const opened = await send('open', {
      journal: join(dir, 'serve.sqlite'),
      dialect: 'loopx-shipped-v0',
      profile: { enabled: true },
      registrations,
    })
    expect(opened['error']).toBeUndefined()
    const prepared = (await send('prepare', { request: JSON.stringify(source()) }))['result'] as Record<string, unknown>
    const done = prepared['done'] as { shipped: ShippedDispatchResult }
    expect(done.shipped.runtime_failure?.diagnostic_code).toBe('post_writeback_transaction_envelope')
    expect(done.shipped.failures).toHaveLength(27)

    // Eight of them are admitted and planned, all at once.
    await send('close', {})
    const eight = registrations.slice(0, 8)
    await send('open', {
      journal: join(dir, 'serve8.sqlite'),
      dialect: 'loopx-shipped-v0',
      profile: { enabled: true },
      registrations: eight,
    })
    const plan = (await send('prepare', { request: JSON.stringify(source()) }))['result'] as Record<string, unknown>
    expect(plan['calls']).toHaveLength(8)
    await send('close', {})
  })
})
