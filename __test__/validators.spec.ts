// The validators through the JS API: the RFC examples pass as objects and as
// JSON text; bad documents give the same violations in both forms; values
// JSON cannot hold are `not_json_value` at their JSON Pointer, never a throw;
// registration bounds cross the JS boundary with the exact rule and path.
// (The Rust suite checks every bound; this file proves the binding carries them.)
import { readFileSync } from 'node:fs'
import { join } from 'node:path'

import { describe, expect, it } from 'vitest'

import {
  IntentKinds,
  validateDispatchReceipt,
  validateFailureReceipt,
  validateHookInput,
  validateHookResult,
  validateIntentKindDefinition,
  validateRegistration,
  type IntentKindDefinition,
  type PostWritebackHookInput,
  type PostWritebackHookRegistration,
  type Violation,
} from '../lib/index.js'
// The untyped builder `intent` wraps; the public way is `intent(input, kind, spec)`.
import { buildIntent } from '../lib/addon_api.js'

type Json = null | boolean | number | string | Json[] | { [key: string]: Json }
type Doc = { [key: string]: any }
type Verdict = { ok: true; value: unknown } | { ok: false; violations: Violation[] }

const exampleDir = join(__dirname, '..', 'examples')
const load = (file: string): Doc => JSON.parse(readFileSync(join(exampleDir, file), 'utf8'))
const clone = <T>(v: T): T => structuredClone(v)

const registration = load('registration.json') as PostWritebackHookRegistration
const kindDefinition = load('intent_kind.json') as IntentKindDefinition
const hookInput = load('hook_input.json') as PostWritebackHookInput
const hookResult = load('hook_result.json')
const dispatchReceipt = load('dispatch_receipt.json')
const failureReceipt = {
  schema_version: 'loopx_post_writeback_failure_receipt_v0',
  dispatch_id: hookInput.dispatch_id,
  hook_id: registration.hook_id,
  code: 'producer_failed',
  rule: null,
  attempt: 1,
}
const kinds = new IntentKinds([kindDefinition])

/** Each validator as a one-argument function, its context fixed to the examples. */
const VALIDATORS: Record<string, { validate: (doc: unknown) => Verdict; example: Doc }> = {
  validateRegistration: { validate: (d) => validateRegistration(d, kinds), example: registration },
  validateIntentKindDefinition: { validate: (d) => validateIntentKindDefinition(d), example: kindDefinition },
  validateHookInput: { validate: (d) => validateHookInput(d, registration), example: hookInput },
  validateHookResult: {
    validate: (d) => validateHookResult(d, registration, hookInput.dispatch_id, kinds),
    example: hookResult,
  },
  validateDispatchReceipt: { validate: (d) => validateDispatchReceipt(d), example: dispatchReceipt },
  validateFailureReceipt: { validate: (d) => validateFailureReceipt(d), example: failureReceipt },
}
const validator = (name: string) => {
  const v = VALIDATORS[name]
  if (!v) throw new Error(`no validator ${name}`)
  return v
}

const violationsOf = (verdict: Verdict): Violation[] => (verdict.ok ? [] : verdict.violations)

/** The verdict on `doc` as a value and as its JSON text, asserting both agree. */
function both(name: string, doc: unknown): Violation[] {
  const { validate } = validator(name)
  const asValue = validate(doc)
  const asText = validate(JSON.stringify(doc))
  expect(asText.ok).toBe(asValue.ok)
  expect(violationsOf(asText)).toEqual(violationsOf(asValue))
  return violationsOf(asValue)
}

describe('RFC examples', () => {
  for (const [name, { validate, example }] of Object.entries(VALIDATORS)) {
    it(`${name} accepts its example as an object and as JSON text`, () => {
      const doc = clone(example)
      const asValue = validate(doc)
      expect(asValue).toEqual({ ok: true, value: doc })
      // An accepted object comes back as the very object given.
      if (asValue.ok) expect(asValue.value).toBe(doc)
      const asText = validate(JSON.stringify(doc))
      expect(asText.ok).toBe(true)
      if (asText.ok) expect(asText.value).toEqual(doc)
      // Pretty-printed text is the same document.
      expect(validate(JSON.stringify(doc, null, 2)).ok).toBe(true)
    })
  }
})

