// The RFC's validation matrix (rfc-post-writeback-hooks-v0, section 12), one
// test per core row, named exactly after the row, against the built addon and
// real journals, on each backend (support/backends.ts: an SQLite file, a
// PostgreSQL schema). The two periodic-report rows are not here.
import dgram from 'node:dgram'
import http from 'node:http'
import https from 'node:https'
import net from 'node:net'
import { readdirSync, readlinkSync } from 'node:fs'
import tls from 'node:tls'

import { afterEach, describe, expect, it } from 'vitest'

import {
  HookRuntime,
  LoopxHooksError,
  dispatchId,
  registrationDigest,
  validateDispatchReceipt,
  type DispatchOutcome,
  type DispatchRequest,
  type PostWritebackHookRegistration,
  type PostWritebackIntent,
} from '../lib/index.js'
import {
  EMPTY_STATS,
  Fixtures,
  counted,
  eligible,
  findPlanted,
  goodProvider,
  hookOutcome,
  identityRecord,
  journalContents,
  notApplicable,
  randomTag,
  registration,
  request,
  signalKind,
  signalResult,
  snapshotPrimary,
} from './support/runtime'
import { BACKENDS, type Backend } from './support/backends'

/** Dispatches `req` and asserts the primary receipt, settlement and spend eligibility are untouched. */
async function dispatchKeepingPrimary(runtime: HookRuntime, req: DispatchRequest): Promise<DispatchOutcome> {
  const before = snapshotPrimary(req)
  const outcome = await runtime.dispatch(req)
  expect(req.receipt).toStrictEqual(before.receipt)
  expect(req.settlement).toStrictEqual(before.settlement)
  expect(eligible(req.receipt, req.settlement)).toBe(before.eligible)
  return outcome
}

async function expectRegistrationRejected(runtime: HookRuntime, doc: unknown, rule: string, path?: string) {
  const provider = counted(() => notApplicable())
  let caught: unknown
  try {
    runtime.register({ registration: doc as PostWritebackHookRegistration, provider })
  } catch (e) {
    caught = e
  }
  expect(caught, `registration should be rejected (${rule})`).toBeInstanceOf(LoopxHooksError)
  const err = caught as LoopxHooksError
  expect(err.code).toBe('ERR_LOOPX_REGISTRATION_REJECTED')
  expect(err.message).toBe('registration_rejected')
  expect(err.violations?.map((v) => v.rule)).toContain(rule)
  if (path) expect(err.violations).toContainEqual({ path, rule })
  return provider
}

