// Hostile inputs (issue 9, items 6 and 7): the validators never throw and
// their memory stays proportional to the input. A million faults are listed
// as the first 100 plus `more`, a hole in an array is `not_json_value` at its
// index (also in a 4-billion-long sparse array, without visiting each hole),
// and JSON text gets the verdict of the value it denotes (`1e400` and
// `Infinity` at the same member). The CLI exits 1 with such a verdict.
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterAll, describe, expect, it } from 'vitest'

import * as addon from '../index.js'
import {
  IntentKinds,
  HookContext,
  registrationDigest,
  validateHookInput,
  validateHookResult,
  validateIntentKindDefinition,
  validateRegistration,
  type PostWritebackHookRegistration,
} from '../lib/index.js'

const root = join(__dirname, '..')
const load = (file: string) => JSON.parse(readFileSync(join(root, 'examples', file), 'utf8'))
const registration = load('registration.json') as PostWritebackHookRegistration
const kindDefinition = load('intent_kind.json')
const hookInput = load('hook_input.json')
const hookResult = load('hook_result.json')
const kinds = new IntentKinds([kindDefinition])
const N = 1_000_000
const dir = mkdtempSync(join(tmpdir(), 'loopx-hostile-inputs-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('a million faults', () => {
  it('event_kinds with 1,000,000 items: the first 100 violations and a count of the rest, as value and text', () => {
    const doc = { ...registration, event_kinds: Array.from({ length: N }, (_, i) => `k${i}`) }
    for (const input of [doc, JSON.stringify(doc)]) {
      const verdict = validateRegistration(input, kinds)
      if (verdict.ok) throw new Error('accepted')
      expect(verdict.violations).toHaveLength(100)
      expect(verdict.violations[0]).toEqual({ path: '/event_kinds', rule: 'too_many_items' })
      expect(verdict.violations[1]).toEqual({ path: '/event_kinds/0', rule: 'unknown_event_kind' })
      expect(verdict.violations.length + verdict.more!).toBe(N + 1)
    }
  })

  it('1,000,000 unknown members: capped and counted, as value and text', () => {
    const doc: Record<string, unknown> = { ...registration }
    for (let i = 0; i < N; i++) doc[`x${i}`] = null
    for (const input of [doc, JSON.stringify(doc)]) {
      const verdict = validateRegistration(input, kinds)
      if (verdict.ok) throw new Error('accepted')
      expect(verdict.violations).toHaveLength(100)
      expect(verdict.violations.every((v) => v.rule === 'unknown_field')).toBe(true)
      expect(verdict.more).toBe(N - 100)
    }
  })

  it('a complete list has no `more`', () => {
    const verdict = validateRegistration({ ...registration, phase: 'x' }, kinds)
    expect(verdict).toEqual({ ok: false, violations: [{ path: '/phase', rule: 'not_allowed_value' }] })
  })

  it('peak memory is proportional: a child with a 160 MB V8 heap validates all four and exits 0', () => {
    const r = spawnSync(
      process.execPath,
      ['--max-old-space-size=160', join(__dirname, 'children', 'hostile-memory.mjs')],
      { encoding: 'utf8', timeout: 120_000 },
    )
    expect(r.stderr).toBe('')
    expect(r.status).toBe(0)
    const out = JSON.parse(r.stdout)
    for (const name of ['eventKindsValue', 'eventKindsText', 'unknownKeysValue', 'unknownKeysText']) {
      expect(out[name].ok).toBe(false)
      expect(out[name].listed).toBe(100)
      expect(out[name].more).toBeGreaterThanOrEqual(N - 100)
    }
    // The old code used 1.1-1.7 GB here.
    expect(out.peakRssMb).toBeLessThan(700)
  })
})

