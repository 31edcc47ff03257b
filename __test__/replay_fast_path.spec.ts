// Replays answered at read speed: a dispatch whose every hook is final is
// settled when `dispatch` returns in `return` mode, and in the same turn in
// `verify` mode (no hop to the writer thread, no microtask batching), with the same outcome the slow path gives, and in `return` mode
// without calling a provider; `verify` mode calls it and compares digests
// without handing the writer anything. The slow path here is the replay of a
// dispatch that waited for the same identity's run in flight (prepared again
// after it), and the replay under a `loopx-hooks:dispatch` subscriber; both
// dialects.
import { tracingChannel } from 'node:diagnostics_channel'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterEach, describe, expect, it } from 'vitest'

import {
  HookRuntime,
  type ShippedDispatchResult,
  type ShippedHookInput,
  type ShippedHookResult,
  type ShippedRegistration,
  type ShippedSource,
} from '../lib/index.js'
import { STAGE, periodicResult } from './support/periodic_report'
import { Fixtures, counted, registration, request, signalResult } from './support/runtime'

const fx = new Fixtures()
afterEach(() => fx.cleanup())

/**
 * How many microtask ticks `promise` takes to settle, or Infinity when it
 * does not settle while only microtasks run. A commit's outcome comes back
 * from the writer thread through the event loop, so a dispatch that needed
 * one never settles here; one answered from `prepare` or `complete` is
 * settled when `dispatch` returns (1: the first tick runs its reaction).
 */
async function ticksToSettle(promise: Promise<unknown>): Promise<number> {
  let settled = false
  promise.then(
    () => (settled = true),
    () => (settled = true),
  )
  for (let tick = 1; tick <= 16; tick++) {
    await Promise.resolve()
    if (settled) return tick
  }
  return Infinity
}

/** The writer's command count: a replay must not add to it. */
function commands(runtime: HookRuntime): number {
  return runtime.metrics().commits.commands
}

/** A dispatch whose outcome is read under a `loopx-hooks:dispatch` subscriber (the traced path). */
async function traced<T>(run: () => Promise<T>): Promise<T> {
  const channel = tracingChannel('loopx-hooks:dispatch')
  const handlers = { start() {}, end() {}, asyncStart() {}, asyncEnd() {}, error() {} }
  channel.subscribe(handlers)
  try {
    return await run()
  } finally {
    channel.unsubscribe(handlers)
  }
}

describe.each(['return', 'verify'] as const)("contract-v0, replay '%s'", (mode) => {
  for (const conflicting of [false, true]) {
    it(`${conflicting ? 'a provider answering differently' : 'an agreeing provider'}: the same outcome as the slow path, without a turn`, async () => {
      const { runtime } = await fx.runtime({ profile: { replay: mode }, capabilities: ['alpha', 'beta'] })
      let level = 1
      const a = counted((input) => signalResult(input, { level }))
      const b = counted((input) => signalResult(input, { level: 7 }))
      runtime.register({ registration: registration('alpha.one'), provider: a })
      runtime.register({ registration: registration('beta.one'), provider: b })
      const req = request()

      // Slow path: the second dispatch waits for the first's records, then replays.
      const [first, waited] = await Promise.all([runtime.dispatch(req), runtime.dispatch(req)])
      expect(first.hooks.map((h) => h.outcome)).toStrictEqual(['recorded', 'recorded'])
      if (conflicting) level = 2
      const viaTrace = await traced(() => runtime.dispatch(req))
      const callsBefore = a.calls + b.calls
      const commandsBefore = commands(runtime)

      const fast = runtime.dispatch(req)
      // 'return' is settled when dispatch returns; 'verify' calls its
      // providers once the caller's synchronous code ran, in the same turn.
      const ticks = await ticksToSettle(fast)
      if (mode === 'return') expect(ticks).toBe(1)
      else expect(ticks).toBeLessThan(Infinity)
      const outcome = await fast
      expect(commands(runtime)).toBe(commandsBefore)
      // 'return' never calls a provider; 'verify' calls each once to compare.
      expect(a.calls + b.calls - callsBefore).toBe(mode === 'return' ? 0 : 2)

      const want = mode === 'verify' && conflicting ? ['conflict', 'replayed'] : ['replayed', 'replayed']
      expect(outcome.hooks.map((h) => h.outcome)).toStrictEqual(want)
      expect(outcome).toStrictEqual(viaTrace)
      if (!conflicting) expect(outcome).toStrictEqual(waited)
      for (const [i, h] of outcome.hooks.entries()) expect(h.receipt).toStrictEqual(first.hooks[i]!.receipt)
      expect(runtime.metrics().dispatches.resolved).toBe(4)
    })
  }

  it('a hook that is not final takes the slow path and its provider runs; the final one replays', async () => {
    const { runtime } = await fx.runtime({ profile: { replay: mode }, capabilities: ['alpha', 'beta'] })
    const a = counted((input) => signalResult(input))
    let failing = true
    const b = counted((input) => {
      if (failing) throw new Error('not yet')
      return signalResult(input)
    })
    runtime.register({ registration: registration('alpha.one'), provider: a })
    runtime.register({
      registration: registration('beta.one', { budget: { max_invocations_per_dispatch: 3 } }),
      provider: b,
    })
    const first = await runtime.dispatch(request())
    expect(first.hooks.map((h) => h.outcome)).toStrictEqual(['recorded', 'failed'])
    failing = false
    const commandsBefore = commands(runtime)

    const again = runtime.dispatch(request())
    expect(await ticksToSettle(again)).toBe(Infinity)
    const outcome = await again
    expect(outcome.hooks.map((h) => h.outcome)).toStrictEqual(['replayed', 'recorded'])
    expect(outcome.hooks[0]!.receipt).toStrictEqual(first.hooks[0]!.receipt)
    expect([a.calls, b.calls]).toStrictEqual([mode === 'return' ? 1 : 2, 2])
    expect(commands(runtime)).toBeGreaterThan(commandsBefore)
  })

  it('a provider that answers asynchronously still replays with the same outcome', async () => {
    const { runtime } = await fx.runtime({ profile: { replay: mode }, capabilities: ['alpha'] })
    const a = counted(async (input) => signalResult(input))
    runtime.register({ registration: registration('alpha.one'), provider: a })
    const first = await runtime.dispatch(request())
    const again = await runtime.dispatch(request())
    expect(again.hooks.map((h) => h.outcome)).toStrictEqual(['replayed'])
    expect(again.hooks[0]!.receipt).toStrictEqual(first.hooks[0]!.receipt)
    expect(a.calls).toBe(mode === 'return' ? 1 : 2)
  })
})

