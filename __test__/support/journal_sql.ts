// Test support: read a journal's final receipts with an independent SQLite or PostgreSQL client (no
// addon). The journal stores no receipt document: a final dispatch row's
// columns and its intents' ids are the receipt (src/dispatch/stored.rs,
// `receipt_from_row`). This SQL derives it the same way, from the documented
// layout, so suites that read the file directly can compare it with what the
// runtime returned.

/** A `receipt` column (JSON text; null unless final) for `FROM dispatches d`. */
export const RECEIPT_SQL = `CASE WHEN d.state IN ('proposed', 'not_applicable', 'exhausted') THEN json_object(
  'schema_version', 'loopx_post_writeback_dispatch_receipt_v0',
  'dispatch_id', d.dispatch_id, 'hook_id', d.hook_id, 'capability_id', d.capability_id,
  'receipt_id', d.receipt_id, 'effect_id', d.effect_id, 'event_kind', d.event_kind,
  'registration_digest', d.registration_digest, 'status', d.state, 'attempt', d.attempts,
  'intent_ids', json((SELECT json_group_array(x.intent_id) FROM
    (SELECT i.intent_id FROM intents i WHERE i.dispatch_id = d.dispatch_id ORDER BY i.seq) x)),
  'result_digest', d.result_digest,
  'failure', json(CASE WHEN d.state = 'exhausted' THEN '{"code":"dispatch_budget_exhausted","rule":null}' END)
) END`

/** RECEIPT_SQL for PostgreSQL (the same layout; `search_path` set to the journal's schema). */
export const RECEIPT_SQL_PG = `CASE WHEN d.state IN ('proposed', 'not_applicable', 'exhausted') THEN json_build_object(
  'schema_version', 'loopx_post_writeback_dispatch_receipt_v0',
  'dispatch_id', d.dispatch_id, 'hook_id', d.hook_id, 'capability_id', d.capability_id,
  'receipt_id', d.receipt_id, 'effect_id', d.effect_id, 'event_kind', d.event_kind,
  'registration_digest', d.registration_digest, 'status', d.state, 'attempt', d.attempts,
  'intent_ids', COALESCE((SELECT json_agg(i.intent_id ORDER BY i.seq) FROM intents i
    WHERE i.dispatch_id = d.dispatch_id), '[]'::json),
  'result_digest', d.result_digest,
  'failure', CASE WHEN d.state = 'exhausted' THEN json_build_object('code', 'dispatch_budget_exhausted', 'rule', NULL) END
)::text END`

/**
 * The journal's invariants on PostgreSQL, checked by SQL of our own (the
 * counterpart of SQLite's PRAGMA integrity_check plus foreign_key_check): one
 * row per problem, none when sound. `search_path` set to the journal's schema.
 */
export const PG_INTEGRITY_SQL = `
SELECT 'intent ' || i.intent_id || ' has no dispatch' AS problem
  FROM intents i LEFT JOIN dispatches d ON d.dispatch_id = i.dispatch_id WHERE d.dispatch_id IS NULL
UNION ALL SELECT 'failure of ' || f.dispatch_id || ' has no dispatch'
  FROM failures f LEFT JOIN dispatches d ON d.dispatch_id = f.dispatch_id WHERE d.dispatch_id IS NULL
UNION ALL SELECT 'dispatch ' || dispatch_id || ' in unknown state ' || state FROM dispatches
  WHERE state NOT IN ('checkpointed', 'failed', 'proposed', 'not_applicable', 'exhausted')
UNION ALL SELECT 'dispatch ' || dispatch_id || ' result digest disagrees with state ' || state FROM dispatches
  WHERE (result_digest IS NULL) <> (state IN ('checkpointed', 'failed', 'exhausted'))
UNION ALL SELECT 'dispatch ' || dispatch_id || ' appears ' || count(*) || ' times' FROM dispatches
  GROUP BY dispatch_id HAVING count(*) > 1
UNION ALL SELECT 'intent ' || intent_id || ' appears ' || count(*) || ' times' FROM intents
  GROUP BY intent_id HAVING count(*) > 1`
