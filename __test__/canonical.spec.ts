// Canonical JSON (RFC 8785) and the content-derived ids of contract-v0
// section 3, checked against an independent implementation: the npm package
// `canonicalize` for JCS and node:crypto for SHA-256.
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'

import fc from 'fast-check'
import { beforeAll, describe, expect, it } from 'vitest'

import {
  canonicalJson,
  dispatchId,
  intentId,
  registrationDigest,
  type PostWritebackHookInput,
  type PostWritebackHookRegistration,
} from '../lib/index.js'

// `canonicalize` v4 ships as ESM only; this file compiles to CommonJS, so it
// is loaded with a dynamic import.
let canonicalize: (input: unknown) => string | undefined
beforeAll(async () => {
  canonicalize = (await import('canonicalize')).default
})

/** The reference: JCS by `canonicalize`, which must not give up on JSON input. */
function jcs(value: unknown): string {
  const text = canonicalize(value)
  if (text === undefined) throw new Error('canonicalize returned undefined')
  return text
}
const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex')

const exampleDir = join(__dirname, '..', 'examples')
const load = (file: string): any => JSON.parse(readFileSync(join(exampleDir, file), 'utf8'))
const registration = load('registration.json') as PostWritebackHookRegistration
const hookInput = load('hook_input.json') as PostWritebackHookInput
const hookResult = load('hook_result.json')
const dispatchReceipt = load('dispatch_receipt.json')

const SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : (Date.now() ^ (process.pid << 8)) >>> 0

function assertProperty<T>(arbitrary: fc.Arbitrary<T>, numRuns: number, check: (v: T) => void, offset = 0) {
  const seed = (SEED + offset) >>> 0
  const details = fc.check(
    fc.property(arbitrary, (v) => void check(v)),
    { numRuns, seed },
  )
  if (details.failed)
    throw new Error(`FUZZ_SEED=${SEED} (run seed ${seed}) failed:\n${fc.defaultReportMessage(details)}`)
  expect(details.numRuns).toBe(numRuns)
}

// ---------------------------------------------------------------- generators

/** Floats that stress number formatting: tiny, huge, negative zero, exponent boundaries. */
const edgeDouble = fc.oneof(
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(
    0,
    -0,
    5e-324,
    -5e-324,
    Number.MIN_VALUE,
    Number.MAX_VALUE,
    -Number.MAX_VALUE,
    Number.EPSILON,
    2 ** 53,
    2 ** 53 + 2,
    -(2 ** 53),
    1e21,
    1e20,
    999999999999999900000,
    1e-6,
    1e-7,
    0.000001,
    1.5e-7,
    123456789012345680000,
    0.1,
    0.2,
    0.30000000000000004,
    1 / 3,
    100,
    1e300,
    1e-300,
  ),
  // Every binary exponent, either sign (2 ** 1024 would be Infinity, so the top binade ends at MAX_VALUE).
  fc.tuple(fc.integer({ min: -1074, max: 1023 }), fc.boolean()).chain(([e, negative]) =>
    fc
      .double({
        min: 2 ** e,
        max: e === 1023 ? Number.MAX_VALUE : 2 ** (e + 1),
        noNaN: true,
        noDefaultInfinity: true,
      })
      .map((d) => (negative ? -d : d)),
  ),
)

/** JSON with full-Unicode keys and strings (well-formed: no lone surrogates) and edge-case floats. */
const jcsValue = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', maxDepth: 6 },
    fc.constant(null),
    fc.boolean(),
    edgeDouble,
    fc.string({ unit: 'binary', maxLength: 12 }),
    fc.string({ unit: 'grapheme', maxLength: 12 }),
    fc.array(tie('value'), { maxLength: 6 }),
    fc.dictionary(
      fc.oneof(
        fc.string({ unit: 'binary', maxLength: 6 }),
        fc.string({ unit: 'grapheme', maxLength: 4 }),
        fc.constantFrom('\u20ac', '\r', '\ufb33', '1', '\ud83d\ude00', '\u0080', '\u00f6', '__proto__', ''),
      ),
      tie('value'),
      { maxKeys: 8 },
    ),
  ),
})).value

