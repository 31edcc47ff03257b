// recover() reads the owed identities off the JS thread and takes them a
// page of maxInFlight at a time: across pages every owed identity runs once,
// oldest first, and only the hook that owes it; both backends.
import { afterEach, describe, expect, it } from 'vitest'

import { BACKENDS, type Backend } from './support/backends'
import { Fixtures, counted, goodProvider, registration, request, signalResult } from './support/runtime'

describe.each(BACKENDS.map((b): [string, Backend] => [b.name, b]))('recover() in pages on %s', (_, backend) => {
  const fx = new Fixtures(backend)
  afterEach(() => fx.cleanup())

  it('more owed identities than maxInFlight: each runs once, oldest first, only its owed hook', async () => {
    const { runtime } = await fx.runtime({ profile: { maxInFlight: 2 }, capabilities: ['alpha', 'beta'] })
    let down = true
    const a = counted((input) => {
      if (down) throw new Error('downstream unavailable')
      return signalResult(input)
    })
    const b = goodProvider()
    runtime.register({
      registration: registration('alpha.a', { budget: { max_invocations_per_dispatch: 2 } }),
      provider: a,
    })
    runtime.register({ registration: registration('beta.b'), provider: b })
    const receipts = Array.from({ length: 5 }, (_, i) => `receipt_page_${i}`)
    for (const id of receipts) {
      const outcome = await runtime.dispatch(request({ receipt: { receipt_id: id } }))
      expect(outcome.hooks.map((h) => [h.hookId, h.outcome])).toStrictEqual([
        ['alpha.a', 'failed'],
        ['beta.b', 'recorded'],
      ])
    }
    down = false

    const report = await runtime.recover()
    expect(report.skipped).toBe(0)
    expect(report.outcomes.map((h) => [h.hookId, h.outcome, h.attempt, h.receipt?.receipt_id])).toStrictEqual(
      receipts.map((id) => ['alpha.a', 'recorded', 2, id]),
    )
    expect([a.calls, b.calls]).toStrictEqual([10, 5])
    // Nothing is owed any more, and nothing runs again.
    expect(await runtime.recover()).toStrictEqual({ outcomes: [], skipped: 0, ledgersSkipped: 0 })
    expect([a.calls, b.calls]).toStrictEqual([10, 5])
  })
})
