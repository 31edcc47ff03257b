// The generated registration fast path (lib/generated/fast_valid.ts) against
// the Rust validator, over thousands of seeded documents: the RFC example
// with every field dropped, every leaf replaced by boundary and hostile
// values, lengths at the bound and past it, unknown members, wrong types,
// duplicates and unicode, single and combined; and generated valid ones.
// Held: the fast path's "valid" implies Rust's ok; on every document (as an
// object and as JSON text) `validateRegistration` gives exactly the addon's
// verdict; and the fast path does accept the common valid documents.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'

import { describe, expect, it } from 'vitest'

import * as addon from '../index.js'
import { validateRegistration } from '../lib/index.js'
import { parsedRegistrationCertainlyValid, registrationCertainlyValid } from '../lib/generated/fast_valid.js'
import { rng } from './support/rng.js'

type Json = null | boolean | number | string | Json[] | { [key: string]: Json }
type Doc = { [key: string]: Json }

const load = (file: string): Doc => JSON.parse(readFileSync(join(__dirname, '..', 'examples', file), 'utf8'))
const example = load('registration.json')
const exampleKind = load('intent_kind.json')
const clone = <T>(v: T): T => structuredClone(v)

/** A kind of the example's capability, one of a capability nested in it, and one of another capability. */
const definition = (intent_kind: string, capability_id: string): Doc => ({
  ...clone(exampleKind),
  intent_kind,
  capability_id,
})
const kinds = new addon.IntentKinds(<any[]>[
  exampleKind,
  definition('periodic_report.second_kind', 'periodic_report'),
  definition('periodic_report.deep.kind', 'periodic_report.deep'),
  definition('other_cap.kind', 'other_cap'),
])
const noKinds = new addon.IntentKinds([])
const owners = (k: addon.IntentKinds) => {
  const flat = addon.intentKindOwners(k)
  const map = new Map<string, string>()
  for (let i = 0; i < flat.length; i += 2) map.set(flat[i]!, flat[i + 1]!)
  return map
}

const pick = <T>(r: () => number, items: readonly T[]): T => items[Math.floor(r() * items.length)]!

const token = (n: number) => 'a'.repeat(n)
const owned = (n: number) => 'periodic_report.' + token(n - 'periodic_report.'.length)
/** Strings at and around every grammar, bound and closed set of the registration. */
const STRINGS: string[] = [
  '',
  'a',
  'A',
  '1a',
  'a-b',
  'a..b',
  'a.',
  '.a',
  'a b',
  'é',
  'periodic_report.é',
  '\u{1F600}',
  '\ud800',
  'periodic_report.x\n',
  ' periodic_report.x',
  'periodic_report',
  'periodic_report.runtime_trigger',
  'periodic_report.trigger_evaluation',
  'periodic_report.second_kind',
  'periodic_report.deep.kind',
  'periodic_report.undefined_kind',
  'other_cap.kind',
  'other_cap',
  'periodic_report.deep',
  token(128),
  token(129),
  owned(128),
  owned(129),
  'sk_live_x',
  'npm_x',
  'ghp_abc',
  'sk-x',
  'AKIAIOSFODNN7EXAMPLE',
  'eyJa.b.c',
  'eyJ.b.c',
  'post_writeback',
  'turn_start',
  'todo_completed',
  'replan_recorded',
  'settlement_identity',
  'bounded_event_projection',
  'isolate',
  'retry',
  'loopx_post_writeback_capability_hook_registration_v0',
  'loopx_post_writeback_capability_hook_registration_v1',
  'toJSON',
  '__proto__',
]
const NUMBERS: number[] = [0, -0, 1, 2, 3, 4, 5, 15, 16, 17, 255, 256, 1000, 16384, 30000, 30001, 65536, 65537, 1.5, -1]
const OTHERS: Json[] = [null, true, false, [], {}, ['todo_completed'], { a: 1 }, 2 ** 53, 1e21, 0.1]
const LEAVES: Json[] = [...STRINGS, ...NUMBERS, ...OTHERS]

/** Every path to a member or item of `doc`, arrays included. */
function paths(doc: Json, at: (string | number)[] = []): (string | number)[][] {
  if (Array.isArray(doc)) return [...doc.flatMap((v, i) => [[...at, i], ...paths(v, [...at, i])])]
  if (doc !== null && typeof doc === 'object')
    return Object.entries(doc).flatMap(([k, v]) => [[...at, k], ...paths(v, [...at, k])])
  return []
}
function parentOf(doc: Json, path: (string | number)[]): { [k: string]: Json } & Json[] {
  let node: any = doc
  for (const step of path.slice(0, -1)) node = node[step]
  return node
}
const set = (doc: Json, path: (string | number)[], value: Json) => (parentOf(doc, path)[path.at(-1) as any] = value)
const drop = (doc: Json, path: (string | number)[]) => {
  const parent = parentOf(doc, path)
  if (Array.isArray(parent)) parent.splice(path.at(-1) as number, 1)
  else delete parent[path.at(-1) as string]
}

