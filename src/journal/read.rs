//! The read side, backend-neutral: the `Journal`'s read API, and what both
//! backends' readers share: the column lists, the mapping from column values
//! to [`DispatchRow`], [`StoredIntent`] and [`FailureRow`], and the filters of
//! the list queries. The queries themselves run in `sqlite/read.rs` and
//! `postgres/read.rs`.

use super::rows::{DispatchFilter, DispatchRow, FailureRow, IntentFilter, JournalStats, Page, StoredIntent, MAX_PAGE};
use super::{arg, Decision, DispatchState, IntegrityVerdict, Journal, Result};
use crate::contract::Dialect;

/// The columns of a [`DispatchRow`] selected `FROM dispatches`, given the
/// backend's string aggregate (`group_concat`, `string_agg`): the last one
/// but one is the ids of a proposed dispatch's intents in `seq` order,
/// comma-separated (intent ids are `pwi_` + hex, never containing a comma);
/// the last, only for rows of a dialect other than the default, is what
/// its receipt embeds beyond the columns (see `DispatchRow::receipt_extra`;
/// a pruned row's is its tombstone's);
/// then whether the process holding its attempt ended, and when the row was
/// pruned. A pruned row's intent ids are its tombstone's (`prune.rs`).
macro_rules! dispatch_cols {
    ($agg:literal, $holder_ended:expr) => {
        concat!(
            "seq, dispatch_id, state, attempts, hook_id, capability_id, receipt_id, effect_id, ",
            "event_kind, registration_digest, result_digest, created_at, updated_at, dialect, recorded_at, ",
            "(SELECT r.request FROM requests r WHERE r.seq = dispatches.seq), ",
            "CASE WHEN state = 'proposed' THEN COALESCE(pruned_intents, (SELECT ",
            $agg,
            "(i.intent_id, ',' ORDER BY i.seq) FROM intents i WHERE i.dispatch_id = dispatches.dispatch_id)) END, ",
            "CASE WHEN dialect IS NULL THEN NULL WHEN pruned_extra IS NOT NULL THEN pruned_extra ",
            "WHEN state = 'proposed' THEN (SELECT i.intent_kind || ' ' || i.doc FROM intents i ",
            "WHERE i.dispatch_id = dispatches.dispatch_id ORDER BY i.seq LIMIT 1) ",
            "WHEN state = 'failed' THEN (SELECT f.code FROM failures f ",
            "WHERE f.dispatch_id = dispatches.dispatch_id ORDER BY f.attempt DESC LIMIT 1) END, ",
            $holder_ended,
            ", pruned_at"
        )
    };
}
pub(crate) use dispatch_cols;

/// Selected `FROM intents i`: the source dispatch's hook comes from its row.
macro_rules! intent_cols {
    () => {
        "i.seq, i.intent_id, i.dispatch_id, i.capability_id, i.intent_kind, i.decision, i.executor_id, \
         i.reason_code, i.decided_at, i.done_at, i.doc, \
         (SELECT d.hook_id FROM dispatches d WHERE d.dispatch_id = i.dispatch_id), \
         (SELECT d.dialect FROM dispatches d WHERE d.dispatch_id = i.dispatch_id)"
    };
}
pub(crate) use intent_cols;

/// [`intent_cols`] as a constant.
pub(crate) const INTENT_COLS: &str = intent_cols!();

/// The columns of a [`FailureRow`] `FROM failures`.
macro_rules! failure_cols {
    () => {
        "dispatch_id, attempt, code, rule, at, pointer"
    };
}
pub(crate) use failure_cols;

/// One result row as the mappers below read it, column by column; each
/// backend says how its driver reads a column and what its error is.
pub(crate) trait Columns {
    type Error;
    fn text(&self, i: usize) -> Result<String, Self::Error>;
    fn opt_text(&self, i: usize) -> Result<Option<String>, Self::Error>;
    fn int(&self, i: usize) -> Result<i64, Self::Error>;
    fn opt_int(&self, i: usize) -> Result<Option<i64>, Self::Error>;
    /// A count stored as an integer (attempts).
    fn count(&self, i: usize) -> Result<u32, Self::Error>;
    /// Column `i` holds a value this build never writes.
    fn unexpected(&self, i: usize) -> Self::Error;
}

