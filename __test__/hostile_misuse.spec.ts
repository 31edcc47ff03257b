// Misuse is a coded error at the call (issue 9, item 9): a hook without a
// provider function, `register(null)`, `dispatch` with a BigInt or a cycle,
// and `HookRuntime.open` with a journal that is not a place each throw
// LoopxHooksError ERR_LOOPX_INVALID_ARGUMENT, naming the argument and never
// repeating its contents; nothing is installed and no attempt is spent.
import { existsSync } from 'node:fs'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { HookJournal, LoopxHooksError, TurnStartKernel } from '../lib/index.js'
import { HookRuntime, TempDir, goodProvider, registration, request, signalKind } from './support/runtime.js'

const SECRET = 'planted_secret_value_7f3a'

/** Runs `call` and returns what it threw (or rejected with). */
async function thrown(call: () => unknown): Promise<unknown> {
  try {
    await call()
  } catch (error) {
    return error
  }
  throw new Error('did not throw')
}

function expectMisuse(error: unknown, names: string): void {
  expect(error).toBeInstanceOf(LoopxHooksError)
  const e = error as LoopxHooksError
  expect(e.code).toBe('ERR_LOOPX_INVALID_ARGUMENT')
  expect(e.message).toContain(names)
  expect(e.message).not.toContain(SECRET)
}

