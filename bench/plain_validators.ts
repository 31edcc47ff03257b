/**
 * The plain path's validators (see baseline.ts for what the plain path is):
 * Ajv (JSON Schema 2020-12) compiled once from the committed `schemas/`, plus
 * the hand-written checks JSON Schema cannot express and ours perform, and the
 * dispatch identity (node:crypto sha256 over `canonicalize`, RFC 8785). Shared
 * by the SQLite (`baseline.ts`) and PostgreSQL (`plain_pg.ts`) plain paths.
 */
import { Buffer } from 'node:buffer'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

import { Ajv2020, type ErrorObject } from 'ajv/dist/2020.js'

import type { IntentKindDefinition, PostWritebackHookRegistration } from '../bindings/index.js'
import { DISPATCH_DOMAIN, jcs, sha256Hex } from './fixtures.js'
import { ROOT } from './pkg.js'

type Ajv = InstanceType<typeof Ajv2020>
type ValidateFn = ReturnType<Ajv['compile']>

export type Violation = { path: string; rule: string }
export type Verdict<T> = { ok: true; value: T } | { ok: false; violations: Violation[] }

const SCHEMA = (name: string) => `urn:loopx-hooks:schema:${name}`
const OPAQUE_REF = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/
/** contract-v0 section 1: known token prefixes, AWS key ids, JWTs. */
const CREDENTIAL_LIKE =
  /^(?:ghp_|gho_|ghu_|ghs_|ghr_|github_pat_|glpat-|sk-|sk_live_|sk_test_|rk_live_|xoxb-|xoxp-|xoxa-|xapp-|npm_|AIza)|^(?:AKIA|ASIA)[A-Z0-9]{16}$|^eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/
export const TRANSITION: Record<string, string> = {
  todo_completed: 'segment_completed',
  replan_recorded: 'replan_recorded',
}

/** Ajv error keyword to our rule names (close enough for a verdict). */
const RULE: Record<string, string> = {
  additionalProperties: 'unknown_field',
  required: 'missing_field',
  type: 'wrong_type',
  pattern: 'bad_token',
  enum: 'not_allowed_value',
  const: 'not_allowed_value',
  minimum: 'out_of_range',
  maximum: 'out_of_range',
  minItems: 'too_few_items',
  maxItems: 'too_many_items',
  maxLength: 'too_long',
  minLength: 'bad_token',
  uniqueItems: 'duplicate_item',
  format: 'bad_opaque_ref',
}

function fromAjv(validate: ValidateFn, prefix = ''): Violation[] {
  return (validate.errors ?? []).map((e: ErrorObject) => ({
    path: prefix + e.instancePath,
    rule: RULE[e.keyword] ?? 'wrong_type',
  }))
}

/** Every string value of a document, checked for credential-like text (our `grammar::string`). */
function credentials(v: unknown, path: string, out: Violation[]): void {
  if (typeof v === 'string') {
    if (CREDENTIAL_LIKE.test(v)) out.push({ path, rule: 'credential_like_value' })
  } else if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) credentials(v[i], `${path}/${i}`, out)
  } else if (v !== null && typeof v === 'object') {
    for (const k in v) credentials((v as any)[k], `${path}/${k}`, out)
  }
}

const owned = (name: string, capability: string) =>
  name.length > capability.length + 1 && name.startsWith(capability) && name[capability.length] === '.'

interface CompiledKind {
  definition: IntentKindDefinition
  payload: ValidateFn
}

/** The validators of the plain path: Ajv plus the hand-written checks. */
export class PlainValidators {
  readonly ajv: Ajv
  readonly kinds = new Map<string, CompiledKind>()
  readonly #registration: ValidateFn
  readonly #result: ValidateFn
  readonly #input: ValidateFn
  readonly #kindDefinition: ValidateFn
  readonly #request: ValidateFn