// ---------------------------------------------------------------- tests

describe('canonicalJson agrees with `canonicalize` (RFC 8785)', () => {
  it('on 6,000 values of full-Unicode JSON with edge-case floats', () => {
    assertProperty(jcsValue, 6_000, (v) => expect(canonicalJson(v)).toBe(jcs(v)), 1)
  })

  it('on 3,000 fc.jsonValue({stringUnit: binary}) and 3,000 fc.jsonValue()', () => {
    assertProperty(fc.jsonValue({ stringUnit: 'binary' }), 3_000, (v) => expect(canonicalJson(v)).toBe(jcs(v)), 2)
    assertProperty(fc.jsonValue(), 3_000, (v) => expect(canonicalJson(v)).toBe(jcs(v)), 3)
  })

  it('on 20,000 doubles, alone and as members', () => {
    assertProperty(
      edgeDouble,
      20_000,
      (d) => {
        expect(canonicalJson(d)).toBe(jcs(d))
        expect(canonicalJson({ n: [d] })).toBe(jcs({ n: [d] }))
      },
      4,
    )
  })

  it('a string argument is a JSON string value, not JSON text', () => {
    expect(canonicalJson('{"b":1,"a":2}')).toBe(JSON.stringify('{"b":1,"a":2}'))
    expect(canonicalJson('\u2028\u0000\u001f"\\')).toBe(jcs('\u2028\u0000\u001f"\\'))
  })
})

describe('RFC 8785 test vectors', () => {
  const bits = (hex: string) =>
    new DataView(new Uint8Array(hex.match(/../g)!.map((b) => parseInt(b, 16))).buffer).getFloat64(0)
  // RFC 8785 Appendix B: IEEE 754 bit patterns and their JCS form.
  const vectors: Array<[string, string]> = [
    ['0000000000000000', '0'],
    ['8000000000000000', '0'],
    ['0000000000000001', '5e-324'],
    ['8000000000000001', '-5e-324'],
    ['7fefffffffffffff', '1.7976931348623157e+308'],
    ['ffefffffffffffff', '-1.7976931348623157e+308'],
    ['4340000000000000', '9007199254740992'],
    ['c340000000000000', '-9007199254740992'],
    ['4430000000000000', '295147905179352830000'],
    ['44b52d02c7e14af5', '9.999999999999997e+22'],
    ['44b52d02c7e14af6', '1e+23'],
    ['44b52d02c7e14af7', '1.0000000000000001e+23'],
    ['444b1ae4d6e2ef4e', '999999999999999700000'],
    ['444b1ae4d6e2ef4f', '999999999999999900000'],
    ['444b1ae4d6e2ef50', '1e+21'],
    ['3eb0c6f7a0b5ed8c', '9.999999999999997e-7'],
    ['3eb0c6f7a0b5ed8d', '0.000001'],
    ['41b3de4355555553', '333333333.3333332'],
    ['41b3de4355555554', '333333333.33333325'],
    ['41b3de4355555555', '333333333.3333333'],
    ['41b3de4355555556', '333333333.3333334'],
    ['41b3de4355555557', '333333333.33333343'],
    ['becbf647612f3696', '-0.0000033333333333333333'],
    ['43143ff3c1cb0959', '1424953923781206.2'],
  ]
  for (const [hex, expected] of vectors) {
    it(`number ${hex} -> ${expected}`, () => {
      expect(canonicalJson(bits(hex))).toBe(expected)
      expect(jcs(bits(hex))).toBe(expected)
    })
  }

  it('number formatting: 1e21, 1e-7, 0.000001', () => {
    expect(canonicalJson([1e21, 1e-7, 0.000001, 1e20, 4.5, 2e-3, 1e30, -0])).toBe(
      '[1e+21,1e-7,0.000001,100000000000000000000,4.5,0.002,1e+30,0]',
    )
  })

  it('the sample of section 3.2.2', () => {
    const input = JSON.parse(
      '{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],' +
        ' "string": "\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/", "literals": [null, true, false]}',
    )
    const expected =
      '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}'
    expect(canonicalJson(input)).toBe(expected)
    expect(jcs(input)).toBe(expected)
  })

  it('member names sorted by UTF-16 code units (section 3.2.3)', () => {
    const input = {
      '\u20ac': 'Euro Sign',
      '\r': 'Carriage Return',
      '\ufb33': 'Hebrew Letter Dalet With Dagesh',
      '1': 'One',
      '\ud83d\ude00': 'Emoji: Grinning Face',
      '\u0080': 'Control',
      '\u00f6': 'Latin Small Letter O With Diaeresis',
    }
    const expected =
      '{"\\r":"Carriage Return","1":"One","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis",' +
      '"\u20ac":"Euro Sign","\ud83d\ude00":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}'
    expect(canonicalJson(input)).toBe(expected)
    expect(jcs(input)).toBe(expected)
    // UTF-16 order, not code point order: U+1F600 (D83D DE00) sorts before U+FB33.
    const text = canonicalJson(input)
    const at = ['"\\r"', '"1"', '"\u0080"', '"\u00f6"', '"\u20ac"', '"\ud83d\ude00"', '"\ufb33"'].map((k) =>
      text.indexOf(`${k}:`),
    )
    expect(at.every((p, i) => p >= 0 && (i === 0 || p > at[i - 1]!))).toBe(true)
  })
})