describe('holes in arrays', () => {
  it('a hole is not_json_value at its index, anywhere in a document', () => {
    // eslint-disable-next-line no-sparse-arrays -- the hostile input under test
    const sparse = [1, , 2]
    const atKinds = validateRegistration({ ...registration, event_kinds: sparse }, kinds)
    expect(atKinds).toEqual({ ok: false, violations: [{ path: '/event_kinds/1', rule: 'not_json_value' }] })
    const result = structuredClone(hookResult)
    result.intents[0].payload.deep = { list: sparse }
    expect(validateHookResult(result, registration, hookInput.dispatch_id, kinds)).toEqual({
      ok: false,
      violations: [{ path: '/intents/0/payload/deep/list/1', rule: 'not_json_value' }],
    })
    expect(validateIntentKindDefinition(sparse)).toEqual({
      ok: false,
      violations: [{ path: '/1', rule: 'not_json_value' }],
    })
  })

  it('a sparse array four billion long is judged by its few elements, holes counted', () => {
    const huge: unknown[] = []
    huge[2 ** 32 - 2] = 'todo_completed'
    const verdict = validateRegistration({ ...registration, event_kinds: huge }, kinds)
    if (verdict.ok) throw new Error('accepted')
    expect(verdict.violations).toHaveLength(100)
    expect(verdict.violations.slice(0, 2)).toEqual([
      { path: '/event_kinds/0', rule: 'not_json_value' },
      { path: '/event_kinds/1', rule: 'not_json_value' },
    ])
    expect(verdict.violations.length + verdict.more!).toBe(2 ** 32 - 2)
    // A long sparse array with few holes lists exactly those.
    const long = Array.from({ length: 70_000 }, () => 'todo_completed') as unknown[]
    delete long[5]
    delete long[69_999]
    const both = validateRegistration({ ...registration, event_kinds: long }, kinds)
    if (both.ok) throw new Error('accepted')
    expect(both.violations.filter((v) => v.rule === 'not_json_value')).toEqual([
      { path: '/event_kinds/5', rule: 'not_json_value' },
      { path: '/event_kinds/69999', rule: 'not_json_value' },
    ])
  })
})

