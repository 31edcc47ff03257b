/**
 * The plain TypeScript path the benchmark compares against: what a careful
 * team would write without the Rust core. It is meant as a fair competitor:
 *
 * - Validation: Ajv (JSON Schema 2020-12) compiled once from the committed
 *   `schemas/`, plus the hand-written checks JSON Schema cannot express and
 *   our validators perform: hook_id / intent kinds owned by `<capability_id>.`,
 *   intent kinds defined, operation listed by the kind, payload against the
 *   kind's payload schema (also Ajv), hook / capability / source dispatch
 *   bound to the admitted registration, dispatch_id and intent_id recomputed
 *   (node:crypto sha256 over `canonicalize`, RFC 8785), intent budget, result
 *   size in canonical bytes, duplicate intent ids, credential-like strings,
 *   projection transition and subscribed event kind.
 * - Journal: better-sqlite3 12, WAL, one connection. A checkpoint row is
 *   committed before the provider runs and the final record (receipt,
 *   intents) in its own transaction afterwards. better-sqlite3 is synchronous,
 *   so every final record is its own commit and fsync on the JS thread: that
 *   is the plain way. It gets the same trick as ours where it is cheap to
 *   copy: the checkpoint commits with synchronous=NORMAL (no fsync of its
 *   own), the final record with FULL (which also syncs the checkpoint).
 * - Same stored documents as ours: the request (until the identity is final,
 *   as ours), the dispatch receipt and each intent as JSON text, in a plain
 *   relational layout (TEXT primary keys, ordinary indexes) with the same
 *   columns.
 * - Optimisations a plain implementation would have: every statement and
 *   validator compiled once, an existing identity looked up before trying to
 *   insert it, the canonical text of a result computed once (size and digest),
 *   no timer for a provider that answers synchronously, no copy of the input.
 */
import { Buffer } from 'node:buffer'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

import { Ajv2020, type ErrorObject } from 'ajv/dist/2020.js'
import Database from 'better-sqlite3'

import type {
  DispatchOutcome,
  DispatchReceipt,
  DispatchRequest,
  HookOutcome,
  IntentKindDefinition,
  PostWritebackHookRegistration,
} from '../bindings/index.js'
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
const TRANSITION: Record<string, string> = { todo_completed: 'segment_completed', replan_recorded: 'replan_recorded' }

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

// A plain relational layout: TEXT primary keys (each an automatic unique
// index), ordinary indexes for the recovery scan, per-dispatch intents and
// the executor's pending list. Same columns and documents as ours.
const DDL = `
CREATE TABLE IF NOT EXISTS dispatches (
  dispatch_id TEXT PRIMARY KEY,
  state TEXT NOT NULL CHECK (state IN ('checkpointed','failed','proposed','not_applicable','exhausted')),
  attempts INTEGER NOT NULL,
  hook_id TEXT NOT NULL,
  capability_id TEXT NOT NULL,
  receipt_id TEXT NOT NULL,
  effect_id TEXT NOT NULL,
  event_kind TEXT NOT NULL,
  registration_digest TEXT NOT NULL,
  result_digest TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  request TEXT,
  receipt TEXT
);
CREATE INDEX IF NOT EXISTS dispatches_state ON dispatches(state);
CREATE TABLE IF NOT EXISTS failures (
  dispatch_id TEXT NOT NULL REFERENCES dispatches(dispatch_id),
  attempt INTEGER NOT NULL,
  code TEXT NOT NULL,
  rule TEXT,
  at INTEGER NOT NULL,
  PRIMARY KEY (dispatch_id, attempt)
);
CREATE TABLE IF NOT EXISTS intents (
  intent_id TEXT PRIMARY KEY,
  dispatch_id TEXT NOT NULL REFERENCES dispatches(dispatch_id),
  capability_id TEXT NOT NULL,
  intent_kind TEXT NOT NULL,
  decision TEXT CHECK (decision IN ('admitted','rejected')),
  executor_id TEXT,
  reason_code TEXT,
  decided_at INTEGER,
  done_at INTEGER,
  doc TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS intents_dispatch ON intents(dispatch_id);
CREATE INDEX IF NOT EXISTS intents_pending ON intents(capability_id, intent_kind, decision, done_at);
`