describe('identities (contract-v0 section 3), recomputed independently', () => {
  const refDispatchId = (p: {
    receiptId: string
    effectId: string
    hookId: string
    capabilityId: string
    registrationDigest: string
    registrationSchemaVersion: string
    eventKind: string
  }) =>
    'pwh_' +
    sha256(
      jcs({
        domain: 'loopx_post_writeback_dispatch_v0',
        receipt_id: p.receiptId,
        effect_id: p.effectId,
        hook_id: p.hookId,
        capability_id: p.capabilityId,
        registration_digest: p.registrationDigest,
        registration_schema_version: p.registrationSchemaVersion,
        event_kind: p.eventKind,
      }),
    )
  const refIntentId = (p: { dispatchId: string; intentKind: string; policyVersion: string; payload: unknown }) =>
    'pwi_' +
    sha256(
      jcs({
        domain: 'loopx_post_writeback_intent_v0',
        dispatch_id: p.dispatchId,
        intent_kind: p.intentKind,
        policy_version: p.policyVersion,
        payload: p.payload,
      }),
    )

  it('registrationDigest is sha256(JCS(registration)), as object and as text in any member order', () => {
    const expected = sha256(jcs(registration))
    expect(registrationDigest(registration)).toBe(expected)
    expect(registrationDigest(JSON.stringify(registration))).toBe(expected)
    const reordered = Object.fromEntries(Object.entries(registration).reverse()) as PostWritebackHookRegistration
    expect(registrationDigest(JSON.stringify(reordered, null, 3))).toBe(expected)
    expect(dispatchReceipt.registration_digest).toBe(expected)
    const changed = { ...registration, budget: { ...registration.budget, timeout_ms: 999 } }
    expect(registrationDigest(changed)).toBe(sha256(jcs(changed)))
    expect(registrationDigest(changed)).not.toBe(expected)
  })

  it('the examples carry the ids recomputed here', () => {
    const parts = {
      receiptId: hookInput.source.receipt_id,
      effectId: hookInput.source.effect_id,
      hookId: registration.hook_id,
      capabilityId: registration.capability_id,
      registrationDigest: sha256(jcs(registration)),
      registrationSchemaVersion: registration.schema_version,
      eventKind: hookInput.source.event_kind,
    }
    expect(refDispatchId(parts)).toBe(hookInput.dispatch_id)
    expect(dispatchId(parts)).toBe(hookInput.dispatch_id)
    const intent = hookResult.intents[0]
    const intentParts = {
      dispatchId: hookInput.dispatch_id,
      intentKind: intent.intent_kind,
      policyVersion: intent.policy_version,
      payload: intent.payload,
    }
    expect(refIntentId(intentParts)).toBe(intent.intent_id)
    expect(intentId(intentParts)).toBe(intent.intent_id)
    expect(dispatchReceipt.intent_ids).toEqual([intent.intent_id])
  })

  it('dispatchId matches on 1,000 random identities', () => {
    const part = fc.string({ unit: 'grapheme', maxLength: 20 })
    const parts = fc.record({
      receiptId: part,
      effectId: part,
      hookId: part,
      capabilityId: part,
      registrationDigest: fc.stringMatching(/^[0-9a-f]{64}$/),
      registrationSchemaVersion: part,
      eventKind: part,
    })
    assertProperty(parts, 1_000, (p) => expect(dispatchId(p)).toBe(refDispatchId(p)), 5)
  })

  it('intentId matches on 2,000 random payloads; operation is not part of it', () => {
    const parts = fc.record({
      dispatchId: fc.stringMatching(/^pwh_[0-9a-f]{64}$/),
      intentKind: fc.string({ maxLength: 30 }),
      policyVersion: fc.string({ maxLength: 20 }),
      payload: jcsValue,
    })
    assertProperty(
      parts,
      2_000,
      (p) => {
        const id = intentId(p)
        expect(id).toMatch(/^pwi_[0-9a-f]{64}$/)
        expect(id).toBe(refIntentId(p))
        // Member order of the payload does not matter.
        if (p.payload && typeof p.payload === 'object' && !Array.isArray(p.payload)) {
          const reversed = Object.fromEntries(Object.entries(p.payload).reverse())
          expect(intentId({ ...p, payload: reversed })).toBe(id)
        }
      },
      6,
    )
    // Extra members in the parts (such as an operation) are not part of the id.
    const base = { dispatchId: hookInput.dispatch_id, intentKind: 'k.a', policyVersion: 'v0', payload: { a: 1 } }
    expect(intentId({ ...base, operation: 'x' } as typeof base)).toBe(intentId(base))
  })
})