/// A row of [`dispatch_cols`].
pub(crate) fn dispatch_from<C: Columns>(r: &C) -> Result<DispatchRow, C::Error> {
    let state = r.text(2)?;
    Ok(DispatchRow {
        seq: r.int(0)?,
        dispatch_id: r.text(1)?,
        state: DispatchState::parse(&state).ok_or_else(|| r.unexpected(2))?,
        attempts: r.count(3)?,
        hook_id: r.text(4)?,
        capability_id: r.text(5)?,
        receipt_id: r.text(6)?,
        effect_id: r.text(7)?,
        event_kind: r.text(8)?,
        registration_digest: r.text(9)?,
        result_digest: r.opt_text(10)?,
        created_at: r.int(11)?,
        updated_at: r.int(12)?,
        dialect: dialect_of(r, 13)?,
        recorded_at: r.opt_text(14)?,
        request_json: r.opt_text(15)?,
        intent_ids: r.opt_text(16)?.map(|ids| ids.split(',').map(str::to_owned).collect()).unwrap_or_default(),
        receipt_extra: r.opt_text(17)?,
        holder_ended: r.int(18)? != 0,
        pruned_at: r.opt_int(19)?,
        receipt_json: None,
    })
}

/// The stored dialect: NULL is the default, so rows of the default cost no bytes for it.
fn dialect_of<C: Columns>(r: &C, i: usize) -> Result<Dialect, C::Error> {
    match r.opt_text(i)? {
        None => Ok(Dialect::ContractV0),
        Some(s) => Dialect::parse(&s).filter(|d| *d != Dialect::ContractV0).ok_or_else(|| r.unexpected(i)),
    }
}

/// The stored form of `dialect` (see [`dialect_of`]).
pub(crate) fn stored_dialect(dialect: Dialect) -> Option<&'static str> {
    (dialect != Dialect::ContractV0).then(|| dialect.as_str())
}

/// A row of [`intent_cols`].
pub(crate) fn intent_from<C: Columns>(r: &C) -> Result<StoredIntent, C::Error> {
    Ok(StoredIntent {
        seq: r.int(0)?,
        intent_id: r.text(1)?,
        dispatch_id: r.text(2)?,
        capability_id: r.text(3)?,
        intent_kind: r.text(4)?,
        decision: r.opt_text(5)?.as_deref().and_then(Decision::from_stored),
        executor_id: r.opt_text(6)?,
        reason_code: r.opt_text(7)?,
        decided_at: r.opt_int(8)?,
        done_at: r.opt_int(9)?,
        stored_json: r.text(10)?,
        hook_id: r.opt_text(11)?.unwrap_or_default(),
        dialect: dialect_of(r, 12)?,
        doc_json: None,
    })
}

/// A row of [`failure_cols`].
pub(crate) fn failure_from<C: Columns>(r: &C) -> Result<FailureRow, C::Error> {
    Ok(FailureRow {
        dispatch_id: r.text(0)?,
        attempt: r.count(1)?,
        code: r.text(2)?,
        rule: r.opt_text(3)?,
        pointer: r.opt_text(5)?,
        failed_at: r.int(4)?,
    })
}

/// How a backend writes what the list queries differ in.
pub(crate) struct SqlDialect {
    /// Placeholder `n` (1-based): `?n` or `$n`.
    pub mark: fn(usize) -> String,
    /// The condition of open intents (matches the backend's partial index).
    pub intent_open: &'static str,
}

/// A list query's parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Param<'a> {
    Int(i64),
    Text(&'a str),
}

/// A list query and its parameters, in placeholder order.
pub(crate) struct Query<'a> {
    pub sql: String,
    pub params: Vec<Param<'a>>,
}

impl<'a> Query<'a> {
    fn new(head: String, first: Param<'a>) -> Self {
        Query { sql: head, params: vec![first] }
    }

    fn and(&mut self, d: &SqlDialect, col: &str, value: Param<'a>) {
        self.params.push(value);
        self.sql += &format!(" AND {col} = {}", (d.mark)(self.params.len()));
    }

    fn page(mut self, d: &SqlDialect, limit: u32) -> Self {
        self.params.push(Param::Int(i64::from(limit)));
        self.sql += &format!(" ORDER BY seq LIMIT {}", (d.mark)(self.params.len()));
        self
    }
}

/// `list_dispatches`: `cols` is the backend's [`dispatch_cols`].
pub(crate) fn dispatches_query<'a>(d: &SqlDialect, cols: &str, f: &'a DispatchFilter, limit: u32) -> Query<'a> {
    let after = Param::Int(f.after_cursor.unwrap_or(0));
    let mut q = Query::new(format!("SELECT {cols} FROM dispatches WHERE seq > {}", (d.mark)(1)), after);
    if let Some(s) = f.state {
        q.and(d, "state", Param::Text(s.as_str()));
    }
    if let Some(h) = &f.hook_id {
        q.and(d, "hook_id", Param::Text(h));
    }
    q.page(d, limit)
}