describe('bad documents: the same violations as object and as JSON text', () => {
  type Case = [string, string, (d: Doc) => void, Violation[]]
  const cases: Case[] = [
    [
      'validateRegistration',
      'missing budget member',
      (d) => delete d.budget.timeout_ms,
      [{ path: '/budget/timeout_ms', rule: 'missing_field' }],
    ],
    ['validateRegistration', 'unknown member', (d) => (d.extra = 1), [{ path: '/extra', rule: 'unknown_field' }]],
    [
      'validateRegistration',
      'escaped member name',
      (d) => (d['a/b~c'] = 1),
      [{ path: '/a~1b~0c', rule: 'unknown_field' }],
    ],
    [
      'validateRegistration',
      'schema version',
      (d) => (d.schema_version = 'v1'),
      [{ path: '/schema_version', rule: 'bad_schema_version' }],
    ],
    [
      'validateRegistration',
      'string for an integer',
      (d) => (d.budget.timeout_ms = '1000'),
      [{ path: '/budget/timeout_ms', rule: 'wrong_type' }],
    ],
    [
      'validateRegistration',
      'non-integral number',
      (d) => (d.budget.timeout_ms = 1.5),
      [{ path: '/budget/timeout_ms', rule: 'wrong_type' }],
    ],
    [
      'validateRegistration',
      'hook of another capability',
      (d) => (d.hook_id = 'other.hook'),
      [{ path: '/hook_id', rule: 'capability_mismatch' }],
    ],
    [
      'validateRegistration',
      'bad token',
      (d) => (d.capability_id = 'Periodic'),
      [{ path: '/capability_id', rule: 'bad_token' }],
    ],
    [
      'validateRegistration',
      'phase',
      (d) => (d.phase = 'pre_writeback'),
      [{ path: '/phase', rule: 'not_allowed_value' }],
    ],
    [
      'validateRegistration',
      'duplicate event kind',
      (d) => (d.event_kinds = ['todo_completed', 'todo_completed']),
      [{ path: '/event_kinds/1', rule: 'duplicate_item' }],
    ],
    [
      'validateRegistration',
      'unknown event kind',
      (d) => (d.event_kinds = ['goal_started']),
      [{ path: '/event_kinds/0', rule: 'unknown_event_kind' }],
    ],
    [
      'validateRegistration',
      'unknown intent kind',
      (d) => (d.intent_kinds = ['periodic_report.nope']),
      [{ path: '/intent_kinds/0', rule: 'unknown_intent_kind' }],
    ],
    [
      'validateRegistration',
      'failure policy',
      (d) => (d.failure_policy = 'retry'),
      [{ path: '/failure_policy', rule: 'policy_not_isolate' }],
    ],
    [
      'validateRegistration',
      'not an object',
      (d) => Object.keys(d).forEach((k) => delete d[k]),
      [
        'schema_version',
        'hook_id',
        'capability_id',
        'phase',
        'event_kinds',
        'intent_kinds',
        'requested_read_scope',
        'budget',
        'failure_policy',
      ].map((k) => ({ path: `/${k}`, rule: 'missing_field' as const })),
    ],
    [
      'validateHookInput',
      'dispatch id not recomputed',
      (d) => (d.dispatch_id = `pwh_${'0'.repeat(64)}`),
      [{ path: '/dispatch_id', rule: 'dispatch_id_mismatch' }],
    ],
    [
      'validateHookInput',
      'impossible date',
      (d) => (d.source.committed_at = '2026-02-30T00:00:00Z'),
      [{ path: '/source/committed_at', rule: 'bad_timestamp' }],
    ],
    [
      'validateHookInput',
      'path as opaque ref',
      (d) => (d.source.goal_id = 'goals/1'),
      [{ path: '/source/goal_id', rule: 'bad_opaque_ref' }],
    ],
    [
      'validateHookInput',
      'credential-like ref',
      (d) => (d.source.goal_id = 'ghp_abcdef0123'),
      [{ path: '/source/goal_id', rule: 'credential_like_value' }],
    ],
    [
      'validateHookInput',
      'boundary flag set',
      (d) => (d.boundary.raw_logs_recorded = true),
      [{ path: '/boundary/raw_logs_recorded', rule: 'not_allowed_value' }],
    ],
    [
      'validateHookInput',
      'transition of another kind',
      (d) => (d.projection.transition = 'replan_recorded'),
      [{ path: '/projection/transition', rule: 'transition_mismatch' }],
    ],
    [
      'validateHookResult',
      'intent id not recomputed',
      (d) => (d.intents[0].intent_id = `pwi_${'0'.repeat(64)}`),
      [{ path: '/intents/0/intent_id', rule: 'intent_id_mismatch' }],
    ],
    [
      'validateHookResult',
      'extra payload member',
      (d) => (d.intents[0].payload.extra = 1),
      [{ path: '/intents/0/payload/extra', rule: 'unknown_field' }],
    ],
    [
      'validateHookResult',
      'authority claimed',
      (d) => (d.intents[0].grants_new_action_authority = true),
      [{ path: '/intents/0/grants_new_action_authority', rule: 'authority_claimed' }],
    ],
    [
      'validateHookResult',
      'unknown operation',
      (d) => (d.intents[0].operation = 'delete_everything'),
      [{ path: '/intents/0/operation', rule: 'unknown_operation' }],
    ],
    [
      'validateHookResult',
      'two identical intents',
      (d) => d.intents.push(clone(d.intents[0])),
      [
        { path: '/intents', rule: 'intent_budget_exceeded' },
        { path: '/intents/1/intent_id', rule: 'duplicate_item' },
      ],
    ],
    [
      'validateIntentKindDefinition',
      'free text in payload',
      (d) => (d.payload_schema.properties.segment_ref = { type: 'string' }),
      [{ path: '/payload_schema/properties/segment_ref', rule: 'unsupported_schema' }],
    ],
    [
      'validateIntentKindDefinition',
      'maxItems over 32',
      (d) => (d.payload_schema.properties.source_event_refs.maxItems = 33),
      [{ path: '/payload_schema/properties/source_event_refs', rule: 'unsupported_schema' }],
    ],
    [
      'validateIntentKindDefinition',
      'kind of another capability',
      (d) => (d.capability_id = 'other'),
      [{ path: '/intent_kind', rule: 'capability_mismatch' }],
    ],
    [
      'validateDispatchReceipt',
      'attempt past the ceiling',
      (d) => (d.attempt = 5),
      [{ path: '/attempt', rule: 'out_of_range' }],
    ],
    [
      'validateDispatchReceipt',
      'failed without failure',
      (d) => (d.status = 'failed'),
      [
        { path: '/intent_ids', rule: 'too_many_items' },
        { path: '/result_digest', rule: 'not_allowed_value' },
        { path: '/failure', rule: 'not_allowed_value' },
      ],
    ],
    [
      'validateFailureReceipt',
      'code, rule and attempt',
      (d) => Object.assign(d, { code: 'oops', rule: 'nope', attempt: 0 }),
      [
        { path: '/code', rule: 'not_allowed_value' },
        { path: '/rule', rule: 'not_allowed_value' },
        { path: '/attempt', rule: 'out_of_range' },
      ],
    ],
  ]
  for (const [name, what, mutate, expected] of cases) {
    it(`${name}: ${what}`, () => {
      const doc = clone(validator(name).example)
      mutate(doc)
      expect(both(name, doc)).toEqual(expected)
    })
  }

  it('a document that is not an object is wrong_type at the root in every validator', () => {
    for (const name of Object.keys(VALIDATORS)) {
      for (const doc of [null, 1, true, [], [registration]]) {
        expect(both(name, doc), `${name} ${JSON.stringify(doc)}`).toEqual([{ path: '', rule: 'wrong_type' }])
      }
      // A JS string is always JSON text; the text of a JSON string is a string document.
      expect(validator(name).validate('"a string"')).toEqual({
        ok: false,
        violations: [{ path: '', rule: 'wrong_type' }],
      })
    }
  })
})

