// Visibility (issue 10, item 1): the dispatcher publishes its life on
// node:diagnostics_channel (a TracingChannel per dispatch and per provider
// call, messages per group commit and per outbox action); a provider's
// thrown Error reaches subscribers as the object while the journal and the
// outcome stay free of it; runtime.metrics() counts the same figures. The
// turn-start kernel's dispatches and provider calls are traced the same way.
import diagnostics_channel from 'node:diagnostics_channel'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'

import { afterEach, describe, expect, it } from 'vitest'

import {
  InboxStore,
  TurnStartKernel,
  channels,
  type CommitMessage,
  type DispatchMessage,
  type HookMessage,
  type OutboxMessage,
  type TurnStartHookMessage,
  type TurnStartMessage,
} from '../lib/index.js'
import { Fixtures, goodProvider, hookOutcome, registration, request, signalResult } from './support/runtime'
import { turnStartReceipt, turnStartRegistration, turnStartRequest } from './support/turn_start'

const fx = new Fixtures()
const undo: Array<() => void> = []
afterEach(async () => {
  for (const u of undo.splice(0)) u()
  await fx.cleanup()
})

type Event = [string, unknown]

/** Records every event of both tracing channels and both plain channels, in order. */
function listen(): Event[] {
  const events: Event[] = []
  const tracing = (prefix: string) => ({
    start: (m: unknown) => events.push([`${prefix}:start`, m]),
    end: (m: unknown) => events.push([`${prefix}:end`, m]),
    asyncStart: (m: unknown) => events.push([`${prefix}:asyncStart`, m]),
    asyncEnd: (m: unknown) => events.push([`${prefix}:asyncEnd`, m]),
    error: (m: unknown) => events.push([`${prefix}:error`, m]),
  })
  const d = tracing('dispatch')
  const h = tracing('hook')
  const ts = tracing('turnStart')
  const tsh = tracing('tsHook')
  const dispatch = diagnostics_channel.tracingChannel(channels.dispatch)
  const hook = diagnostics_channel.tracingChannel(channels.hook)
  const turnStart = diagnostics_channel.tracingChannel(channels.turnStart)
  const turnStartHook = diagnostics_channel.tracingChannel(channels.turnStartHook)
  const commit = (m: unknown) => events.push(['commit', m])
  const outbox = (m: unknown) => events.push(['outbox', m])
  dispatch.subscribe(d)
  hook.subscribe(h)
  turnStart.subscribe(ts)
  turnStartHook.subscribe(tsh)
  diagnostics_channel.subscribe(channels.commit, commit)
  diagnostics_channel.subscribe(channels.outbox, outbox)
  undo.push(() => {
    dispatch.unsubscribe(d)
    hook.unsubscribe(h)
    turnStart.unsubscribe(ts)
    turnStartHook.unsubscribe(tsh)
    diagnostics_channel.unsubscribe(channels.commit, commit)
    diagnostics_channel.unsubscribe(channels.outbox, outbox)
  })
  return events
}

const names = (events: Event[], prefix: string) => events.filter(([n]) => n.startsWith(prefix)).map(([n]) => n)

