// The turn-start contract through the JS API (contract-v0 section 6): the
// registration and the public receipt. Examples pass as values and as JSON
// text; bad documents give exact `{path, rule}` lists in both forms; the JSON
// Schemas agree with the validators on the examples and on rejections they
// can express. (The Rust suite tries every bound; this file proves the
// binding and the generated schemas carry them.)
import { readFileSync } from 'node:fs'
import { join } from 'node:path'

import Ajv2020 from 'ajv/dist/2020'
import { describe, expect, it } from 'vitest'

import {
  validateTurnStartReceipt,
  validateTurnStartRegistration,
  type TurnStartHookRegistration,
  type TurnStartReceipt,
  type Violation,
} from '../lib/index.js'

type Doc = { [key: string]: any }
type Verdict = { ok: true; value: unknown } | { ok: false; violations: Violation[] }

const root = join(__dirname, '..')
const load = (dir: string, file: string): Doc => JSON.parse(readFileSync(join(root, dir, file), 'utf8'))
const clone = <T>(v: T): T => structuredClone(v)

const registration = load('examples', 'turn_start_registration.json') as TurnStartHookRegistration
const receipt = load('examples', 'turn_start_receipt.json') as TurnStartReceipt
const REGISTRATION_SCHEMA = 'loopx_turn_start_capability_hook_registration_v0'
const RECEIPT_SCHEMA = 'loopx_turn_start_hook_receipt_v0'

const ajv = new Ajv2020({ strict: true, allErrors: true })
const schemaValid = {
  registration: ajv.compile(load('schemas', `${REGISTRATION_SCHEMA}.schema.json`)),
  receipt: ajv.compile(load('schemas', `${RECEIPT_SCHEMA}.schema.json`)),
}

/** Sorted `path rule` strings of a verdict; [] when accepted. */
function rules(v: Verdict): string[] {
  return v.ok ? [] : v.violations.map((x) => `${x.path} ${x.rule}`).sort()
}

/** Validates `doc` as a value and as JSON text; both must agree. */
function both(validate: (doc: unknown) => Verdict, doc: unknown): string[] {
  const asValue = rules(validate(doc))
  expect(rules(validate(JSON.stringify(doc))), 'as JSON text').toEqual(asValue)
  return asValue
}

const reg = (edit: (d: Doc) => void): Doc => {
  const d = clone(registration) as Doc
  edit(d)
  return d
}
const rec = (fields: Doc): Doc => ({ ...clone(receipt), ...fields })

const EMPTY = {
  status: 'empty',
  agent_read_required: false,
  observations_new: 0,
  pending: 0,
  direct_questions: 0,
  verified_replies: 0,
  reactions_added: 0,
  external_writes_performed: 0,
}

describe('examples', () => {
  it('the registration is accepted as a value (the same object back) and as JSON text', () => {
    const asValue = validateTurnStartRegistration(registration)
    expect(asValue).toEqual({ ok: true, value: registration })
    if (asValue.ok) expect(asValue.value).toBe(registration)
    expect(validateTurnStartRegistration(JSON.stringify(registration))).toEqual({ ok: true, value: registration })
    expect(schemaValid.registration(registration)).toBe(true)
  })

  it('the receipt is accepted as a value and as JSON text', () => {
    expect(validateTurnStartReceipt(receipt)).toEqual({ ok: true, value: receipt })
    expect(validateTurnStartReceipt(JSON.stringify(receipt))).toEqual({ ok: true, value: receipt })
    expect(schemaValid.receipt(receipt)).toBe(true)
  })

  it('the receipt holds no string but its schema_version, hook_id and codes', () => {
    const strings = Object.entries(receipt)
      .filter(([, v]) => typeof v === 'string')
      .map(([k]) => k)
      .sort()
    expect(strings).toEqual(['hook_id', 'schema_version', 'status'])
    const schema = load('schemas', `${RECEIPT_SCHEMA}.schema.json`)
    expect(Object.keys(schema.properties).sort()).toEqual([
      'agent_read_required',
      'direct_questions',
      'error_code',
      'external_writes_performed',
      'hook_id',
      'observations_new',
      'pending',
      'reactions_added',
      'routes_failed',
      'routes_ok',
      'schema_version',
      'status',
      'verified_replies',
    ])
    expect(schema.additionalProperties).toBe(false)
  })

  it('every receipt status has a valid instance', () => {
    const statuses: Doc[] = [
      receipt,
      rec(EMPTY),
      rec({ status: 'partial', error_code: 'provider_unavailable', routes_failed: 1 }),
      rec({ status: 'partial', error_code: 'reaction_failed' }),
      ...['provider_contract_error', 'provider_permission_denied', 'provider_unavailable', 'timed_out'].map((s) =>
        rec({ ...EMPTY, status: s, error_code: s, routes_ok: 0, routes_failed: 1 }),
      ),
      // A failure status reports the first reads its dispatch made before it failed (they are spent).
      rec({ status: 'timed_out', error_code: 'timed_out', routes_ok: 0 }),
    ]
    for (const doc of statuses) {
      expect(both(validateTurnStartReceipt, doc), doc.status).toEqual([])
      expect(schemaValid.receipt(doc), doc.status).toBe(true)
    }
  })
})