describe('values JSON cannot hold: not_json_value at their pointer, never a throw', () => {
  const cycle = () => {
    const budget: Doc = { ...registration.budget }
    budget.timeout_ms = budget
    return budget
  }
  const throwingGetter = () => {
    const budget: Doc = { ...registration.budget }
    Object.defineProperty(budget, 'timeout_ms', {
      enumerable: true,
      get() {
        throw new Error('getter says no')
      },
    })
    return budget
  }
  const bad: Array<[string, () => unknown]> = [
    ['a function', () => () => 1],
    ['a Symbol', () => Symbol('s')],
    ['a BigInt', () => 10n],
    ['undefined', () => undefined],
    ['a Date', () => new Date(0)],
    ['a typed array', () => new Uint8Array([1, 2])],
    ['an ArrayBuffer', () => new ArrayBuffer(2)],
    ['a Promise', () => Promise.resolve(1)],
    ['NaN', () => NaN],
    ['Infinity', () => Infinity],
    ['-Infinity', () => -Infinity],
  ]

  for (const [what, make] of bad) {
    it(`${what} at /budget/timeout_ms and /intent_kinds/0`, () => {
      const atBudget = { ...clone(registration), budget: { ...registration.budget, timeout_ms: make() } }
      expect(() => validateRegistration(atBudget, kinds)).not.toThrow()
      expect(validateRegistration(atBudget, kinds)).toEqual({
        ok: false,
        violations: [{ path: '/budget/timeout_ms', rule: 'not_json_value' }],
      })
      const atKind = { ...clone(registration), intent_kinds: [make()] }
      expect(validateRegistration(atKind, kinds)).toEqual({
        ok: false,
        violations: [{ path: '/intent_kinds/0', rule: 'not_json_value' }],
      })
    })
  }

  it('a cycle is not_json_value where it closes', () => {
    const doc = { ...clone(registration), budget: cycle() }
    expect(validateRegistration(doc, kinds)).toEqual({
      ok: false,
      violations: [{ path: '/budget/timeout_ms', rule: 'not_json_value' }],
    })
    const self: Doc = clone(registration)
    self.self = self
    expect(validateRegistration(self, kinds)).toEqual({
      ok: false,
      violations: [{ path: '/self', rule: 'not_json_value' }],
    })
  })

  it('a shared (acyclic) object is read twice, not mistaken for a cycle', () => {
    const shared = ['todo_completed']
    const doc = { ...clone(registration), event_kinds: shared, extra: shared }
    expect(validateRegistration(doc, kinds)).toEqual({
      ok: false,
      violations: [{ path: '/extra', rule: 'unknown_field' }],
    })
  })

  it('a getter that throws is not_json_value at its member, the error swallowed', () => {
    const doc = { ...clone(registration), budget: throwingGetter() }
    expect(validateRegistration(doc, kinds)).toEqual({
      ok: false,
      violations: [{ path: '/budget/timeout_ms', rule: 'not_json_value' }],
    })
  })

  it('a Proxy whose ownKeys trap throws is not_json_value at the proxy', () => {
    const trap = new Proxy(
      {},
      {
        ownKeys() {
          throw new Error('ownKeys says no')
        },
      },
    )
    const doc = { ...clone(registration), budget: trap }
    expect(validateRegistration(doc, kinds)).toEqual({
      ok: false,
      violations: [{ path: '/budget', rule: 'not_json_value' }],
    })
    expect(validateIntentKindDefinition(trap)).toEqual({
      ok: false,
      violations: [{ path: '', rule: 'not_json_value' }],
    })
  })

  it('several bad values are all reported, in every validator, at nested paths', () => {
    for (const name of Object.keys(VALIDATORS)) {
      const { validate, example } = validator(name)
      const doc: Doc = clone(example)
      const [first, second] = Object.keys(doc)
      doc[first!] = () => 1
      doc[second!] = { deep: [1, Symbol('x')] }
      const verdict = validate(doc)
      expect(verdict.ok).toBe(false)
      const notJson = violationsOf(verdict).filter((v) => v.rule === 'not_json_value')
      expect(notJson, name).toEqual([
        { path: `/${first}`, rule: 'not_json_value' },
        { path: `/${second}/deep/1`, rule: 'not_json_value' },
      ])
    }
  })

  it('a non-JSON root value is not_json_value at ""', () => {
    for (const name of Object.keys(VALIDATORS)) {
      for (const [, make] of bad) {
        const value = make()
        // A string would be JSON text; every other root is walked.
        expect(validator(name).validate(value), name).toEqual({
          ok: false,
          violations: [{ path: '', rule: 'not_json_value' }],
        })
      }
    }
  })

  it('JSON text that is not JSON is not_json_value at ""', () => {
    const texts = [
      '',
      ' ',
      '{',
      '{"a":}',
      "{'a':1}",
      '[1,]',
      '{"a":1}x',
      'undefined',
      'NaN',
      '01',
      '"\\x"',
      JSON.stringify(registration).slice(0, -1),
    ]
    for (const name of Object.keys(VALIDATORS)) {
      for (const text of texts) {
        expect(validator(name).validate(text), `${name} ${JSON.stringify(text)}`).toEqual({
          ok: false,
          violations: [{ path: '', rule: 'not_json_value' }],
        })
      }
    }
  })
})

