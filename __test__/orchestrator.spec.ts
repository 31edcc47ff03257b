// The reference orchestrator seam (issue 4, item 1; RFC section 5 and slice 2):
// a Turn settlement with its ordered primary steps in its own SQLite Turn
// journal, and the hook dispatch at the committed-receipt boundary, outside
// the steps, disabled by default. Hooks here are inert synthetic ones
// (capability `synth`): the seam never names a capability.
//
// Everything runs the built package (dist/*.js and the addon) on real files in
// temp dirs under os.tmpdir(), removed afterwards; crashes are real child
// processes killed with SIGKILL, or the seam's simulated crash points.
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import Database from 'better-sqlite3'
import { afterEach, describe, expect, it } from 'vitest'

import {
  HookRuntime,
  defineIntentKind,
  dispatchId,
  intent,
  notApplicable,
  proposed,
  registrationDigest,
  type PostWritebackHookInput,
  type PostWritebackHookRegistration,
  type Profile,
  type WritebackReceipt,
} from '../lib/index.js'
import {
  PRIMARY_STEPS,
  TurnSettlement,
  type CrashPoint,
  type SettleResult,
  type TurnSettlementOptions,
  type WritebackRequest,
} from '../lib/orchestrator/index.js'
import { quotaSpendEligible } from '../lib/orchestrator/quota.js'

const ROOT = join(__dirname, '..')

// ---------------------------------------------------------------- fixtures

const SIGNAL = defineIntentKind({
  intent_kind: 'synth.signal',
  capability_id: 'synth',
  operations: ['evaluate'],
  payload_schema: {
    type: 'object',
    properties: {
      ref: { type: 'string', format: 'opaque_ref' },
      level: { type: 'integer', minimum: 0, maximum: 1000 },
    },
    required: ['ref', 'level'],
    additionalProperties: false,
  },
} as const)

function registration(
  hookId: string,
  budget: Partial<PostWritebackHookRegistration['budget']> = {},
): PostWritebackHookRegistration {
  return {
    schema_version: 'loopx_post_writeback_capability_hook_registration_v0',
    hook_id: hookId,
    capability_id: 'synth',
    phase: 'post_writeback',
    event_kinds: ['todo_completed', 'replan_recorded'],
    intent_kinds: ['synth.signal'],
    requested_read_scope: ['settlement_identity', 'bounded_event_projection'],
    budget: {
      max_invocations_per_dispatch: 2,
      max_intents_per_dispatch: 1,
      max_result_bytes: 4096,
      timeout_ms: 1000,
      ...budget,
    },
    failure_policy: 'isolate',
  }
}

// Typed as a contract provider whatever it answers (`never` is assignable to its result): the dispatcher judges it.
type Provider = ((input: PostWritebackHookInput) => never) & { calls: number; inputs: PostWritebackHookInput[] }

function counted(body: (input: PostWritebackHookInput, call: number) => unknown): Provider {
  const fn = ((input: PostWritebackHookInput) => {
    fn.calls += 1
    fn.inputs.push(input)
    return body(input, fn.calls) as never
  }) as Provider
  fn.calls = 0
  fn.inputs = []
  return fn
}

/** Proposes one signal intent whose payload is derived from the receipt (level 1 unless told). */
const proposer = (level: (call: number) => number = () => 1) =>
  counted((input, call) =>
    proposed([
      intent(input, SIGNAL, {
        operation: 'evaluate',
        policyVersion: 'v0',
        payload: { ref: input.source.receipt_id, level: level(call) },
      }),
    ]),
  )

const inert = () => counted(() => notApplicable())

function request(n: number | string = 1, over: Partial<WritebackRequest> = {}): WritebackRequest {
  return {
    kind: 'todo_completed',
    goalId: 'goal_0001',
    agentId: 'agent_0001',
    todoId: `todo_${n}`,
    turnInstanceId: `turn_${n}`,
    effectId: `effect_${n}`,
    stateRevision: `rev_${n}`,
    factRefs: [`fact_${n}`],
    ...over,
  }
}

const dirs: string[] = []
const closers: (() => Promise<void> | void)[] = []

afterEach(async () => {
  for (const close of closers.splice(0).reverse()) {
    try {
      await close()
    } catch {
      // already closed
    }
  }
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'loopx-hooks-orchestrator-'))
  dirs.push(d)
  return d
}

interface World {
  dir: string
  hookPath: string
  turnPath: string
  hooks: HookRuntime
  seam: TurnSettlement
}