// ---------------------------------------------------------------- loopx-shipped-v0

function shippedRegistration(): ShippedRegistration {
  return {
    schema_version: 'loopx_post_writeback_capability_hook_registration_v0',
    hook_id: STAGE,
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

const source: ShippedSource = {
  schema_version: 'loopx_post_writeback_hook_source_v0',
  event_kind: 'refresh_state',
  status: 'committed',
  durable: true,
  identity: {
    goal_id: 'goal-1',
    agent_id: 'agent-1',
    todo_id: null,
    turn_instance_id: 'turn-1',
    effect_id: 'effect-1',
  },
  state_version: 'state-v1',
  receipt_id: null,
  committed_at: '2026-09-02T12:00:00Z',
  projection: { stage_completion: 'stage-1', last_report: null },
}

describe.each(['return', 'verify'] as const)("loopx-shipped-v0, replay '%s'", (mode) => {
  let dir: string | undefined
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true })
    dir = undefined
  })

  for (const conflicting of [false, true]) {
    it(`${conflicting ? 'a producer answering differently' : 'an agreeing producer'}: the same result as the slow path, without a turn`, async () => {
      dir = mkdtempSync(join(tmpdir(), 'loopx-replay-'))
      const runtime = await HookRuntime.open({
        dialect: 'loopx-shipped-v0',
        journal: join(dir, 'hooks.sqlite'),
        profile: { enabled: true, replay: mode },
      })
      try {
        let marker = 'first'
        let calls = 0
        const producer = (input: ShippedHookInput): ShippedHookResult => {
          calls++
          return periodicResult(input, { marker })
        }
        runtime.register({ registration: shippedRegistration(), provider: producer })
        const [first, waited] = await Promise.all([runtime.dispatch(source), runtime.dispatch(source)])
        expect(first.invoked_count).toBe(1)
        if (conflicting) marker = 'second'
        const viaTrace = await traced(() => runtime.dispatch(source))
        const callsBefore = calls

        const fast = runtime.dispatch(source)
        // One tick more than the engine's: the shipped result is derived from its outcome.
        const ticks = await ticksToSettle(fast)
        if (mode === 'return') expect(ticks).toBe(2)
        else expect(ticks).toBeLessThan(Infinity)
        const result: ShippedDispatchResult = await fast
        expect(calls - callsBefore).toBe(mode === 'return' ? 0 : 1)
        expect(result).toStrictEqual(viaTrace)
        if (!conflicting) expect(result).toStrictEqual(waited)
        if (mode === 'verify' && conflicting) {
          expect(result.failures.map((f) => f.error_code)).toStrictEqual(['receipt_conflict'])
        } else {
          expect(result.replayed_hooks).toStrictEqual([STAGE])
          expect(result.intents).toStrictEqual(first.intents)
        }
      } finally {
        await runtime.close()
      }
    })
  }
})
