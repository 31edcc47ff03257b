// The runtime in the dialect LoopX shipped (loopx-shipped-v0), through the
// public API only, as a LoopX host uses it: the periodic-report hook with
// its shipped registration, `refresh_state` and `todo_complete` sources, a
// replay that returns the stored receipt without calling the producer, a
// conflicting result, a retryable failure retried after a restart, and one
// idempotency_key reused by two hooks.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import {
  HookRuntime,
  LoopxHooksError,
  type ShippedHookInput,
  type ShippedHookResult,
  type ShippedRegistration,
  type ShippedSidecarReceipt,
  type ShippedSource,
} from '../lib/index.js'

const STAGE = 'periodic_report.stage_completion'
const TRIGGER = 'periodic_report.runtime_trigger'

function registration(hookId: string): ShippedRegistration {
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
    requested_read_scope: ['stage_completion', 'last_report'],
    requested_write_scope: [],
  }
}

function source(eventKind: 'refresh_state' | 'todo_complete', todoId: string | null): ShippedSource {
  return {
    schema_version: 'loopx_post_writeback_hook_source_v0',
    event_kind: eventKind,
    status: 'committed',
    durable: true,
    identity: {
      goal_id: 'goal-1',
      agent_id: 'agent-😀',
      todo_id: todoId,
      turn_instance_id: 'turn-1',
      effect_id: 'effect-1',
    },
    state_version: 'state-v1',
    receipt_id: null,
    committed_at: '2026-09-02T12:00:00Z',
    projection: { stage_completion: 'stage-1', last_report: null, private_notes: 'planted-private-note-no-hook-reads' },
  }
}

/** A periodic-report-like producer of `hookId`: one intent keyed by the stage. */
function producer(hookId: string, marker = 'first', key?: string) {
  const calls: ShippedHookInput[] = []
  const fn = (input: ShippedHookInput): ShippedHookResult => {
    calls.push(input)
    return {
      schema_version: 'loopx_post_writeback_capability_hook_result_v0',
      hook_id: hookId,
      capability_id: 'periodic-report',
      phase: 'post_writeback',
      status: 'intent',
      intent: {
        schema_version: 'loopx_capability_intent_v0',
        intent_kind: 'periodic_report.deliver',
        idempotency_key: key ?? `periodic-report:${String(input.projection.stage_completion)}`,
        source_receipt_id: input.receipt.event_id,
        payload: { stage: input.projection.stage_completion ?? null, marker },
        requested_write_scope: [],
      },
    }
  }
  return { fn, calls }
}

let dir: string
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'loopx-shipped-'))
})
afterEach(() => rmSync(dir, { recursive: true, force: true }))

const open = (replay: 'return' | 'verify' = 'return') =>
  HookRuntime.open({
    dialect: 'loopx-shipped-v0',
    journal: join(dir, 'hooks.sqlite'),
    profile: { enabled: true, replay },
  })