/** A hook runtime (profile as given, default enabled) with `providers` installed, and a seam over both journals. */
async function world(
  providers: Record<string, Provider>,
  options: {
    profile?: Partial<Profile>
    dir?: string
    seam?: Partial<TurnSettlementOptions>
    budget?: Partial<PostWritebackHookRegistration['budget']>
  } = {},
): Promise<World> {
  const dir = options.dir ?? tempDir()
  const hookPath = join(dir, 'hooks.journal')
  const turnPath = join(dir, 'turn.journal')
  const hooks = await HookRuntime.open({
    journal: hookPath,
    profile: options.profile ?? { enabled: true },
    synchronous: 'normal',
  })
  closers.push(() => hooks.close())
  hooks.defineIntentKind(SIGNAL)
  for (const [hookId, provider] of Object.entries(providers))
    hooks.register({ registration: registration(hookId, options.budget), provider })
  const seam = await TurnSettlement.open({ turnJournalPath: turnPath, hooks, ...options.seam })
  closers.push(() => seam.close())
  return { dir, hookPath, turnPath, hooks, seam }
}

/** The dispatch id core must use for `hookId` and a committed receipt. */
function expectedDispatchId(
  hookId: string,
  receiptId: string,
  effectId: string,
  eventKind: string,
  budget: Partial<PostWritebackHookRegistration['budget']> = {},
) {
  const reg = registration(hookId, budget)
  return dispatchId({
    receiptId,
    effectId,
    hookId,
    capabilityId: 'synth',
    registrationDigest: registrationDigest(reg),
    registrationSchemaVersion: reg.schema_version,
    eventKind,
  })
}

async function hookJournal(hooks: HookRuntime) {
  const [stats, dispatches, intents] = await Promise.all([
    hooks.journal.stats(),
    hooks.journal.listDispatches({ limit: 1000 }),
    hooks.journal.listIntents({ limit: 1000 }),
  ])
  return { stats, dispatches: dispatches.items, intents: intents.items }
}

const NOTHING = {
  checkpointed: 0,
  failed: 0,
  proposed: 0,
  notApplicable: 0,
  exhausted: 0,
  intents: 0,
  intentsOpen: 0,
}

/** The primary part of the Turn journal (what no hook may change): everything but the dispatch markers. */
function primaryRows(seam: TurnSettlement) {
  const { dispatchMarkers: _markers, ...primary } = seam.contents()
  return primary
}

function stepsOf(result: SettleResult) {
  return result.primary.steps.map((s) => `${s.step}:${s.status}${s.code ? `:${s.code}` : ''}`)
}

const COMMITTED_STEPS = ['validate:passed', 'durable_writeback:committed', 'quota_spend:spent']

// ---------------------------------------------------------------- primary steps and dispatch