describe('one verdict for a value and its text', () => {
  const text = JSON.stringify(registration)
  it('1e400 in text is not_json_value at the member, as Infinity is', () => {
    const expected = { ok: false, violations: [{ path: '/budget/timeout_ms', rule: 'not_json_value' }] }
    const value = { ...registration, budget: { ...registration.budget, timeout_ms: Infinity } }
    expect(validateRegistration(value, kinds)).toEqual(expected)
    expect(validateRegistration(text.replace(/"timeout_ms":\d+/, '"timeout_ms":1e400'), kinds)).toEqual(expected)
    expect(validateRegistration(text.replace(/"timeout_ms":\d+/, `"timeout_ms":-${'9'.repeat(400)}`), kinds)).toEqual(
      expected,
    )
  })

  it('a lone surrogate is not_json_value at the member in both forms', () => {
    const expected = { ok: false, violations: [{ path: '/hook_id', rule: 'not_json_value' }] }
    expect(validateRegistration({ ...registration, hook_id: '\ud800' }, kinds)).toEqual(expected)
    expect(validateRegistration(text.replace(/"hook_id":"[^"]*"/, '"hook_id":"\\ud800"'), kinds)).toEqual(expected)
  })

  it('text that is not JSON is still not_json_value at the root', () => {
    for (const bad of ['{', '{"a":1e400', '[1e400,]', '']) {
      expect(validateHookInput(bad, registration)).toEqual({
        ok: false,
        violations: [{ path: '', rule: 'not_json_value' }],
      })
    }
  })
})

describe('the CLI', () => {
  const bin = join(root, 'bin', 'loopx-hooks.js')
  const kindsFile = join(root, 'examples', 'intent_kind.json')
  it('exits 1 with the capped verdict for a million event kinds, in text and JSON', () => {
    const file = join(dir, 'million.json')
    writeFileSync(file, JSON.stringify({ ...registration, event_kinds: Array.from({ length: N }, (_, i) => `k${i}`) }))
    for (const json of [false, true]) {
      const r = spawnSync(
        process.execPath,
        [bin, 'validate', 'registration', file, '--kinds', kindsFile, ...(json ? ['--json'] : [])],
        { encoding: 'utf8', env: { ...process.env, NO_COLOR: '1' }, timeout: 60_000 },
      )
      expect(r.status).toBe(1)
      if (json) {
        const verdict = JSON.parse(r.stdout)
        expect(verdict.violations).toHaveLength(100)
        expect(verdict.more).toBe(N + 1 - 100)
      } else {
        expect(r.stdout.trim().split('\n')).toHaveLength(101)
        expect(r.stdout).toContain(`... and ${N + 1 - 100} more`)
      }
    }
  })

  it('exits 1 with not_json_value at the member for 1e400', () => {
    const file = join(dir, 'inf.json')
    writeFileSync(file, JSON.stringify(registration).replace(/"timeout_ms":\d+/, '"timeout_ms":1e400'))
    const r = spawnSync(process.execPath, [bin, 'validate', 'registration', file, '--kinds', kindsFile, '--json'], {
      encoding: 'utf8',
    })
    expect(r.status).toBe(1)
    expect(JSON.parse(r.stdout)).toEqual({
      ok: false,
      violations: [{ path: '/budget/timeout_ms', rule: 'not_json_value' }],
    })
  })
})

describe('the fast path (one JSON text) gives the exact walk verdict', () => {
  const result = () => structuredClone(hookResult)
  it('for every doubtful value, as the addon walk reports it', () => {
    class Budget {
      timeout_ms = 1
    }
    const arrayProxy = new Proxy(['todo_completed'], {})
    const withToJSON = Object.assign(['todo_completed'], { toJSON: () => ['x'] })
    const docs: unknown[] = [
      { ...registration, event_kinds: arrayProxy },
      { ...registration, event_kinds: withToJSON },
      { ...registration, budget: new Budget() },
      { ...registration, budget: new Proxy({ ...registration.budget }, {}) },
      { ...registration, phase: new Date(0) },
      { ...registration, budget: { ...registration.budget, timeout_ms: 2 ** 63 } },
      { ...registration, budget: { ...registration.budget, timeout_ms: -(2 ** 60) } },
      {
        ...registration,
        get hook_id(): string {
          throw new Error('getter')
        },
      },
    ]
    for (const doc of docs) {
      expect(validateRegistration(doc, kinds)).toEqual(addon.validateRegistration(doc, kinds))
    }
    const polluted = Object.prototype as { toJSON?: unknown }
    polluted.toJSON = () => 'x'
    try {
      expect(validateRegistration({ ...registration }, kinds)).toEqual(addon.validateRegistration(registration, kinds))
    } finally {
      delete polluted.toJSON
    }
  })

  it('a registration mutated after use is seen (the compiled context is re-made)', () => {
    const reg = structuredClone(registration)
    expect(validateHookInput(hookInput, reg).ok).toBe(true)
    reg.event_kinds = ['replan_recorded']
    expect(validateHookInput(hookInput, reg)).toEqual(addon.validateHookInput(hookInput, reg))
    expect(validateHookInput(hookInput, reg).ok).toBe(false)
    const r = result()
    expect(validateHookResult(r, reg, hookInput.dispatch_id, kinds).ok).toBe(true)
    reg.budget.max_result_bytes = 256
    expect(validateHookResult(r, reg, hookInput.dispatch_id, kinds)).toEqual({
      ok: false,
      violations: [{ path: '', rule: 'result_too_large' }],
    })
  })

  it('a HookContext stands in for its registration', () => {
    const context = new HookContext(registration)
    expect(context.registrationDigest).toBe(registrationDigest(registration))
    expect(validateHookInput(hookInput, context)).toEqual({ ok: true, value: hookInput })
    const r = result()
    expect(validateHookResult(r, context, hookInput.dispatch_id, kinds)).toEqual({ ok: true, value: r })
    r.intents[0].payload.bad = () => 0
    expect(validateHookResult(r, context, hookInput.dispatch_id, kinds)).toEqual(
      addon.validateHookResult(r, registration, hookInput.dispatch_id, kinds),
    )
    expect(() => new HookContext({} as never)).toThrow(expect.objectContaining({ code: 'ERR_LOOPX_INVALID_ARGUMENT' }))
  })
})