describe('misuse throws a coded error at the call', () => {
  const tmp = new TempDir('loopx-hostile-misuse-')
  let runtime: HookRuntime
  const kind = signalKind('misuse')
  beforeAll(async () => {
    runtime = await HookRuntime.open({ journal: tmp.path('j.db'), profile: { enabled: true } })
    runtime.defineIntentKind(kind)
  })
  afterAll(async () => {
    await runtime.close()
    tmp.cleanup()
  })

  it('register with a provider that is not a function, or with null, installs nothing', async () => {
    const reg = registration('misuse.not_a_function')
    expectMisuse(await thrown(() => runtime.register({ registration: reg, provider: SECRET as never })), 'provider')
    expectMisuse(await thrown(() => runtime.register({ registration: reg } as never)), 'provider')
    expectMisuse(await thrown(() => runtime.register(null as never)), 'hook')
    expectMisuse(
      await thrown(() => runtime.register({ registration: null, provider: () => 0 } as never)),
      'registration',
    )
    // Nothing was installed: the request reaches no hook, so no attempt is spent.
    const outcome = await runtime.dispatch(request())
    expect(outcome.hooks).toEqual([])
    // The same registration with a real provider still installs.
    const provider = goodProvider()
    runtime.register({ registration: reg, provider })
    expect((await runtime.dispatch(request())).hooks.map((h) => h.hookId)).toEqual(['misuse.not_a_function'])
  })

  it('dispatch with a BigInt, a cycle, or no object', async () => {
    const withBigInt = { ...request(), extra: { note: SECRET, n: 10n } }
    expectMisuse(await thrown(() => runtime.dispatch(withBigInt as never)), 'dispatch: request')
    const cyclic: Record<string, unknown> = { ...request(), note: SECRET }
    cyclic.self = cyclic
    expectMisuse(await thrown(() => runtime.dispatch(cyclic as never)), 'dispatch: request')
    for (const bad of [null, undefined, 42, SECRET, [request()]]) {
      expectMisuse(await thrown(() => runtime.dispatch(bad as never)), 'dispatch: request')
    }
    const throwing = { ...request() }
    Object.defineProperty(throwing, 'settlement', {
      enumerable: true,
      get: () => {
        throw new Error(SECRET)
      },
    })
    expectMisuse(await thrown(() => runtime.dispatch(throwing)), 'dispatch: request')
    // Nested past what the addon parses, or past what JSON.stringify can write: coded either way.
    for (const depth of [200, 100_000]) {
      let deep: Record<string, unknown> = { note: SECRET }
      for (let i = 0; i < depth; i++) deep = { deep }
      expectMisuse(await thrown(() => runtime.dispatch({ ...request(), extra: deep } as never)), 'request')
    }
  })

  it('HookRuntime.open with options that are not what the signature says', async () => {
    expectMisuse(await thrown(() => HookRuntime.open({ journal: 42 } as never)), 'options.journal')
    expectMisuse(await thrown(() => HookRuntime.open({ journal: '' })), 'options.journal')
    // The option of earlier versions is an unknown option now, not a second way to say it.
    expectMisuse(
      await thrown(() => HookRuntime.open({ journalPath: tmp.path('z.db') } as never)),
      'unknown option (expected one of: journal,',
    )
    expectMisuse(await thrown(() => HookRuntime.open(null as never)), 'options')
    expectMisuse(
      await thrown(() => HookRuntime.open({ journal: tmp.path('x.db'), synchronous: SECRET as never })),
      'synchronous',
    )
    expectMisuse(
      await thrown(() => HookRuntime.open({ journal: tmp.path('x.db'), busyTimeoutMs: -1 })),
      'busyTimeoutMs',
    )
    const profile: Record<string, unknown> = { enabled: true, secret: SECRET }
    profile.self = profile
    expectMisuse(
      await thrown(() => HookRuntime.open({ journal: tmp.path('x.db'), profile: profile as never })),
      'profile',
    )
  })

  it('an option name the signature does not have is refused, never ignored, and named only when it cannot hold a secret', async () => {
    const misspelt = (options: object) => ({ ...options, [SECRET]: true }) as never
    expectMisuse(
      await thrown(() => HookRuntime.open(misspelt({ journal: tmp.path('y.db') }))),
      'unknown option (expected one of: journal, profile,',
    )
    // A misspelling of a known name is named (it is within two edits of a public name, so it cannot hold a secret).
    expectMisuse(
      await thrown(() => HookRuntime.open({ journal: tmp.path('y.db'), profil: { enabled: true } } as never)),
      "HookRuntime.open: options: unknown option 'profil' (expected one of: journal, profile,",
    )
    expectMisuse(
      await thrown(() => HookRuntime.open({ journal: misspelt({ path: tmp.path('y.db') }) })),
      'options.journal: unknown option (expected one of: path, postgres)',
    )
    expectMisuse(
      await thrown(() =>
        HookRuntime.open({ journal: { postgres: misspelt({ connectionString: 'postgres://u@127.0.0.1:1/db' }) } }),
      ),
      'options.journal.postgres: unknown option (expected one of: connectionString, schema,',
    )
    // The options lib/ checks itself name the key given when it is a short plain identifier (a
    // misspelling reads as one); any other key may be anything, and is "an unknown member".
    const pasted = (options: object) => ({ ...options, [`${SECRET}: pasted`]: true }) as never
    expectMisuse(
      await thrown(() => runtime.dispatch(request(), pasted({}))),
      'dispatch: options: an unknown member (expected one of: wait)',
    )
    expectMisuse(
      await thrown(() => runtime.journal.claim(pasted({ executorId: 'x', leaseMs: 1000 }))),
      'claim: options: an unknown member (expected one of: executorId,',
    )
    expectMisuse(
      await thrown(() => runtime.dispatch(request(), { wiat: true } as never)),
      "dispatch: options: unknown option 'wiat' (expected one of: wait)",
    )
    expectMisuse(
      await thrown(() => runtime.journal.claim({ executorId: 'x', leaseMs: 1000, capability: 'a' } as never)),
      "claim: options: unknown option 'capability' (expected one of: executorId, leaseMs, batch, capabilityId, intentKind)",
    )
    const long = 'k'.repeat(65)
    const refused = await thrown(() => runtime.dispatch(request(), { [long]: true } as never))
    expectMisuse(refused, 'dispatch: options: an unknown member')
    expect((refused as Error).message).not.toContain(long)
    expectMisuse(await thrown(() => HookJournal.open(tmp.path('j.db'), misspelt({}))), 'HookJournal.open')
    // Nothing was opened or created by the refused calls.
    expect(existsSync(tmp.path('y.db'))).toBe(false)
    // An option left undefined is not a misspelling.
    await (await HookRuntime.open({ journal: tmp.path('z.db'), dialect: undefined, busyTimeoutMs: undefined })).close()
  })

  it("a profile's unknown or mistyped member is named, never its value", async () => {
    expectMisuse(
      await thrown(() => HookRuntime.open({ journal: tmp.path('p.db'), profile: { enable: true } } as never)),
      "HookRuntime.open: options.profile: unknown option 'enable' (expected one of: allowlist, enabled,",
    )
    expectMisuse(
      await thrown(() => new TurnStartKernel({ profile: { enable: true } } as never)),
      "profile: unknown option 'enable' (expected one of: allowlist, enabled)",
    )
    const mistyped = await thrown(() => new TurnStartKernel({ profile: { enabled: SECRET } } as never))
    expectMisuse(mistyped, 'profile.enabled must be what TurnStartProfile declares for it')
    expect((mistyped as Error).message).not.toContain(SECRET)
    expect(existsSync(tmp.path('p.db'))).toBe(false)
  })
})