describe('values JSON cannot hold', () => {
  const code = (f: () => unknown) => {
    try {
      f()
    } catch (error) {
      return (error as { code?: string }).code
    }
    return 'no throw'
  }

  it('canonicalJson throws ERR_LOOPX_NOT_JSON_VALUE', () => {
    const cycle: Record<string, unknown> = {}
    cycle.self = cycle
    for (const value of [
      () => 1,
      { f: () => 1 },
      [Symbol('s')],
      1n,
      undefined,
      NaN,
      Infinity,
      cycle,
      new Date(0),
      new Uint8Array(1),
    ]) {
      expect(code(() => canonicalJson(value))).toBe('ERR_LOOPX_NOT_JSON_VALUE')
    }
    expect(
      code(() => intentId({ dispatchId: 'pwh_x', intentKind: 'k', policyVersion: 'v', payload: { f: () => 1 } })),
    ).toBe('ERR_LOOPX_NOT_JSON_VALUE')
    expect(code(() => registrationDigest('{not json'))).toBe('ERR_LOOPX_NOT_JSON_VALUE')
  })

  // RFC 8785 requires well-formed Unicode: a lone surrogate is refused rather
  // than read as U+FFFD (which would give two strings one canonical form).
  it('a lone surrogate is not a JSON value for JCS', () => {
    expect(code(() => canonicalJson('a\ud800'))).toBe('ERR_LOOPX_NOT_JSON_VALUE')
  })

  // Seen through the ids: '\ud800' and '\ufffd' payloads never share an intent_id.
  it('a lone surrogate never shares an intent_id with U+FFFD (it is refused or kept apart)', () => {
    const parts = { dispatchId: hookInput.dispatch_id, intentKind: 'k.a', policyVersion: 'v0' }
    const lone = code(() => intentId({ ...parts, payload: { r: '\ud800' } }))
    if (lone === 'ERR_LOOPX_NOT_JSON_VALUE') return
    expect(intentId({ ...parts, payload: { r: '\ud800' } })).not.toBe(intentId({ ...parts, payload: { r: '\ufffd' } }))
  })
})