describe('registration bounds cross the JS boundary with the exact rule and path', () => {
  const withBudget = (field: string, value: number) => ({
    ...clone(registration),
    budget: { ...registration.budget, [field]: value },
  })
  const budgets: Array<[string, number, number]> = [
    ['max_invocations_per_dispatch', 1, 4],
    ['max_intents_per_dispatch', 1, 16],
    ['max_result_bytes', 256, 65536],
    ['timeout_ms', 1, 30000],
  ]
  for (const [field, min, max] of budgets) {
    it(`budget.${field} in ${min}..=${max}`, () => {
      for (const inside of [min, max])
        expect(both('validateRegistration', withBudget(field, inside)), `${field}=${inside}`).toEqual([])
      for (const outside of [min - 1, max + 1]) {
        expect(both('validateRegistration', withBudget(field, outside)), `${field}=${outside}`).toEqual([
          { path: `/budget/${field}`, rule: 'out_of_range' },
        ])
      }
    })
  }

  it('event_kinds 1..=2', () => {
    const doc = (event_kinds: string[]) => ({ ...clone(registration), event_kinds })
    expect(both('validateRegistration', doc(['todo_completed']))).toEqual([])
    expect(both('validateRegistration', doc(['todo_completed', 'replan_recorded']))).toEqual([])
    expect(both('validateRegistration', doc([]))).toEqual([{ path: '/event_kinds', rule: 'too_few_items' }])
    expect(both('validateRegistration', doc(['todo_completed', 'replan_recorded', 'todo_completed']))).toEqual([
      { path: '/event_kinds', rule: 'too_many_items' },
      { path: '/event_kinds/2', rule: 'duplicate_item' },
    ])
  })

  it('requested_read_scope 1..=2', () => {
    const doc = (requested_read_scope: string[]) => ({ ...clone(registration), requested_read_scope })
    expect(both('validateRegistration', doc(['settlement_identity']))).toEqual([])
    expect(both('validateRegistration', doc([]))).toEqual([{ path: '/requested_read_scope', rule: 'too_few_items' }])
    expect(
      both('validateRegistration', doc(['settlement_identity', 'bounded_event_projection', 'settlement_identity'])),
    ).toEqual([
      { path: '/requested_read_scope', rule: 'too_many_items' },
      { path: '/requested_read_scope/2', rule: 'duplicate_item' },
    ])
  })

  it('intent_kinds 1..=16', () => {
    const names = Array.from({ length: 17 }, (_, i) => `periodic_report.kind_${i}`)
    const many = new IntentKinds(names.map((intent_kind) => ({ ...clone(kindDefinition), intent_kind })))
    const check = (intent_kinds: string[]) => {
      const doc = { ...clone(registration), intent_kinds }
      const asValue = validateRegistration(doc, many)
      expect(violationsOf(validateRegistration(JSON.stringify(doc), many))).toEqual(violationsOf(asValue))
      return violationsOf(asValue)
    }
    expect(check(names.slice(0, 1))).toEqual([])
    expect(check(names.slice(0, 16))).toEqual([])
    expect(check([])).toEqual([{ path: '/intent_kinds', rule: 'too_few_items' }])
    expect(check(names)).toEqual([{ path: '/intent_kinds', rule: 'too_many_items' }])
  })

  it('token length 1..=128 bytes', () => {
    const capability = 'c'.repeat(64)
    const at = (hook: string) => ({
      ...clone(registration),
      capability_id: capability,
      hook_id: `${capability}.${hook}`,
      intent_kinds: [],
    })
    // 64 + 1 + 63 = 128 bytes; one more is too long. intent_kinds [] adds too_few_items either way.
    expect(both('validateRegistration', at('h'.repeat(63)))).toEqual([{ path: '/intent_kinds', rule: 'too_few_items' }])
    expect(both('validateRegistration', at('h'.repeat(64)))).toEqual([
      { path: '/hook_id', rule: 'too_long' },
      { path: '/intent_kinds', rule: 'too_few_items' },
    ])
  })

  it('hook input fact_refs 0..=32', () => {
    const doc = (n: number) => {
      const d = clone(hookInput)
      d.projection.fact_refs = Array.from({ length: n }, (_, i) => `fact_${i}`)
      return d
    }
    expect(both('validateHookInput', doc(0))).toEqual([])
    expect(both('validateHookInput', doc(32))).toEqual([])
    expect(both('validateHookInput', doc(33))).toEqual([{ path: '/projection/fact_refs', rule: 'too_many_items' }])
  })

  it('intent budget max_attempts 1..=8 and requested_write_scope 0..=8 in a result', () => {
    const result = (change: (intent: Doc) => void) => {
      const d = clone(hookResult)
      change(d.intents[0])
      return d
    }
    expect(
      both(
        'validateHookResult',
        result((i) => (i.budget.max_attempts = 8)),
      ),
    ).toEqual([])
    expect(
      both(
        'validateHookResult',
        result((i) => (i.budget.max_attempts = 9)),
      ),
    ).toEqual([{ path: '/intents/0/budget/max_attempts', rule: 'out_of_range' }])
    expect(
      both(
        'validateHookResult',
        result((i) => (i.budget.max_attempts = 0)),
      ),
    ).toEqual([{ path: '/intents/0/budget/max_attempts', rule: 'out_of_range' }])
    const scopes = (n: number) => Array.from({ length: n }, (_, k) => `periodic_report.scope_${k}`)
    expect(
      both(
        'validateHookResult',
        result((i) => (i.requested_write_scope = scopes(8))),
      ),
    ).toEqual([])
    expect(
      both(
        'validateHookResult',
        result((i) => (i.requested_write_scope = scopes(9))),
      ),
    ).toEqual([{ path: '/intents/0/requested_write_scope', rule: 'too_many_items' }])
  })
})

