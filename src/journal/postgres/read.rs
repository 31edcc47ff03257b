//! Reading a PostgreSQL journal: the same rows as SQLite's readers
//! (`../read.rs`), column for column, and the integrity verdict.

use postgres::types::ToSql;
use postgres::Row;

use super::super::{
    Decision, DispatchFilter, DispatchRow, DispatchState, FailureRow, IntegrityVerdict, IntentFilter, JournalError,
    JournalStats, Result, StoredIntent,
};
use super::conn::{to_u32, Link};
use super::schema::{INTENT_OPEN, PG_SCHEMA_VERSION};

/// The columns of a [`DispatchRow`] `FROM dispatches`, the last being the
/// ids of a proposed dispatch's intents in `seq` order, comma-separated.
macro_rules! dispatch_cols {
    () => {
        "seq, dispatch_id, state, attempts, hook_id, capability_id, receipt_id, effect_id, \
         event_kind, registration_digest, result_digest, created_at, updated_at, \
         (SELECT r.request FROM requests r WHERE r.seq = dispatches.seq), \
         CASE WHEN state = 'proposed' THEN (SELECT string_agg(i.intent_id, ',' ORDER BY i.seq) \
           FROM intents i WHERE i.dispatch_id = dispatches.dispatch_id) END"
    };
}

/// Selected `FROM intents i`: the source dispatch's hook comes from its row.
macro_rules! intent_cols {
    () => {
        "i.seq, i.intent_id, i.dispatch_id, i.capability_id, i.intent_kind, i.decision, i.executor_id, \
         i.reason_code, i.decided_at, i.done_at, i.doc, \
         (SELECT d.hook_id FROM dispatches d WHERE d.dispatch_id = i.dispatch_id)"
    };
}
pub(super) use intent_cols;

const DISPATCH_BY_ID: &str = concat!("SELECT ", dispatch_cols!(), " FROM dispatches WHERE dispatch_id = $1");
/// Inside a write transaction: the row, locked until the transaction ends.
pub(super) const DISPATCH_BY_ID_FOR_UPDATE: &str =
    concat!("SELECT ", dispatch_cols!(), " FROM dispatches WHERE dispatch_id = $1 FOR UPDATE");
const UNFINISHED: &str =
    concat!("SELECT ", dispatch_cols!(), " FROM dispatches WHERE state IN ('checkpointed','failed') ORDER BY seq");

/// A row that does not parse is not one this build wrote.
fn bad_row() -> JournalError {
    JournalError::Postgres { sqlstate: "XX001".to_owned() }
}

pub(super) fn dispatch_row(r: &Row) -> Result<DispatchRow> {
    let state: String = r.get(2);
    Ok(DispatchRow {
        seq: r.get(0),
        dispatch_id: r.get(1),
        state: DispatchState::parse(&state).ok_or_else(bad_row)?,
        attempts: to_u32(r.get(3)),
        hook_id: r.get(4),
        capability_id: r.get(5),
        receipt_id: r.get(6),
        effect_id: r.get(7),
        event_kind: r.get(8),
        registration_digest: r.get(9),
        result_digest: r.get(10),
        created_at: r.get(11),
        updated_at: r.get(12),
        request_json: r.get(13),
        intent_ids: r
            .get::<_, Option<String>>(14)
            .map(|ids| ids.split(',').map(str::to_owned).collect())
            .unwrap_or_default(),
        receipt_json: None,
    })
}

pub(super) fn intent_row(r: &Row) -> StoredIntent {
    let decision: Option<String> = r.get(5);
    StoredIntent {
        seq: r.get(0),
        intent_id: r.get(1),
        dispatch_id: r.get(2),
        capability_id: r.get(3),
        intent_kind: r.get(4),
        decision: decision.as_deref().and_then(Decision::from_stored),
        executor_id: r.get(6),
        reason_code: r.get(7),
        decided_at: r.get(8),
        done_at: r.get(9),
        stored_json: r.get(10),
        hook_id: r.get::<_, Option<String>>(11).unwrap_or_default(),
        doc_json: None,
    }
}

fn dispatch_rows(rows: Vec<Row>) -> Result<Vec<DispatchRow>> {
    rows.iter().map(dispatch_row).collect()
}

pub(super) fn get_dispatch(link: &mut Link, dispatch_id: &str) -> Result<Option<DispatchRow>> {
    link.query_opt(DISPATCH_BY_ID, &[&dispatch_id])?.as_ref().map(dispatch_row).transpose()
}

const DISPATCHES_BY_IDS: &str = concat!("SELECT ", dispatch_cols!(), " FROM dispatches WHERE dispatch_id = ANY($1)");

/// The rows of `ids` in one round trip, in `ids` order (an id twice gets its row twice).
pub(super) fn get_dispatches(link: &mut Link, ids: &[String]) -> Result<Vec<Option<DispatchRow>>> {
    let mut found = std::collections::HashMap::with_capacity(ids.len());
    for row in &link.query(DISPATCHES_BY_IDS, &[&ids])? {
        let row = dispatch_row(row)?;
        found.insert(row.dispatch_id.clone(), row);
    }
    Ok(ids.iter().map(|id| found.get(id).cloned()).collect())
}