describe('bad registrations are rejected with exact rules', () => {
  const cases: [string, Doc, string[]][] = [
    ['post-writeback phase', reg((d) => (d.phase = 'post_writeback')), ['/phase not_allowed_value']],
    [
      'wrong schema_version',
      reg((d) => (d.schema_version = 'loopx_post_writeback_capability_hook_registration_v0')),
      ['/schema_version bad_schema_version'],
    ],
    ['hook of another capability', reg((d) => (d.hook_id = 'other.read')), ['/hook_id capability_mismatch']],
    [
      'command with a path',
      reg((d) => (d.required_read.command = 'cat /home/user/inbox')),
      ['/required_read/command bad_token'],
    ],
    [
      'command with a double space',
      reg((d) => (d.required_read.command = 'loopx  inbox')),
      ['/required_read/command bad_token'],
    ],
    [
      'command of 17 words',
      reg((d) => (d.required_read.command = Array(17).fill('w').join(' '))),
      ['/required_read/command too_long'],
    ],
    [
      'command of 257 bytes',
      reg((d) => (d.required_read.command = 'a'.repeat(257))),
      ['/required_read/command too_long'],
    ],
    [
      'command holding a token',
      reg((d) => (d.required_read.command = 'loopx inbox --token=ghp_x')),
      ['/required_read/command credential_like_value'],
    ],
    [
      'extra descriptor field',
      reg((d) => (d.required_read.channel = 'agent')),
      ['/required_read/channel unknown_field'],
    ],
    [
      'unknown write scope',
      reg((d) => (d.write_scopes = ['owner_private_inbox', 'repository'])),
      ['/write_scopes/1 not_allowed_value'],
    ],
    [
      'duplicate write scope',
      reg((d) => (d.write_scopes = ['owner_private_inbox', 'owner_private_inbox'])),
      ['/write_scopes/1 duplicate_item'],
    ],
    ['no inbox scope', reg((d) => (d.write_scopes = ['owner_private_cursor'])), ['/write_scopes not_allowed_value']],
    ['no write scope', reg((d) => (d.write_scopes = [])), ['/write_scopes too_few_items']],
    ['timeout 30001', reg((d) => (d.budget.timeout_ms = 30001)), ['/budget/timeout_ms out_of_range']],
    ['timeout 0', reg((d) => (d.budget.timeout_ms = 0)), ['/budget/timeout_ms out_of_range']],
    [
      '17 attempts',
      reg((d) => (d.budget.max_attempts_per_dispatch = 17)),
      ['/budget/max_attempts_per_dispatch out_of_range'],
    ],
    ['17 routes', reg((d) => (d.budget.max_routes = 17)), ['/budget/max_routes out_of_range']],
    ['fractional routes', reg((d) => (d.budget.max_routes = 1.5)), ['/budget/max_routes wrong_type']],
    ['missing budget member', reg((d) => delete d.budget.max_routes), ['/budget/max_routes missing_field']],
    ['retry policy', reg((d) => (d.failure_policy = 'retry')), ['/failure_policy policy_not_isolate']],
  ]

  // What JSON Schema cannot say: hook ownership and credentials.
  const validatorOnly = new Set(['hook of another capability', 'command holding a token'])

  it.each(cases)('%s', (label, doc, expected) => {
    expect(both(validateTurnStartRegistration, doc)).toEqual(expected)
    expect(schemaValid.registration(doc)).toBe(validatorOnly.has(label))
  })

  it('bounds just inside are accepted', () => {
    const inside = reg((d) => {
      d.budget = { timeout_ms: 30000, max_attempts_per_dispatch: 16, max_routes: 16 }
      d.required_read.command = Array(16).fill('w').join(' ')
      d.write_scopes = ['owner_private_inbox']
    })
    expect(both(validateTurnStartRegistration, inside)).toEqual([])
    expect(schemaValid.registration(inside)).toBe(true)
  })

  it('a value JSON cannot hold is not_json_value at its pointer, never a throw', () => {
    const doc = reg((d) => (d.required_read.command = () => 'loopx'))
    expect(rules(validateTurnStartRegistration(doc))).toEqual(['/required_read/command not_json_value'])
    expect(rules(validateTurnStartRegistration('{not json'))).toEqual([' not_json_value'])
  })
})

