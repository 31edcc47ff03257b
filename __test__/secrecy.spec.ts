// Public-boundary scan (RFC sections 7, 9, 10, 12; contract-v0 section 2):
// nothing a provider says, and nothing of a request the boundary cannot prove
// public-safe, reaches the journal or an outcome. Providers throw, reject and
// return results carrying planted secrets (private names, paths, URLs,
// credentials, transcript text); requests carry credential-like and path-like
// ids. Afterwards EVERY byte of every file in the journal's directory (the db,
// -wal, -shm) and every outcome is searched for each planted string and a
// distinctive substring of it, in UTF-8, UTF-16 (LE/BE), hex and base64.
import { afterEach, describe, expect, it } from 'vitest'

import {
  LoopxHooksError,
  type DispatchOutcome,
  type DispatchRequest,
  type PostWritebackHookInput,
} from '../lib/index.js'
import {
  EMPTY_STATS,
  Fixtures,
  counted,
  filesIn,
  findPlanted,
  goodProvider,
  intent,
  journalContents,
  notApplicable,
  proposed,
  randomTag,
  registration,
  request,
  signalKind,
  signalResult,
  sleep,
  type Counted,
} from './support/runtime'

const fx = new Fixtures()
afterEach(() => fx.cleanup())

function alnum(n: number, alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'): string {
  let s = ''
  for (let i = 0; i < n; i++) s += alphabet[Math.floor(Math.random() * alphabet.length)]
  return s
}

