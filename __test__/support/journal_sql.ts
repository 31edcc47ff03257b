// Test support: read a journal's final receipts with an independent SQLite (no
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