describe('loopx-hooks:dispatch and loopx-hooks:hook', () => {
  it('trace a dispatch and each provider call with ids, reply and outcome', async () => {
    const { runtime } = await fx.runtime({ capabilities: ['alpha', 'beta'] })
    runtime.register({ registration: registration('alpha.hook'), provider: goodProvider() })
    runtime.register({
      registration: registration('beta.hook'),
      provider: async (input: Parameters<typeof signalResult>[0]) => {
        await new Promise((go) => setTimeout(go, 5))
        return signalResult(input)
      },
    })
    const events = listen()
    const outcome = await runtime.dispatch(request({ receipt: { receipt_id: 'receipt_diag_1' } }))

    expect(names(events, 'dispatch')).toEqual([
      'dispatch:start',
      'dispatch:end',
      'dispatch:asyncStart',
      'dispatch:asyncEnd',
    ])
    expect(names(events, 'hook')).toEqual([
      'hook:start',
      'hook:end',
      'hook:start',
      'hook:end',
      'hook:asyncStart',
      'hook:asyncEnd',
    ])
    const d = events.find(([n]) => n === 'dispatch:start')![1] as DispatchMessage
    expect(d.runtime).toBe(runtime)
    expect([d.effectId, d.receiptId, d.goalId, d.turnInstanceId]).toEqual([
      'effect_0001',
      'receipt_diag_1',
      'goal_0001',
      'turn_0001',
    ])
    expect(d.result).toEqual(outcome)
    const hooks = events.filter(([n]) => n === 'hook:start').map(([, m]) => m as HookMessage)
    expect(hooks.map((h) => h.hookId)).toEqual(['alpha.hook', 'beta.hook'])
    for (const h of hooks) {
      expect(h.dispatch).toBe(d)
      expect(h.dispatchId).toBe(hookOutcome(outcome, h.hookId).dispatchId)
      expect(h.reply).toBe('replied')
      expect(h.durationMs).toBeGreaterThanOrEqual(0)
      expect(h.error).toBeUndefined()
    }
    expect(hooks[1]!.durationMs).toBeGreaterThanOrEqual(4)
  })

  it('hand a provider’s thrown Error to subscribers, in memory only', async () => {
    const secret = 'sk_live_PLANTED_diag_7f3a9c'
    const { runtime, dir } = await fx.runtime({ capabilities: ['gamma', 'delta'] })
    const thrown = new Error(`upstream said ${secret}`)
    runtime.register({
      registration: registration('gamma.hook'),
      provider: () => {
        throw thrown
      },
    })
    const rejected = new TypeError(`token=${secret}`)
    runtime.register({ registration: registration('delta.hook'), provider: () => Promise.reject(rejected) })
    const events = listen()
    const outcome = await runtime.dispatch(request({ receipt: { receipt_id: 'receipt_diag_2' } }))

    const errors = events.filter(([n]) => n === 'hook:error').map(([, m]) => m as HookMessage)
    expect(errors.map((h) => [h.hookId, h.reply])).toEqual([
      ['delta.hook', 'threw'],
      ['gamma.hook', 'threw'],
    ])
    expect(errors[0]!.error).toBe(rejected)
    expect(errors[1]!.error).toBe(thrown)
    // The order of a throwing sync call and a rejecting async one, as TracingChannel orders them.
    expect(names(events, 'hook')).toEqual([
      'hook:start',
      'hook:end',
      'hook:error',
      'hook:asyncStart',
      'hook:asyncEnd',
      'hook:start',
      'hook:error',
      'hook:end',
    ])
    for (const id of ['gamma.hook', 'delta.hook']) {
      expect(hookOutcome(outcome, id).failureCode).toBe('producer_failed')
    }
    expect(JSON.stringify(outcome)).not.toContain(secret)
    const failures = await runtime.journal.listFailures(hookOutcome(outcome, 'gamma.hook').dispatchId)
    expect(JSON.stringify(failures)).not.toContain(secret)
    await runtime.close()
    for (const name of ['hooks.journal', 'hooks.journal-wal']) {
      try {
        expect(readFileSync(`${dir}/${name}`).includes(secret)).toBe(false)
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e
      }
    }
  })

  it('reports a dispatch that rejects on the error event with its code', async () => {
    const { runtime } = await fx.runtime({ capabilities: ['eps'] })
    runtime.register({ registration: registration('eps.hook'), provider: goodProvider() })
    const events = listen()
    await runtime.close()
    const error = await runtime.dispatch(request()).catch((e: unknown) => e)
    expect(error).toMatchObject({ code: expect.stringMatching(/^ERR_LOOPX_/) })
    expect(names(events, 'dispatch')).toEqual([
      'dispatch:start',
      'dispatch:end',
      'dispatch:error',
      'dispatch:asyncStart',
      'dispatch:asyncEnd',
    ])
    const m = events.find(([n]) => n === 'dispatch:error')![1] as DispatchMessage
    expect(m.error).toBe(error)
    expect(m.result).toBeUndefined()
    expect(runtime.metrics().dispatches.errors).toEqual({ [(error as { code: string }).code]: 1 })
  })

  it('traces every request of dispatchMany, replays included', async () => {
    const { runtime } = await fx.runtime({ capabilities: ['zeta'] })
    runtime.register({ registration: registration('zeta.hook'), provider: goodProvider() })
    const requests = [1, 2, 3].map((i) => request({ receipt: { receipt_id: `receipt_many_${i}` } }))
    await runtime.dispatchMany(requests)
    const events = listen()
    const again = await runtime.dispatchMany(requests)
    expect(again.every((o) => o.hooks[0]!.outcome === 'replayed')).toBe(true)
    const ends = events.filter(([n]) => n === 'dispatch:asyncEnd').map(([, m]) => m as DispatchMessage)
    expect(ends.map((m) => m.receiptId)).toEqual(['receipt_many_1', 'receipt_many_2', 'receipt_many_3'])
    expect(names(events, 'hook')).toEqual([])
  })
})