describe('bad receipts are rejected with exact rules', () => {
  const cases: [string, Doc, string[]][] = [
    [
      'new observations without the read obligation',
      rec({ agent_read_required: false }),
      ['/agent_read_required not_allowed_value'],
    ],
    [
      'a read obligation with nothing pending',
      rec({ ...EMPTY, agent_read_required: true }),
      ['/agent_read_required not_allowed_value'],
    ],
    ['empty hiding new observations', rec({ status: 'empty' }), ['/observations_new out_of_range']],
    [
      'empty with an error code',
      rec({ ...EMPTY, error_code: 'provider_contract_error' }),
      ['/error_code not_allowed_value'],
    ],
    ['ok with a failed route', rec({ routes_failed: 1 }), ['/routes_failed out_of_range']],
    ['partial without an error code', rec({ status: 'partial', routes_failed: 1 }), ['/error_code not_allowed_value']],
    [
      'partial route code without a failed route',
      rec({ status: 'partial', error_code: 'timed_out' }),
      ['/routes_failed out_of_range'],
    ],
    [
      'partial with failed routes and a step code',
      rec({ status: 'partial', error_code: 'reaction_failed', routes_failed: 1 }),
      ['/error_code not_allowed_value'],
    ],
    [
      'pending material without the read',
      rec({ ...EMPTY, pending: 3, agent_read_required: false }),
      ['/agent_read_required not_allowed_value'],
    ],
    [
      'a failure status with another code',
      rec({ ...EMPTY, status: 'provider_unavailable', error_code: 'timed_out', routes_ok: 0 }),
      ['/error_code not_allowed_value'],
    ],
    ['more reactions than external writes', rec({ reactions_added: 3 }), ['/reactions_added out_of_range']],
    ['more new observations than pending', rec({ pending: 1 }), ['/observations_new out_of_range']],
    ['more direct questions than new observations', rec({ direct_questions: 3 }), ['/direct_questions out_of_range']],
    ['17 routes', rec({ routes_ok: 17 }), ['/routes_ok out_of_range']],
    ['negative count', rec({ pending: -1 }), ['/pending out_of_range']],
    ['fractional count', rec({ pending: 2.5 }), ['/pending wrong_type']],
    ['unknown status', rec({ status: 'success' }), ['/status not_allowed_value']],
    ['unknown error code', rec({ error_code: 'boom' }), ['/error_code not_allowed_value']],
    ['message content', rec({ message: 'please review the deploy' }), ['/message unknown_field']],
    ['a private cursor', rec({ cursor: 'c_123' }), ['/cursor unknown_field']],
    [
      'missing external_writes_performed',
      (() => {
        const d = rec({})
        delete d.external_writes_performed
        return d
      })(),
      ['/external_writes_performed missing_field'],
    ],
    [
      'missing error_code (nullable, still required)',
      (() => {
        const d = rec({})
        delete d.error_code
        return d
      })(),
      ['/error_code missing_field'],
    ],
    ['credential as hook_id', rec({ hook_id: 'xoxb-123' }), ['/hook_id credential_like_value']],
  ]

  it.each(cases)('%s', (_label, doc, expected) => {
    expect(both(validateTurnStartReceipt, doc)).toEqual(expected)
  })

  it('the schema rejects what it can express', () => {
    for (const fields of [
      { message: 'x' },
      { status: 'success' },
      { pending: -1 },
      { routes_ok: 17 },
      { error_code: 'boom' },
      { reactions_added: 4294967296 },
    ]) {
      expect(schemaValid.receipt(rec(fields)), JSON.stringify(fields)).toBe(false)
    }
  })
})
