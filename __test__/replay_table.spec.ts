// The process's table of final replays (lib/replay_table.ts): a `return`
// replay of a byte-identical request is answered without crossing into the
// addon, with the outcome the addon gave; anything the table cannot vouch
// for (a hook not final, `verify` mode, a hook or intent kind added since,
// a closing runtime) goes the long way.
import { afterEach, describe, expect, it } from 'vitest'

import type { DispatchOutcome } from '../lib/index.js'
import { NativeHookRuntime } from '../lib/addon.js'
import { ReplayTable } from '../lib/replay_table.js'
import { BACKENDS, type Backend } from './support/backends'
import { Fixtures, counted, registration, request, signalKind, signalResult, sleep } from './support/runtime'

/** The addon's calls that prepare a dispatch: each is a crossing (PostgreSQL prepares off the JS thread). */
const PREPARES = ['prepare', 'prepareMany', 'prepareManyOffThread'] as const

/** Counts the dispatches prepared by the addon (each one that crosses) while `run` runs. */
async function prepares<T>(run: () => Promise<T>): Promise<{ out: T; prepares: number }> {
  type Method = (...a: unknown[]) => unknown
  const proto = NativeHookRuntime.prototype as unknown as Record<(typeof PREPARES)[number], Method>
  const saved = PREPARES.map((name) => [name, proto[name]] as const)
  let n = 0
  for (const [name, original] of saved) {
    proto[name] = function (this: unknown, ...args: unknown[]) {
      n += name === 'prepare' ? 1 : (args[0] as unknown[]).length
      return original.apply(this, args)
    }
  }
  try {
    const out = await run()
    return { out, prepares: n }
  } finally {
    for (const [name, original] of saved) proto[name] = original
  }
}