pub(super) fn list_dispatches(link: &mut Link, f: &DispatchFilter, limit: u32) -> Result<Vec<DispatchRow>> {
    let state = f.state.map(DispatchState::as_str);
    let after = f.after_cursor.unwrap_or(0);
    let limit = i64::from(limit);
    let mut sql = format!("SELECT {} FROM dispatches WHERE seq > $1", dispatch_cols!());
    let mut params: Vec<&(dyn ToSql + Sync)> = vec![&after];
    if let Some(s) = &state {
        params.push(s);
        sql += &format!(" AND state = ${}", params.len());
    }
    if let Some(h) = &f.hook_id {
        params.push(h);
        sql += &format!(" AND hook_id = ${}", params.len());
    }
    params.push(&limit);
    sql += &format!(" ORDER BY seq LIMIT ${}", params.len());
    dispatch_rows(link.query_dynamic(&sql, &params)?)
}

pub(super) fn list_failures(link: &mut Link, dispatch_id: &str) -> Result<Vec<FailureRow>> {
    let rows = link.query(
        "SELECT dispatch_id, attempt, code, rule, at FROM failures WHERE dispatch_id = $1 ORDER BY attempt",
        &[&dispatch_id],
    )?;
    Ok(rows
        .iter()
        .map(|r| FailureRow {
            dispatch_id: r.get(0),
            attempt: to_u32(r.get(1)),
            code: r.get(2),
            rule: r.get(3),
            at: r.get(4),
        })
        .collect())
}

pub(super) fn list_intents(link: &mut Link, f: &IntentFilter, limit: u32) -> Result<Vec<StoredIntent>> {
    let limit = i64::from(limit);
    let mut sql = format!("SELECT {} FROM intents i WHERE seq > $1", intent_cols!());
    let mut params: Vec<&(dyn ToSql + Sync)> = vec![&f.after_seq];
    for (col, value) in
        [("dispatch_id", &f.dispatch_id), ("capability_id", &f.capability_id), ("intent_kind", &f.intent_kind)]
    {
        if let Some(v) = value {
            params.push(v);
            sql += &format!(" AND {col} = ${}", params.len());
        }
    }
    if f.pending_only {
        sql += &format!(" AND {INTENT_OPEN}");
    }
    params.push(&limit);
    sql += &format!(" ORDER BY seq LIMIT ${}", params.len());
    Ok(link.query_dynamic(&sql, &params)?.iter().map(intent_row).collect())
}

pub(super) fn unfinished(link: &mut Link) -> Result<Vec<DispatchRow>> {
    dispatch_rows(link.query(UNFINISHED, &[])?)
}

pub(super) fn stats(link: &mut Link) -> Result<JournalStats> {
    // One statement: one snapshot.
    let row = link.query_opt(
        "SELECT
           (SELECT count(*) FROM dispatches WHERE state = 'checkpointed'),
           (SELECT count(*) FROM dispatches WHERE state = 'failed'),
           (SELECT count(*) FROM dispatches WHERE state = 'proposed'),
           (SELECT count(*) FROM dispatches WHERE state = 'not_applicable'),
           (SELECT count(*) FROM dispatches WHERE state = 'exhausted'),
           (SELECT count(*) FROM intents),
           (SELECT count(*) FROM intents WHERE done_at IS NULL AND decision IS DISTINCT FROM 'rejected')",
        &[],
    )?;
    let row = row.ok_or_else(bad_row)?;
    let n = |i: usize| u64::try_from(row.get::<_, i64>(i)).unwrap_or_default();
    Ok(JournalStats {
        checkpointed: n(0),
        failed: n(1),
        proposed: n(2),
        not_applicable: n(3),
        exhausted: n(4),
        intents: n(5),
        intents_open: n(6),
    })
}

/// The invariants the tables' constraints do not hold by themselves. Each
/// message names a table and a count, never a stored value.
const CHECKS: &[(&str, &str)] = &[
    (
        "SELECT count(*) FROM requests r JOIN dispatches d ON d.seq = r.seq \
         WHERE d.state NOT IN ('checkpointed','failed')",
        "request rows kept for final dispatches",
    ),
    (
        "SELECT count(*) FROM dispatches d WHERE d.state IN ('checkpointed','failed') \
         AND NOT EXISTS (SELECT 1 FROM requests r WHERE r.seq = d.seq)",
        "unfinished dispatches without their request",
    ),
    (
        "SELECT count(*) FROM intents i JOIN dispatches d ON d.dispatch_id = i.dispatch_id \
         WHERE d.state <> 'proposed'",
        "intents of dispatches that are not proposed",
    ),
    ("SELECT count(*) FROM intents WHERE (lease_owner IS NULL) <> (lease_until IS NULL)", "intents with half a lease"),
];

pub(super) fn integrity(link: &mut Link) -> Result<IntegrityVerdict> {
    let mut messages = Vec::new();
    let version = link.query_opt("SELECT application_id, version FROM meta", &[])?;
    match version.map(|r| (r.get::<_, i32>(0), r.get::<_, i32>(1))) {
        Some((app, v)) if app == super::super::APPLICATION_ID && v == PG_SCHEMA_VERSION => {}
        Some((_, v)) => messages.push(format!("meta: schema version {v}, expected {PG_SCHEMA_VERSION}")),
        None => messages.push("meta: no version row".to_owned()),
    }
    for (sql, what) in CHECKS {
        let n: i64 = link.query_dynamic(sql, &[])?.first().map_or(0, |r| r.get(0));
        if n > 0 {
            messages.push(format!("{n} {what}"));
        }
    }
    Ok(IntegrityVerdict { ok: messages.is_empty(), messages })
}
