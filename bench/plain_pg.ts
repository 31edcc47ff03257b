/**
 * The plain TypeScript path on PostgreSQL: the same work as the SQLite plain
 * path (`baseline.ts`, through the shared `plain_flow.ts`: Ajv, node:crypto
 * digests, the same documents) with node-postgres (`pg`) in tables of its
 * own schema, what a careful team would write:
 *
 * - one `pg.Pool` (POOL connections: enough for 64 dispatches in flight to
 *   keep the server's own group commit busy, few enough for a 2-core box);
 * - the identity looked up first, a checkpoint row inserted when new, the
 *   final record (receipt, intents) in one transaction after the provider;
 * - the same durability trick as the SQLite plain path and ours: the
 *   checkpoint commits with `synchronous_commit = off` (no WAL flush of its
 *   own; the final record's synchronous commit, later in the WAL, flushes
 *   it), the final record with the server's `synchronous_commit = on`, so a
 *   dispatch resolves only after its final record is durable;
 * - `ON CONFLICT DO NOTHING` on the checkpoint, so processes sharing the
 *   schema never fail on each other's identities.
 */
import pg from 'pg'

import type {
  DispatchOutcome,
  DispatchRequest,
  HookOutcome,
  IntentKindDefinition,
  PostWritebackHookRegistration,
} from '../bindings/index.js'
import { FINAL, PlainHooks, type Hook, type Standing } from './plain_flow.js'

export const POOL = 16

/** The SQLite plain layout in PostgreSQL types; `schema` is a plain identifier chosen by the bench. */
export function ddl(schema: string): string {
  return `
CREATE SCHEMA IF NOT EXISTS ${schema};
CREATE TABLE IF NOT EXISTS ${schema}.dispatches (
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
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  request TEXT,
  receipt TEXT
);
CREATE INDEX IF NOT EXISTS dispatches_state ON ${schema}.dispatches(state);
CREATE TABLE IF NOT EXISTS ${schema}.failures (
  dispatch_id TEXT NOT NULL REFERENCES ${schema}.dispatches(dispatch_id),
  attempt INTEGER NOT NULL,
  code TEXT NOT NULL,
  rule TEXT,
  at BIGINT NOT NULL,
  PRIMARY KEY (dispatch_id, attempt)
);
CREATE TABLE IF NOT EXISTS ${schema}.intents (
  intent_id TEXT PRIMARY KEY,
  dispatch_id TEXT NOT NULL REFERENCES ${schema}.dispatches(dispatch_id),
  capability_id TEXT NOT NULL,
  intent_kind TEXT NOT NULL,
  decision TEXT CHECK (decision IN ('admitted','rejected')),
  executor_id TEXT,
  reason_code TEXT,
  decided_at BIGINT,
  done_at BIGINT,
  doc TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS intents_dispatch ON ${schema}.intents(dispatch_id);
CREATE INDEX IF NOT EXISTS intents_pending ON ${schema}.intents(capability_id, intent_kind, decision, done_at);
`
}

export interface PlainPgOptions {
  connectionString: string
  schema: string
  replay?: 'return' | 'verify'
  enabled?: boolean
  /** Create the tables (one process does it before others share the schema). */
  create?: boolean
}

interface Final {
  state: string
  attempt: number
  receiptJson: string
  resultDigest: string | null
  dispatchId: string
  intents: any[]
}

export class PlainPgRuntime {
  readonly pool: pg.Pool
  readonly #h: PlainHooks
  readonly #replay: 'return' | 'verify'
  readonly #q: Record<'standing' | 'checkpoint' | 'final' | 'intent' | 'failure' | 'failed', string>