describe('primary steps and the committed-receipt boundary', () => {
  it('commits validate -> durable_writeback -> quota_spend in order, with a committed, checkpointed receipt in its own Turn journal', async () => {
    const p = proposer()
    const w = await world({ 'synth.one': p })
    const result = await w.seam.settle(request(1))

    expect(PRIMARY_STEPS).toEqual(['validate', 'durable_writeback', 'quota_spend'])
    expect(stepsOf(result)).toEqual(COMMITTED_STEPS)
    expect(result.primary.ok).toBe(true)
    const receipt = result.primary.receipt!
    expect(receipt).toMatchObject({
      effect_id: 'effect_1',
      step_kind: 'durable_writeback',
      status: 'committed',
      checkpointed: true,
      state_revision: 'rev_1',
    })
    expect(receipt.receipt_id).toMatch(/^rcpt_[0-9a-f]{64}$/)
    expect(receipt.committed_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
    expect(result.primary.settlement).toEqual({
      goal_id: 'goal_0001',
      agent_id: 'agent_0001',
      todo_id: 'todo_1',
      turn_instance_id: 'turn_1',
      effect_id: 'effect_1',
    })
    expect(result.primary.quotaSpend).toMatchObject({ receiptId: receipt.receipt_id, effectId: 'effect_1', units: 1 })
    expect(result.primary.eligible).toBe(true)

    // The Turn journal holds the settlement, its three ordered steps, the receipt, the spend and the marker.
    const rows = w.seam.contents()
    expect(rows.receipts).toEqual([receipt])
    expect(rows.steps.map((s) => [s.ordinal, s.step, s.status])).toEqual([
      [1, 'validate', 'passed'],
      [2, 'durable_writeback', 'committed'],
      [3, 'quota_spend', 'spent'],
    ])
    expect(rows.quotaSpends).toHaveLength(1)
    expect(rows.dispatchMarkers).toEqual([
      expect.objectContaining({
        receiptId: receipt.receipt_id,
        admitted: true,
        refusal: null,
        outcomes: [expect.objectContaining({ hookId: 'synth.one', outcome: 'recorded' })],
      }),
    ])
    expect(w.seam.integrity()).toEqual({ ok: true, messages: [] })

    // It is durable: a new connection (another process would do the same) reads the same receipt.
    const db = new Database(w.turnPath, { readonly: true })
    try {
      expect(db.prepare('SELECT receipt_id, status, checkpointed FROM receipts').all()).toEqual([
        { receipt_id: receipt.receipt_id, status: 'committed', checkpointed: 1 },
      ])
      expect(db.pragma('journal_mode', { simple: true })).toBe('wal')
    } finally {
      db.close()
    }
  })

  it('dispatches a committed writeback exactly once per admitted hook, in hook_id order, with ids derived from the committed receipt; the hook is not a primary step', async () => {
    const a = proposer()
    const b = inert()
    const w = await world({ 'synth.zeta': a, 'synth.alpha': b })
    const result = await w.seam.settle(request(2))
    const receipt = result.primary.receipt!

    expect(result.primary.steps.map((s) => s.step)).toEqual(['validate', 'durable_writeback', 'quota_spend'])
    expect(result.dispatch).toMatchObject({ admitted: true, refusal: null })
    expect(result.dispatch!.hooks.map((h) => [h.hookId, h.outcome])).toEqual([
      ['synth.alpha', 'not_applicable'],
      ['synth.zeta', 'recorded'],
    ])
    for (const h of result.dispatch!.hooks) {
      expect(h.dispatchId).toBe(expectedDispatchId(h.hookId, receipt.receipt_id, 'effect_2', 'todo_completed'))
    }
    expect([a.calls, b.calls]).toEqual([1, 1])

    // The provider saw the committed receipt's projection, nothing more.
    const input = a.inputs[0]!
    expect(input.source).toEqual({
      receipt_id: receipt.receipt_id,
      effect_id: 'effect_2',
      step_kind: 'durable_writeback',
      goal_id: 'goal_0001',
      agent_id: 'agent_0001',
      todo_id: 'todo_2',
      turn_instance_id: 'turn_2',
      event_kind: 'todo_completed',
      state_revision: 'rev_2',
      committed_at: receipt.committed_at,
    })
    expect(input.projection).toEqual({
      schema_version: 'loopx_post_writeback_event_projection_v0',
      transition: 'segment_completed',
      fact_refs: ['fact_2'],
    })

    const j = await hookJournal(w.hooks)
    expect(j.stats).toMatchObject({ proposed: 1, notApplicable: 1, intents: 1 })
    expect(j.dispatches.map((d) => d.receiptId)).toEqual([receipt.receipt_id, receipt.receipt_id])
  })

  it('settles a replan writeback the same way (event replan_recorded, transition replan_recorded)', async () => {
    const p = proposer()
    const w = await world({ 'synth.one': p })
    const result = await w.seam.settle(request(3, { kind: 'replan_recorded', factRefs: [] }))
    expect(stepsOf(result)).toEqual(COMMITTED_STEPS)
    expect(result.dispatch!.hooks[0]).toMatchObject({ outcome: 'recorded' })
    expect(result.dispatch!.hooks[0]!.dispatchId).toBe(
      expectedDispatchId('synth.one', result.primary.receipt!.receipt_id, 'effect_3', 'replan_recorded'),
    )
    expect(p.inputs[0]!.projection).toMatchObject({ transition: 'replan_recorded', fact_refs: [] })
  })

  it('is disabled by default: no runtime, or a runtime with the default profile, invokes nothing and records no sidecar row; the primary settles all the same', async () => {
    // No runtime at all.
    const dir = tempDir()
    const bare = await TurnSettlement.open({ turnJournalPath: join(dir, 'turn.journal') })
    closers.push(() => bare.close())
    const r1 = await bare.settle(request(1))
    expect(stepsOf(r1)).toEqual(COMMITTED_STEPS)
    expect(r1.dispatch).toBeNull()
    expect(bare.dispatchMarker(r1.primary.receipt!.receipt_id)).toMatchObject({
      admitted: false,
      refusal: 'hooks_not_configured',
      outcomes: [],
    })

    // A runtime opened without a profile: the phase is disabled.
    const p = proposer()
    const dir2 = tempDir()
    const hooks = await HookRuntime.open({ journal: join(dir2, 'hooks.journal') })
    closers.push(() => hooks.close())
    hooks.defineIntentKind(SIGNAL)
    hooks.register({ registration: registration('synth.one'), provider: p })
    const seam = await TurnSettlement.open({ turnJournalPath: join(dir2, 'turn.journal'), hooks })
    closers.push(() => seam.close())
    const r2 = await seam.settle(request(1))
    expect(stepsOf(r2)).toEqual(COMMITTED_STEPS)
    expect(r2.dispatch).toEqual({ admitted: false, refusal: 'phase_disabled', hooks: [] })
    expect(p.calls).toBe(0)
    expect((await hookJournal(hooks)).stats).toEqual(NOTHING)
    expect(r2.primary.receipt!.receipt_id).toBe(r1.primary.receipt!.receipt_id) // same writeback, same receipt identity
  })

  it('a failed primary validation writes nothing and dispatches nothing (zero post-writeback invocations)', async () => {
    const p = proposer()
    const w = await world({ 'synth.one': p })
    const bad: [string, unknown, string[]][] = [
      ['empty goal', request(1, { goalId: '' }), ['/goalId bad_opaque_ref']],
      ['path as todo', request(1, { todoId: '/home/alice/todo' }), ['/todoId bad_opaque_ref']],
      ['URL as fact', request(1, { factRefs: ['https://internal.example/x'] }), ['/factRefs/0 bad_opaque_ref']],
      [
        'credential as revision',
        request(1, { stateRevision: 'ghp_0123456789abcdefABCDEF0123456789abcd' }),
        ['/stateRevision credential_like_value'],
      ],
      ['unknown kind', request(1, { kind: 'todo_deleted' as never }), ['/kind unknown_event_kind']],
      ['missing agent', { ...request(1), agentId: undefined }, ['/agentId missing_field']],
      ['non-string effect', request(1, { effectId: 7 as never }), ['/effectId wrong_type']],
      ['unknown member', { ...request(1), prompt: 'do the thing' }, ['/prompt unknown_field']],
      [
        'too many facts',
        request(1, { factRefs: Array.from({ length: 33 }, (_, i) => `f${i}`) }),
        ['/factRefs too_many_items'],
      ],
      ['not an object', 'todo_completed', [' wrong_type']],
    ]
    for (const [label, req, violations] of bad) {
      const result = await w.seam.settle(req as WritebackRequest)
      expect(result.primary.ok, label).toBe(false)
      expect(stepsOf(result), label).toEqual(['validate:rejected', 'durable_writeback:not_run', 'quota_spend:not_run'])
      expect(
        result.primary.violations.map((v) => `${v.path} ${v.rule}`),
        label,
      ).toEqual(violations)
      expect(result.dispatch, label).toBeNull()
      expect([result.primary.receipt, result.primary.quotaSpend, result.primary.eligible], label).toEqual([
        null,
        null,
        false,
      ])
    }
    expect(p.calls).toBe(0)
    expect((await hookJournal(w.hooks)).stats).toEqual(NOTHING)
    expect(w.seam.contents()).toEqual({
      settlements: [],
      steps: [],
      receipts: [],
      quotaSpends: [],
      dispatchMarkers: [],
    })
  })

  it('a failed durable writeback (another writeback for a committed effect) dispatches nothing and leaves the committed receipt as it was', async () => {
    const p = proposer()
    const w = await world({ 'synth.one': p })
    const first = await w.seam.settle(request(1))
    const before = w.seam.contents()
    const intentsBefore = (await hookJournal(w.hooks)).intents

    for (const conflicting of [
      request(1, { stateRevision: 'rev_other' }),
      request(1, { kind: 'replan_recorded' }),
      request(1, { factRefs: ['fact_other'] }),
      request(1, { todoId: 'todo_other' }),
    ]) {
      const result = await w.seam.settle(conflicting)
      expect(stepsOf(result)).toEqual([
        'validate:passed',
        'durable_writeback:rejected:effect_conflict',
        'quota_spend:not_run',
      ])
      expect(result.primary.ok).toBe(false)
      expect(result.dispatch).toBeNull()
    }
    expect(p.calls).toBe(1)
    expect(w.seam.contents()).toEqual(before)
    expect((await hookJournal(w.hooks)).intents).toEqual(intentsBefore)
    expect(w.seam.committed('effect_1')!.receipt).toEqual(first.primary.receipt)
  })

  it('replaying the same writeback returns the same receipt, spends nothing more, and replays the dispatch: same dispatch receipt, no duplicate intent', async () => {
    const p = proposer()
    const w = await world({ 'synth.one': p })
    const first = await w.seam.settle(request(1))
    const again = await w.seam.settle(request(1))
    expect(stepsOf(again)).toEqual(['validate:passed', 'durable_writeback:replayed', 'quota_spend:already_spent'])
    expect(again.primary.receipt).toEqual(first.primary.receipt)
    expect(again.primary.quotaSpend).toEqual(first.primary.quotaSpend)
    expect(again.dispatch!.hooks[0]).toMatchObject({
      outcome: 'replayed',
      dispatchId: first.dispatch!.hooks[0]!.dispatchId,
    })
    expect(again.dispatch!.hooks[0]!.receipt).toEqual(first.dispatch!.hooks[0]!.receipt)
    expect(p.calls).toBe(1)
    const j = await hookJournal(w.hooks)
    expect(j.stats).toMatchObject({ proposed: 1, intents: 1 })
    expect(w.seam.contents().quotaSpends).toHaveLength(1)
  })

  it('hook failures (throw, timeout, malformed result, retries exhausted, verify conflict) leave the primary receipt, steps, spend and eligibility unchanged', async () => {
    const throws = counted(() => {
      throw new Error('provider exploded')
    })
    const slow = counted(() => new Promise((resolve) => setTimeout(() => resolve(notApplicable()), 400)))
    const malformed = counted(() => ({
      schema_version: 'loopx_post_writeback_hook_result_v0',
      status: 'proposed',
      intents: [{ nope: true }],
    }))
    const flips = proposer((call) => call) // a different payload on every call: a conflict under replay 'verify'
    const w = await world(
      { 'synth.throws': throws, 'synth.slow': slow, 'synth.malformed': malformed, 'synth.flips': flips },
      { profile: { enabled: true, replay: 'verify' }, budget: { timeout_ms: 50, max_invocations_per_dispatch: 1 } },
    )
    // The reference the seam would have with no hook at all.
    const reference = await TurnSettlement.open({ turnJournalPath: join(tempDir(), 'turn.journal') })
    closers.push(() => reference.close())

    const first = await w.seam.settle(request(1))
    const ref = await reference.settle(request(1))
    expect(stepsOf(first)).toEqual(COMMITTED_STEPS)
    expect(Object.fromEntries(first.dispatch!.hooks.map((h) => [h.hookId, `${h.outcome}:${h.failureCode}`]))).toEqual({
      'synth.flips': 'recorded:null',
      'synth.malformed': 'failed:result_contract_rejected',
      'synth.slow': 'failed:producer_timed_out',
      'synth.throws': 'failed:producer_failed',
    })
    const primaryAfterFirst = primaryRows(w.seam)

    // A second settle of the same writeback: verify conflict and exhausted retries.
    const second = await w.seam.settle(request(1))
    expect(Object.fromEntries(second.dispatch!.hooks.map((h) => [h.hookId, `${h.outcome}:${h.failureCode}`]))).toEqual({
      'synth.flips': 'conflict:intent_conflict',
      'synth.malformed': 'exhausted:dispatch_budget_exhausted',
      'synth.slow': 'exhausted:dispatch_budget_exhausted',
      'synth.throws': 'exhausted:dispatch_budget_exhausted',
    })

    // The primary is exactly what it would be without hooks.
    for (const r of [first, second]) {
      expect(r.primary.receipt).toEqual({ ...ref.primary.receipt!, committed_at: r.primary.receipt!.committed_at })
      expect(r.primary.receipt!.receipt_id).toBe(ref.primary.receipt!.receipt_id)
      expect(r.primary.eligible).toBe(true)
      expect(quotaSpendEligible(r.primary.receipt!, r.primary.settlement!)).toBe(true)
    }
    expect(primaryRows(w.seam)).toEqual(primaryAfterFirst)
    expect(primaryRows(w.seam).steps.map((s) => s.status)).toEqual(['passed', 'committed', 'spent'])
    expect(primaryRows(w.seam).quotaSpends).toHaveLength(1)
    expect((await hookJournal(w.hooks)).intents).toHaveLength(1) // the original of the conflicting hook, kept
  })

  it('quota-spend eligibility is a function of the primary receipt and settlement alone', () => {
    const receipt: WritebackReceipt = {
      receipt_id: 'r1',
      effect_id: 'e1',
      step_kind: 'durable_writeback',
      status: 'committed',
      checkpointed: true,
      state_revision: 'v1',
      committed_at: '2026-08-26T00:00:00Z',
    }
    const settlement = { goal_id: 'g', agent_id: 'a', todo_id: 't', turn_instance_id: 'u', effect_id: 'e1' }
    expect(quotaSpendEligible(receipt, settlement)).toBe(true)
    expect(quotaSpendEligible({ ...receipt, status: 'prepared' }, settlement)).toBe(false)
    expect(quotaSpendEligible({ ...receipt, checkpointed: false }, settlement)).toBe(false)
    // Another step is outside the type's vocabulary; a JSON caller can still send it.
    expect(quotaSpendEligible({ ...receipt, step_kind: 'validation' as 'durable_writeback' }, settlement)).toBe(false)
    expect(quotaSpendEligible(receipt, { ...settlement, effect_id: 'e2' })).toBe(false)
    // It takes no third argument: nothing from the hook phase can reach it.
    expect(quotaSpendEligible.length).toBe(2)
  })

  it('the Turn journal is its own file: the seam refuses a hook journal, and the hook runtime refuses a Turn journal', async () => {
    const w = await world({ 'synth.one': proposer() })
    await w.seam.settle(request(1))
    const hookStats = await w.hooks.journal.stats()
    await expect(TurnSettlement.open({ turnJournalPath: w.hookPath })).rejects.toMatchObject({
      code: 'ERR_LOOPX_NOT_A_TURN_JOURNAL',
    })
    await expect(HookRuntime.open({ journal: w.turnPath })).rejects.toMatchObject({
      code: expect.stringMatching(/^ERR_LOOPX_/),
    })
    expect(await w.hooks.journal.stats()).toEqual(hookStats)
    expect(w.seam.contents().receipts).toHaveLength(1)
  })

  it('when the dispatch call itself throws, the primary stands and the receipt stays unmarked until recover() dispatches it', async () => {
    const p = proposer()
    const w = await world({ 'synth.one': p })
    await w.hooks.close()
    const result = await w.seam.settle(request(1))
    expect(stepsOf(result)).toEqual(COMMITTED_STEPS)
    expect(result.dispatch).toBeNull()
    expect(result.dispatchError).toBe('ERR_LOOPX_JOURNAL_CLOSED')
    expect(w.seam.dispatchMarker(result.primary.receipt!.receipt_id)).toBeNull()
    await w.seam.close()

    const p2 = proposer()
    const w2 = await world({ 'synth.one': p2 }, { dir: w.dir })
    const report = await w2.seam.recover()
    expect(report.quotaSpends).toEqual([])
    expect(report.redispatched).toHaveLength(1)
    expect(report.redispatched[0]!.dispatch!.hooks[0]).toMatchObject({
      outcome: 'recorded',
      dispatchId: expectedDispatchId('synth.one', result.primary.receipt!.receipt_id, 'effect_1', 'todo_completed'),
    })
    expect(w2.seam.dispatchMarker(result.primary.receipt!.receipt_id)).toMatchObject({ admitted: true })
    expect(p2.calls).toBe(1)
  })

  it('RFC §10: a hook that did not get its turn is not lost once the receipt is marked dispatched: TurnSettlement.recover() runs it once', async () => {
    const a = proposer()
    const b = proposer()
    const w = await world({ 'synth.a': a, 'synth.b': b }, { profile: { enabled: true, maxHooksPerDispatch: 1 } })
    const result = await w.seam.settle(request(1))
    expect(result.dispatch!.hooks.map((h) => [h.hookId, h.outcome, h.attempt])).toEqual([
      ['synth.a', 'recorded', 1],
      ['synth.b', 'failed', 0],
    ])
    expect(w.seam.dispatchMarker(result.primary.receipt!.receipt_id)).toMatchObject({ admitted: true })
    const report = await w.seam.recover()
    expect(report.redispatched).toEqual([])
    expect(report.hooks!.outcomes.map((o) => [o.hookId, o.outcome, o.attempt])).toEqual([['synth.b', 'recorded', 1]])
    expect([a.calls, b.calls]).toEqual([1, 1])
  })
})

describe('packaging', () => {
  it('ships as loopx-hooks/orchestrator; better-sqlite3 (an optional peer) is loaded only when a Turn journal is opened, never by the core entry', () => {
    const code = `
      const loaded = () => Object.keys(require.cache).some((k) => k.includes('better-sqlite3'))
      const core = require('loopx-hooks')
      const afterCore = loaded()
      const seam = require('loopx-hooks/orchestrator')
      const afterSeam = loaded()
      const cap = require('loopx-hooks/capabilities/periodic_report')
      process.stdout.write(JSON.stringify({
        afterCore, afterSeam, afterCapability: loaded(),
        core: typeof core.HookRuntime, seam: typeof seam.TurnSettlement, cap: typeof cap.installPeriodicReport,
      }))
    `
    const child = spawnSync(process.execPath, ['-e', code], { cwd: ROOT, encoding: 'utf8' })
    expect(child.stderr).toBe('')
    expect(JSON.parse(child.stdout)).toEqual({
      afterCore: false,
      afterSeam: false,
      afterCapability: false,
      core: 'function',
      seam: 'function',
      cap: 'function',
    })
  })
})

// ---------------------------------------------------------------- crash and recover

/** What one committed writeback must end as, crash or not. */
async function expectSettled(w: World, effectId: string, eventKind: string) {
  const record = w.seam.committed(effectId)!
  expect(record.receipt).toMatchObject({ status: 'committed', checkpointed: true })
  const rows = w.seam.contents()
  expect(rows.steps.filter((s) => s.effectId === effectId).map((s) => s.status)).toEqual([
    'passed',
    'committed',
    'spent',
  ])
  expect(rows.quotaSpends.filter((s) => s.effectId === effectId)).toHaveLength(1)
  const marker = w.seam.dispatchMarker(record.receipt.receipt_id)!
  expect(marker.admitted).toBe(true)
  const id = expectedDispatchId('synth.one', record.receipt.receipt_id, effectId, eventKind)
  expect(marker.outcomes.map((o) => o.dispatchId)).toEqual([id])
  const row = await w.hooks.journal.getDispatch(id)
  expect(row).toMatchObject({ state: 'proposed', receiptId: record.receipt.receipt_id })
  const intents = await w.hooks.journal.listIntents({ dispatchId: id })
  expect(intents.items).toHaveLength(1)
  expect(w.seam.integrity()).toEqual({ ok: true, messages: [] })
  expect((await w.hooks.journal.integrity()).ok).toBe(true)
  return { record, dispatchId: id, intentId: intents.items[0]!.intentId }
}

describe('crash after the primary writeback, and recover()', () => {
  const points: [CrashPoint, { committed: boolean; spentBefore: boolean; dispatchedBefore: boolean }][] = [
    ['after_validate', { committed: false, spentBefore: false, dispatchedBefore: false }],
    ['after_writeback', { committed: true, spentBefore: false, dispatchedBefore: false }],
    ['after_quota_spend', { committed: true, spentBefore: true, dispatchedBefore: false }],
    ['after_dispatch', { committed: true, spentBefore: true, dispatchedBefore: true }],
  ]

  for (const [at, expected] of points) {
    it(`simulated crash ${at}: recover() finishes the primary and dispatches with the same identities, no intent twice`, async () => {
      // What an uninterrupted run produces.
      const reference = await world({ 'synth.one': proposer() })
      await reference.seam.settle(request(1))
      const want = await expectSettled(reference, 'effect_1', 'todo_completed')

      const p = proposer()
      const crashed = await world({ 'synth.one': p }, { seam: { crash: { at, mode: 'throw' } } })
      await expect(crashed.seam.settle(request(1))).rejects.toMatchObject({ code: 'ERR_LOOPX_SIMULATED_CRASH' })
      // The crashed instance is dead: it refuses everything.
      expect(() => crashed.seam.contents()).toThrow(expect.objectContaining({ code: 'ERR_LOOPX_SIMULATED_CRASH' }))
      await crashed.seam.close()
      expect(p.calls).toBe(expected.dispatchedBefore ? 1 : 0)
      const hookStats = await crashed.hooks.journal.stats()
      expect(hookStats.proposed).toBe(expected.dispatchedBefore ? 1 : 0)
      await crashed.hooks.close()

      // The files as the crash left them.
      const look = await TurnSettlement.open({ turnJournalPath: crashed.turnPath })
      const left = look.contents()
      await look.close()
      expect(left.receipts).toHaveLength(expected.committed ? 1 : 0)
      expect(left.quotaSpends).toHaveLength(expected.spentBefore ? 1 : 0)
      expect(left.dispatchMarkers).toEqual([])

      // A new process: composition root, seam, recover().
      const p2 = proposer()
      const w = await world({ 'synth.one': p2 }, { dir: crashed.dir })
      const report = await w.seam.recover()
      if (!expected.committed) {
        // Nothing was committed, so there is nothing to recover; the orchestrator re-runs the Turn.
        expect(report).toEqual({
          quotaSpends: [],
          redispatched: [],
          hooks: { outcomes: [], skipped: 0, ledgersSkipped: 0 },
        })
        expect(stepsOf(await w.seam.settle(request(1)))).toEqual(COMMITTED_STEPS)
      } else {
        expect(report.quotaSpends).toHaveLength(expected.spentBefore ? 0 : 1)
        expect(report.redispatched.map((r) => r.dispatch!.hooks.map((h) => h.outcome))).toEqual([
          [expected.dispatchedBefore ? 'replayed' : 'recorded'],
        ])
        expect(report.hooks).toEqual({ outcomes: [], skipped: 0, ledgersSkipped: 0 })
      }
      expect(p.calls + p2.calls).toBe(1)
      const got = await expectSettled(w, 'effect_1', 'todo_completed')
      expect({ receiptId: got.record.receipt.receipt_id, dispatchId: got.dispatchId, intentId: got.intentId }).toEqual({
        receiptId: want.record.receipt.receipt_id,
        dispatchId: want.dispatchId,
        intentId: want.intentId,
      })

      // A second recover() finds nothing.
      expect(await w.seam.recover()).toEqual({
        quotaSpends: [],
        redispatched: [],
        hooks: { outcomes: [], skipped: 0, ledgersSkipped: 0 },
      })
      expect(p2.calls).toBe(expected.dispatchedBefore ? 0 : 1)
    })
  }

  /**
   * A real process: composition root + seam in a child node process that
   * SIGKILLs itself at `mode`. Returns how it ended.
   */
  function crashChild(dir: string, mode: 'kill_after_writeback' | 'kill_in_provider', req: WritebackRequest) {
    const code = `
      const [root, hookPath, turnPath, mode, kindJson, regJson, reqJson] = process.argv.slice(1)
      const { HookRuntime, intent, proposed } = require(root + '/dist/index.js')
      const { TurnSettlement } = require(root + '/dist/orchestrator/index.js')
      const kind = JSON.parse(kindJson)
      ;(async () => {
        const hooks = await HookRuntime.open({ journal: hookPath, profile: { enabled: true }, synchronous: 'full' })
        hooks.defineIntentKind(kind)
        hooks.register({
          registration: JSON.parse(regJson),
          provider: async (input) => {
            // Dies mid-invocation once its checkpoint (queued, not awaited, before the call) has committed.
            if (mode === 'kill_in_provider') await new Promise(() => setTimeout(() => process.kill(process.pid, 'SIGKILL'), 200))
            return proposed([intent(input, kind, { operation: 'evaluate', policyVersion: 'v0', payload: { ref: input.source.receipt_id, level: 1 } })])
          },
        })
        const crash = mode === 'kill_after_writeback' ? { at: 'after_writeback', mode: 'kill' } : undefined
        const seam = await TurnSettlement.open({ turnJournalPath: turnPath, hooks, crash })
        await seam.settle(JSON.parse(reqJson))
        process.stdout.write('survived')
      })()
    `
    return spawnSync(
      process.execPath,
      [
        '-e',
        code,
        ROOT,
        join(dir, 'hooks.journal'),
        join(dir, 'turn.journal'),
        mode,
        JSON.stringify(SIGNAL),
        JSON.stringify(registration('synth.one')),
        JSON.stringify(req),
      ],
      { encoding: 'utf8', timeout: 20_000 },
    )
  }

  it('a process killed right after the primary writeback: the receipt is durable, and recover() in a new process spends and dispatches it once', async () => {
    const dir = tempDir()
    const child = crashChild(dir, 'kill_after_writeback', request(7))
    expect(child.signal).toBe('SIGKILL')
    expect(child.stdout).toBe('')

    const p = proposer()
    const w = await world({ 'synth.one': p }, { dir })
    const left = w.seam.contents()
    expect(left.receipts).toHaveLength(1)
    expect(left.quotaSpends).toEqual([])
    expect(left.dispatchMarkers).toEqual([])
    expect((await w.hooks.journal.stats()).checkpointed).toBe(0) // the sidecar never saw it

    const report = await w.seam.recover()
    expect(report.quotaSpends).toHaveLength(1)
    expect(report.redispatched[0]!.dispatch!.hooks[0]).toMatchObject({ outcome: 'recorded', attempt: 1 })
    expect(p.calls).toBe(1)
    await expectSettled(w, 'effect_7', 'todo_completed')
  })

  it('a process killed during the hook dispatch (after the sidecar checkpoint, inside the provider): recover() completes the same dispatch identity', async () => {
    const dir = tempDir()
    const child = crashChild(dir, 'kill_in_provider', request(8, { kind: 'replan_recorded' }))
    expect(child.signal).toBe('SIGKILL')

    const p = proposer()
    const w = await world({ 'synth.one': p }, { dir })
    const left = w.seam.contents()
    const receiptId = left.receipts[0]!.receipt_id
    expect(left.quotaSpends).toHaveLength(1)
    expect(left.dispatchMarkers).toEqual([])
    const id = expectedDispatchId('synth.one', receiptId, 'effect_8', 'replan_recorded')
    // The invocation cut short counts: opening the journal folded the killed process's attempt ledger.
    expect(await w.hooks.journal.getDispatch(id)).toMatchObject({ state: 'failed', attempts: 1 })

    const report = await w.seam.recover()
    expect(report.redispatched).toHaveLength(1)
    const hook = report.redispatched[0]!.dispatch!.hooks[0]!
    expect(hook).toMatchObject({ dispatchId: id, outcome: 'recorded' })
    // Attempt 1 ended with its process (never presumed live): the recovery is attempt 2 of the budget of 2.
    expect(hook.attempt).toBe(2)
    expect(p.calls).toBe(1)
    await expectSettled(w, 'effect_8', 'replan_recorded')
    expect(await w.seam.recover()).toEqual({
      quotaSpends: [],
      redispatched: [],
      hooks: { outcomes: [], skipped: 0, ledgersSkipped: 0 },
    })
  })
})