describe('loopx-hooks:turn-start and loopx-hooks:turn-start-hook', () => {
  it('trace a turn-start dispatch and each provider call; a thrown Error reaches subscribers, in memory only', async () => {
    const secret = 'sk_live_PLANTED_turn_start_9d1e'
    const dir = fx.tempDir().dir
    const inbox = await InboxStore.open(join(dir, 'inbox.sqlite'))
    const k = new TurnStartKernel({ profile: { enabled: true }, inbox })
    const thrown = new Error(`upstream said ${secret}`)
    const rejected = new TypeError(`token=${secret}`)
    k.register({ registration: turnStartRegistration('alpha'), provider: (i) => turnStartReceipt(i) })
    k.register({
      registration: turnStartRegistration('beta'),
      provider: async (i) => {
        await new Promise((go) => setTimeout(go, 5))
        return turnStartReceipt(i)
      },
    })
    k.register({ registration: turnStartRegistration('delta'), provider: () => Promise.reject(rejected) })
    k.register({
      registration: turnStartRegistration('gamma'),
      provider: () => {
        throw thrown
      },
    })
    const events = listen()
    const outcome = await k.dispatchTurnStart(turnStartRequest())

    expect(names(events, 'turnStart')).toEqual([
      'turnStart:start',
      'turnStart:end',
      'turnStart:asyncStart',
      'turnStart:asyncEnd',
    ])
    const t = events.find(([n]) => n === 'turnStart:start')![1] as TurnStartMessage
    expect(t.kernel).toBe(k)
    expect([t.goalId, t.agentId, t.turnInstanceId]).toEqual(['goal_diag', 'agent_diag', 'turn_diag_1'])
    expect(t.result).toEqual(outcome)
    // In hook_id order: a sync reply, an async one, a rejection, a synchronous throw.
    expect(names(events, 'tsHook')).toEqual([
      ...['tsHook:start', 'tsHook:end'],
      ...['tsHook:start', 'tsHook:end', 'tsHook:asyncStart', 'tsHook:asyncEnd'],
      ...['tsHook:start', 'tsHook:end', 'tsHook:error', 'tsHook:asyncStart', 'tsHook:asyncEnd'],
      ...['tsHook:start', 'tsHook:error', 'tsHook:end'],
    ])
    const calls = events.filter(([n]) => n === 'tsHook:start').map(([, m]) => m as TurnStartHookMessage)
    expect(calls.map((c) => [c.hookId, c.reply])).toEqual([
      ['alpha.turn_start_read', 'replied'],
      ['beta.turn_start_read', 'replied'],
      ['delta.turn_start_read', 'threw'],
      ['gamma.turn_start_read', 'threw'],
    ])
    for (const c of calls) {
      expect(c.kernel).toBe(k)
      expect(c.turnStart).toBe(t)
      expect(c.durationMs).toBeGreaterThanOrEqual(0)
    }
    expect(calls[1]!.durationMs).toBeGreaterThanOrEqual(4)
    const errors = events.filter(([n]) => n === 'tsHook:error').map(([, m]) => (m as TurnStartHookMessage).error)
    expect(errors).toEqual([rejected, thrown])
    expect(errors[0]).toBe(rejected)
    expect(errors[1]).toBe(thrown)
    expect(calls[0]!.error).toBeUndefined()

    // The outcome and the inbox file hold the code core made of it, never the error.
    expect(outcome.hooks.map((h) => h.kernelFailure?.code ?? null)).toEqual([
      null,
      null,
      'producer_failed',
      'producer_failed',
    ])
    expect(JSON.stringify(outcome)).not.toContain(secret)
    await inbox.close()
    for (const name of ['inbox.sqlite', 'inbox.sqlite-wal']) {
      try {
        expect(readFileSync(join(dir, name)).includes(secret)).toBe(false)
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e
      }
    }
  })

  it('trace a refused request without a provider call', async () => {
    const k = new TurnStartKernel({ profile: { enabled: true } })
    let called = 0
    k.register({ registration: turnStartRegistration('eps'), provider: (i) => (called++, turnStartReceipt(i)) })
    const events = listen()
    const outcome = await k.dispatchTurnStart({ ...turnStartRequest(), quota: { max_units: 0 } })
    expect(outcome.admitted).toBe(false)
    expect(called).toBe(0)
    expect(names(events, 'turnStart')).toHaveLength(4)
    expect((events[0]![1] as TurnStartMessage).result).toEqual(outcome)
    expect(names(events, 'tsHook')).toEqual([])
  })
})

