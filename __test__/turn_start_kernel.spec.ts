// The turn-start kernel through the JS API (RFC "Ordering" and "Failure and
// replay", contract-v0 section 6): request validation before any provider
// runs, duplicate identities once, hook_id order, typed and isolated
// failures, receipts held to their contract, required reads deduplicated and
// projected into both channels before work, and the lane decision.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'

import { describe, expect, it } from 'vitest'

import {
  LoopxHooksError,
  TurnStartKernel,
  type TurnStartHookInput,
  type TurnStartHookRegistration,
  type TurnStartOutcome,
  type TurnStartReceipt,
  type TurnStartRequest,
} from '../lib/index.js'
import { turnStartReceipt } from './support/turn_start'

const example = JSON.parse(
  readFileSync(join(__dirname, '..', 'examples', 'turn_start_registration.json'), 'utf8'),
) as TurnStartHookRegistration

const clone = <T>(v: T): T => structuredClone(v)

function registration(
  capability: string,
  command = 'loopx inbox read --pending',
  timeoutMs = 200,
): TurnStartHookRegistration {
  const r = clone(example)
  r.capability_id = capability
  r.hook_id = `${capability}.turn_start_read`
  r.required_read.command = command
  r.budget.timeout_ms = timeoutMs
  return r
}

type Counts = Partial<Omit<TurnStartReceipt, 'schema_version' | 'hook_id'>>

const receipt = (input: TurnStartHookInput, fields: Counts = {}): TurnStartReceipt => turnStartReceipt(input, fields)

const fresh = (n: number, more: Counts = {}): Counts => ({
  status: 'ok',
  agent_read_required: true,
  observations_new: n,
  pending: n,
  ...more,
})

const request: TurnStartRequest = {
  turn: { goal_id: 'goal_opaque', agent_id: 'agent_opaque', turn_instance_id: 'turn_opaque' },
  quota: { max_units: 3 },
}

function kernel(): TurnStartKernel {
  return new TurnStartKernel({ profile: { enabled: true } })
}

const statuses = (o: TurnStartOutcome) =>
  o.hooks.map((h) => [h.hookId, h.receipt.status, h.kernelFailure?.code ?? null, h.kernelFailure?.rule ?? null])

describe('request validation runs before any hook', () => {
  it('an invalid quota request performs no provider read', async () => {
    const k = kernel()
    let calls = 0
    k.register({ registration: registration('alpha'), provider: (i) => (calls++, receipt(i, fresh(1))) })
    const bad = { ...request, quota: { max_units: 0 } }
    const outcome = await k.dispatchTurnStart(bad)
    expect(outcome).toEqual({
      admitted: false,
      violations: [{ path: '/quota/max_units', rule: 'out_of_range' }],
      phaseEnabled: true,
      hooks: [],
      requiredReads: [],
      lane: { decision: 'keep_selected', reason: 'nothing_to_read' },
    })
    const cyclic: any = { ...request }
    cyclic.self = cyclic
    expect((await k.dispatchTurnStart(cyclic)).violations).toEqual([{ path: '', rule: 'not_json_value' }])
    const withPath = { ...request, turn: { ...request.turn, goal_id: '/home/me/goal' } }
    expect((await k.dispatchTurnStart(withPath)).violations).toEqual([
      { path: '/turn/goal_id', rule: 'bad_opaque_ref' },
    ])
    expect(calls).toBe(0)
    // A valid request still dispatches the hook.
    expect((await k.dispatchTurnStart(request)).admitted).toBe(true)
    expect(calls).toBe(1)
  })

  it('a disabled phase runs no hook', async () => {
    const k = new TurnStartKernel()
    let calls = 0
    k.register({ registration: registration('alpha'), provider: (i) => (calls++, receipt(i)) })
    const outcome = await k.dispatchTurnStart(request)
    expect([outcome.admitted, outcome.phaseEnabled, outcome.hooks.length, calls]).toEqual([true, false, 0, 0])
  })
})