/** Fresh planted values for one test, and the needles to search for. */
function plant() {
  const tag = randomTag(16)
  const githubBody = alnum(36)
  const awsTail = alnum(16, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567')
  const secrets = {
    marker: `SECRET-${tag}`,
    path: '/home/alice/.ssh/id_rsa',
    url: `https://internal.example/x?token=${tag}`,
    github: `ghp_${githubBody}`,
    aws: `AKIA${awsTail}`,
    jwt: `eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.${tag}`,
    mail: `alice.${tag}@corp.internal`,
    slack: `xoxb-${tag}-${tag}`,
    transcript: `User: please read the deploy key ${tag} and paste it`,
    unicode: `pässwort-${tag}-密钥`,
  }
  const all = Object.values(secrets).join(' | ')
  const needles = [
    ...Object.values(secrets),
    // distinctive substrings of each
    tag,
    'SECRET-',
    '/home/alice',
    'id_rsa',
    '.ssh/',
    'internal.example',
    'token=',
    githubBody,
    'ghp_',
    awsTail,
    'eyJhbGciOiJIUzI1NiJ9',
    'corp.internal',
    'alice',
    'xoxb-',
    'please read',
    'deploy key',
    'pässwort',
    '密钥',
  ]
  return { tag, secrets, all, needles }
}

type Planted = ReturnType<typeof plant>

/** Searches every file in `dir` and every given object's JSON for the needles. */
function scan(dir: string, objects: unknown[], planted: Planted): string[] {
  const haystacks = [
    ...filesIn(dir),
    ...objects.map((o, i) => ({ name: `object #${i}`, bytes: Buffer.from(JSON.stringify(o) ?? '', 'utf8') })),
  ]
  expect(haystacks.length).toBeGreaterThan(0)
  return findPlanted(haystacks, planted.needles)
}

/** An Error whose every text field carries the secrets. */
function secretError(p: Planted, Kind: ErrorConstructor = Error): Error {
  const e = new Kind(p.all, { cause: p.all })
  e.stack = `${e.name}: ${p.all}\n    at ${p.secrets.path}:1:1 (${p.secrets.url})`
  Object.assign(e, { code: p.secrets.github, config: { token: p.secrets.aws, home: p.secrets.path } })
  return e
}

type Body = (input: PostWritebackHookInput, p: Planted) => unknown

/** Replaces intent fields of a valid one-intent result. */
function withIntent(input: PostWritebackHookInput, patch: Record<string, unknown>) {
  const r = signalResult(input)
  return { ...r, intents: [{ ...r.intents[0]!, ...patch }] }
}

/** A valid intent whose payload is replaced (intent_id recomputed, so only the payload is wrong). */
function withPayload(input: PostWritebackHookInput, payload: Record<string, unknown>) {
  return proposed([
    intent(input, signalKind(input.capability_id), {
      operation: 'evaluate',
      policyVersion: 'v0',
      payload: payload as never,
    }),
  ])
}

const LEAKY: [string, Body, string, string | null][] = [
  [
    'throws an Error carrying secrets in message, stack, cause and extra fields',
    (_i, p) => {
      throw secretError(p)
    },
    'producer_failed',
    null,
  ],
  [
    'throws a TypeError carrying secrets',
    (_i, p) => {
      throw secretError(p, TypeError)
    },
    'producer_failed',
    null,
  ],
  [
    'throws a plain object carrying secrets',
    (_i, p) => {
      throw { message: p.all, toString: () => p.all, toJSON: () => p.all }
    },
    'producer_failed',
    null,
  ],
  [
    'throws a string of secrets',
    (_i, p) => {
      throw p.all
    },
    'producer_failed',
    null,
  ],
  [
    'rejects with an Error carrying secrets',
    async (_i, p) => {
      await sleep(1)
      throw secretError(p)
    },
    'producer_failed',
    null,
  ],
  ['rejects with a string of secrets', (_i, p) => Promise.reject(p.all), 'producer_failed', null],
  [
    'payload ref is a path',
    (i, p) => withPayload(i, { ref: p.secrets.path, refs: [], level: 1 }),
    'result_contract_rejected',
    'bad_opaque_ref',
  ],
  [
    'payload ref is a URL',
    (i, p) => withPayload(i, { ref: p.secrets.url, refs: [], level: 1 }),
    'result_contract_rejected',
    'bad_opaque_ref',
  ],
  [
    'payload ref is a GitHub token',
    (i, p) => withPayload(i, { ref: p.secrets.github, refs: [], level: 1 }),
    'result_contract_rejected',
    'credential_like_value',
  ],
  [
    'payload refs hold an AWS key and a JWT',
    (i, p) => withPayload(i, { ref: 'ref_ok', refs: [p.secrets.aws, p.secrets.jwt], level: 1 }),
    'result_contract_rejected',
    'credential_like_value',
  ],
  [
    'payload refs hold a Slack token',
    (i, p) => withPayload(i, { ref: 'ref_ok', refs: [p.secrets.slack], level: 1 }),
    'result_contract_rejected',
    'credential_like_value',
  ],
  [
    'payload ref is transcript text',
    (i, p) => withPayload(i, { ref: p.secrets.transcript, refs: [], level: 1 }),
    'result_contract_rejected',
    'bad_opaque_ref',
  ],
  [
    'payload carries an extra field of secrets',
    (i, p) => withPayload(i, { ref: 'ref_ok', refs: [], level: 1, note: p.all }),
    'result_contract_rejected',
    'unknown_field',
  ],
  [
    'payload carries a secret as a member name',
    (i, p) => withPayload(i, { ref: 'ref_ok', refs: [], level: 1, [p.secrets.marker]: 1 }),
    'result_contract_rejected',
    'unknown_field',
  ],
  [
    'operation is a secret',
    (i, p) => withIntent(i, { operation: p.secrets.marker }),
    'result_contract_rejected',
    'bad_token',
  ],
  [
    'operation is a token made of the secret',
    (i, p) => withIntent(i, { operation: `secret_${p.tag}` }),
    'result_contract_rejected',
    'unknown_operation',
  ],
  ['intent_kind is a URL', (i, p) => withIntent(i, { intent_kind: p.secrets.url }), 'result_contract_rejected', null],
  [
    'policy_version is a path',
    (i, p) => withIntent(i, { policy_version: p.secrets.path }),
    'result_contract_rejected',
    null,
  ],
  [
    'requested_write_scope holds a mail address',
    (i, p) => withIntent(i, { requested_write_scope: [p.secrets.mail] }),
    'result_contract_rejected',
    'bad_token',
  ],
  [
    'intent hook_id is a secret',
    (i, p) => withIntent(i, { hook_id: p.secrets.unicode }),
    'result_contract_rejected',
    null,
  ],
  [
    'intent carries an extra field of secrets',
    (i, p) => withIntent(i, { debug: p.all, stderr: p.secrets.transcript }),
    'result_contract_rejected',
    'unknown_field',
  ],
  [
    'result carries an extra field of secrets',
    (i, p) => ({ ...signalResult(i), log: p.all }),
    'result_contract_rejected',
    'unknown_field',
  ],
  [
    'result carries a secret as a member name',
    (_i, p) => ({ ...notApplicable(), [p.secrets.github]: true }),
    'result_contract_rejected',
    // A credential-like name is reported as such, at a redacted path (issue 9).
    'credential_like_value',
  ],
  [
    'schema_version is transcript text',
    (i, p) => ({ ...signalResult(i), schema_version: p.secrets.transcript }),
    'result_contract_rejected',
    'bad_schema_version',
  ],
  [
    'status is a secret',
    (_i, p) => ({ ...notApplicable(), status: p.secrets.marker }),
    'result_contract_rejected',
    'not_allowed_value',
  ],
  [
    'a valid intent beside one carrying a secret',
    (i, p) => {
      const ok = signalResult(i).intents[0]!
      const bad = withPayload(i, { ref: p.secrets.marker, refs: [p.secrets.github], level: 2 }).intents[0]!
      return proposed([ok, bad])
    },
    'result_contract_rejected',
    'credential_like_value',
  ],
  [
    'an oversize result of secrets',
    (i, p) => ({ ...signalResult(i), log: p.all.repeat(600) }),
    'result_contract_rejected',
    'result_too_large',
  ],
  [
    'a non-JSON result carrying secrets',
    (_i, p) => ({ ...notApplicable(), secret: p.all, f: () => p.all }),
    'result_contract_rejected',
    'not_json_value',
  ],
  [
    'a BigInt result carrying secrets',
    (_i, p) => ({ ...notApplicable(), secret: p.all, n: 10n }),
    'result_contract_rejected',
    'not_json_value',
  ],
  [
    'a result whose toJSON yields secrets',
    (_i, p) => ({ toJSON: () => ({ ...notApplicable(), secret: p.all }) }),
    'result_contract_rejected',
    'unknown_field',
  ],
  [
    'a result whose getter throws secrets',
    (_i, p) =>
      Object.defineProperty(notApplicable(), 'status', {
        enumerable: true,
        get: () => {
          throw secretError(p)
        },
      }),
    'result_contract_rejected',
    'not_json_value',
  ],
]

describe('planted secrets never reach the journal or an outcome', () => {
  it('provider errors, rejections and results that cannot pass validation', async () => {
    const p = plant()
    const caps = LEAKY.map(
      (_, k) => `leak_${String.fromCharCode(97 + Math.floor(k / 26))}${String.fromCharCode(97 + (k % 26))}`,
    )
    const { runtime, dir } = await fx.runtime({
      profile: { maxHooksPerDispatch: 64 },
      capabilities: [...caps, 'clean'],
    })
    const providers: Counted<unknown>[] = []
    LEAKY.forEach(([, body], k) => {
      const provider = counted((input) => body(input, p))
      providers.push(provider)
      runtime.register({
        registration: registration(`${caps[k]}.hook`, {
          budget: { max_invocations_per_dispatch: 2, max_intents_per_dispatch: 2 },
        }),
        provider,
      })
    })
    const clean = goodProvider()
    runtime.register({ registration: registration('clean.hook'), provider: clean })

    const outcomes: DispatchOutcome[] = []
    for (const receiptId of ['receipt_0001', 'receipt_0002']) {
      // twice each: a retry of every failed identity, then exhaustion
      for (let n = 0; n < 3; n++) outcomes.push(await runtime.dispatch(request({ receipt: { receipt_id: receiptId } })))
    }
    const first = outcomes[0]!
    LEAKY.forEach(([name, , code, rule], k) => {
      const o = first.hooks.find((h) => h.hookId === `${caps[k]}.hook`)!
      expect(o, name).toMatchObject({ outcome: 'failed', failureCode: code, receipt: null })
      if (rule) expect(o.failureRule, name).toBe(rule)
      expect(providers[k]!.calls, name).toBe(4)
    })
    expect(clean.calls).toBe(2)
    const j = await journalContents(runtime)
    expect(j.stats).toStrictEqual({
      ...EMPTY_STATS,
      proposed: 2,
      exhausted: LEAKY.length * 2,
      intents: 2,
      intentsOpen: 2,
    })
    expect(j.intents.every((i) => i.capabilityId === 'clean')).toBe(true)

    // While open (db, -wal, -shm present), and after close.
    expect(scan(dir, [...outcomes, j], p)).toStrictEqual([])
    await runtime.close()
    expect(scan(dir, outcomes, p)).toStrictEqual([])
  })

  it('late results of timed-out providers are dropped, even when they would be valid', async () => {
    const p = plant()
    const { runtime, dir } = await fx.runtime({ capabilities: ['late', 'hang'] })
    // The marker is a valid opaque ref: only the timeout keeps it out.
    const late = counted(async (input) => {
      await sleep(80)
      return withPayload(input, { ref: p.secrets.marker, refs: [`${p.tag}_ref`], level: 3 })
    })
    const hang = counted(() => new Promise(() => {}))
    runtime.register({ registration: registration('late.hook', { budget: { timeout_ms: 20 } }), provider: late })
    runtime.register({ registration: registration('hang.hook', { budget: { timeout_ms: 20 } }), provider: hang })
    const outcome = await runtime.dispatch(request())
    expect(outcome.hooks.map((h) => h.failureCode)).toStrictEqual(['producer_timed_out', 'producer_timed_out'])
    await sleep(200)
    const j = await journalContents(runtime)
    expect(j.intents).toStrictEqual([])
    await runtime.close()
    expect(scan(dir, [outcome, j], p)).toStrictEqual([])
  })

  it('a verify-mode replay whose different (valid) result is dropped as a conflict', async () => {
    const p = plant()
    const { runtime, dir } = await fx.runtime({ profile: { replay: 'verify' }, capabilities: ['alpha'] })
    let leak = false
    const provider = counted((input) =>
      leak ? withPayload(input, { ref: p.secrets.marker, refs: [`${p.tag}_ref`], level: 1 }) : signalResult(input),
    )
    runtime.register({ registration: registration('alpha.one'), provider })
    const first = await runtime.dispatch(request())
    expect(first.hooks[0]!.outcome).toBe('recorded')
    leak = true
    const second = await runtime.dispatch(request())
    expect(second.hooks[0]).toMatchObject({
      outcome: 'conflict',
      failureCode: 'intent_conflict',
      receipt: first.hooks[0]!.receipt,
    })
    const j = await journalContents(runtime)
    await runtime.close()
    expect(scan(dir, [first, second, j], p)).toStrictEqual([])
  })

  it('requests carrying credential-like or path-like values are rejected at the input boundary and not journaled', async () => {
    const p = plant()
    const { runtime, dir } = await fx.runtime({ capabilities: ['alpha', 'beta'] })
    const a = goodProvider()
    const b = counted(() => notApplicable())
    runtime.register({ registration: registration('alpha.one'), provider: a })
    runtime.register({ registration: registration('beta.one'), provider: b })
    const s = p.secrets
    const boundary: [string, DispatchRequest][] = [
      ['receipt_id GitHub token', request({ receipt: { receipt_id: s.github } })],
      ['receipt_id path', request({ receipt: { receipt_id: s.path } })],
      ['receipt_id AWS key', request({ receipt: { receipt_id: s.aws } })],
      ['effect_id URL', request({ receipt: { effect_id: s.url }, settlement: { effect_id: s.url } })],
      ['effect_id JWT', request({ receipt: { effect_id: s.jwt }, settlement: { effect_id: s.jwt } })],
      ['goal_id mail', request({ settlement: { goal_id: s.mail } })],
      ['agent_id AWS key', request({ settlement: { agent_id: s.aws } })],
      ['todo_id JWT', request({ settlement: { todo_id: s.jwt } })],
      ['turn_instance_id Slack token', request({ settlement: { turn_instance_id: s.slack } })],
      ['state_revision transcript', request({ receipt: { state_revision: s.transcript } })],
      ['state_revision non-ASCII', request({ receipt: { state_revision: s.unicode } })],
      ['committed_at marker', request({ receipt: { committed_at: s.marker } })],
      ['fact_refs credentials and paths', request({ factRefs: [s.github, s.path, s.url] })],
      ['fact_refs one bad among good', request({ factRefs: ['fact_ok', s.slack] })],
    ]
    const outcomes: unknown[] = []
    for (const [name, req] of boundary) {
      const outcome = await runtime.dispatch(req)
      outcomes.push(outcome)
      expect(outcome.admitted, name).toBe(true)
      expect(
        outcome.hooks.map((h) => [h.hookId, h.outcome, h.attempt, h.receipt, h.failureCode]),
        name,
      ).toStrictEqual([
        ['alpha.one', 'failed', 0, null, 'input_boundary_rejected'],
        ['beta.one', 'failed', 0, null, 'input_boundary_rejected'],
      ])
    }
    // Refused or unsubscribed before any projection: nothing either.
    for (const req of [
      request({ receipt: { status: s.marker } }),
      request({ receipt: { step_kind: s.marker } }),
      request({ receipt: { effect_id: s.github }, settlement: { effect_id: s.aws } }),
      request({ eventKind: s.marker }),
      request({ eventKind: s.path }),
    ]) {
      const outcome = await runtime.dispatch(req)
      outcomes.push(outcome)
      expect(outcome.hooks).toStrictEqual([])
    }
    // A request outside the DispatchRequest shape is misuse; its error names no value.
    const misuse = await runtime.dispatch({ ...request(), debug: p.all } as unknown as DispatchRequest).then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(misuse).toBeInstanceOf(LoopxHooksError)
    expect((misuse as LoopxHooksError).code).toBe('ERR_LOOPX_INVALID_ARGUMENT')
    outcomes.push({
      message: (misuse as Error).message,
      stack: (misuse as Error).stack,
      code: (misuse as LoopxHooksError).code,
    })

    expect(a.calls).toBe(0)
    expect(b.calls).toBe(0)
    const j = await journalContents(runtime)
    expect(j.stats).toStrictEqual(EMPTY_STATS)
    expect(j.dispatches).toStrictEqual([])
    expect(scan(dir, [...outcomes, j], p)).toStrictEqual([])
    await runtime.close()
    expect(scan(dir, outcomes, p)).toStrictEqual([])
  })

  it('the scanner finds what is there (planted in a control file)', async () => {
    const p = plant()
    const { runtime, dir } = await fx.runtime({ capabilities: ['alpha'] })
    // A valid opaque ref is public-safe by contract and is journaled: the scan must see it.
    runtime.register({
      registration: registration('alpha.one'),
      provider: (input: PostWritebackHookInput) => withPayload(input, { ref: p.secrets.marker, refs: [], level: 1 }),
    })
    const outcome = await runtime.dispatch(request())
    expect(outcome.hooks[0]!.outcome).toBe('recorded')
    await runtime.close()
    const hits = scan(dir, [], p)
    expect(hits.some((h) => h.includes(p.secrets.marker))).toBe(true)
    // And each encoding is searched.
    const probe = {
      name: 'probe',
      bytes: Buffer.concat([
        Buffer.from(p.secrets.unicode, 'utf16le'),
        Buffer.from(Buffer.from(p.secrets.path).toString('hex')),
      ]),
    }
    const found = findPlanted([probe], [p.secrets.unicode, p.secrets.path])
    expect(found.some((h) => h.includes('utf16le'))).toBe(true)
    expect(found.some((h) => h.includes('(hex)'))).toBe(true)
  })
})