describe('loopx-hooks:commit and loopx-hooks:outbox', () => {
  it('publish each group commit that finished dispatches, and each claim, decision and mark-done', async () => {
    const { runtime } = await fx.runtime({ capabilities: ['eta'] })
    runtime.register({ registration: registration('eta.hook'), provider: goodProvider() })
    const events = listen()
    await Promise.all([1, 2, 3, 4].map((i) => runtime.dispatch(request({ receipt: { receipt_id: `receipt_c_${i}` } }))))
    const commits = events.filter(([n]) => n === 'commit').map(([, m]) => m as CommitMessage)
    expect(commits.length).toBeGreaterThanOrEqual(1)
    expect(commits.reduce((n, c) => n + c.dispatches, 0)).toBe(4)
    for (const c of commits) {
      expect(c.runtime).toBe(runtime)
      expect(c.committed).toBe(true)
      expect(c.size).toBeGreaterThanOrEqual(c.dispatches)
      expect(c.latencyMs).toBeGreaterThan(0)
      expect(c.busyRetries).toBe(0)
      expect(c.durable).toBe(false) // the fixtures open with synchronous 'normal'
    }

    const [first] = await runtime.journal.claim({ executorId: 'eta.exec', leaseMs: 10_000, batch: 1 })
    await runtime.journal.decide({
      intentId: first!.intentId,
      executorId: 'eta.exec',
      decision: 'admit',
      reasonCode: 'ok',
    })
    await runtime.journal.markDone(first!.intentId, 'eta.exec')
    await expect(
      runtime.journal.decide({ intentId: 'nope', executorId: 'other.exec', decision: 'admit', reasonCode: 'ok' }),
    ).rejects.toMatchObject({ code: 'ERR_LOOPX_INVALID_ARGUMENT' })
    const outbox = events.filter(([n]) => n === 'outbox').map(([, m]) => m as OutboxMessage)
    expect(outbox.map((m) => [m.action, m.executorId, m.intentId])).toEqual([
      ['claim', 'eta.exec', undefined],
      ['decide', 'eta.exec', first!.intentId],
      ['done', 'eta.exec', first!.intentId],
      ['decide', 'other.exec', 'nope'],
    ])
    expect(outbox.every((m) => m.journal === runtime.journal)).toBe(true)
    expect(outbox[0]!.intents).toHaveLength(1)
    expect(outbox[1]!.decision).toBe('admit')
    expect(outbox[1]!.result).toEqual({ outcome: 'decided' })
    expect(outbox[2]!.result).toBe('done')
    expect(outbox[3]!.result).toBeUndefined()
    expect(outbox[3]!.error).toMatchObject({ code: 'ERR_LOOPX_INVALID_ARGUMENT' })
  })

  it('publish nothing once unsubscribed: the hasSubscribers guards read false again', async () => {
    const { runtime } = await fx.runtime({ capabilities: ['theta'] })
    runtime.register({ registration: registration('theta.hook'), provider: goodProvider() })
    // Subscribed once and unsubscribed: the guards the dispatcher reads are false again.
    listen()
    expect(diagnostics_channel.tracingChannel(channels.dispatch).hasSubscribers).toBe(true)
    for (const u of undo.splice(0)) u()
    expect(diagnostics_channel.tracingChannel(channels.dispatch).hasSubscribers).toBe(false)
    expect(diagnostics_channel.tracingChannel(channels.hook).hasSubscribers).toBe(false)
    expect(diagnostics_channel.channel(channels.commit).hasSubscribers).toBe(false)
    expect(diagnostics_channel.channel(channels.outbox).hasSubscribers).toBe(false)
    expect(diagnostics_channel.tracingChannel(channels.turnStart).hasSubscribers).toBe(false)
    expect(diagnostics_channel.tracingChannel(channels.turnStartHook).hasSubscribers).toBe(false)
    const events = listen()
    for (const u of undo.splice(0)) u()
    const outcome = await runtime.dispatch(request())
    expect(hookOutcome(outcome, 'theta.hook').outcome).toBe('recorded')
    const k = new TurnStartKernel({ profile: { enabled: true } })
    k.register({ registration: turnStartRegistration('theta'), provider: (i) => turnStartReceipt(i) })
    expect((await k.dispatchTurnStart(turnStartRequest())).hooks).toHaveLength(1)
    expect(events).toEqual([])
  })
})