describe('hooks', () => {
  it('duplicate hook identities run once, in hook_id order', async () => {
    const k = kernel()
    const order: string[] = []
    const provider = (i: TurnStartHookInput) => (order.push(i.hook_id), receipt(i))
    for (const cap of ['gamma', 'alpha', 'beta'])
      expect(k.register({ registration: registration(cap), provider })).toEqual({ alreadyInstalled: false })
    expect(k.register({ registration: registration('alpha'), provider })).toEqual({ alreadyInstalled: true })
    expect(k.hookIds).toEqual(['alpha.turn_start_read', 'beta.turn_start_read', 'gamma.turn_start_read'])
    await k.dispatchTurnStart(request)
    expect(order).toEqual(['alpha.turn_start_read', 'beta.turn_start_read', 'gamma.turn_start_read'])
  })

  it('an invalid registration, or another one under an installed hook_id, is rejected with violations', () => {
    const k = kernel()
    const provider = (i: TurnStartHookInput) => receipt(i)
    const bad = registration('alpha')
    ;(bad as any).phase = 'post_writeback'
    const thrown = (() => {
      try {
        k.register({ registration: bad, provider })
      } catch (e) {
        return e
      }
    })() as LoopxHooksError
    expect(thrown).toBeInstanceOf(LoopxHooksError)
    expect([thrown.code, thrown.violations]).toEqual([
      'ERR_LOOPX_REGISTRATION_REJECTED',
      [{ path: '/phase', rule: 'not_allowed_value' }],
    ])
    k.register({ registration: registration('alpha'), provider })
    expect(() => k.register({ registration: registration('alpha', 'loopx other'), provider })).toThrow(LoopxHooksError)
  })

  it('a provider gets a frozen input: its identity, the Turn, its budget and scopes', async () => {
    const k = kernel()
    let seen: TurnStartHookInput | undefined
    k.register({ registration: registration('alpha'), provider: (i) => ((seen = i), receipt(i)) })
    await k.dispatchTurnStart(request)
    expect(seen).toEqual({
      hook_id: 'alpha.turn_start_read',
      capability_id: 'alpha',
      turn: request.turn,
      budget: { timeout_ms: 200, max_attempts_per_dispatch: 8, max_routes: 4 },
      write_scopes: ['owner_private_inbox', 'owner_private_cursor', 'provider_message_reaction'],
    })
    expect(Object.isFrozen(seen) && Object.isFrozen(seen!.budget)).toBe(true)
  })

  it('failures are typed public receipts, isolated from the other hooks, with nothing the provider said', async () => {
    const k = kernel()
    const secret = 'message body: deploy key is hunter2'
    k.register({
      registration: registration('a1'),
      provider: () => {
        throw new Error(secret)
      },
    })
    k.register({ registration: registration('a2'), provider: () => new Promise<TurnStartReceipt>(() => {}) })
    k.register({ registration: registration('a3'), provider: (i) => ({ ...receipt(i), message: secret }) as any })
    k.register({ registration: registration('a4'), provider: () => (() => secret) as any })
    k.register({
      registration: registration('a5'),
      provider: (i) => receipt(i, fresh(1, { agent_read_required: false })),
    })
    k.register({
      registration: registration('a6'),
      provider: (i) =>
        receipt(i, {
          status: 'provider_permission_denied',
          error_code: 'provider_permission_denied',
          routes_ok: 0,
          routes_failed: 1,
        }),
    })
    k.register({ registration: registration('z9'), provider: (i) => receipt(i, fresh(1)) })
    const outcome = await k.dispatchTurnStart(request)
    expect(statuses(outcome)).toEqual([
      ['a1.turn_start_read', 'provider_contract_error', 'producer_failed', null],
      ['a2.turn_start_read', 'timed_out', 'producer_timed_out', null],
      ['a3.turn_start_read', 'provider_contract_error', 'result_contract_rejected', 'unknown_field'],
      ['a4.turn_start_read', 'provider_contract_error', 'result_contract_rejected', 'not_json_value'],
      // New observations without the read obligation: a contract error, never empty.
      ['a5.turn_start_read', 'provider_contract_error', 'result_contract_rejected', 'not_allowed_value'],
      ['a6.turn_start_read', 'provider_permission_denied', null, null],
      ['z9.turn_start_read', 'ok', null, null],
    ])
    expect(JSON.stringify(outcome)).not.toContain('hunter2')
    expect(outcome.requiredReads.map((r) => r.channel)).toEqual(['agent', 'cli'])
  })

  it('external writes need the provider_message_reaction scope, and stay visible when refused', async () => {
    const k = kernel()
    const r = registration('alpha')
    r.write_scopes = ['owner_private_inbox', 'owner_private_cursor']
    k.register({ registration: r, provider: (i) => receipt(i, { reactions_added: 1, external_writes_performed: 1 }) })
    const [hook] = (await k.dispatchTurnStart(request)).hooks
    expect([hook!.receipt.status, hook!.kernelFailure?.rule, hook!.receipt.external_writes_performed]).toEqual([
      'provider_contract_error',
      'authority_claimed',
      1,
    ])
  })
})

