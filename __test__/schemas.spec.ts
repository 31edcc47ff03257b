// The generated JSON Schemas (schemas/) compile under Ajv 2020 in strict mode,
// carry the contract-v0 constraints, accept every example (examples/) and
// reject mutated ones.
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

import Ajv2020 from 'ajv/dist/2020'
import { describe, expect, it } from 'vitest'

const root = join(__dirname, '..')
const schemaDir = join(root, 'schemas')
const exampleDir = join(root, 'examples')

type Json = null | boolean | number | string | Json[] | { [key: string]: Json }
type Doc = { [key: string]: Json }

const REGISTRATION = 'loopx_post_writeback_capability_hook_registration_v0'
const HOOK_INPUT = 'loopx_post_writeback_hook_input_v0'
const HOOK_RESULT = 'loopx_post_writeback_hook_result_v0'
const INTENT = 'loopx_post_writeback_intent_v0'
const INTENT_KIND = 'loopx_post_writeback_intent_kind_definition_v0'
const DISPATCH_RECEIPT = 'loopx_post_writeback_dispatch_receipt_v0'
const FAILURE_RECEIPT = 'loopx_post_writeback_failure_receipt_v0'
const VIOLATION = 'loopx_hooks_violation_v0'
const TURN_START_REGISTRATION = 'loopx_turn_start_capability_hook_registration_v0'
const TURN_START_RECEIPT = 'loopx_turn_start_hook_receipt_v0'
const ALL = [
  REGISTRATION,
  HOOK_INPUT,
  HOOK_RESULT,
  INTENT,
  INTENT_KIND,
  DISPATCH_RECEIPT,
  FAILURE_RECEIPT,
  VIOLATION,
  TURN_START_REGISTRATION,
  TURN_START_RECEIPT,
]

/** Which schema each example file is an instance of. */
const EXAMPLE_SCHEMA: Record<string, string> = {
  'registration.json': REGISTRATION,
  'intent_kind.json': INTENT_KIND,
  'hook_input.json': HOOK_INPUT,
  'hook_result.json': HOOK_RESULT,
  'dispatch_receipt.json': DISPATCH_RECEIPT,
  'turn_start_registration.json': TURN_START_REGISTRATION,
  'turn_start_receipt.json': TURN_START_RECEIPT,
}

const schemaFiles = readdirSync(schemaDir)
  .filter((f) => f.endsWith('.schema.json'))
  .sort()
const schemas: Record<string, Doc> = Object.fromEntries(
  schemaFiles.map((f) => [f.slice(0, -'.schema.json'.length), JSON.parse(readFileSync(join(schemaDir, f), 'utf8'))]),
)
const exampleFiles = readdirSync(exampleDir)
  .filter((f) => f.endsWith('.json'))
  .sort()
const examples: Record<string, Doc> = Object.fromEntries(
  exampleFiles.map((f) => [f, JSON.parse(readFileSync(join(exampleDir, f), 'utf8'))]),
)

function need<T>(v: T | undefined, what: string): T {
  if (v === undefined) throw new Error(`missing ${what}`)
  return v
}
const schemaOf = (name: string): Doc => need(schemas[name], `schema ${name}`)
const example = (file: string): Doc => need(examples[file], `example ${file}`)

const ajv = new Ajv2020({ strict: true, allErrors: true })
for (const name of Object.keys(schemas)) ajv.addSchema(schemaOf(name), name)

function valid(schema: string, doc: Json): boolean {
  const validate = ajv.getSchema(schema)
  if (!validate) throw new Error(`no schema ${schema}`)
  return validate(doc) as boolean
}

function errors(schema: string, doc: Json): unknown {
  const validate = ajv.getSchema(schema)!
  // A synchronous schema: the verdict lands in validate.errors.
  void validate(doc)
  return validate.errors
}

const clone = <T>(v: T): T => structuredClone(v)

const SUBSCHEMA_MAPS = ['properties', 'patternProperties', '$defs', 'dependentSchemas']
const SUBSCHEMA_LISTS = ['anyOf', 'oneOf', 'allOf', 'prefixItems']
const SUBSCHEMAS = [
  'items',
  'additionalProperties',
  'propertyNames',
  'contains',
  'not',
  'if',
  'then',
  'else',
  'unevaluatedItems',
  'unevaluatedProperties',
]

