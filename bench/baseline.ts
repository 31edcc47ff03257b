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
 *
 * This file is the SQLite journal; the validators are in `plain_validators.ts`
 * and the storage-independent dispatch steps in `plain_flow.ts`, shared with
 * the PostgreSQL plain path (`plain_pg.ts`).
 */
import Database from 'better-sqlite3'

import type {
  DispatchOutcome,
  DispatchRequest,
  HookOutcome,
  IntentKindDefinition,
  PostWritebackHookRegistration,
} from '../bindings/index.js'
import { FINAL, PlainHooks, type Hook, type Standing } from './plain_flow.js'

export { PlainValidators } from './plain_validators.js'

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

export class PlainRuntime {
  readonly db: Database.Database
  readonly #h: PlainHooks
  readonly #full: boolean
  readonly #replay: 'return' | 'verify'
  #level: 'FULL' | 'NORMAL' | undefined
  readonly #s: Record<string, Database.Statement>
  readonly #final: (args: any) => void

  private constructor(options: PlainOptions) {
    this.#full = (options.synchronous ?? 'full') === 'full'
    this.#replay = options.replay ?? 'return'
    this.#h = new PlainHooks(options.enabled ?? true)
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
    this.#h.defineIntentKind(definition)
  }

  register(registration: PostWritebackHookRegistration, provider: (input: any) => unknown): void {
    this.#h.register(registration, provider)
  }

  dispatch(request: DispatchRequest): Promise<DispatchOutcome> {
    return this.#h.dispatch(request, (hook, req, deadline) => this.#runHook(hook, req, deadline))
  }

  async #runHook(hook: Hook, request: DispatchRequest, deadline: number): Promise<HookOutcome> {
    const reg = hook.registration
    const r = request.receipt
    const ev = request.event
    const prepared = this.#h.prepare(hook, request)
    if (!('input' in prepared)) return prepared
    const { dispatchId, input, base } = prepared
    // Checkpoint: look the identity up first, insert it when new.
    const st = this.#s
    const standing = st.standing!.get(dispatchId) as Standing | undefined
    let used = 0
    if (standing && FINAL.has(standing.state)) {
      return this.#h.replayFinal(hook, prepared, standing, this.#replay, deadline)
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
    const receipt = (status: string, attempt: number, ids: string[], digest: string | null, failure: any) =>
      this.#h.receipt(hook, request, dispatchId, status, attempt, ids, digest, failure)
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
    const got = await this.#h.invoke(hook, input, dispatchId, deadline)
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