  /** `allErrors` for standalone validators (every violation, like ours); the dispatch path stops at the first. */
  constructor(allErrors: boolean) {
    this.ajv = new Ajv2020({ strict: true, allErrors })
    this.ajv.addFormat('opaque_ref', OPAQUE_REF)
    const dir = join(ROOT, 'schemas')
    for (const f of readdirSync(dir).filter((f) => f.endsWith('.schema.json'))) {
      this.ajv.addSchema(JSON.parse(readFileSync(join(dir, f), 'utf8')))
    }
    const get = (name: string) => {
      const v = this.ajv.getSchema(SCHEMA(name))
      if (!v) throw new Error(`no schema ${name}`)
      return v
    }
    this.#registration = get('loopx_post_writeback_capability_hook_registration_v0')
    this.#result = get('loopx_post_writeback_hook_result_v0')
    this.#input = get('loopx_post_writeback_hook_input_v0')
    this.#kindDefinition = get('loopx_post_writeback_intent_kind_definition_v0')
    // The request has no committed schema (it is not a contract document);
    // this mirrors the serde types: every field required, none unknown.
    const str = { type: 'string' }
    const obj = (properties: Record<string, unknown>) => ({
      type: 'object',
      properties,
      required: Object.keys(properties),
      additionalProperties: false,
    })
    this.#request = this.ajv.compile({
      ...obj({
        settlement: obj({ goal_id: str, agent_id: str, todo_id: str, turn_instance_id: str, effect_id: str }),
        receipt: obj({
          receipt_id: str,
          effect_id: str,
          step_kind: str,
          status: str,
          checkpointed: { type: 'boolean' },
          state_revision: str,
          committed_at: str,
        }),
        event: {
          type: 'object',
          properties: { event_kind: str, fact_refs: { type: 'array', items: str } },
          required: ['event_kind'],
          additionalProperties: false,
        },
      }),
    })
  }

  /** The registration schema alone (Ajv, no hand-written checks): what the registration target compares with. */
  ajvRegistration(doc: unknown): boolean {
    return this.#registration(doc) as boolean
  }

  validateRequest(doc: unknown): boolean {
    return this.#request(doc) as boolean
  }

  defineIntentKind(doc: IntentKindDefinition): Verdict<IntentKindDefinition> {
    if (!this.#kindDefinition(doc)) return { ok: false, violations: fromAjv(this.#kindDefinition) }
    const violations: Violation[] = []
    credentials(doc, '', violations)
    if (!owned(doc.intent_kind, doc.capability_id))
      violations.push({ path: '/intent_kind', rule: 'capability_mismatch' })
    if (this.kinds.has(doc.intent_kind)) violations.push({ path: '/intent_kind', rule: 'duplicate_item' })
    let payload: ValidateFn
    try {
      payload = this.ajv.compile(doc.payload_schema as object)
    } catch {
      violations.push({ path: '/payload_schema', rule: 'unsupported_schema' })
      return { ok: false, violations }
    }
    if (violations.length > 0) return { ok: false, violations }
    this.kinds.set(doc.intent_kind, { definition: doc, payload })
    return { ok: true, value: doc }
  }

  validateRegistration(doc: any): Verdict<PostWritebackHookRegistration> {
    const violations: Violation[] = []
    if (!this.#registration(doc)) {
      violations.push(...fromAjv(this.#registration))
      if (doc === null || typeof doc !== 'object') return { ok: false, violations }
    }
    credentials(doc, '', violations)
    const capability: unknown = doc.capability_id
    if (typeof capability === 'string') {
      if (typeof doc.hook_id === 'string' && !owned(doc.hook_id, capability))
        violations.push({ path: '/hook_id', rule: 'capability_mismatch' })
      if (Array.isArray(doc.intent_kinds)) {
        doc.intent_kinds.forEach((kind: unknown, i: number) => {
          if (typeof kind !== 'string') return
          const defined = this.kinds.get(kind)
          if (!defined) violations.push({ path: `/intent_kinds/${i}`, rule: 'unknown_intent_kind' })
          if (!owned(kind, capability) || (defined && defined.definition.capability_id !== capability)) {
            violations.push({ path: `/intent_kinds/${i}`, rule: 'capability_mismatch' })
          }
        })
      }
    }
    return violations.length === 0 ? { ok: true, value: doc } : { ok: false, violations }
  }

  /**
   * A provider's result against the admitted registration and core's
   * dispatch id. `canonical` receives the result's RFC 8785 text when the
   * caller wants it (size check and digest share one canonicalisation).
   */
  validateHookResult(
    doc: any,
    registration: PostWritebackHookRegistration,
    dispatchId: string,
    out?: { canonical?: string },
  ): Verdict<any> {
    const violations: Violation[] = []
    if (!this.#result(doc)) {
      violations.push(...fromAjv(this.#result))
      if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) return { ok: false, violations }
    }
    credentials(doc, '', violations)
    const items: unknown[] = Array.isArray(doc.intents) ? doc.intents : []
    const budget = Math.min(registration.budget.max_intents_per_dispatch, 16)
    if (doc.status === 'not_applicable' && items.length > 0)
      violations.push({ path: '/intents', rule: 'too_many_items' })
    else if (doc.status === 'proposed' && items.length === 0)
      violations.push({ path: '/intents', rule: 'too_few_items' })
    else if (items.length > budget) violations.push({ path: '/intents', rule: 'intent_budget_exceeded' })
    const seen = new Set<string>()
    for (let i = 0; i < items.length; i++) {
      const it: any = items[i]
      if (it === null || typeof it !== 'object') continue
      const at = `/intents/${i}`
      if (typeof it.hook_id === 'string' && it.hook_id !== registration.hook_id)
        violations.push({ path: `${at}/hook_id`, rule: 'hook_mismatch' })
      if (typeof it.capability_id === 'string' && it.capability_id !== registration.capability_id) {
        violations.push({ path: `${at}/capability_id`, rule: 'capability_mismatch' })
      }
      if (typeof it.source_dispatch_id === 'string' && it.source_dispatch_id !== dispatchId) {
        violations.push({ path: `${at}/source_dispatch_id`, rule: 'dispatch_mismatch' })
      }
      const kind =
        typeof it.intent_kind === 'string' && registration.intent_kinds.includes(it.intent_kind)
          ? this.kinds.get(it.intent_kind)
          : undefined
      if (typeof it.intent_kind === 'string' && !kind)
        violations.push({ path: `${at}/intent_kind`, rule: 'unknown_intent_kind' })
      if (kind && typeof it.operation === 'string' && !kind.definition.operations.includes(it.operation)) {
        violations.push({ path: `${at}/operation`, rule: 'unknown_operation' })
      }
      let payloadOk = false
      if (kind) {
        payloadOk = kind.payload(it.payload) as boolean
        if (!payloadOk) violations.push(...fromAjv(kind.payload, `${at}/payload`))
      }
      if (kind && payloadOk && typeof it.intent_id === 'string' && typeof it.policy_version === 'string') {
        const expected =
          'pwi_' +
          sha256Hex(
            jcs({
              domain: 'loopx_post_writeback_intent_v0',
              dispatch_id: dispatchId,
              intent_kind: it.intent_kind,
              policy_version: it.policy_version,
              payload: it.payload,
            }),
          )
        if (it.intent_id !== expected) violations.push({ path: `${at}/intent_id`, rule: 'intent_id_mismatch' })
      }
      if (typeof it.intent_id === 'string') {
        if (seen.has(it.intent_id)) violations.push({ path: `${at}/intent_id`, rule: 'duplicate_item' })
        seen.add(it.intent_id)
      }
    }
    let canonical: string | undefined
    try {
      canonical = jcs(doc)
    } catch {
      violations.push({ path: '', rule: 'not_json_value' })
    }
    if (canonical !== undefined && Buffer.byteLength(canonical) > registration.budget.max_result_bytes) {
      violations.push({ path: '', rule: 'result_too_large' })
    }
    if (out) out.canonical = canonical
    return violations.length === 0 ? { ok: true, value: doc } : { ok: false, violations }
  }

  /** The projected input, proven public-safe before it is sent or stored. */
  validateHookInput(doc: any, registration: PostWritebackHookRegistration, registrationDigest: string): Verdict<any> {
    const violations: Violation[] = []
    if (!this.#input(doc)) {
      violations.push(...fromAjv(this.#input))
      if (doc === null || typeof doc !== 'object') return { ok: false, violations }
    }
    credentials(doc, '', violations)
    if (typeof doc.hook_id === 'string' && doc.hook_id !== registration.hook_id)
      violations.push({ path: '/hook_id', rule: 'hook_mismatch' })
    if (typeof doc.capability_id === 'string' && doc.capability_id !== registration.capability_id) {
      violations.push({ path: '/capability_id', rule: 'capability_mismatch' })
    }
    const source = doc.source ?? {}
    const kind = source.event_kind
    if (typeof kind === 'string' && !(registration.event_kinds as string[]).includes(kind)) {
      violations.push({ path: '/source/event_kind', rule: 'not_allowed_value' })
    }
    if (typeof kind === 'string' && doc.projection && TRANSITION[kind] !== doc.projection.transition) {
      violations.push({ path: '/projection/transition', rule: 'transition_mismatch' })
    }
    if (
      typeof doc.dispatch_id === 'string' &&
      typeof source.receipt_id === 'string' &&
      typeof source.effect_id === 'string' &&
      typeof kind === 'string'
    ) {
      const expected = dispatchIdOf(source.receipt_id, source.effect_id, registration, registrationDigest, kind)
      if (doc.dispatch_id !== expected) violations.push({ path: '/dispatch_id', rule: 'dispatch_id_mismatch' })
    }
    return violations.length === 0 ? { ok: true, value: doc } : { ok: false, violations }
  }
}

export function dispatchIdOf(
  receiptId: string,
  effectId: string,
  registration: PostWritebackHookRegistration,
  registrationDigest: string,
  eventKind: string,
): string {
  return (
    'pwh_' +
    sha256Hex(
      jcs({
        domain: DISPATCH_DOMAIN,
        receipt_id: receiptId,
        effect_id: effectId,
        hook_id: registration.hook_id,
        capability_id: registration.capability_id,
        registration_digest: registrationDigest,
        registration_schema_version: registration.schema_version,
        event_kind: eventKind,
      }),
    )
  )
}