describe.each(BACKENDS.map((b): [string, Backend] => [b.name, b]))(
  'RFC section 12 validation matrix on %s',
  (_, backend) => {
    const fx = new Fixtures(backend)
    afterEach(() => fx.cleanup())

    it('Phase disabled or capability not installed', async () => {
      // Phase disabled explicitly, and by default (no profile at all).
      const disabled = await fx.runtime({ profile: { enabled: false }, capabilities: ['alpha'] })
      const byDefault = await HookRuntime.open(fx.target('default').runtimeOptions())
      byDefault.defineIntentKind(signalKind('alpha'))
      try {
        for (const runtime of [disabled.runtime, byDefault]) {
          const provider = goodProvider()
          runtime.register({ registration: registration('alpha.one'), provider })
          for (const eventKind of ['todo_completed', 'replan_recorded']) {
            const outcome = await dispatchKeepingPrimary(runtime, request({ eventKind }))
            expect(outcome).toStrictEqual({ admitted: false, refusal: 'phase_disabled', hooks: [] })
          }
          expect(provider.calls).toBe(0)
          const j = await journalContents(runtime)
          expect(j.stats).toStrictEqual(EMPTY_STATS)
          expect(j.dispatches).toStrictEqual([])
          expect(j.intents).toStrictEqual([])
          expect((await runtime.journal.listIntents({ pendingOnly: true })).items).toStrictEqual([])
        }
      } finally {
        await byDefault.close()
      }

      // Phase enabled, but no capability installed: admitted, nothing to run.
      const empty = await fx.runtime({ capabilities: ['alpha'] })
      expect(await dispatchKeepingPrimary(empty.runtime, request())).toStrictEqual({
        admitted: true,
        refusal: null,
        hooks: [],
      })
      expect((await journalContents(empty.runtime)).stats).toStrictEqual(EMPTY_STATS)

      // Installed for another event kind only, or left out of the profile's allowlist: not installed for this dispatch.
      const partial = await fx.runtime({ profile: { allowlist: ['beta.listed'] }, capabilities: ['alpha', 'beta'] })
      const otherEvent = goodProvider()
      const notListed = goodProvider()
      partial.runtime.register({
        registration: registration('alpha.replan_only', { eventKinds: ['replan_recorded'] }),
        provider: otherEvent,
      })
      partial.runtime.register({ registration: registration('beta.unlisted'), provider: notListed })
      expect(await dispatchKeepingPrimary(partial.runtime, request({ eventKind: 'todo_completed' }))).toStrictEqual({
        admitted: true,
        refusal: null,
        hooks: [],
      })
      expect(otherEvent.calls).toBe(0)
      expect(notListed.calls).toBe(0)
      const j = await journalContents(partial.runtime)
      expect(j.stats).toStrictEqual(EMPTY_STATS)
      expect(j.intents).toStrictEqual([])
    })

    it('Registration malformed or exceeds budget', async () => {
      const { runtime } = await fx.runtime({ capabilities: ['alpha'] })
      const good = registration('alpha.one')
      const providers = [
        await expectRegistrationRejected(
          runtime,
          { ...good, schema_version: 'v1' },
          'bad_schema_version',
          '/schema_version',
        ),
        await expectRegistrationRejected(runtime, { ...good, command: 'rm -rf' }, 'unknown_field', '/command'),
        await expectRegistrationRejected(
          runtime,
          { ...good, write_scope: ['alpha.write'] },
          'unknown_field',
          '/write_scope',
        ),
        await expectRegistrationRejected(
          runtime,
          (({ budget: _b, ...rest }) => rest)(good),
          'missing_field',
          '/budget',
        ),
        await expectRegistrationRejected(runtime, { ...good, phase: 'pre_writeback' }, 'not_allowed_value', '/phase'),
        await expectRegistrationRejected(
          runtime,
          { ...good, failure_policy: 'propagate' },
          'policy_not_isolate',
          '/failure_policy',
        ),
        await expectRegistrationRejected(runtime, { ...good, hook_id: 'beta.one' }, 'capability_mismatch', '/hook_id'),
        await expectRegistrationRejected(runtime, { ...good, hook_id: 'Alpha.One' }, 'bad_token', '/hook_id'),
        await expectRegistrationRejected(
          runtime,
          { ...good, event_kinds: ['todo_started'] },
          'unknown_event_kind',
          '/event_kinds/0',
        ),
        await expectRegistrationRejected(
          runtime,
          { ...good, intent_kinds: ['alpha.undefined_kind'] },
          'unknown_intent_kind',
          '/intent_kinds/0',
        ),
        await expectRegistrationRejected(
          runtime,
          { ...good, requested_read_scope: ['raw_logs'] },
          'not_allowed_value',
          '/requested_read_scope/0',
        ),
        // Over budget: every bound of contract-v0 section 1, one past it.
        await expectRegistrationRejected(
          runtime,
          registration('alpha.one', { budget: { timeout_ms: 30_001 } }),
          'out_of_range',
          '/budget/timeout_ms',
        ),
        await expectRegistrationRejected(
          runtime,
          registration('alpha.one', { budget: { timeout_ms: 0 } }),
          'out_of_range',
          '/budget/timeout_ms',
        ),
        await expectRegistrationRejected(
          runtime,
          registration('alpha.one', { budget: { max_invocations_per_dispatch: 5 } }),
          'out_of_range',
          '/budget/max_invocations_per_dispatch',
        ),
        await expectRegistrationRejected(
          runtime,
          registration('alpha.one', { budget: { max_intents_per_dispatch: 17 } }),
          'out_of_range',
          '/budget/max_intents_per_dispatch',
        ),
        await expectRegistrationRejected(
          runtime,
          registration('alpha.one', { budget: { max_result_bytes: 65_537 } }),
          'out_of_range',
          '/budget/max_result_bytes',
        ),
        await expectRegistrationRejected(
          runtime,
          registration('alpha.one', { budget: { max_result_bytes: 255 } }),
          'out_of_range',
          '/budget/max_result_bytes',
        ),
        await expectRegistrationRejected(
          runtime,
          registration('alpha.one', { budget: { timeout_ms: 1.5 } }),
          'wrong_type',
          '/budget/timeout_ms',
        ),
        await expectRegistrationRejected(
          runtime,
          registration('alpha.one', { budget: { timeout_ms: '1000' as unknown as number } }),
          'wrong_type',
          '/budget/timeout_ms',
        ),
      ]
      // A duplicate hook_id is rejected too, and the first registration stays.
      const first = counted(() => notApplicable())
      runtime.register({ registration: good, provider: first })
      providers.push(
        await expectRegistrationRejected(
          runtime,
          { ...good, budget: { ...good.budget, timeout_ms: 999 } },
          'duplicate_item',
          '/hook_id',
        ),
      )

      const outcome = await dispatchKeepingPrimary(runtime, request())
      expect(outcome.hooks.map((h) => [h.hookId, h.outcome])).toStrictEqual([['alpha.one', 'not_applicable']])
      expect(outcome.hooks[0]!.receipt!.registration_digest).toBe(registrationDigest(good))
      for (const p of providers) expect(p.calls).toBe(0)
      expect(first.calls).toBe(1)
      expect((await journalContents(runtime)).dispatches).toHaveLength(1)
    })

    it('Primary validation or writeback fails', async () => {
      const { runtime } = await fx.runtime({ capabilities: ['alpha', 'beta'] })
      const a = goodProvider()
      const b = goodProvider()
      runtime.register({ registration: registration('alpha.one'), provider: a })
      runtime.register({ registration: registration('beta.one'), provider: b })
      const refused: [DispatchRequest, string][] = [
        [request({ receipt: { status: 'rejected' } }), 'receipt_not_committed'],
        [request({ receipt: { status: 'prepared' } }), 'receipt_not_committed'],
        [request({ receipt: { status: 'inferred' } }), 'receipt_not_committed'],
        [request({ receipt: { status: '' } }), 'receipt_not_committed'],
        [request({ receipt: { checkpointed: false } }), 'receipt_not_checkpointed'],
        [request({ receipt: { status: 'prepared', checkpointed: false } }), 'receipt_not_committed'],
        [
          request({ receipt: { effect_id: 'effect_0002' }, settlement: { effect_id: 'effect_0001' } }),
          'effect_mismatch',
        ],
        [request({ settlement: { goal_id: '' } }), 'identity_incomplete'],
        [request({ settlement: { agent_id: '' } }), 'identity_incomplete'],
        [request({ settlement: { todo_id: '' } }), 'identity_incomplete'],
        [request({ settlement: { turn_instance_id: '' } }), 'identity_incomplete'],
        [request({ settlement: { effect_id: '' }, receipt: { effect_id: '' } }), 'identity_incomplete'],
      ]
      for (const [req, refusal] of refused) {
        const outcome = await dispatchKeepingPrimary(runtime, req)
        expect(outcome, JSON.stringify(req)).toStrictEqual({ admitted: false, refusal, hooks: [] })
      }
      // RFC 5.1: admission refuses a source that is not a committed durable writeback (a rollout
      // event append is not the source of authority): refused, nothing invoked, nothing recorded.
      for (const step_kind of ['rollout_event_append', 'durable_writeback_prepared', '']) {
        const otherStep = await dispatchKeepingPrimary(runtime, request({ receipt: { step_kind } }))
        expect(otherStep).toStrictEqual({ admitted: false, refusal: 'not_durable_writeback', hooks: [] })
      }
      expect(a.calls).toBe(0)
      expect(b.calls).toBe(0)
      const j = await journalContents(runtime)
      expect(j.stats).toStrictEqual(EMPTY_STATS)
      expect(j.dispatches).toStrictEqual([])
      expect(j.intents).toStrictEqual([])
      expect(j.failures).toStrictEqual([])
    })

    it('Committed writeback', async () => {
      const { runtime } = await fx.runtime({ capabilities: ['alpha', 'beta', 'gamma'] })
      const regs = {
        gamma: registration('gamma.one'),
        alpha: registration('alpha.one'),
        beta: registration('beta.one'),
      }
      const providers = { gamma: goodProvider(), alpha: goodProvider(), beta: counted(() => notApplicable()) }
      // Registration order is not execution order.
      runtime.register({ registration: regs.gamma, provider: providers.gamma })
      runtime.register({ registration: regs.alpha, provider: providers.alpha })
      runtime.register({ registration: regs.beta, provider: providers.beta })

      const req = request()
      const outcome = await dispatchKeepingPrimary(runtime, req)
      expect(outcome.admitted).toBe(true)
      expect(outcome.refusal).toBeNull()
      expect(outcome.hooks.map((h) => [h.hookId, h.outcome, h.attempt])).toStrictEqual([
        ['alpha.one', 'recorded', 1],
        ['beta.one', 'not_applicable', 1],
        ['gamma.one', 'recorded', 1],
      ])
      expect(providers.alpha.calls).toBe(1)
      expect(providers.beta.calls).toBe(1)
      expect(providers.gamma.calls).toBe(1)

      // Exactly one dispatch identity per admitted hook, the contract's digest.
      const ids = outcome.hooks.map((h) => h.dispatchId)
      expect(new Set(ids).size).toBe(3)
      for (const h of outcome.hooks) {
        const reg = regs[h.hookId.split('.')[0] as keyof typeof regs]
        expect(h.dispatchId).toBe(
          dispatchId({
            receiptId: req.receipt.receipt_id,
            effectId: req.receipt.effect_id,
            hookId: reg.hook_id,
            capabilityId: reg.capability_id,
            registrationDigest: registrationDigest(reg),
            registrationSchemaVersion: reg.schema_version,
            eventKind: req.event.event_kind,
          }),
        )
        expect(h.receipt?.dispatch_id).toBe(h.dispatchId)
        expect(validateDispatchReceipt(h.receipt)).toMatchObject({ ok: true })
        expect(h.failureCode).toBeNull()
        expect(h.failureRule).toBeNull()
        // The provider saw that same identity.
        const seen = providers[h.hookId.split('.')[0] as keyof typeof providers].inputs
        expect(seen.map((i) => i.dispatch_id)).toStrictEqual([h.dispatchId])
      }

      const j = await journalContents(runtime)
      expect(j.stats).toStrictEqual({ ...EMPTY_STATS, proposed: 2, notApplicable: 1, intents: 2, intentsOpen: 2 })
      expect(j.dispatches.map((d) => d.dispatchId).sort()).toStrictEqual([...ids].sort())
      for (const h of outcome.hooks) {
        const row = j.dispatches.find((d) => d.dispatchId === h.dispatchId)!
        expect(row.attempts).toBe(1)
        expect(row.state).toBe(h.receipt!.status)
        expect(row.receipt).toStrictEqual(h.receipt)
        expect(j.intents.filter((i) => i.dispatchId === h.dispatchId).map((i) => i.intentId)).toStrictEqual(
          h.receipt!.intent_ids,
        )
      }
      expect(j.failures).toStrictEqual([])
    })

    it('Primary writeback replay', async () => {
      const target = fx.target('replay')
      const first = await fx.runtime({ target, capabilities: ['alpha', 'beta'] })
      const a = goodProvider()
      const b = counted(() => notApplicable())
      first.runtime.register({ registration: registration('alpha.one'), provider: a })
      first.runtime.register({ registration: registration('beta.one'), provider: b })

      const original = await dispatchKeepingPrimary(first.runtime, request())
      const recordedA = await identityRecord(first.runtime, original.hooks[0]!.dispatchId)
      const recordedB = await identityRecord(first.runtime, original.hooks[1]!.dispatchId)
      const stats = await first.runtime.journal.stats()

      // The same committed receipt again (a fresh, equal object), twice.
      for (let i = 0; i < 2; i++) {
        const replay = await dispatchKeepingPrimary(first.runtime, request())
        expect(replay.hooks.map((h) => h.outcome)).toStrictEqual(['replayed', 'replayed'])
        replay.hooks.forEach((h, k) => {
          const o = original.hooks[k]!
          expect(h.dispatchId).toBe(o.dispatchId)
          expect(h.receipt).toStrictEqual(o.receipt)
          expect(h.attempt).toBe(o.attempt)
          expect(h.failureCode).toBeNull()
        })
      }
      expect(a.calls).toBe(1)
      expect(b.calls).toBe(1)
      expect(await first.runtime.journal.stats()).toStrictEqual(stats)
      expect(await identityRecord(first.runtime, original.hooks[0]!.dispatchId)).toStrictEqual(recordedA)
      expect(await identityRecord(first.runtime, original.hooks[1]!.dispatchId)).toStrictEqual(recordedB)

      // After a restart (a new process would open the same journal file): still the same receipt, no duplicate intent.
      await first.runtime.close()
      const second = await fx.runtime({ target, capabilities: ['alpha', 'beta'] })
      const a2 = goodProvider()
      const b2 = counted(() => notApplicable())
      second.runtime.register({ registration: registration('alpha.one'), provider: a2 })
      second.runtime.register({ registration: registration('beta.one'), provider: b2 })
      const afterRestart = await dispatchKeepingPrimary(second.runtime, request())
      expect(afterRestart.hooks.map((h) => h.outcome)).toStrictEqual(['replayed', 'replayed'])
      expect(afterRestart.hooks.map((h) => h.receipt)).toStrictEqual(original.hooks.map((h) => h.receipt))
      expect(a2.calls + b2.calls).toBe(0)
      expect(await second.runtime.journal.stats()).toStrictEqual(stats)
      const intents = await second.runtime.journal.listIntents()
      expect(intents.items.map((i) => i.intentId)).toStrictEqual(original.hooks[0]!.receipt!.intent_ids)

      // A changed source receipt is a new identity beside the old one, not a replacement.
      const next = await dispatchKeepingPrimary(second.runtime, request({ receipt: { receipt_id: 'receipt_0002' } }))
      expect(next.hooks.map((h) => h.outcome)).toStrictEqual(['recorded', 'not_applicable'])
      expect(next.hooks[0]!.dispatchId).not.toBe(original.hooks[0]!.dispatchId)
      expect(await identityRecord(second.runtime, original.hooks[0]!.dispatchId)).toStrictEqual(recordedA)
      expect((await second.runtime.journal.stats()).intents).toBe(2)
    })

    it('Same identity, different payload', async () => {
      const target = fx.target('conflict')
      const verify = await fx.runtime({ target, profile: { replay: 'verify' }, capabilities: ['alpha'] })
      let level = 1
      const provider = counted((input) => signalResult(input, { level }))
      const reg = registration('alpha.one')
      verify.runtime.register({ registration: reg, provider })

      const req = request()
      const original = await dispatchKeepingPrimary(verify.runtime, req)
      const o = original.hooks[0]!
      expect(o.outcome).toBe('recorded')
      const recorded = await identityRecord(verify.runtime, o.dispatchId)
      expect(recorded.intents).toHaveLength(1)
      expect(recorded.intents[0]!.intent.payload).toMatchObject({ level: 1 })

      // The same dispatch identity answers with a different payload: conflict, new result dropped.
      level = 2
      const conflict = await dispatchKeepingPrimary(verify.runtime, req)
      const c = conflict.hooks[0]!
      expect(provider.calls).toBe(2)
      expect(c.outcome).toBe('conflict')
      expect(c.failureCode).toBe('intent_conflict')
      expect(c.dispatchId).toBe(o.dispatchId)
      expect(c.receipt).toStrictEqual(o.receipt)
      expect(await identityRecord(verify.runtime, o.dispatchId)).toStrictEqual(recorded)
      const all = await verify.runtime.journal.listIntents()
      expect(all.items).toHaveLength(1)
      expect(all.items[0]!.intent.payload).toMatchObject({ level: 1 })
      expect(await verify.runtime.journal.stats()).toStrictEqual({
        ...EMPTY_STATS,
        proposed: 1,
        intents: 1,
        intentsOpen: 1,
      })

      // The same payload again verifies as a replay.
      level = 1
      const same = await dispatchKeepingPrimary(verify.runtime, req)
      expect(provider.calls).toBe(3)
      expect(same.hooks[0]).toMatchObject({ outcome: 'replayed', failureCode: null, receipt: o.receipt })

      // With replay 'return' the identity is replayed without invoking, whatever the provider would say now.
      await verify.runtime.close()
      const ret = await fx.runtime({ target, profile: { replay: 'return' }, capabilities: ['alpha'] })
      const changed = counted((input) => signalResult(input, { level: 7 }))
      ret.runtime.register({ registration: reg, provider: changed })
      const replayed = await dispatchKeepingPrimary(ret.runtime, req)
      expect(changed.calls).toBe(0)
      expect(replayed.hooks[0]).toMatchObject({ outcome: 'replayed', failureCode: null, dispatchId: o.dispatchId })
      expect(replayed.hooks[0]!.receipt).toStrictEqual(o.receipt)
      expect(await identityRecord(ret.runtime, o.dispatchId)).toStrictEqual(recorded)
    })

    it('Provider raises, times out, or returns malformed output', async () => {
      const { runtime } = await fx.runtime({ capabilities: ['alpha', 'beta', 'gamma', 'delta'] })
      const raises = counted((): never => {
        throw new Error('provider exploded')
      })
      const rejects = counted(async (): Promise<never> => {
        throw new TypeError('async failure')
      })
      const hangs = counted(() => new Promise<never>(() => {}))
      const malformed = counted(() => ({
        schema_version: 'loopx_post_writeback_hook_result_v0',
        status: 'maybe',
        intents: [],
      }))
      runtime.register({ registration: registration('alpha.raises'), provider: raises })
      runtime.register({ registration: registration('beta.rejects'), provider: rejects })
      runtime.register({ registration: registration('gamma.hangs', { budget: { timeout_ms: 40 } }), provider: hangs })
      runtime.register({ registration: registration('delta.malformed'), provider: malformed })

      const req = request()
      const outcome = await dispatchKeepingPrimary(runtime, req)
      expect(
        outcome.hooks.map((h) => [h.hookId, h.outcome, h.attempt, h.receipt, h.failureCode, h.failureRule]),
      ).toStrictEqual([
        ['alpha.raises', 'failed', 1, null, 'producer_failed', null],
        ['beta.rejects', 'failed', 1, null, 'producer_failed', null],
        ['delta.malformed', 'failed', 1, null, 'result_contract_rejected', 'not_allowed_value'],
        ['gamma.hangs', 'failed', 1, null, 'producer_timed_out', null],
      ])
      for (const p of [raises, rejects, hangs, malformed]) expect(p.calls).toBe(1)

      // Compact: the journal holds code, rule, pointer and attempt per failure, nothing else.
      const j = await journalContents(runtime)
      expect(j.stats).toStrictEqual({ ...EMPTY_STATS, failed: 4 })
      expect(j.intents).toStrictEqual([])
      for (const d of j.dispatches) {
        expect(d).toMatchObject({ state: 'failed', attempts: 1, receipt: null, resultDigest: null })
      }
      expect(j.failures.map((f) => Object.keys(f).sort())).toStrictEqual(
        Array(4).fill(['attempt', 'code', 'dispatchId', 'failedAt', 'pointer', 'rule']),
      )
      expect(j.failures.map((f) => [f.code, f.rule, f.attempt]).sort()).toStrictEqual(
        [
          ['producer_failed', null, 1],
          ['producer_failed', null, 1],
          ['producer_timed_out', null, 1],
          ['result_contract_rejected', 'not_allowed_value', 1],
        ].sort(),
      )
      const text = JSON.stringify([outcome, j])
      for (const leaked of ['exploded', 'async failure', 'maybe', 'TypeError', 'Error'])
        expect(text).not.toContain(leaked)
      expect(eligible(req.receipt, req.settlement)).toBe(true)
    })

    it('Multiple hooks', async () => {
      const { runtime } = await fx.runtime({ capabilities: ['alpha', 'beta'] })
      const order: string[] = []
      const track = (id: string, body: Parameters<typeof counted>[0]) =>
        counted((input, call) => {
          order.push(id)
          return body(input, call)
        })
      // Byte order of hook_id: '.' (0x2e) < '0' (0x30) < '_' (0x5f) < 'a'.
      const hooks = {
        'beta.z': track('beta.z', (input) => signalResult(input)),
        'alpha.b_c': track('alpha.b_c', (): never => {
          throw new Error('fails alone')
        }),
        'alpha.b.c': track('alpha.b.c', (input) => signalResult(input, { level: 5 })),
        'alpha.b0': track('alpha.b0', (input) => {
          // two intents, within its own budget of 2
          const one = signalResult(input, { operation: 'evaluate' }).intents[0]!
          const two = signalResult(input, { level: 9 }).intents[0]!
          return { schema_version: 'loopx_post_writeback_hook_result_v0', status: 'proposed', intents: [one, two] }
        }),
        'alpha.a': track('alpha.a', (input) => {
          // two intents over its budget of 1
          const one = signalResult(input).intents[0]!
          const two = signalResult(input, { level: 9 }).intents[0]!
          return { schema_version: 'loopx_post_writeback_hook_result_v0', status: 'proposed', intents: [one, two] }
        }),
      }
      const budgets: Record<string, Parameters<typeof registration>[1]> = {
        'alpha.b0': { budget: { max_intents_per_dispatch: 2 } },
      }
      for (const [id, provider] of Object.entries(hooks))
        runtime.register({ registration: registration(id, budgets[id]), provider })

      const outcome = await dispatchKeepingPrimary(runtime, request())
      const expected = ['alpha.a', 'alpha.b.c', 'alpha.b0', 'alpha.b_c', 'beta.z']
      expect(order).toStrictEqual(expected)
      expect(outcome.hooks.map((h) => h.hookId)).toStrictEqual(expected)
      expect(outcome.hooks.map((h) => [h.outcome, h.failureCode, h.failureRule])).toStrictEqual([
        ['failed', 'result_contract_rejected', 'intent_budget_exceeded'],
        ['recorded', null, null],
        ['recorded', null, null],
        ['failed', 'producer_failed', null],
        ['recorded', null, null],
      ])
      expect(hookOutcome(outcome, 'alpha.b0').receipt!.intent_ids).toHaveLength(2)
      // Each hook saw its own input, never another hook's result.
      for (const [id, p] of Object.entries(hooks)) {
        expect(p.calls).toBe(1)
        expect(p.inputs[0]!.hook_id).toBe(id)
        expect(JSON.stringify(p.inputs[0])).not.toContain('pwi_')
      }
      const j = await journalContents(runtime)
      expect(j.stats).toStrictEqual({ ...EMPTY_STATS, proposed: 3, failed: 2, intents: 4, intentsOpen: 4 })

      // Independent budgets across dispatches: the failing hooks (1 invocation each) are exhausted,
      // the others replay; nobody's failure spends another's invocation.
      const again = await dispatchKeepingPrimary(runtime, request())
      expect(again.hooks.map((h) => [h.hookId, h.outcome])).toStrictEqual([
        ['alpha.a', 'exhausted'],
        ['alpha.b.c', 'replayed'],
        ['alpha.b0', 'replayed'],
        ['alpha.b_c', 'exhausted'],
        ['beta.z', 'replayed'],
      ])
      for (const p of Object.values(hooks)) expect(p.calls).toBe(1)
    })

    it('Intent requests scope', async () => {
      const { runtime } = await fx.runtime({ capabilities: ['alpha', 'beta'] })
      const reg = registration('alpha.one')
      const provider = counted((input) => signalResult(input, { requestedWriteScope: ['some_scope.write'] }))
      runtime.register({ registration: reg, provider })
      // A provider cannot claim authority or a performed write either.
      const claims = counted((input) => {
        const r = signalResult(input)
        return { ...r, intents: [{ ...r.intents[0]!, grants_new_action_authority: true }] }
      })
      const wrote = counted((input) => {
        const r = signalResult(input)
        return { ...r, intents: [{ ...r.intents[0]!, external_write_performed: true }] }
      })
      runtime.register({ registration: registration('beta.claims'), provider: claims })
      runtime.register({ registration: registration('beta.wrote'), provider: wrote })

      const outcome = await dispatchKeepingPrimary(runtime, request())
      const o = hookOutcome(outcome, 'alpha.one')
      expect(o.outcome).toBe('recorded')
      expect(hookOutcome(outcome, 'beta.claims')).toMatchObject({
        outcome: 'failed',
        failureCode: 'result_contract_rejected',
        failureRule: 'authority_claimed',
      })
      expect(hookOutcome(outcome, 'beta.wrote')).toMatchObject({
        outcome: 'failed',
        failureCode: 'result_contract_rejected',
        failureRule: 'authority_claimed',
      })

      // Recorded as a proposal only: pending, undecided, not done, granting nothing.
      const pending = await runtime.journal.listIntents({ pendingOnly: true })
      expect(pending.items).toHaveLength(1)
      const stored = pending.items[0]!
      expect(stored).toMatchObject({
        intentId: o.receipt!.intent_ids[0],
        decision: null,
        executorId: null,
        reasonCode: null,
        decidedAt: null,
        doneAt: null,
      })
      expect(stored.intent.requested_write_scope).toStrictEqual(['some_scope.write'])
      expect((stored.intent as PostWritebackIntent).grants_new_action_authority).toBe(false)
      expect((stored.intent as PostWritebackIntent).external_write_performed).toBe(false)
      expect(await runtime.journal.stats()).toStrictEqual({
        ...EMPTY_STATS,
        proposed: 1,
        failed: 2,
        intents: 1,
        intentsOpen: 1,
      })
      // The registration still holds no write scope, and the receipt is a proposal, nothing else.
      expect(reg).not.toHaveProperty('requested_write_scope')
      expect(o.receipt).toMatchObject({ status: 'proposed', failure: null })
      expect(Object.keys(o.receipt!)).not.toContain('requested_write_scope')

      // Replay does not decide it either.
      await dispatchKeepingPrimary(runtime, request())
      expect(
        (await runtime.journal.listIntents({ pendingOnly: true })).items.map((i) => [i.intentId, i.decision]),
      ).toStrictEqual([[stored.intentId, null]])
    })

    it('External-write assertion', async () => {
      const calls: string[] = []
      const blocked = (name: string) =>
        function (this: unknown): never {
          calls.push(name)
          throw new Error(`network disabled in this test: ${name}`)
        }
      const patches: [object, string, unknown][] = [
        [globalThis, 'fetch', globalThis.fetch],
        [net.Socket.prototype, 'connect', net.Socket.prototype.connect],
        [net, 'connect', net.connect],
        [net, 'createConnection', net.createConnection],
        [tls, 'connect', tls.connect],
        [http, 'request', http.request],
        [http, 'get', http.get],
        [https, 'request', https.request],
        [https, 'get', https.get],
        [dgram, 'createSocket', dgram.createSocket],
        [dgram.Socket.prototype, 'send', dgram.Socket.prototype.send],
        [dgram.Socket.prototype, 'connect', dgram.Socket.prototype.connect],
      ]
      const allSocketFds = () => {
        try {
          return readdirSync('/proc/self/fd')
            .map((fd) => {
              try {
                return readlinkSync(`/proc/self/fd/${fd}`)
              } catch {
                return ''
              }
            })
            .filter((l) => l.startsWith('socket:'))
            .sort()
        } catch {
          return []
        }
      }
      for (const [target, key] of patches) (target as Record<string, unknown>)[key] = blocked(key)
      try {
        // The patches are live.
        expect(() => (globalThis.fetch as unknown as () => void)()).toThrow('network disabled')
        expect(() => net.connect(9, '127.0.0.1')).toThrow('network disabled')
        expect(calls).toStrictEqual(['fetch', 'connect'])
        calls.length = 0

        const { runtime, target } = await fx.runtime({ capabilities: ['alpha', 'beta', 'periodic_report'] })
        // On PostgreSQL the journal itself talks to its server (pooled connections that may come and go):
        // those sockets are the journal's, not a hook's, and are left out of the comparison.
        const socketFds = () => {
          // Read before and after the fds, so a connection opened or closed meanwhile is still known.
          const before = target!.journalSockets()
          const fds = allSocketFds()
          const after = target!.journalSockets()
          return fds.filter((l) => !before.has(l) && !after.has(l))
        }
        const socketsBefore = socketFds()
        const socketsDuring: string[][] = []
        const probe = (body: (input: Parameters<typeof signalResult>[0]) => unknown) =>
          counted((input) => {
            socketsDuring.push(socketFds())
            return body(input)
          })
        const providers = [
          probe((input) => signalResult(input, { requestedWriteScope: ['periodic_report.sink.write'] })),
          probe(() => notApplicable()),
          probe(async (): Promise<never> => {
            throw new Error('failing hook')
          }),
        ]
        runtime.register({ registration: registration('alpha.one'), provider: providers[0]! })
        runtime.register({ registration: registration('beta.one'), provider: providers[1]! })
        runtime.register({
          registration: registration('periodic_report.runtime_trigger', { intentKinds: ['periodic_report.signal'] }),
          provider: providers[2]!,
        })

        const req = request()
        const first = await dispatchKeepingPrimary(runtime, req)
        const replay = await dispatchKeepingPrimary(runtime, req)
        await runtime.recover()
        expect(first.hooks.map((h) => h.outcome)).toStrictEqual(['recorded', 'not_applicable', 'failed'])
        expect(replay.hooks.map((h) => h.outcome)).toStrictEqual(['replayed', 'replayed', 'exhausted'])
        for (const p of providers) expect(p.calls).toBe(1)

        // Separate governed admission is a record too, never an effect.
        const pending = await runtime.journal.listIntents({ pendingOnly: true })
        expect(pending.items).toHaveLength(1)
        const id = pending.items[0]!.intentId
        expect(
          await runtime.journal.decide({
            intentId: id,
            executorId: 'alpha.executor',
            decision: 'admit',
            reasonCode: 'admitted_by_policy',
          }),
        ).toStrictEqual({ outcome: 'decided' })
        expect(await runtime.journal.markDone(id, 'alpha.executor')).toBe('done')

        expect(calls).toStrictEqual([])
        for (const during of socketsDuring) expect(during).toStrictEqual(socketsBefore)
        expect(socketFds()).toStrictEqual(socketsBefore)
      } finally {
        for (const [target, key, original] of patches) (target as Record<string, unknown>)[key] = original
      }
      expect(net.Socket.prototype.connect).not.toBe(undefined)
      expect(calls).toStrictEqual([])
    })

    it('Public-boundary scan', async () => {
      const tag = randomTag()
      const planted = [
        `SECRET-${tag}`,
        `/home/alice/.ssh/id_rsa_${tag}`,
        `https://internal.example/x?token=${tag}`,
        `ghp_${tag}${tag}abcd`,
        `raw transcript ${tag}: the user said hello`,
      ]
      const all = planted.join(' ')
      const { runtime, target } = await fx.runtime({ capabilities: ['alpha', 'beta'] })
      runtime.register({
        registration: registration('alpha.throws'),
        provider: () => {
          const e = new Error(all)
          e.stack = all
          throw e
        },
      })
      runtime.register({
        registration: registration('beta.invalid'),
        // Answers what the contract forbids, so its type is not the contract's.
        provider: (input: Parameters<typeof signalResult>[0]) => {
          const r = signalResult(input)
          const i = r.intents[0]!
          return {
            ...r,
            intents: [
              {
                ...i,
                operation: planted[0],
                payload: { ref: planted[1], refs: [planted[2], planted[3]], level: 1 },
                log: planted[4],
              },
            ],
          } as never
        },
      })
      const outcome = await dispatchKeepingPrimary(runtime, request())
      expect(outcome.hooks.map((h) => [h.outcome, h.failureCode])).toStrictEqual([
        ['failed', 'producer_failed'],
        ['failed', 'result_contract_rejected'],
      ])
      await runtime.close()
      const needles = [...planted, tag, 'alice', 'internal.example', 'transcript']
      const hits = findPlanted(
        [...target!.persistedBytes(), { name: 'outcome', bytes: Buffer.from(JSON.stringify(outcome)) }],
        needles,
      )
      expect(hits).toStrictEqual([])
    })
  },
)