describe('buildIntent and IntentKinds', () => {
  it('buildIntent yields an intent that validateHookResult accepts', () => {
    const built = buildIntent(hookInput, {
      intentKind: kindDefinition.intent_kind,
      operation: 'evaluate_runtime_trigger',
      policyVersion: 'weekly_v0',
      payload: { segment_ref: 'segment_7', source_event_refs: ['event_1', 'event_2'] },
    })
    expect(built).toMatchObject({
      schema_version: 'loopx_post_writeback_intent_v0',
      hook_id: hookInput.hook_id,
      capability_id: hookInput.capability_id,
      source_dispatch_id: hookInput.dispatch_id,
      intent_kind: kindDefinition.intent_kind,
      grants_new_action_authority: false,
      external_write_performed: false,
    })
    expect(built.intent_id).toMatch(/^pwi_[0-9a-f]{64}$/)
    const result = { schema_version: 'loopx_post_writeback_hook_result_v0', status: 'proposed', intents: [built] }
    expect(both('validateHookResult', result)).toEqual([])
    // The example's own payload and policy give the example's intent id.
    const again = buildIntent(hookInput, {
      intentKind: kindDefinition.intent_kind,
      operation: 'evaluate_runtime_trigger',
      policyVersion: 'weekly_v0',
      payload: hookResult.intents[0].payload,
      budget: hookResult.intents[0].budget,
    })
    expect(again).toEqual(hookResult.intents[0])
  })

  it('IntentKinds throws ERR_LOOPX_INVALID_INTENT_KIND for a bad definition', () => {
    const attempt = (definitions: unknown[]) => {
      try {
        new IntentKinds(definitions as IntentKindDefinition[])
      } catch (error) {
        return error as Error & { code?: string }
      }
      throw new Error('IntentKinds accepted a bad definition')
    }
    const wrongOwner = attempt([{ ...clone(kindDefinition), capability_id: 'other' }])
    expect(wrongOwner.code).toBe('ERR_LOOPX_INVALID_INTENT_KIND')
    expect(wrongOwner.message).toContain('/0/intent_kind capability_mismatch')
    const second = attempt([kindDefinition, { ...clone(kindDefinition), payload_schema: { type: 'string' } }])
    expect(second.code).toBe('ERR_LOOPX_INVALID_INTENT_KIND')
    expect(second.message).toContain('/1/payload_schema')
    const twice = attempt([kindDefinition, kindDefinition])
    expect(twice.code).toBe('ERR_LOOPX_INVALID_INTENT_KIND')
    expect(twice.message).toContain('/1/intent_kind duplicate_item')
    expect(attempt([() => 1]).code).toBe('ERR_LOOPX_INVALID_INTENT_KIND')
    expect(
      new IntentKinds([kindDefinition, JSON.stringify({ ...kindDefinition, intent_kind: 'periodic_report.b' })]).names,
    ).toEqual(['periodic_report.b', kindDefinition.intent_kind])
  })

  // The error carries the violations, not only a message.
  it('IntentKinds error carries the violations its documentation promises', () => {
    try {
      new IntentKinds([{ ...clone(kindDefinition), capability_id: 'other' }])
    } catch (error) {
      expect((error as { violations?: unknown }).violations).toEqual([
        { path: '/0/intent_kind', rule: 'capability_mismatch' },
      ])
      return
    }
    throw new Error('no throw')
  })
})