type Mutation = (doc: Doc, r: () => number) => void
const ARRAYS = ['event_kinds', 'intent_kinds', 'requested_read_scope']
const MUTATIONS: Mutation[] = [
  (d, r) => drop(d, pick(r, paths(d))),
  (d, r) => set(d, pick(r, paths(d)), pick(r, LEAVES)),
  (d, r) => set(d, pick(r, paths(d)), pick(r, STRINGS)),
  (d, r) => {
    const budget = d.budget as Doc
    budget[pick(r, Object.keys(budget))] = pick(r, NUMBERS)
  },
  (d, r) => {
    const items = d[pick(r, ARRAYS)] as Json[]
    if (items.length > 0) items.push(items[0]!)
  },
  (d, r) => ((d[pick(r, ARRAYS)] as Json[]).length = 0),
  (d, r) => (d.intent_kinds as Json[]).push(pick(r, STRINGS)),
  (d) => (d.intent_kinds = Array.from({ length: 17 }, (_, i) => `periodic_report.k${i}`)),
  (d) => (d.intent_kinds = ['periodic_report.trigger_evaluation', 'periodic_report.second_kind']),
  (d, r) => (d[pick(r, ['extra', 'sk_live_key', 'toJSON', 'Hook_id', 'hook_id '])] = pick(r, LEAVES)),
  (d, r) => ((d.budget as Doc)[pick(r, ['extra', 'timeout', 'npm_token'])] = 1),
  (d, r) => (d.capability_id = pick(r, ['periodic', 'periodic_report.deep', 'other_cap', 'periodic_reportx'])),
  (d, r) => (d.hook_id = pick(r, ['periodic_reportx.h', 'other_cap.h', 'periodic_report.', owned(128), owned(129)])),
  (d, r) => (d[pick(r, Object.keys(d))] = pick(r, OTHERS)),
  (d, r) => {
    // The same document with its members in another order.
    const keys = Object.keys(d).sort(() => r() - 0.5)
    const copy = clone(d)
    for (const k of Object.keys(d)) delete d[k]
    for (const k of keys) d[k] = copy[k]!
  },
]

/** A valid registration other than the example: the sets, order, budget and names vary. */
function validDoc(r: () => number): Doc {
  const d = clone(example)
  const within = (min: number, max: number) => min + Math.floor(r() * (max - min + 1))
  const some = (all: string[]) => {
    const out = all.filter(() => r() < 0.6)
    return (out.length > 0 ? out : [all[0]!]).sort(() => r() - 0.5)
  }
  d.event_kinds = some(['todo_completed', 'replan_recorded'])
  d.requested_read_scope = some(['settlement_identity', 'bounded_event_projection'])
  d.intent_kinds = some(['periodic_report.trigger_evaluation', 'periodic_report.second_kind'])
  d.hook_id = 'periodic_report.' + pick(r, ['h', 'runtime_trigger', 'a.b_c', 'x9', token(112)])
  d.budget = {
    max_invocations_per_dispatch: within(1, 4),
    max_intents_per_dispatch: within(1, 16),
    max_result_bytes: within(256, 65536),
    timeout_ms: within(1, 30000),
  }
  return d
}

/** The documents of one seed: valid ones, single mutations, and two to four combined. */
function documents(seed: number, n: number): Doc[] {
  const r = rng(seed)
  const out: Doc[] = [clone(example)]
  for (const path of paths(example)) {
    const d = clone(example)
    drop(d, path)
    out.push(d)
    for (const leaf of LEAVES) {
      const e = clone(example)
      set(e, path, leaf)
      out.push(e)
    }
  }
  while (out.length < n) {
    const d = r() < 0.25 ? validDoc(r) : clone(example)
    const count = r() < 0.3 ? 0 : 1 + Math.floor(r() * 4)
    for (let i = 0; i < count; i++) {
      try {
        pick(r, MUTATIONS)(d, r)
      } catch {
        // An earlier mutation left no such member (or a number where an object was): the document stays as it is.
      }
    }
    out.push(d)
  }
  return out
}

/** The fields of a verdict that must agree (an accepted value is compared as JSON). */
const verdict = (v: any) => (v.ok ? { ok: true, value: v.value } : v)