/** Every schema node (object) in `node`, with its JSON Pointer; keywords holding data are not entered. */
function* nodes(node: Json, path = ''): Generator<[string, Doc]> {
  if (node === null || typeof node !== 'object' || Array.isArray(node)) return
  yield [path, node]
  for (const [k, v] of Object.entries(node)) {
    if (SUBSCHEMA_MAPS.includes(k) && v && typeof v === 'object' && !Array.isArray(v)) {
      for (const [name, sub] of Object.entries(v)) yield* nodes(sub, `${path}/${k}/${name}`)
    } else if (SUBSCHEMA_LISTS.includes(k) && Array.isArray(v)) {
      for (const [i, sub] of v.entries()) yield* nodes(sub, `${path}/${k}/${i}`)
    } else if (SUBSCHEMAS.includes(k)) {
      yield* nodes(v, `${path}/${k}`)
    }
  }
}

/** Every node whose `properties` holds `name`, across one schema. */
function propertySchemas(schema: string, name: string): Doc[] {
  const out: Doc[] = []
  for (const [, node] of nodes(schemaOf(schema))) {
    const props = node.properties
    if (props && typeof props === 'object' && !Array.isArray(props) && name in props) out.push(props[name] as Doc)
  }
  return out
}

/** Resolves a local `$ref` (and an `anyOf` with null) down to the node that constrains the value. */
function resolve(schema: string, node: Doc): Doc {
  if (typeof node.$ref === 'string') {
    const ptr = node.$ref.replace(/^#/, '')
    let cur: Json = schemaOf(schema)
    for (const tok of ptr.split('/').slice(1))
      cur = need((cur as Doc)[tok.replace(/~1/g, '/').replace(/~0/g, '~')], node.$ref)
    return resolve(schema, cur as Doc)
  }
  if (Array.isArray(node.anyOf)) {
    const nonNull = (node.anyOf as Doc[]).filter((s) => s.type !== 'null')
    if (nonNull.length === 1) return resolve(schema, nonNull[0]!)
  }
  return node
}

describe('schemas', () => {
  it('are exactly the ten contract documents', () => {
    expect(Object.keys(schemas).sort()).toEqual([...ALL].sort())
  })

  it.each(schemaFiles)('%s compiles under Ajv 2020 strict mode', (file) => {
    const fresh = new Ajv2020({ strict: true, allErrors: true })
    expect(() => fresh.compile(JSON.parse(readFileSync(join(schemaDir, file), 'utf8')))).not.toThrow()
  })

  it.each(ALL)('%s has $schema 2020-12, a URN $id and a title', (name) => {
    const s = schemaOf(name)
    expect(s.$schema).toBe('https://json-schema.org/draft/2020-12/schema')
    expect(s.$id).toBe(`urn:loopx-hooks:schema:${name}`)
    expect(s.title).toBe(name)
    expect(JSON.stringify(s)).not.toMatch(/"\$id":"https?:/)
  })

  // The optional members of the whole contract: a payload-schema array node's
  // `uniqueItems` (contract-v0 section 1: "uniqueItems optional"), and the hook
  // input's settlement members, present exactly when the registration requests
  // `settlement_identity` (contract-v0 section 1; the hook-input validator holds
  // an input against its registration, which a schema alone cannot).
  const OPTIONAL = new Set([
    '/$defs/PayloadArraySchema/properties/uniqueItems',
    ...['goal_id', 'agent_id', 'todo_id', 'turn_instance_id', 'state_revision'].map(
      (f) => `/$defs/ReceiptSource/properties/${f}`,
    ),
  ])

  it.each(ALL)('%s: every object is closed and requires every property', (name) => {
    let objects = 0
    for (const [path, node] of nodes(schemaOf(name))) {
      if (!('properties' in node)) continue
      objects++
      const keys = Object.keys(node.properties as Doc).filter((k) => !OPTIONAL.has(`${path}/properties/${k}`))
      expect(node.type, path).toBe('object')
      expect(node.additionalProperties, path).toBe(false)
      expect([...((node.required as string[]) ?? [])].sort(), path).toEqual(keys.sort())
    }
    expect(objects).toBeGreaterThan(0)
  })

  it.each(ALL)('%s: no non-standard format and no uint formats', (name) => {
    for (const [path, node] of nodes(schemaOf(name))) expect(node.format, path).toBeUndefined()
  })

  it('pin schema_version to one value each', () => {
    const expected: Record<string, string> = {
      [REGISTRATION]: REGISTRATION,
      [HOOK_INPUT]: HOOK_INPUT,
      [HOOK_RESULT]: HOOK_RESULT,
      [INTENT]: INTENT,
      [DISPATCH_RECEIPT]: DISPATCH_RECEIPT,
      [FAILURE_RECEIPT]: FAILURE_RECEIPT,
      [TURN_START_REGISTRATION]: TURN_START_REGISTRATION,
      [TURN_START_RECEIPT]: TURN_START_RECEIPT,
    }
    for (const [name, version] of Object.entries(expected)) {
      const root = resolve(name, schemaOf(name))
      const v = resolve(name, (root.properties as Doc).schema_version as Doc)
      const values = 'const' in v ? [v.const] : v.enum
      expect(values, name).toEqual([version])
    }
    const projection = propertySchemas(HOOK_INPUT, 'projection').map((n) => resolve(HOOK_INPUT, n))
    const pv = resolve(HOOK_INPUT, (need(projection[0], 'projection').properties as Doc).schema_version as Doc)
    expect('const' in pv ? [pv.const] : pv.enum).toEqual(['loopx_post_writeback_event_projection_v0'])
  })

  it('pin boundary and authority flags to const false', () => {
    const flags: [string, string][] = [
      ...[
        'raw_task_text_recorded',
        'raw_logs_recorded',
        'raw_trajectory_recorded',
        'raw_session_transcript_recorded',
        'credential_values_recorded',
        'absolute_paths_recorded',
      ].map((f): [string, string] => [HOOK_INPUT, f]),
      [INTENT, 'grants_new_action_authority'],
      [INTENT, 'external_write_performed'],
      [HOOK_RESULT, 'grants_new_action_authority'],
      [HOOK_RESULT, 'external_write_performed'],
    ]
    for (const [schema, flag] of flags) {
      const found = propertySchemas(schema, flag)
      expect(found.length, `${schema} ${flag}`).toBeGreaterThan(0)
      for (const node of found) expect(node, `${schema} ${flag}`).toMatchObject({ type: 'boolean', const: false })
    }
  })

  it('carry the grammar patterns and bounds', () => {
    const TOKEN = '^[a-z][a-z0-9_]*(\\.[a-z][a-z0-9_]*)*$'
    const OPAQUE = '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$'
    const prop = (schema: string, name: string) =>
      resolve(schema, need(propertySchemas(schema, name)[0], `${schema} ${name}`))
    expect(prop(REGISTRATION, 'hook_id')).toMatchObject({
      type: 'string',
      pattern: TOKEN,
      minLength: 1,
      maxLength: 128,
    })
    expect(prop(REGISTRATION, 'intent_kinds')).toMatchObject({
      minItems: 1,
      maxItems: 16,
      uniqueItems: true,
      items: { pattern: TOKEN, maxLength: 128 },
    })
    expect(prop(REGISTRATION, 'event_kinds')).toMatchObject({ minItems: 1, maxItems: 2, uniqueItems: true })
    expect(prop(REGISTRATION, 'requested_read_scope')).toMatchObject({ minItems: 1, maxItems: 2, uniqueItems: true })
    expect(prop(REGISTRATION, 'max_invocations_per_dispatch')).toMatchObject({
      type: 'integer',
      minimum: 1,
      maximum: 4,
    })
    expect(prop(REGISTRATION, 'max_intents_per_dispatch')).toMatchObject({ minimum: 1, maximum: 16 })
    expect(prop(REGISTRATION, 'max_result_bytes')).toMatchObject({ minimum: 256, maximum: 65536 })
    expect(prop(REGISTRATION, 'timeout_ms')).toMatchObject({ minimum: 1, maximum: 30000 })
    expect(prop(HOOK_INPUT, 'receipt_id')).toMatchObject({ type: 'string', pattern: OPAQUE })
    expect(prop(HOOK_INPUT, 'committed_at')).toMatchObject({
      pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d{1,9})?Z$',
    })
    expect(prop(HOOK_INPUT, 'dispatch_id')).toMatchObject({ pattern: '^pwh_[0-9a-f]{64}$' })
    expect(prop(HOOK_INPUT, 'fact_refs')).toMatchObject({ maxItems: 32, uniqueItems: true, items: { pattern: OPAQUE } })
    expect(prop(INTENT, 'intent_id')).toMatchObject({ pattern: '^pwi_[0-9a-f]{64}$' })
    expect(prop(INTENT, 'policy_version')).toMatchObject({ pattern: '^[a-z0-9][a-z0-9_.-]{0,63}$' })
    expect(prop(INTENT, 'requested_write_scope')).toMatchObject({ maxItems: 8, uniqueItems: true })
    expect(prop(INTENT, 'max_attempts')).toMatchObject({ minimum: 1, maximum: 8 })
    expect(prop(INTENT_KIND, 'operations')).toMatchObject({ minItems: 1, maxItems: 8, uniqueItems: true })
    expect(prop(HOOK_RESULT, 'intents')).toMatchObject({ maxItems: 16 })
    expect(prop(DISPATCH_RECEIPT, 'intent_ids')).toMatchObject({ maxItems: 16, uniqueItems: true })
    expect(prop(DISPATCH_RECEIPT, 'attempt')).toMatchObject({ minimum: 1, maximum: 4 })
  })
})

describe('examples', () => {
  it('each has a schema, and every schema has an instance', () => {
    for (const file of exampleFiles) expect(EXAMPLE_SCHEMA, file).toHaveProperty([file])
    expect(Object.keys(EXAMPLE_SCHEMA).sort()).toEqual(exampleFiles)
  })

  it.each(exampleFiles)('%s is valid against its schema', (file) => {
    expect(errors(need(EXAMPLE_SCHEMA[file], file), example(file)), file).toBeNull()
  })

  it('the result intent is a valid intent, bound to the input dispatch', () => {
    const intent = need((example('hook_result.json').intents as Doc[])[0], 'intent')
    expect(errors(INTENT, intent)).toBeNull()
    expect(intent.source_dispatch_id).toBe(example('hook_input.json').dispatch_id)
    expect(example('dispatch_receipt.json')).toMatchObject({
      dispatch_id: example('hook_input.json').dispatch_id,
      intent_ids: [intent.intent_id],
      status: 'proposed',
    })
  })

  it('an intent kind using every payload-schema node type is valid', () => {
    const kind = clone(example('intent_kind.json')) as any
    Object.assign(kind.payload_schema.properties, {
      count: { type: 'integer', minimum: 0, maximum: 9007199254740991 },
      flag: { type: 'boolean' },
      mode: { type: 'string', enum: ['weekly', 'daily'] },
      nested: {
        type: 'object',
        properties: { refs: { type: 'array', items: { type: 'string', format: 'opaque_ref' }, maxItems: 4 } },
        required: ['refs'],
        additionalProperties: false,
      },
    })
    kind.payload_schema.required.push('count', 'flag', 'mode', 'nested')
    expect(errors(INTENT_KIND, kind)).toBeNull()
  })

  it('a failure receipt and a violation are valid', () => {
    const dispatch_id = need(example('hook_input.json').dispatch_id, 'dispatch_id')
    expect(
      errors(FAILURE_RECEIPT, {
        schema_version: FAILURE_RECEIPT,
        dispatch_id,
        hook_id: 'periodic_report.runtime_trigger',
        code: 'result_contract_rejected',
        rule: 'intent_id_mismatch',
        attempt: 1,
      }),
    ).toBeNull()
    expect(errors(VIOLATION, { path: '/budget/timeout_ms', rule: 'out_of_range' })).toBeNull()
  })
})

describe('mutated examples are rejected', () => {
  const reg = () => clone(example('registration.json')) as any
  const input = () => clone(example('hook_input.json')) as any
  const result = () => clone(example('hook_result.json')) as any
  const receipt = () => clone(example('dispatch_receipt.json')) as any
  const kind = () => clone(example('intent_kind.json')) as any
  const failure = () =>
    ({
      schema_version: FAILURE_RECEIPT,
      dispatch_id: example('hook_input.json').dispatch_id,
      hook_id: 'periodic_report.runtime_trigger',
      code: 'producer_failed',
      rule: null,
      attempt: 1,
    }) as any
  const long = 'a'.repeat(129)

  const cases: [string, string, () => unknown][] = [
    // unknown fields
    ['registration: unknown top-level field', REGISTRATION, () => ({ ...reg(), extra: 1 })],
    [
      'registration: unknown budget field',
      REGISTRATION,
      () => {
        const d = reg()
        d.budget.extra = 1
        return d
      },
    ],
    [
      'input: unknown source field',
      HOOK_INPUT,
      () => {
        const d = input()
        d.source.display_name = 'x'
        return d
      },
    ],
    [
      'input: unknown boundary field',
      HOOK_INPUT,
      () => {
        const d = input()
        d.boundary.other = false
        return d
      },
    ],
    [
      'intent: unknown field',
      HOOK_RESULT,
      () => {
        const d = result()
        d.intents[0].command = 'x'
        return d
      },
    ],
    ['receipt: unknown field', DISPATCH_RECEIPT, () => ({ ...receipt(), message: 'x' })],
    ['violation: unknown field', VIOLATION, () => ({ path: '', rule: 'wrong_type', detail: 'x' })],
    // missing fields
    [
      'registration: missing timeout_ms',
      REGISTRATION,
      () => {
        const d = reg()
        delete d.budget.timeout_ms
        return d
      },
    ],
    [
      'registration: missing failure_policy',
      REGISTRATION,
      () => {
        const d = reg()
        delete d.failure_policy
        return d
      },
    ],
    [
      'input: missing committed_at',
      HOOK_INPUT,
      () => {
        const d = input()
        delete d.source.committed_at
        return d
      },
    ],
    [
      'receipt: missing result_digest (nullable, still required)',
      DISPATCH_RECEIPT,
      () => {
        const d = receipt()
        delete d.result_digest
        return d
      },
    ],
    [
      'receipt: missing failure (nullable, still required)',
      DISPATCH_RECEIPT,
      () => {
        const d = receipt()
        delete d.failure
        return d
      },
    ],
    [
      'failure receipt: missing rule (nullable, still required)',
      FAILURE_RECEIPT,
      () => {
        const d = failure()
        delete d.rule
        return d
      },
    ],
    [
      'kind: missing payload_schema',
      INTENT_KIND,
      () => {
        const d = kind()
        delete d.payload_schema
        return d
      },
    ],
    // grammar and length
    ['registration: 129-char hook_id', REGISTRATION, () => ({ ...reg(), hook_id: long })],
    ['registration: 129-char intent kind', REGISTRATION, () => ({ ...reg(), intent_kinds: [long] })],
    ['registration: uppercase token', REGISTRATION, () => ({ ...reg(), capability_id: 'Periodic' })],
    [
      'intent: 129-char operation',
      HOOK_RESULT,
      () => {
        const d = result()
        d.intents[0].operation = long
        return d
      },
    ],
    [
      'input: 129-char opaque ref',
      HOOK_INPUT,
      () => {
        const d = input()
        d.source.receipt_id = 'r'.repeat(129)
        return d
      },
    ],
    [
      'input: path as opaque ref',
      HOOK_INPUT,
      () => {
        const d = input()
        d.source.goal_id = 'home/user/goal'
        return d
      },
    ],
    [
      'input: URL as opaque ref',
      HOOK_INPUT,
      () => {
        const d = input()
        d.projection.fact_refs = ['https://x.example']
        return d
      },
    ],
    [
      'input: local-time committed_at',
      HOOK_INPUT,
      () => {
        const d = input()
        d.source.committed_at = '2026-08-26T00:00:00+02:00'
        return d
      },
    ],
    [
      'intent: bad policy_version',
      HOOK_RESULT,
      () => {
        const d = result()
        d.intents[0].policy_version = 'Weekly v0'
        return d
      },
    ],
    // boundary and authority flags
    [
      'input: boundary flag true',
      HOOK_INPUT,
      () => {
        const d = input()
        d.boundary.raw_logs_recorded = true
        return d
      },
    ],
    [
      'input: credential flag true',
      HOOK_INPUT,
      () => {
        const d = input()
        d.boundary.credential_values_recorded = true
        return d
      },
    ],
    [
      'intent: grants authority',
      HOOK_RESULT,
      () => {
        const d = result()
        d.intents[0].grants_new_action_authority = true
        return d
      },
    ],
    ['intent: external write performed', INTENT, () => ({ ...result().intents[0], external_write_performed: true })],
    // ids
    ['input: RFC placeholder dispatch_id', HOOK_INPUT, () => ({ ...input(), dispatch_id: 'pwh_sha256_opaque' })],
    ['input: uppercase dispatch_id', HOOK_INPUT, () => ({ ...input(), dispatch_id: `pwh_${'A'.repeat(64)}` })],
    ['input: dispatch_id without prefix', HOOK_INPUT, () => ({ ...input(), dispatch_id: 'f'.repeat(64) })],
    [
      'intent: intent_id with dispatch prefix',
      INTENT,
      () => ({ ...result().intents[0], intent_id: `pwh_${'0'.repeat(64)}` }),
    ],
    ['receipt: short result_digest', DISPATCH_RECEIPT, () => ({ ...receipt(), result_digest: 'abc' })],
    ['receipt: bad dispatch_id', DISPATCH_RECEIPT, () => ({ ...receipt(), dispatch_id: 'pwh_' })],
    // closed sets and schema versions
    [
      'registration: wrong schema_version',
      REGISTRATION,
      () => ({ ...reg(), schema_version: 'loopx_capability_hook_registration_v0' }),
    ],
    ['registration: unknown phase', REGISTRATION, () => ({ ...reg(), phase: 'interaction_projection' })],
    ['registration: policy other than isolate', REGISTRATION, () => ({ ...reg(), failure_policy: 'retry' })],
    ['registration: unknown event kind', REGISTRATION, () => ({ ...reg(), event_kinds: ['todo_started'] })],
    [
      'input: wrong transition',
      HOOK_INPUT,
      () => {
        const d = input()
        d.projection.transition = 'goal_completed'
        return d
      },
    ],
    ['result: unknown status', HOOK_RESULT, () => ({ ...result(), status: 'accepted' })],
    ['violation: unknown rule', VIOLATION, () => ({ path: '', rule: 'bad_thing' })],
    // bounds, arrays, types
    [
      'registration: timeout_ms over 30000',
      REGISTRATION,
      () => {
        const d = reg()
        d.budget.timeout_ms = 30001
        return d
      },
    ],
    [
      'registration: max_result_bytes under 256',
      REGISTRATION,
      () => {
        const d = reg()
        d.budget.max_result_bytes = 255
        return d
      },
    ],
    [
      'registration: non-integral invocations',
      REGISTRATION,
      () => {
        const d = reg()
        d.budget.max_invocations_per_dispatch = 1.5
        return d
      },
    ],
    [
      'registration: timeout as string',
      REGISTRATION,
      () => {
        const d = reg()
        d.budget.timeout_ms = '1000'
        return d
      },
    ],
    [
      'registration: duplicate event kinds',
      REGISTRATION,
      () => ({ ...reg(), event_kinds: ['todo_completed', 'todo_completed'] }),
    ],
    ['registration: no intent kinds', REGISTRATION, () => ({ ...reg(), intent_kinds: [] })],
    [
      'input: 33 fact refs',
      HOOK_INPUT,
      () => {
        const d = input()
        d.projection.fact_refs = Array.from({ length: 33 }, (_, i) => `f${i}`)
        return d
      },
    ],
    [
      'result: 17 intents',
      HOOK_RESULT,
      () => {
        const d = result()
        d.intents = Array(17).fill(d.intents[0])
        return d
      },
    ],
    [
      'intent: max_attempts 9',
      INTENT,
      () => {
        const d = result().intents[0]
        d.budget.max_attempts = 9
        return d
      },
    ],
    ['intent: payload not an object', INTENT, () => ({ ...result().intents[0], payload: ['x'] })],
    ['receipt: attempt 0', DISPATCH_RECEIPT, () => ({ ...receipt(), attempt: 0 })],
    [
      'receipt: duplicate intent ids',
      DISPATCH_RECEIPT,
      () => {
        const d = receipt()
        d.intent_ids = [d.intent_ids[0], d.intent_ids[0]]
        return d
      },
    ],
    ['kind: no operations', INTENT_KIND, () => ({ ...kind(), operations: [] })],
    [
      'kind: free-text string in payload schema',
      INTENT_KIND,
      () => {
        const d = kind()
        d.payload_schema.properties.segment_ref = { type: 'string' }
        return d
      },
    ],
    [
      'kind: payload schema not closed',
      INTENT_KIND,
      () => {
        const d = kind()
        delete d.payload_schema.additionalProperties
        return d
      },
    ],
    [
      'kind: payload array without maxItems',
      INTENT_KIND,
      () => {
        const d = kind()
        delete d.payload_schema.properties.source_event_refs.maxItems
        return d
      },
    ],
    [
      'kind: payload array maxItems 33',
      INTENT_KIND,
      () => {
        const d = kind()
        d.payload_schema.properties.source_event_refs.maxItems = 33
        return d
      },
    ],
    [
      'kind: payload integer without maximum',
      INTENT_KIND,
      () => {
        const d = kind()
        d.payload_schema.properties.n = { type: 'integer', minimum: 0 }
        return d
      },
    ],
    [
      'kind: payload schema keyword outside the subset',
      INTENT_KIND,
      () => {
        const d = kind()
        d.payload_schema.properties.segment_ref.pattern = '.*'
        return d
      },
    ],
    ['failure receipt: unknown code', FAILURE_RECEIPT, () => ({ ...failure(), code: 'crashed' })],
  ]

  it.each(cases)('%s', (_label, schema, mutate) => {
    expect(valid(schema, mutate() as Json)).toBe(false)
  })
})