describe('edges where a value and its JSON text meet', () => {
  // RFC 8785 / I-JSON forbid lone surrogates: a value reports one at its own
  // path; text that holds one does not parse, so it is reported at "".
  it('a lone surrogate is not_json_value as a value, as it is as text', () => {
    const doc = { ...clone(registration), hook_id: 'periodic_report.\ud800' }
    expect(validateRegistration(JSON.stringify(doc), kinds)).toEqual({
      ok: false,
      violations: [{ path: '/hook_id', rule: 'not_json_value' }],
    })
    expect(validateRegistration(doc, kinds)).toEqual({
      ok: false,
      violations: [{ path: '/hook_id', rule: 'not_json_value' }],
    })
  })

  it('objects that are not plain JSON objects are not_json_value at their path', () => {
    class Budget {
      timeout_ms = 1000
    }
    for (const odd of [new Map([['a', 1]]), new Set([1]), /re/, new Number(3), new String('ab'), new Budget()]) {
      const doc = { ...clone(registration), budget: odd }
      expect(validateRegistration(doc, kinds)).toEqual({
        ok: false,
        violations: [{ path: '/budget', rule: 'not_json_value' }],
      })
    }
    // An object without a prototype is a plain JSON object.
    const bare = Object.assign(Object.create(null), clone(registration))
    expect(validateRegistration(bare, kinds).ok).toBe(true)
  })

  // Both forms share one nesting limit: 127 levels are read (and rejected by
  // the contract), 128 are not_json_value at "".
  it('127 and 128 levels of nesting give the same violations as value and as text', () => {
    let deep: Json = 1
    for (let i = 0; i < 127; i++) deep = [deep]
    expect(both('validateIntentKindDefinition', deep)).toEqual([{ path: '', rule: 'wrong_type' }])
    deep = [deep]
    expect(both('validateIntentKindDefinition', deep)).toEqual([{ path: '', rule: 'not_json_value' }])
  })

  it('both forms still agree that over-deep documents are rejected', () => {
    for (const depth of [127, 128, 129, 200]) {
      let deep: Json = 1
      for (let i = 0; i < depth; i++) deep = { a: deep }
      for (const name of Object.keys(VALIDATORS)) {
        const { validate } = validator(name)
        expect(validate(deep).ok).toBe(false)
        expect(validate(JSON.stringify(deep)).ok).toBe(false)
      }
    }
  })
})