describe.each(BACKENDS.map((b): [string, Backend] => [b.name, b]))('the replay table on %s', (_, backend) => {
  const fx = new Fixtures(backend)
  afterEach(() => fx.cleanup())

  async function twoHooks(mode: 'return' | 'verify' = 'return') {
    const { runtime } = await fx.runtime({ profile: { replay: mode }, capabilities: ['alpha', 'beta'] })
    const a = counted((input) => signalResult(input))
    runtime.register({ registration: registration('alpha.one'), provider: a })
    return { runtime, a }
  }

  it("answers a byte-identical 'return' replay without the addon, with the addon's own outcome", async () => {
    const { runtime, a } = await twoHooks()
    const req = request()
    const first = await runtime.dispatch(req)
    expect(first.hooks.map((h) => h.outcome)).toStrictEqual(['recorded'])
    // The first replay crosses and is kept; the next ones do not cross.
    const long = await prepares(() => runtime.dispatch(req))
    expect(long.prepares).toBe(1)
    const short = await prepares(async () => [await runtime.dispatch(req), await runtime.dispatch(req)])
    expect(short.prepares).toBe(0)
    for (const o of short.out) expect(o).toStrictEqual(long.out)
    expect(long.out.hooks[0]!.outcome).toBe('replayed')
    expect(long.out.hooks[0]!.receipt).toStrictEqual(first.hooks[0]!.receipt)
    expect(a.calls).toBe(1)
    // One frozen object, shared: no caller can change what a later one gets.
    expect(short.out[0]).toBe(long.out)
    expect(Object.isFrozen(long.out) && Object.isFrozen(long.out.hooks[0]!.receipt)).toBe(true)
    expect(() => {
      short.out[0]!.hooks.length = 0
    }).toThrow(TypeError)
    expect(await runtime.dispatch(req)).toStrictEqual(long.out)
    expect(long.out.hooks).toHaveLength(1)
    expect(runtime.metrics().dispatches.resolved).toBe(5)
  })

  it('keys on the exact text: the same request spelled in another member order crosses', async () => {
    const { runtime } = await twoHooks()
    const req = request()
    await runtime.dispatch(req)
    await runtime.dispatch(req)
    const reordered = Object.fromEntries(Object.entries(req).reverse()) as typeof req
    const { out, prepares: n } = await prepares(() => runtime.dispatch(reordered))
    expect(n).toBe(1)
    expect(out.hooks[0]!.outcome).toBe('replayed')
  })

  it('is emptied when a hook is added: the new hook runs on the next dispatch of the same request', async () => {
    const { runtime, a } = await twoHooks()
    const req = request()
    await runtime.dispatch(req)
    await runtime.dispatch(req)
    const b = counted((input) => signalResult(input))
    runtime.register({ registration: registration('beta.one'), provider: b })
    const { out, prepares: n } = await prepares(() => runtime.dispatch(req))
    expect(n).toBe(1)
    expect(out.hooks.map((h) => h.outcome)).toStrictEqual(['replayed', 'recorded'])
    expect([a.calls, b.calls]).toStrictEqual([1, 1])
  })

  it('is emptied when an intent kind is defined', async () => {
    const { runtime } = await twoHooks()
    const req = request()
    await runtime.dispatch(req)
    await runtime.dispatch(req)
    runtime.defineIntentKind(signalKind('gamma'))
    expect((await prepares(() => runtime.dispatch(req))).prepares).toBe(1)
  })

  it("is emptied when the runtime's journal prunes: the next replay carries its prunedAt", async () => {
    const { runtime } = await twoHooks()
    const req = request()
    await runtime.dispatch(req)
    const kept = await runtime.dispatch(req)
    expect(kept.hooks[0]!.prunedAt).toBeNull()
    for (const i of (await runtime.journal.listIntents({ limit: 10 })).items) {
      await runtime.journal.decide({
        intentId: i.intentId,
        executorId: 'executor.audit',
        decision: 'reject',
        reasonCode: 'no',
      })
    }
    await sleep(5)
    expect((await runtime.journal.prune({ olderThanMs: 0 })).dispatches).toBe(1)
    const { out, prepares: n } = await prepares(() => runtime.dispatch(req))
    expect(n).toBe(1)
    expect(typeof out.hooks[0]!.prunedAt).toBe('number')
    expect(out.hooks[0]!.receipt).toStrictEqual(kept.hooks[0]!.receipt)
  })

  it('keeps no outcome with a hook that is not final: its provider runs again', async () => {
    const { runtime } = await fx.runtime({ capabilities: ['alpha'] })
    let failing = true
    const a = counted((input) => {
      if (failing) throw new Error('not yet')
      return signalResult(input)
    })
    runtime.register({
      registration: registration('alpha.one', { budget: { max_invocations_per_dispatch: 3 } }),
      provider: a,
    })
    const req = request()
    expect((await runtime.dispatch(req)).hooks[0]!.outcome).toBe('failed')
    expect((await prepares(() => runtime.dispatch(req))).prepares).toBe(1)
    expect(a.calls).toBe(2)
    failing = false
    expect((await runtime.dispatch(req)).hooks[0]!.outcome).toBe('recorded')
    expect(a.calls).toBe(3)
  })

  it("keeps nothing in 'verify' mode: every replay calls its provider to compare", async () => {
    const { runtime, a } = await twoHooks('verify')
    const req = request()
    await runtime.dispatch(req)
    const { prepares: n } = await prepares(async () => {
      for (let i = 0; i < 3; i++) expect((await runtime.dispatch(req)).hooks[0]!.outcome).toBe('replayed')
    })
    expect(n).toBe(3)
    expect(a.calls).toBe(4)
  })

  it('answers nothing once the runtime closes: a kept request is refused journal_closed', async () => {
    const { runtime } = await twoHooks()
    const req = request()
    await runtime.dispatch(req)
    await runtime.dispatch(req)
    await runtime.close()
    await expect(runtime.dispatch(req)).rejects.toMatchObject({ code: 'ERR_LOOPX_JOURNAL_CLOSED' })
  })
})

describe('the replay table itself', () => {
  it('is bounded: past its entries the oldest go first', () => {
    const table = new ReplayTable()
    const outcome = () => ({}) as DispatchOutcome
    for (let i = 0; i < 17_000; i++) table.keep(`{"r":${i}}`, outcome(), 2)
    expect(table.size).toBe(16_384)
    expect(table.get('{"r":0}')).toBeUndefined()
    expect(table.get('{"r":16999}')).toStrictEqual({})
    expect(Object.isFrozen(table.get('{"r":16999}'))).toBe(true)
    // One text larger than the whole bound is never kept.
    table.keep('x'.repeat(32 * 1024 * 1024), outcome(), 2)
    expect(table.size).toBe(16_384)
    // Past its characters too: a 17 Mi-character entry pushes out every one before it.
    table.keep('a'.repeat(17 * 1024 * 1024), outcome(), 2)
    table.keep('b'.repeat(17 * 1024 * 1024), outcome(), 2)
    expect([table.size, table.get('a'.repeat(17 * 1024 * 1024))]).toStrictEqual([1, undefined])
    // Counted by the outcome's characters as well.
    table.clear()
    table.keep('c', outcome(), 17 * 1024 * 1024)
    table.keep('d', outcome(), 17 * 1024 * 1024)
    expect([table.size, table.get('c')]).toStrictEqual([1, undefined])
    table.clear()
    expect(table.size).toBe(0)
  })
})