describe('the registration fast path against the Rust validator', () => {
  it.each([
    ['the example kinds', kinds],
    ['no kinds', noKinds],
  ])(
    'agrees on thousands of seeded documents (%s)',
    (_, k) => {
      const map = owners(k)
      const docs = documents(k === kinds ? 20_26 : 7, 6000)
      let fastValid = 0
      let rustOk = 0
      for (const [i, doc] of docs.entries()) {
        const text = JSON.stringify(doc)
        const rust = addon.validateRegistration(doc, k)
        const fast = registrationCertainlyValid(doc, map)
        if (fast) fastValid++
        if (rust.ok) rustOk++
        const where = `document ${i}: ${text}`
        if (fast) expect(rust.ok, where).toBe(true)
        expect(registrationCertainlyValid(JSON.parse(text), map), where).toBe(fast)
        expect(parsedRegistrationCertainlyValid(JSON.parse(text), map), where).toBe(fast)
        const ours = validateRegistration(doc, k)
        expect(verdict(ours), where).toEqual(verdict(rust))
        // As the addon does, an accepted object comes back as the very object given.
        if (ours.ok && rust.ok) expect(ours.value, where).toBe(rust.value)
        expect(verdict(validateRegistration(text, k)), where).toEqual(verdict(addon.validateRegistration(text, k)))
      }
      // Not vacuous: both verdicts occur, and every document Rust accepts here is plain JSON the fast path takes.
      if (k === kinds) {
        expect(rustOk).toBeGreaterThan(1000)
        expect(docs.length - rustOk).toBeGreaterThan(3000)
      } else expect(rustOk).toBe(0)
      expect(fastValid).toBe(rustOk)
    },
    120_000,
  )

  it('answers "don\'t know" for JSON texts the Rust parser reads otherwise, and they agree', () => {
    const map = owners(kinds)
    const text = JSON.stringify(example)
    const texts = [
      text.replace(
        '"hook_id":"periodic_report.runtime_trigger"',
        '"hook_id":"bad","hook_id":"periodic_report.runtime_trigger"',
      ),
      text.replace(
        '"hook_id":"periodic_report.runtime_trigger"',
        '"hook_id":"periodic_report.runtime_trigger","hook_id":"bad"',
      ),
      text.replace('"timeout_ms":1000', '"timeout_ms":1000.0'),
      text.replace('"timeout_ms":1000', '"timeout_ms":1e3'),
      text.replace('"timeout_ms":1000', '"timeout_ms":1e400'),
      text.replace('"timeout_ms":1000', '"timeout_ms":-0'),
      text.replace('"isolate"', '"\\ud800"'),
      text.replace('"isolate"', '"isol\\u0061te"'),
      text.replace('{', '{"__proto__":{},'),
      '\ufeff' + text,
      ` \n${text}\t`,
      text + 'x',
      text.slice(0, -1),
      '"' + text + '"',
      '[]',
      'null',
    ]
    for (const t of texts) {
      const rust = addon.validateRegistration(t, kinds)
      let parsed: unknown
      try {
        parsed = JSON.parse(t)
      } catch {
        parsed = undefined
      }
      if (parsed !== undefined && parsedRegistrationCertainlyValid(parsed, map)) expect(rust.ok, t).toBe(true)
      expect(verdict(validateRegistration(t, kinds)), t).toEqual(verdict(rust))
    }
  })

  it('answers "don\'t know" for every object JSON.stringify would not write as read', () => {
    const map = owners(kinds)
    class Registration {}
    const withProto = Object.assign(new Registration(), clone(example))
    const withUndefined = { ...clone(example), extra: undefined }
    const arrayProxy = { ...clone(example), event_kinds: new Proxy(['todo_completed'], {}) }
    const toJsonHidden = clone(example)
    Object.defineProperty(toJsonHidden, 'toJSON', { value: () => ({}), enumerable: false })
    const budgetHidden = clone(example)
    const budget = { max_invocations_per_dispatch: 1, max_intents_per_dispatch: 1, max_result_bytes: 16384, extra: 1 }
    Object.defineProperty(budget, 'timeout_ms', { value: 1000, enumerable: false })
    budgetHidden.budget = budget
    const nonEnumerable = clone(example)
    Object.defineProperty(nonEnumerable, 'hook_id', { value: 'periodic_report.h', enumerable: false })
    nonEnumerable.extra = 1
    const subclassed = {
      ...clone(example),
      event_kinds: Object.assign(new (class extends Array {})(), ['todo_completed']),
    }
    for (const doc of [
      withProto,
      withUndefined,
      new Proxy(clone(example), {}),
      arrayProxy,
      toJsonHidden,
      budgetHidden,
      nonEnumerable,
      subclassed,
    ])
      expect(registrationCertainlyValid(doc, map)).toBe(false)
    const polluted = clone(example)
    try {
      Object.defineProperty(Object.prototype, 'toJSON', { value: () => ({}), configurable: true, enumerable: false })
      expect(registrationCertainlyValid(polluted, map)).toBe(false)
    } finally {
      delete (Object.prototype as any).toJSON
    }
    expect(registrationCertainlyValid(polluted, map)).toBe(true)
  })
})
