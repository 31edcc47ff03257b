// One identity dispatched concurrently within one process, and verify-mode replay of an exhausted identity,
// on each backend (support/backends.ts).
import { afterEach, describe, expect, it } from 'vitest'
import { BACKENDS, type Backend } from './support/backends'
import { Fixtures, counted, registration, request, signalResult, sleep } from './support/runtime'

describe.each(BACKENDS.map((b): [string, Backend] => [b.name, b]))('identity races on %s', (_, backend) => {
  const fx = new Fixtures(backend)
  afterEach(() => fx.cleanup())

  it('concurrent dispatches of one identity stay within max_invocations_per_dispatch', async () => {
    const { runtime } = await fx.runtime({ capabilities: ['alpha'] })
    const provider = counted(async (): Promise<never> => {
      await sleep(30)
      throw new Error('down')
    })
    runtime.register({
      registration: registration('alpha.one', { budget: { max_invocations_per_dispatch: 1 } }),
      provider,
    })
    await Promise.all([runtime.dispatch(request()), runtime.dispatch(request()), runtime.dispatch(request())])
    // contract-v0 s.1: max_invocations_per_dispatch is "first try plus bounded retries of one dispatch identity, over its whole life"
    expect(provider.calls).toBeLessThanOrEqual(1)
  })

  it('recover() racing a dispatch of the same failed identity stays within the budget', async () => {
    const { runtime } = await fx.runtime({ capabilities: ['alpha'] })
    let up = false
    const provider = counted(async (input) => {
      await sleep(30)
      if (!up) throw new Error('down')
      return signalResult(input)
    })
    runtime.register({
      registration: registration('alpha.one', { budget: { max_invocations_per_dispatch: 2 } }),
      provider,
    })
    await runtime.dispatch(request())
    up = true
    await Promise.all([runtime.dispatch(request()), runtime.recover()])
    expect(provider.calls).toBeLessThanOrEqual(2)
  })

  it("a concurrent primary replay under replay 'return' invokes once and replays", async () => {
    const { runtime } = await fx.runtime({ capabilities: ['alpha'] })
    let level = 0
    const provider = counted(async (input) => {
      await sleep(30)
      level += 1
      return signalResult(input, { level })
    })
    runtime.register({ registration: registration('alpha.one'), provider })
    const [a, b] = await Promise.all([runtime.dispatch(request()), runtime.dispatch(request())])
    const kinds = [a.hooks[0]!.outcome, b.hooks[0]!.outcome].sort()
    expect({ calls: provider.calls, kinds }).toStrictEqual({ calls: 1, kinds: ['recorded', 'replayed'] })
  })

  it("replay 'verify' of an exhausted identity replays without invoking", async () => {
    const { runtime } = await fx.runtime({ profile: { replay: 'verify' }, capabilities: ['alpha'] })
    let up = false
    const provider = counted((input) => {
      if (!up) throw new Error('down')
      return signalResult(input)
    })
    runtime.register({
      registration: registration('alpha.one', { budget: { max_invocations_per_dispatch: 1 } }),
      provider,
    })
    await runtime.dispatch(request()) // failed, attempt 1
    const exhausted = (await runtime.dispatch(request())).hooks[0]! // exhausted, final
    expect(exhausted.outcome).toBe('exhausted')
    const stillDown = (await runtime.dispatch(request())).hooks[0]!
    up = true
    const nowUp = (await runtime.dispatch(request())).hooks[0]!
    // Expected (contract-v0 s.5): a final identity replays its receipt; an exhausted one has no result to verify
    // and its budget is spent, so the provider is not invoked again.
    expect({
      calls: provider.calls,
      stillDown: stillDown.outcome,
      nowUp: nowUp.outcome,
      nowUpCode: nowUp.failureCode,
    }).toStrictEqual({
      calls: 1,
      stillDown: 'replayed',
      nowUp: 'replayed',
      nowUpCode: null,
    })
    expect(stillDown.receipt).toStrictEqual(exhausted.receipt)
  })
})
