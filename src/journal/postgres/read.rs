//! Reading a PostgreSQL journal: the core's rows, columns and filters
//! (`../read.rs`) over this driver, and the integrity verdict.

use postgres::types::ToSql;
use postgres::Row;

use super::super::read::{
    dispatch_cols, dispatch_from, dispatches_query, failure_cols, failure_from, intent_from, intents_query, stats_from,
    Columns, Param, SqlDialect,
};
use super::super::{
    DispatchFilter, DispatchRow, DispatchState, FailureRow, IntegrityVerdict, IntentFilter, JournalError, JournalStats,
    Result, StoredIntent,
};
use super::conn::{to_u32, Link};
use super::schema::{INTENT_OPEN, PG_SCHEMA_VERSION};

/// Whether the session that counted a checkpointed row's attempt is gone:
/// no granted advisory lock under its key (`schema.rs`, V3), whose two
/// halves `pg_locks` shows as classid and objid.
macro_rules! holder_ended {
    () => {
        "(CASE WHEN state = 'checkpointed' AND holder IS NOT NULL AND NOT EXISTS (SELECT 1 FROM pg_locks l \
         WHERE l.locktype = 'advisory' AND l.objsubid = 1 AND l.granted \
         AND l.classid::bigint = holder >> 32 AND l.objid::bigint = holder & 4294967295) THEN 1 ELSE 0 END)::bigint"
    };
}

const DISPATCH_BY_ID: &str =
    concat!("SELECT ", dispatch_cols!("string_agg", holder_ended!()), " FROM dispatches WHERE dispatch_id = $1");
/// Inside a write transaction: the row, locked until the transaction ends.
pub(super) const DISPATCH_BY_ID_FOR_UPDATE: &str = concat!(
    "SELECT ",
    dispatch_cols!("string_agg", holder_ended!()),
    " FROM dispatches WHERE dispatch_id = $1 FOR UPDATE"
);
const UNFINISHED: &str = concat!(
    "SELECT ",
    dispatch_cols!("string_agg", holder_ended!()),
    " FROM dispatches WHERE state IN ('checkpointed','failed') ORDER BY seq"
);
const DISPATCHES_BY_IDS: &str =
    concat!("SELECT ", dispatch_cols!("string_agg", holder_ended!()), " FROM dispatches WHERE dispatch_id = ANY($1)");
const FAILURES: &str = concat!("SELECT ", failure_cols!(), " FROM failures WHERE dispatch_id = $1 ORDER BY attempt");

const SQL_DIALECT: SqlDialect = SqlDialect { mark: |n| format!("${n}"), intent_open: INTENT_OPEN };

/// A row that does not read as this build writes it.
fn bad_row() -> JournalError {
    JournalError::Internal { what: "a stored row this build does not read" }
}

impl Columns for Row {
    type Error = JournalError;
    fn text(&self, i: usize) -> Result<String> {
        self.try_get(i).map_err(|_| bad_row())
    }
    fn opt_text(&self, i: usize) -> Result<Option<String>> {
        self.try_get(i).map_err(|_| bad_row())
    }
    fn int(&self, i: usize) -> Result<i64> {
        self.try_get(i).map_err(|_| bad_row())
    }
    fn opt_int(&self, i: usize) -> Result<Option<i64>> {
        self.try_get(i).map_err(|_| bad_row())
    }
    fn count(&self, i: usize) -> Result<u32> {
        self.try_get(i).map(to_u32).map_err(|_| bad_row())
    }
    fn unexpected(&self, _i: usize) -> JournalError {
        bad_row()
    }
}

pub(super) fn dispatch_row(r: &Row) -> Result<DispatchRow> {
    dispatch_from(r)
}

pub(super) fn intent_row(r: &Row) -> Result<StoredIntent> {
    intent_from(r)
}

fn dispatch_rows(rows: Vec<Row>) -> Result<Vec<DispatchRow>> {
    rows.iter().map(dispatch_row).collect()
}

/// The driver's parameters for a core list query.
fn bind<'a>(params: &'a [Param<'a>]) -> Vec<&'a (dyn ToSql + Sync)> {
    params
        .iter()
        .map(|p| match p {
            Param::Int(n) => n as &(dyn ToSql + Sync),
            Param::Text(s) => s as &(dyn ToSql + Sync),
        })
        .collect()
}

pub(super) fn get_dispatch(link: &mut Link, dispatch_id: &str) -> Result<Option<DispatchRow>> {
    link.query_opt(DISPATCH_BY_ID, &[&dispatch_id])?.as_ref().map(dispatch_row).transpose()
}

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
    let q = dispatches_query(&SQL_DIALECT, dispatch_cols!("string_agg", holder_ended!()), f, limit);
    dispatch_rows(link.query_dynamic(&q.sql, &bind(&q.params))?)
}

pub(super) fn list_failures(link: &mut Link, dispatch_id: &str) -> Result<Vec<FailureRow>> {
    link.query(FAILURES, &[&dispatch_id])?.iter().map(failure_from).collect()
}

pub(super) fn list_intents(link: &mut Link, f: &IntentFilter, limit: u32) -> Result<Vec<StoredIntent>> {
    let q = intents_query(&SQL_DIALECT, f, limit);
    link.query_dynamic(&q.sql, &bind(&q.params))?.iter().map(intent_row).collect()
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
    let n = |i: usize| row.int(i).map(|n| u64::try_from(n).unwrap_or_default());
    let states = [
        DispatchState::Checkpointed,
        DispatchState::Failed,
        DispatchState::Proposed,
        DispatchState::NotApplicable,
        DispatchState::Exhausted,
    ];
    let per_state = states.into_iter().enumerate().map(|(i, s)| Ok((s, n(i)?))).collect::<Result<Vec<_>>>()?;
    Ok(stats_from(per_state, n(5)?, n(6)?))
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
    (
        "SELECT count(*) FROM intents i JOIN dispatches d ON d.dispatch_id = i.dispatch_id \
         WHERE d.pruned_at IS NOT NULL",
        "intents kept for pruned dispatches",
    ),
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