  private constructor(options: PlainPgOptions) {
    this.#h = new PlainHooks(options.enabled ?? true)
    this.#replay = options.replay ?? 'return'
    this.pool = new pg.Pool({ connectionString: options.connectionString, max: POOL })
    const t = options.schema
    this.#q = {
      standing: `SELECT state, attempts, receipt, result_digest FROM ${t}.dispatches WHERE dispatch_id = $1`,
      // One round trip: the checkpoint's own transaction, without waiting for its WAL flush.
      checkpoint: `WITH s AS (SELECT set_config('synchronous_commit', 'off', true))
        INSERT INTO ${t}.dispatches (dispatch_id, state, attempts, hook_id, capability_id, receipt_id, effect_id,
          event_kind, registration_digest, created_at, updated_at, request)
        SELECT $1, 'checkpointed', 0, $2, $3, $4, $5, $6, $7, $8, $8, $9 FROM s ON CONFLICT DO NOTHING`,
      final: `UPDATE ${t}.dispatches SET state = $1, attempts = greatest(attempts, $2), receipt = $3, result_digest = $4,
          updated_at = $5, request = NULL WHERE dispatch_id = $6`,
      intent: `INSERT INTO ${t}.intents (intent_id, dispatch_id, capability_id, intent_kind, doc) VALUES ($1, $2, $3, $4, $5)`,
      failure: `INSERT INTO ${t}.failures (dispatch_id, attempt, code, rule, at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`,
      failed: `UPDATE ${t}.dispatches SET state = 'failed', attempts = greatest(attempts, $1), updated_at = $2 WHERE dispatch_id = $3`,
    }
  }

  static async open(options: PlainPgOptions): Promise<PlainPgRuntime> {
    const rt = new PlainPgRuntime(options)
    if (options.create) await rt.pool.query(ddl(options.schema))
    return rt
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

  /** A transaction on one pooled connection: named prepared statements, one round trip each. */
  async #tx(body: (c: pg.PoolClient) => Promise<void>): Promise<void> {
    const c = await this.pool.connect()
    try {
      await c.query('BEGIN')
      await body(c)
      await c.query('COMMIT')
    } catch (e) {
      await c.query('ROLLBACK').catch(() => {})
      throw e
    } finally {
      c.release()
    }
  }

  #final(f: Final): Promise<void> {
    return this.#tx(async (c) => {
      await c.query({
        name: 'final',
        text: this.#q.final,
        values: [f.state, f.attempt, f.receiptJson, f.resultDigest, Date.now(), f.dispatchId],
      })
      if (f.state === 'exhausted') {
        await c.query({
          name: 'failure',
          text: this.#q.failure,
          values: [f.dispatchId, f.attempt, 'dispatch_budget_exhausted', null, Date.now()],
        })
      }
      for (const i of f.intents) {
        await c.query({
          name: 'intent',
          text: this.#q.intent,
          values: [i.intent_id, f.dispatchId, i.capability_id, i.intent_kind, JSON.stringify(i)],
        })
      }
    })
  }

  async #runHook(hook: Hook, request: DispatchRequest, deadline: number): Promise<HookOutcome> {
    const reg = hook.registration
    const r = request.receipt
    const prepared = this.#h.prepare(hook, request)
    if (!('input' in prepared)) return prepared
    const { dispatchId, input, base } = prepared
    // Checkpoint: look the identity up first, insert it when new.
    const found = await this.pool.query<Standing>({ name: 'standing', text: this.#q.standing, values: [dispatchId] })
    const standing = found.rows[0]
    let used = 0
    if (standing && FINAL.has(standing.state)) {
      return this.#h.replayFinal(hook, prepared, standing, this.#replay, deadline)
    } else if (standing) {
      used = standing.attempts
    } else {
      await this.pool.query({
        name: 'checkpoint',
        text: this.#q.checkpoint,
        values: [
          dispatchId,
          reg.hook_id,
          reg.capability_id,
          r.receipt_id,
          r.effect_id,
          request.event.event_kind,
          hook.digest,
          Date.now(),
          JSON.stringify(request),
        ],
      })
    }
    const receipt = (status: string, attempt: number, ids: string[], digest: string | null, failure: any) =>
      this.#h.receipt(hook, request, dispatchId, status, attempt, ids, digest, failure)
    if (used >= reg.budget.max_invocations_per_dispatch) {
      const rec = receipt('exhausted', used, [], null, { code: 'dispatch_budget_exhausted', rule: null })
      await this.#final({
        state: 'exhausted',
        attempt: used,
        receiptJson: JSON.stringify(rec),
        resultDigest: null,
        dispatchId,
        intents: [],
      })
      return { ...base, outcome: 'exhausted', attempt: used, receipt: rec, failureCode: 'dispatch_budget_exhausted' }
    }
    const attempt = used + 1
    const got = await this.#h.invoke(hook, input, dispatchId, deadline)
    if ('code' in got) {
      const now = Date.now()
      await this.#tx(async (c) => {
        await c.query({
          name: 'failure',
          text: this.#q.failure,
          values: [dispatchId, attempt, got.code, got.rule, now],
        })
        await c.query({ name: 'failed', text: this.#q.failed, values: [attempt, now, dispatchId] })
      })
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
    await this.#final({
      state: rec.status,
      attempt,
      receiptJson: JSON.stringify(rec),
      resultDigest: got.digest,
      dispatchId,
      intents,
    })
    return { ...base, outcome: proposed ? 'recorded' : 'not_applicable', attempt, receipt: rec }
  }

  close(): Promise<void> {
    return this.pool.end()
  }
}