/// `list_intents`, oldest first.
pub(crate) fn intents_query<'a>(d: &SqlDialect, f: &'a IntentFilter, limit: u32) -> Query<'a> {
    let head = format!("SELECT {INTENT_COLS} FROM intents i WHERE seq > {}", (d.mark)(1));
    let mut q = Query::new(head, Param::Int(f.after_seq));
    for (col, value) in
        [("dispatch_id", &f.dispatch_id), ("capability_id", &f.capability_id), ("intent_kind", &f.intent_kind)]
    {
        if let Some(v) = value {
            q.and(d, col, Param::Text(v));
        }
    }
    if f.pending_only {
        q.sql += &format!(" AND {}", d.intent_open);
    }
    q.page(d, limit)
}

/// Counts per state and of intents into [`JournalStats`].
pub(crate) fn stats_from(
    per_state: impl IntoIterator<Item = (DispatchState, u64)>,
    intents: u64,
    open: u64,
) -> JournalStats {
    let mut s = JournalStats { intents, intents_open: open, ..JournalStats::default() };
    for (state, n) in per_state {
        match state {
            DispatchState::Checkpointed => s.checkpointed = n,
            DispatchState::Failed => s.failed = n,
            DispatchState::Proposed => s.proposed = n,
            DispatchState::NotApplicable => s.not_applicable = n,
            DispatchState::Exhausted => s.exhausted = n,
        }
    }
    s
}

fn page<T>(items: Vec<T>, limit: u32, seq: impl Fn(&T) -> i64) -> Page<T> {
    let next_cursor = if items.len() as u32 == limit { items.last().map(seq) } else { None };
    Page { items, next_cursor }
}

fn clamp(limit: u32) -> u32 {
    limit.clamp(1, MAX_PAGE)
}

impl Journal {
    pub fn get_dispatch(&self, dispatch_id: &str) -> Result<Option<DispatchRow>> {
        self.store.get_dispatch(dispatch_id)
    }

    /// The rows of many identities, in `ids` order (one query on PostgreSQL).
    pub fn get_dispatches(&self, ids: &[String]) -> Result<Vec<Option<DispatchRow>>> {
        self.store.get_dispatches(ids)
    }

    /// Dispatches in insertion order, paged by `seq`.
    pub fn list_dispatches(&self, f: &DispatchFilter) -> Result<Page<DispatchRow>> {
        arg::opt_token(f.hook_id.as_deref(), "hookId")?;
        let limit = clamp(f.limit);
        Ok(page(self.store.list_dispatches(f, limit)?, limit, |d| d.seq))
    }

    /// Failed attempts of one dispatch, by attempt.
    pub fn list_failures(&self, dispatch_id: &str) -> Result<Vec<FailureRow>> {
        self.store.list_failures(dispatch_id)
    }

    /// Intents oldest first, paged by `seq`.
    pub fn list_intents(&self, f: &IntentFilter) -> Result<Page<StoredIntent>> {
        arg::opt_token(f.capability_id.as_deref(), "capabilityId")?;
        arg::opt_token(f.intent_kind.as_deref(), "intentKind")?;
        let limit = clamp(f.limit);
        Ok(page(self.store.list_intents(f, limit)?, limit, |i| i.seq))
    }

    /// Every dispatch without a final receipt (checkpointed or failed), oldest
    /// first: what `recover()` re-dispatches.
    pub fn unfinished(&self) -> Result<Vec<DispatchRow>> {
        self.store.unfinished()
    }

    pub fn stats(&self) -> Result<JournalStats> {
        self.store.stats()
    }

    /// Whether a read waits on a network round trip (PostgreSQL) rather than
    /// a local file (SQLite): an event loop should make such reads off its
    /// own thread, and a local one on it (a WAL read costs less than a hop).
    pub fn reads_are_remote(&self) -> bool {
        self.store.reads_are_remote()
    }

    /// Runs `f`, whose reads of any journal then behave as on an event
    /// loop's own thread even inside a runtime: each waits at most one
    /// statement bound and an unreachable server answers `Unavailable` at
    /// once, for a caller that retries with timers. For a thread that blocks
    /// but drives no async tasks (`tokio::task::spawn_blocking`).
    pub fn reads_without_backoff<T>(f: impl FnOnce() -> T) -> T {
        super::caller::reads_here(f)
    }

    /// The integrity verdict is clean (see [`Journal::integrity`]).
    pub fn integrity_check(&self) -> Result<bool> {
        self.integrity().map(|v| v.ok)
    }

    /// The integrity verdict with the database's own messages. A damaged
    /// journal is a failed verdict, not an error. SQLite: `PRAGMA
    /// integrity_check` and `foreign_key_check`; PostgreSQL: the schema's
    /// version and cross-table invariants.
    pub fn integrity(&self) -> Result<IntegrityVerdict> {
        self.store.integrity()
    }
}