describe('runtime.metrics()', () => {
  it('counts dispatches, hook outcomes, failure codes, provider calls and the writer', async () => {
    const { runtime } = await fx.runtime({ capabilities: ['iota', 'kappa'] })
    runtime.register({ registration: registration('iota.hook'), provider: goodProvider() })
    runtime.register({
      registration: registration('kappa.hook'),
      provider: () => {
        throw new Error('kappa broke: password=hunter2')
      },
    })
    const before = runtime.metrics()
    expect(before.dispatches).toEqual({ resolved: 0, admitted: 0, refused: 0, errors: {} })
    for (let i = 0; i < 3; i++) await runtime.dispatch(request({ receipt: { receipt_id: `receipt_m_${i}` } }))
    await runtime.dispatch(request({ receipt: { receipt_id: 'receipt_m_0' } })) // a replay
    await runtime.dispatch(request({ receipt: { receipt_id: 'receipt_m_x', status: 'prepared' } })) // refused

    const m = runtime.metrics()
    expect(m.dispatches).toEqual({ resolved: 5, admitted: 4, refused: 1, errors: {} })
    expect(m.hookOutcomes).toEqual({ recorded: 3, notApplicable: 0, failed: 3, replayed: 1, conflict: 0, exhausted: 1 })
    // The second dispatch of receipt_m_0 replays iota and finds kappa's one invocation spent: no provider is called.
    expect(m.failureCodes).toEqual({ producer_failed: 3, dispatch_budget_exhausted: 1 })
    expect(m.providerReplies).toEqual({ replied: 3, threw: 3 })
    expect(m.providerLatencyMs.count).toBe(6)
    expect(m.providerLatencyMs.counts.reduce((a, b) => a + b, 0)).toBe(6)
    expect(m.providerLatencyMs.counts).toHaveLength(m.providerLatencyMs.bounds.length + 1)
    expect(m.commits.count).toBeGreaterThanOrEqual(4)
    expect(m.commits.batchSize.count).toBe(m.commits.count)
    expect(m.commits.latencyMs.count).toBe(m.commits.count)
    expect(m.commits.batchSize.sum).toBe(m.commits.commands)
    expect(m.commits.latencyMs.sum).toBeGreaterThan(0)
    expect(m.writer).toMatchObject({ queueDepth: 0, busyRetries: 0 })
    // Each wake-up brought at least one command (one already queued, or come while the writer was still awake, needs none).
    expect(m.writer.wakes).toBeLessThanOrEqual(m.commits.commands)
    expect(JSON.stringify(m)).not.toContain('hunter2')
    // A snapshot: later dispatches do not change it.
    await runtime.dispatch(request({ receipt: { receipt_id: 'receipt_m_9' } }))
    expect(m.dispatches.resolved).toBe(5)
    expect(runtime.metrics().dispatches.resolved).toBe(6)
  })
})
