// A credential-like member name never comes back (issue 9, item 8): such a
// key is `credential_like_value` at a path whose token is `~0redacted~0` (the
// name `~redacted~`, escaped as RFC 6901 says), and
// every violation beneath it is reported under that token, in the
// library's verdict (value and text) and in the CLI's text and JSON output.
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterAll, describe, expect, it } from 'vitest'

import {
  IntentKinds,
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

const NAMES = [
  'ghp_4bC9dE2fG7hJ1kL3',
  'sk_live_51HxYz',
  'AKIAIOSFODNN7EXAMPLE',
  'eyJhbGciOi.eyJzdWIi.c2ln',
  'xoxb-123-abc',
]
const dir = mkdtempSync(join(tmpdir(), 'loopx-hostile-secrets-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

function expectNoName(output: unknown, name: string): void {
  const text = typeof output === 'string' ? output : JSON.stringify(output)
  expect(text).not.toContain(name)
  // Nor its first characters, escaped or not.
  expect(text).not.toContain(name.slice(0, 6))
}

describe('the library', () => {
  it.each(NAMES)('a member named %s is credential_like_value at ~0redacted~0, as value and text', (name) => {
    const doc = { ...registration, [name]: 1, budget: { ...registration.budget, [name]: 2 } }
    const expected = {
      ok: false,
      violations: [
        { path: '/~0redacted~0', rule: 'credential_like_value' },
        { path: '/budget/~0redacted~0', rule: 'credential_like_value' },
      ],
    }
    for (const input of [doc, JSON.stringify(doc)]) {
      const verdict = validateRegistration(input, kinds)
      expect(verdict).toEqual(expected)
      expectNoName(verdict, name)
    }
  })

  it('violations beneath such a member keep the redaction (not_json_value as value and as text)', () => {
    const name = NAMES[0]!
    const value = { ...registration, [name]: { deep: Infinity } }
    const text = JSON.stringify({ ...registration, [name]: { deep: 0 } }).replace('"deep":0', '"deep":1e400')
    const expected = { ok: false, violations: [{ path: '/~0redacted~0/deep', rule: 'not_json_value' }] }
    expect(validateRegistration(value, kinds)).toEqual(expected)
    expect(validateRegistration(text, kinds)).toEqual(expected)
  })

  it('in a payload and in a payload schema', () => {
    const name = NAMES[1]!
    const result = structuredClone(hookResult)
    result.intents[0].payload[name] = 'x'
    const verdict = validateHookResult(result, registration, hookInput.dispatch_id, kinds)
    expect(verdict.ok).toBe(false)
    if (verdict.ok) return
    expect(verdict.violations).toContainEqual({
      path: '/intents/0/payload/~0redacted~0',
      rule: 'credential_like_value',
    })
    expectNoName(verdict, name)

    const definition = structuredClone(kindDefinition)
    // A schema property named like a credential is no schema token (unsupported_schema at
    // the object); a fault beneath it is reported under the redacted name.
    definition.payload_schema.properties.sk_live_field = { type: 'number' }
    definition.payload_schema.required.push('sk_live_field')
    const rejected = validateIntentKindDefinition(definition)
    expect(rejected).toEqual({
      ok: false,
      violations: [
        { path: '/payload_schema', rule: 'unsupported_schema' },
        { path: '/payload_schema/properties/~0redacted~0', rule: 'unsupported_schema' },
      ],
    })
    expectNoName(rejected, 'sk_live_field')
  })
})

describe('the CLI', () => {
  const bin = join(root, 'bin', 'loopx-hooks.js')
  it.each([false, true])('never prints the name (--json: %s)', (json) => {
    const name = NAMES[0]!
    const file = join(dir, `doc-${json}.json`)
    writeFileSync(file, JSON.stringify({ ...registration, [name]: { x: 1 } }))
    const r = spawnSync(
      process.execPath,
      [
        bin,
        'validate',
        'registration',
        file,
        '--kinds',
        join(root, 'examples', 'intent_kind.json'),
        ...(json ? ['--json'] : []),
      ],
      { encoding: 'utf8', env: { ...process.env, NO_COLOR: '1' } },
    )
    expect(r.status).toBe(1)
    expectNoName(r.stdout + r.stderr, name)
    if (json) {
      expect(JSON.parse(r.stdout)).toEqual({
        ok: false,
        violations: [{ path: '/~0redacted~0', rule: 'credential_like_value' }],
      })
    } else {
      expect(r.stdout).toContain('credential_like_value')
      expect(r.stdout).toContain('~0redacted~0')
    }
  })
})
