// A rejected result says where: the JSON Pointer of the first violation is
// kept on the hook's outcome (failurePointer) and on the journal's failure
// row (pointer), on both backends, and a member name that is not a plain
// short token (a credential, an address, anything long) never travels in it.
import { afterEach, describe, expect, it } from 'vitest'

import { Fixtures, counted, registration, request, signalResult, type HookRuntime } from './support/runtime'
import { BACKENDS, type Backend } from './support/backends'

const SECRET_KEY = 'sk_live_pointerplanted0123456789'
const PRIVATE_KEY = 'jane.doe@example.com'

/** A provider answering a signal result with `change` applied to its intent's payload. */
function bent(change: (payload: Record<string, unknown>) => void) {
  return counted((input) => {
    const result = signalResult(input)
    const payload = { ...(result.intents[0]!.payload as Record<string, unknown>) }
    change(payload)
    return { ...result, intents: [{ ...result.intents[0]!, payload }] }
  })
}

const CASES = [
  {
    name: 'a wrong type',
    change: (p: Record<string, unknown>) => (p['level'] = 'high'),
    pointer: '/intents/0/payload/level',
  },
  {
    name: 'a wrong item',
    change: (p: Record<string, unknown>) => (p['refs'] = [7]),
    pointer: '/intents/0/payload/refs/0',
  },
  {
    name: 'an unknown field',
    change: (p: Record<string, unknown>) => (p['extra'] = 1),
    pointer: '/intents/0/payload/extra',
  },
  {
    name: 'a credential-like member name',
    change: (p: Record<string, unknown>) => (p[SECRET_KEY] = 1),
    pointer: '/intents/0/payload/~0redacted~0',
  },
  {
    name: 'a member name that is not a plain token',
    change: (p: Record<string, unknown>) => (p[PRIVATE_KEY] = 1),
    pointer: '/intents/0/payload/~0redacted~0',
  },
] as const

describe.each(BACKENDS.map((b): [string, Backend] => [b.name, b]))('failurePointer on %s', (_, backend) => {
  const fx = new Fixtures(backend)
  afterEach(() => fx.cleanup())

  async function rejected(runtime: HookRuntime, provider: ReturnType<typeof bent>) {
    runtime.register({ registration: registration('alpha.a'), provider })
    const outcome = await runtime.dispatch(request())
    expect(outcome.hooks).toHaveLength(1)
    return outcome.hooks[0]!
  }

  it.each(CASES)('$name: the outcome and the failure row say where', async ({ change, pointer }) => {
    const { runtime, target } = await fx.runtime({ capabilities: ['alpha'] })
    const o = await rejected(runtime, bent(change))
    expect([o.outcome, o.failureCode, o.failurePointer]).toStrictEqual(['failed', 'result_contract_rejected', pointer])
    expect(o.failureRule).not.toBeNull()
    const rows = await runtime.journal.listFailures(o.dispatchId)
    expect(rows).toMatchObject([{ attempt: 1, code: 'result_contract_rejected', rule: o.failureRule, pointer }])
    await runtime.close()
    // Neither redacted name reached a persisted byte.
    for (const hay of target!.persistedBytes()) {
      for (const name of [SECRET_KEY, PRIVATE_KEY]) expect(hay.bytes.includes(name), `${hay.name}: ${name}`).toBe(false)
    }
  })

  it('an accepted result and a failure without a judged document carry no pointer', async () => {
    const { runtime } = await fx.runtime({ capabilities: ['alpha'] })
    runtime.register({
      registration: registration('alpha.a'),
      provider: counted(() => {
        throw new Error('no')
      }),
    })
    runtime.register({ registration: registration('alpha.b'), provider: counted((input) => signalResult(input)) })
    const outcome = await runtime.dispatch(request())
    expect(outcome.hooks.map((h) => [h.outcome, h.failureCode, h.failurePointer])).toStrictEqual([
      ['failed', 'producer_failed', null],
      ['recorded', null, null],
    ])
    expect(await runtime.journal.listFailures(outcome.hooks[0]!.dispatchId)).toMatchObject([{ pointer: null }])
  })
})