describe('required reads and the lane', () => {
  it('required reads are deduplicated by command and projected into agent and cli before work', async () => {
    const k = kernel()
    k.register({
      registration: registration('alpha', 'loopx inbox read --pending'),
      provider: (i) => receipt(i, fresh(1)),
    })
    k.register({ registration: registration('beta', 'loopx mail read'), provider: (i) => receipt(i) })
    k.register({
      registration: registration('gamma', 'loopx inbox read --pending'),
      provider: (i) => receipt(i, fresh(2)),
    })
    const outcome = await k.dispatchTurnStart(request)
    expect(outcome.requiredReads).toEqual([
      { channel: 'agent', command: 'loopx inbox read --pending', ordering: 'before_work' },
      { channel: 'cli', command: 'loopx inbox read --pending', ordering: 'before_work' },
    ])
  })

  it('a fresh ordinary read notifies and keeps the selected lane; still pending next turn, it preempts', async () => {
    const k = kernel()
    let turn = 0
    k.register({
      registration: registration('alpha'),
      provider: (i) => (++turn === 1 ? receipt(i, fresh(2)) : receipt(i, { agent_read_required: true, pending: 2 })),
    })
    expect((await k.dispatchTurnStart(request)).lane).toEqual({
      decision: 'notify_keep_selected',
      reason: 'fresh_ordinary_read',
    })
    const second = await k.dispatchTurnStart(request)
    expect(second.lane).toEqual({ decision: 'preempt_material_review', reason: 'material_still_pending' })
    expect(second.requiredReads).toHaveLength(2)
  })

  it('a direct question or a verified reply preempts on its first turn', async () => {
    for (const [more, reason] of [
      [{ direct_questions: 1 }, 'direct_question'],
      [{ verified_replies: 1 }, 'verified_reply'],
    ] as const) {
      const k = kernel()
      k.register({ registration: registration('alpha'), provider: (i) => receipt(i, fresh(1, more)) })
      expect((await k.dispatchTurnStart(request)).lane).toEqual({ decision: 'preempt_material_review', reason })
    }
  })

  it('partial multi-route success keeps the read obligation and a compact failure code', async () => {
    const k = kernel()
    k.register({
      registration: registration('alpha'),
      provider: (i) =>
        receipt(i, fresh(1, { status: 'partial', error_code: 'provider_unavailable', routes_failed: 1 })),
    })
    const outcome = await k.dispatchTurnStart(request)
    expect(outcome.hooks[0]!.receipt).toMatchObject({
      status: 'partial',
      error_code: 'provider_unavailable',
      agent_read_required: true,
    })
    expect(outcome.requiredReads).toHaveLength(2)
    expect(outcome.lane.decision).toBe('notify_keep_selected')
  })

  it('a provider cannot dispatch from inside itself', async () => {
    const k = kernel()
    let inner: unknown
    k.register({
      registration: registration('alpha'),
      provider: async (i) => {
        inner = await k.dispatchTurnStart(request).catch((e) => e.code)
        return receipt(i)
      },
    })
    await k.dispatchTurnStart(request)
    expect(inner).toBe('ERR_LOOPX_REENTRANT_DISPATCH')
  })
})