export interface PlainOptions {
  journalPath: string
  synchronous?: 'full' | 'normal'
  replay?: 'return' | 'verify'
  enabled?: boolean
}

interface Hook {
  registration: PostWritebackHookRegistration
  digest: string
  provider: (input: any) => unknown
}

interface Standing {
  state: string
  attempts: number
  receipt: string | null
  result_digest: string | null
}

const FINAL = new Set(['proposed', 'not_applicable', 'exhausted'])

class Timeout {}

export class PlainRuntime {
  readonly db: Database.Database
  readonly validators = new PlainValidators(false)
  readonly #hooks: Hook[] = []
  readonly #full: boolean
  readonly #replay: 'return' | 'verify'
  readonly #enabled: boolean
  #level: 'FULL' | 'NORMAL' | undefined
  readonly #s: Record<string, Database.Statement>
  readonly #final: (args: any) => void

  private constructor(options: PlainOptions) {
    this.#full = (options.synchronous ?? 'full') === 'full'
    this.#replay = options.replay ?? 'return'
    this.#enabled = options.enabled ?? true
    this.db = new Database(options.journalPath)
    this.db.pragma('journal_mode = WAL')
    this.db.pragma('foreign_keys = ON')
    this.db.exec(DDL)
    const p = (sql: string) => this.db.prepare(sql)
    this.#s = {
      standing: p('SELECT state, attempts, receipt, result_digest FROM dispatches WHERE dispatch_id = ?'),
      checkpoint: p(
        `INSERT INTO dispatches (dispatch_id, state, attempts, hook_id, capability_id, receipt_id, effect_id, event_kind,
           registration_digest, created_at, updated_at, request)
         VALUES (?, 'checkpointed', 0, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      // Like ours: the request only serves recovery, so a final record drops it.
      final: p(
        'UPDATE dispatches SET state = ?, attempts = max(attempts, ?), receipt = ?, result_digest = ?, updated_at = ?, request = NULL WHERE dispatch_id = ?',
      ),
      intent: p('INSERT INTO intents (intent_id, dispatch_id, capability_id, intent_kind, doc) VALUES (?, ?, ?, ?, ?)'),
      failure: p(
        'INSERT INTO failures (dispatch_id, attempt, code, rule, at) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING',
      ),
      failed: p(
        "UPDATE dispatches SET state = 'failed', attempts = max(attempts, ?), updated_at = ? WHERE dispatch_id = ?",
      ),
    }
    const s = this.#s
    this.#final = this.db.transaction((r: any) => {
      s.final!.run(r.state, r.attempt, r.receiptJson, r.resultDigest, r.now, r.dispatchId)
      if (r.failure) s.failure!.run(r.dispatchId, r.attempt, r.failure, null, r.now)
      for (const i of r.intents)
        s.intent!.run(i.intent_id, r.dispatchId, i.capability_id, i.intent_kind, JSON.stringify(i))
    }).immediate
  }

  static open(options: PlainOptions): PlainRuntime {
    return new PlainRuntime(options)
  }

  #sync(level: 'FULL' | 'NORMAL'): void {
    const wanted = this.#full ? level : 'NORMAL'
    if (this.#level !== wanted) {
      // db.exec, not a prepared statement: a prepared PRAGMA does not
      // reliably apply on its first step in better-sqlite3.
      this.db.exec(wanted === 'FULL' ? 'PRAGMA synchronous = FULL' : 'PRAGMA synchronous = NORMAL')
      this.#level = wanted
    }
  }

  defineIntentKind(definition: IntentKindDefinition): void {
    const v = this.validators.defineIntentKind(definition)
    if (!v.ok) throw Object.assign(new Error('intent kind definition rejected'), { violations: v.violations })
  }

  register(registration: PostWritebackHookRegistration, provider: (input: any) => unknown): void {
    const v = this.validators.validateRegistration(registration)
    if (!v.ok) throw Object.assign(new Error('registration_rejected'), { violations: v.violations })
    const copy = JSON.parse(JSON.stringify(registration))
    this.#hooks.push({ registration: copy, digest: sha256Hex(jcs(copy)), provider })
    this.#hooks.sort((a, b) =>
      a.registration.hook_id < b.registration.hook_id ? -1 : a.registration.hook_id > b.registration.hook_id ? 1 : 0,
    )
  }

  async dispatch(request: DispatchRequest): Promise<DispatchOutcome> {
    if (!this.validators.validateRequest(request))
      throw Object.assign(new Error('invalid request'), { code: 'ERR_LOOPX_INVALID_ARGUMENT' })
    const s = request.settlement
    const r = request.receipt
    const refusal =
      !s.goal_id || !s.agent_id || !s.todo_id || !s.turn_instance_id || !s.effect_id
        ? 'identity_incomplete'
        : r.effect_id !== s.effect_id
          ? 'effect_mismatch'
          : r.status !== 'committed'
            ? 'receipt_not_committed'
            : !r.checkpointed
              ? 'receipt_not_checkpointed'
              : !this.#enabled
                ? 'phase_disabled'
                : null
    if (refusal) return { admitted: false, refusal, hooks: [] } as DispatchOutcome
    const hooks: HookOutcome[] = []
    const deadline = Date.now() + 60_000
    for (const hook of this.#hooks) {
      if (!(hook.registration.event_kinds as string[]).includes(request.event.event_kind)) continue
      hooks.push(await this.#runHook(hook, request, deadline))
    }
    return { admitted: true, refusal: null, hooks }
  }

  async #invoke(
    hook: Hook,
    input: any,
    dispatchId: string,
    deadline: number,
  ): Promise<{ result: any; digest: string } | { code: string; rule: string | null }> {
    let result: any
    try {
      result = hook.provider(input)
      if (result !== null && typeof result === 'object' && typeof result.then === 'function') {
        const ms = Math.min(hook.registration.budget.timeout_ms, deadline - Date.now())
        let timer: NodeJS.Timeout | undefined
        const timeout = new Promise((resolve) => {
          timer = setTimeout(resolve, ms, new Timeout())
        })
        result = await Promise.race([result, timeout])
        clearTimeout(timer)
        if (result instanceof Timeout) return { code: 'producer_timed_out', rule: null }
      }
    } catch {
      return { code: 'producer_failed', rule: null }
    }
    const out: { canonical?: string } = {}
    const verdict = this.validators.validateHookResult(result, hook.registration, dispatchId, out)
    if (!verdict.ok) return { code: 'result_contract_rejected', rule: verdict.violations[0]?.rule ?? null }
    return { result, digest: sha256Hex(out.canonical!) }
  }

  #fromFinal(
    hook: Hook,
    dispatchId: string,
    receiptJson: string,
    recorded: string | null,
    fresh: string | null,
  ): HookOutcome {
    const receipt: DispatchReceipt = JSON.parse(receiptJson)
    const conflict = fresh !== null && recorded !== fresh
    return {
      hookId: hook.registration.hook_id,
      dispatchId,
      outcome: conflict ? 'conflict' : 'replayed',
      attempt: receipt.attempt,
      receipt,
      failureCode: conflict ? 'intent_conflict' : null,
      failureRule: null,
    }
  }

  async #runHook(hook: Hook, request: DispatchRequest, deadline: number): Promise<HookOutcome> {
    const reg = hook.registration
    const r = request.receipt
    const s = request.settlement
    const ev = request.event
    const dispatchId = dispatchIdOf(r.receipt_id, r.effect_id, reg, hook.digest, ev.event_kind)
    const base = { hookId: reg.hook_id, dispatchId, receipt: null, failureCode: null, failureRule: null }
    const input = {
      schema_version: 'loopx_post_writeback_hook_input_v0',
      dispatch_id: dispatchId,
      hook_id: reg.hook_id,
      capability_id: reg.capability_id,
      source: {
        receipt_id: r.receipt_id,
        effect_id: r.effect_id,
        step_kind: r.step_kind,
        goal_id: s.goal_id,
        agent_id: s.agent_id,
        todo_id: s.todo_id,
        turn_instance_id: s.turn_instance_id,
        event_kind: ev.event_kind,
        state_revision: r.state_revision,
        committed_at: r.committed_at,
      },
      projection: {
        schema_version: 'loopx_post_writeback_event_projection_v0',
        transition: TRANSITION[ev.event_kind] ?? '',
        fact_refs: ev.fact_refs,
      },
      boundary: {
        raw_task_text_recorded: false,
        raw_logs_recorded: false,
        raw_trajectory_recorded: false,
        raw_session_transcript_recorded: false,
        credential_values_recorded: false,
        absolute_paths_recorded: false,
      },
    }
    const checked = this.validators.validateHookInput(input, reg, hook.digest)
    if (!checked.ok) {
      return {
        ...base,
        outcome: 'failed',
        attempt: 0,
        failureCode: 'input_boundary_rejected',
        failureRule: (checked.violations[0]?.rule ?? null) as any,
      }
    }
    // Checkpoint: look the identity up first, insert it when new.
    const st = this.#s
    const standing = st.standing!.get(dispatchId) as Standing | undefined
    let used = 0
    if (standing && FINAL.has(standing.state)) {
      if (this.#replay === 'return') return this.#fromFinal(hook, dispatchId, standing.receipt!, null, null)
      const again = await this.#invoke(hook, input, dispatchId, deadline)
      if ('code' in again)
        return {
          ...base,
          outcome: 'failed',
          attempt: 0,
          failureCode: again.code as any,
          failureRule: again.rule as any,
        }
      return this.#fromFinal(hook, dispatchId, standing.receipt!, standing.result_digest, again.digest)
    } else if (standing) {
      used = standing.attempts
    } else {
      this.#sync('NORMAL')
      const now = Date.now()
      st.checkpoint!.run(
        dispatchId,
        reg.hook_id,
        reg.capability_id,
        r.receipt_id,
        r.effect_id,
        ev.event_kind,
        hook.digest,
        now,
        now,
        JSON.stringify(request),
      )
    }
    const receipt = (
      status: string,
      attempt: number,
      intentIds: string[],
      resultDigest: string | null,
      failure: any,
    ): DispatchReceipt =>
      ({
        schema_version: 'loopx_post_writeback_dispatch_receipt_v0',
        dispatch_id: dispatchId,
        hook_id: reg.hook_id,
        capability_id: reg.capability_id,
        receipt_id: r.receipt_id,
        effect_id: r.effect_id,
        event_kind: ev.event_kind,
        registration_digest: hook.digest,
        status,
        attempt,
        intent_ids: intentIds,
        result_digest: resultDigest,
        failure,
      }) as DispatchReceipt
    if (used >= reg.budget.max_invocations_per_dispatch) {
      const rec = receipt('exhausted', used, [], null, { code: 'dispatch_budget_exhausted', rule: null })
      this.#sync('FULL')
      this.#final({
        state: 'exhausted',
        attempt: used,
        receiptJson: JSON.stringify(rec),
        resultDigest: null,
        now: Date.now(),
        dispatchId,
        intents: [],
        failure: 'dispatch_budget_exhausted',
      })
      return { ...base, outcome: 'exhausted', attempt: used, receipt: rec, failureCode: 'dispatch_budget_exhausted' }
    }
    const attempt = used + 1
    const got = await this.#invoke(hook, input, dispatchId, deadline)
    if ('code' in got) {
      this.#sync('FULL')
      const now = Date.now()
      this.db
        .transaction(() => {
          st.failure!.run(dispatchId, attempt, got.code, got.rule, now)
          st.failed!.run(attempt, now, dispatchId)
        })
        .immediate()
      return { ...base, outcome: 'failed', attempt, failureCode: got.code as any, failureRule: got.rule as any }
    }
    const proposed = got.result.status === 'proposed'
    const intents: any[] = got.result.intents
    const rec = receipt(
      proposed ? 'proposed' : 'not_applicable',
      attempt,
      intents.map((i) => i.intent_id),
      got.digest,
      null,
    )
    this.#sync('FULL')
    this.#final({
      state: rec.status,
      attempt,
      receiptJson: JSON.stringify(rec),
      resultDigest: got.digest,
      now: Date.now(),
      dispatchId,
      intents,
      failure: null,
    })
    return { ...base, outcome: proposed ? 'recorded' : 'not_applicable', attempt, receipt: rec }
  }

  close(): void {
    this.db.close()
  }
}