describe('loopx-shipped-v0 runtime', () => {
  it('records an intent for both event kinds and replays the stored receipt without calling the producer', async () => {
    const runtime = await open()
    const p = producer(STAGE)
    runtime.register({ registration: registration(STAGE), provider: p.fn })
    for (const [kind, todo] of [
      ['refresh_state', null],
      ['todo_complete', 'todo-1'],
    ] as const) {
      const before = p.calls.length
      const first = await runtime.dispatch(source(kind, todo))
      expect(first).toMatchObject({
        schema_version: 'loopx_post_writeback_capability_hook_dispatch_v0',
        registered_count: 1,
        invoked_count: 1,
        intent_count: 1,
        failures: [],
        primary_writeback_preserved: true,
        external_writes_performed: false,
      })
      expect(p.calls[before]!.receipt.event_id).toMatch(/^pwr_[0-9a-f]{24}$/)
      // The input holds the read scope's keys only.
      expect(Object.keys(p.calls[before]!.projection).sort()).toEqual(['last_report', 'stage_completion'])
      const again = await runtime.dispatch(source(kind, todo))
      expect(p.calls.length).toBe(before + 1)
      expect(again.replayed_hooks).toEqual([STAGE])
      expect(again.intents).toEqual(first.intents)
    }
    const rows = await runtime.journal.listDispatches({})
    expect(rows.items).toHaveLength(2)
    for (const row of rows.items) {
      const receipt = row.receipt as ShippedSidecarReceipt
      expect(row.dialect).toBe('loopx-shipped-v0')
      expect(receipt).toMatchObject({
        status: 'intent_recorded',
        attempt_count: 1,
        recorded_at: '2026-09-02T12:00:00Z',
      })
      expect(receipt.dispatch_id).toBe(row.dispatchId)
    }
    await runtime.close()
    // The key no hook reads never reaches a file.
    for (const name of readdirSync(dir)) {
      expect(readFileSync(join(dir, name)).includes('planted-private-note')).toBe(false)
    }
  })

  it('gives the design page worked example its LoopX ids', async () => {
    const runtime = await open()
    const p = producer(STAGE)
    runtime.register({ registration: registration(STAGE), provider: p.fn })
    await runtime.dispatch(source('refresh_state', 'todo-1'))
    expect(p.calls[0]!.receipt.event_id).toBe('pwr_1e21e6cc20ec36025f486859')
    const row = await runtime.journal.getDispatch(
      'pwh_bd119d54eba68a96ecd93c21ff3565283decd8c1e3746d2d9ab1bfc621098933',
    )
    expect(row?.hookId).toBe(STAGE)
    await runtime.close()
  })

  it('isolates a conflicting result as receipt_conflict and keeps the stored receipt', async () => {
    const runtime = await open('verify')
    let marker = 'first'
    const p = producer(STAGE)
    runtime.register({ registration: registration(STAGE), provider: (input) => producer(STAGE, marker).fn(input) })
    await runtime.dispatch(source('refresh_state', null))
    const row = (await runtime.journal.listDispatches({})).items[0]!
    marker = 'second'
    const conflict = await runtime.dispatch(source('refresh_state', null))
    expect(conflict.failures).toEqual([
      {
        hook_id: STAGE,
        capability_id: 'periodic-report',
        error_code: 'receipt_conflict',
      },
    ])
    expect((await runtime.journal.getDispatch(row.dispatchId))?.receipt).toEqual(row.receipt)
    expect(p.calls).toHaveLength(0)
    await runtime.close()
  })

  it('retries a retryable_failure with attempt_count 2 after a restart', async () => {
    let runtime = await open()
    runtime.register({
      registration: registration(STAGE),
      provider: () => {
        throw new Error('producer down: /home/ops/secret.txt')
      },
    })
    const failed = await runtime.dispatch(source('todo_complete', 'todo-7'))
    expect(failed.failures[0]!.error_code).toBe('producer_failed')
    const row = (await runtime.journal.listDispatches({})).items[0]!
    expect(row.receipt).toMatchObject({ status: 'retryable_failure', error_code: 'producer_failed', attempt_count: 1 })
    await runtime.close()

    runtime = await open()
    runtime.register({ registration: registration(STAGE), provider: producer(STAGE).fn })
    const retried = await runtime.dispatch(source('todo_complete', 'todo-7'))
    expect(retried.retried_hooks).toEqual([STAGE])
    expect((await runtime.journal.getDispatch(row.dispatchId))?.receipt).toMatchObject({
      status: 'intent_recorded',
      attempt_count: 2,
    })
    await runtime.close()
    for (const name of readdirSync(dir)) {
      expect(readFileSync(join(dir, name)).includes('producer down')).toBe(false)
    }
  })

  it('gives a later hook reusing an idempotency_key intent_key_conflict', async () => {
    const runtime = await open()
    runtime.register({ registration: registration(STAGE), provider: producer(STAGE, 'a', 'periodic-report:k').fn })
    runtime.register({ registration: registration(TRIGGER), provider: producer(TRIGGER, 'b', 'periodic-report:k').fn })
    const result = await runtime.dispatch(source('refresh_state', null))
    expect(result.registered_count).toBe(2)
    expect(result.intents.map((i) => i.payload.marker)).toEqual(['b'])
    expect(result.failures.map((f) => [f.hook_id, f.error_code])).toEqual([[STAGE, 'intent_key_conflict']])
    await runtime.close()
  })

  it('refuses a source holding a credential anywhere, running nothing', async () => {
    const runtime = await open()
    const p = producer(STAGE)
    runtime.register({ registration: registration(STAGE), provider: p.fn })
    const planted = source('refresh_state', null)
    planted.projection.private_notes = 'ghp_plantedplantedplantedplantedplanted12'
    const refused = await runtime.dispatch(planted)
    expect(refused.runtime_failure).toMatchObject({ phase: 'preflight', error_kind: 'source_projection_failed' })
    expect(p.calls).toHaveLength(0)
    expect((await runtime.journal.listDispatches({})).items).toHaveLength(0)
    await runtime.close()
  })

  it('refuses a registration the shipped contract rejects, and an unknown dialect', async () => {
    const runtime = await open()
    const bad = { ...registration(STAGE), budget: { ...registration(STAGE).budget, timeout_ms: 100 } }
    expect(() => runtime.register({ registration: bad as ShippedRegistration, provider: producer(STAGE).fn })).toThrow(
      LoopxHooksError,
    )
    await runtime.close()
    await expect(
      HookRuntime.open({ dialect: 'x' as 'contract-v0', journal: join(dir, 'other.sqlite') }),
    ).rejects.toMatchObject({ code: 'ERR_LOOPX_UNKNOWN_DIALECT' })
  })
})

describe('loopx-shipped-v0: a credential planted at every string of a source', () => {
  /** Every path to a string leaf (and every member name) of `doc`. */
  function leaves(doc: unknown, at: (string | number)[] = []): (string | number)[][] {
    if (typeof doc === 'string') return [at]
    if (Array.isArray(doc)) return doc.flatMap((v, i) => leaves(v, [...at, i]))
    if (doc && typeof doc === 'object') return Object.entries(doc).flatMap(([k, v]) => leaves(v, [...at, k]))
    return []
  }
  const SECRET = 'ghp_plantedplantedplantedplantedplanted12'

  it('is refused before any producer runs, and nothing reaches a file', async () => {
    const runtime = await open()
    const p = producer(STAGE)
    runtime.register({ registration: registration(STAGE), provider: p.fn })
    const base = source('todo_complete', 'todo-1')
    const paths = leaves(base)
    expect(paths.length).toBeGreaterThan(8)
    for (const path of paths) {
      const planted = structuredClone(base) as unknown as Record<string | number, unknown>
      let node = planted
      for (const key of path.slice(0, -1)) node = node[key] as Record<string | number, unknown>
      node[path[path.length - 1]!] = SECRET
      const result = await runtime.dispatch(planted as unknown as ShippedSource)
      expect(result.runtime_failure, path.join('/')).toBeDefined()
    }
    // A member name that is a credential, too.
    const named = source('todo_complete', 'todo-1')
    ;(named.projection as Record<string, unknown>)[SECRET] = 'x'
    expect((await runtime.dispatch(named)).runtime_failure).toBeDefined()
    expect(p.calls).toHaveLength(0)
    await runtime.close()
    for (const name of readdirSync(dir)) expect(readFileSync(join(dir, name)).includes('ghp_planted')).toBe(false)
  })
})
