//! Readers: the `Journal`'s read API, and SQLite's synchronous queries on
//! their own connections (WAL readers never block the writer nor wait for
//! it). Each call takes a pooled connection and reads one snapshot.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use super::rows::{DispatchFilter, DispatchRow, FailureRow, IntentFilter, JournalStats, Page, StoredIntent, MAX_PAGE};
use super::sqlite::open::{connect_read_only, in_read_txn};
use super::sqlite::quiet::{self, Quiet, QUIET_TRIES};
use super::sqlite::schema::{DISPATCH_UNFINISHED, INTENT_OPEN};
use super::{arg, Decision, DispatchState, IntegrityVerdict, Journal, JournalError, JournalOptions, Result};
use rusqlite::{Connection, OptionalExtension, Row, ToSql};

/// SQLite's primary result code for a damaged database file.
const SQLITE_CORRUPT: i32 = 11;

/// Idle reader connections kept per journal.
const POOL: usize = 4;

/// A small pool of read-only connections.
pub(crate) struct Readers {
    path: PathBuf,
    busy_timeout_ms: u32,
    idle: Mutex<Vec<Connection>>,
    closed: AtomicBool,
    /// No writer of ours holds the file open (`Journal::open_read_only`).
    inspect_only: bool,
}

impl Readers {
    pub(crate) fn new(path: &Path, options: JournalOptions) -> Self {
        Readers {
            path: path.to_owned(),
            busy_timeout_ms: options.busy_timeout_ms,
            idle: Mutex::new(Vec::new()),
            closed: AtomicBool::new(false),
            inspect_only: false,
        }
    }

    /// The readers of a journal opened read-only, which read a quiet file
    /// without creating anything beside it (see [`quiet::read`]).
    pub(crate) fn inspecting(path: &Path, options: JournalOptions) -> Self {
        Readers { inspect_only: true, ..Readers::new(path, options) }
    }

    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.idle.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }

    /// Runs `f` in one read transaction on a pooled connection.
    pub(crate) fn with<T>(&self, f: impl Fn(&Connection) -> Result<T>) -> Result<T> {
        self.pooled(|c| in_read_txn(c, &f))
    }

    /// Runs one statement on a pooled connection: a single statement reads
    /// one snapshot by itself, so no explicit transaction (two statements
    /// less on the replay path).
    fn one<T>(&self, f: impl Fn(&Connection) -> Result<T>) -> Result<T> {
        self.pooled(f)
    }

    fn pooled<T>(&self, f: impl Fn(&Connection) -> Result<T>) -> Result<T> {
        if self.closed.load(Ordering::SeqCst) {
            return Err(JournalError::Closed);
        }
        if self.inspect_only {
            for _ in 0..QUIET_TRIES {
                match quiet::read(&self.path, &f)? {
                    Quiet::Read(out) => return out,
                    Quiet::Live => break,
                    Quiet::Changed => continue,
                }
            }
        }
        let pooled = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let conn = match pooled {
            Some(c) => c,
            None => {
                // Read-only: no CREATE, no write, no checkpoint on close.
                connect_read_only(&self.path, self.busy_timeout_ms).map_err(|e| self.unreadable(e))?
            }
        };
        let out = f(&conn).map_err(|e| self.unreadable(e));
        if !self.closed.load(Ordering::SeqCst) {
            let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
            if idle.len() < POOL {
                idle.push(conn);
            }
        }
        out
    }

    fn unreadable(&self, e: JournalError) -> JournalError {
        if self.inspect_only {
            quiet::wal_unreadable(&self.path, e)
        } else {
            e
        }
    }
}

/// The columns of a [`DispatchRow`] selected `FROM dispatches`; the last one is
/// the ids of a proposed dispatch's intents in `seq` order, comma-separated
/// (intent ids are `pwi_` + hex, never containing a comma).
pub(crate) const DISPATCH_COLS: &str =
    "seq, dispatch_id, state, attempts, hook_id, capability_id, receipt_id, effect_id, \
     event_kind, registration_digest, result_digest, created_at, updated_at, \
     (SELECT r.request FROM requests r WHERE r.seq = dispatches.seq), \
     CASE WHEN state = 'proposed' THEN (SELECT group_concat(i.intent_id, ',' ORDER BY i.seq) \
       FROM intents i WHERE i.dispatch_id = dispatches.dispatch_id) END";

pub(crate) fn dispatch_row(r: &Row<'_>) -> rusqlite::Result<DispatchRow> {
    let state: String = r.get(2)?;
    Ok(DispatchRow {
        seq: r.get(0)?,
        dispatch_id: r.get(1)?,
        state: DispatchState::parse(&state).ok_or(rusqlite::Error::InvalidColumnType(
            2,
            "state".into(),
            rusqlite::types::Type::Text,
        ))?,
        attempts: r.get(3)?,
        hook_id: r.get(4)?,
        capability_id: r.get(5)?,
        receipt_id: r.get(6)?,
        effect_id: r.get(7)?,
        event_kind: r.get(8)?,
        registration_digest: r.get(9)?,
        result_digest: r.get(10)?,
        created_at: r.get(11)?,
        updated_at: r.get(12)?,
        request_json: r.get(13)?,
        intent_ids: r
            .get::<_, Option<String>>(14)?
            .map(|ids| ids.split(',').map(str::to_owned).collect())
            .unwrap_or_default(),
        receipt_json: None,
    })
}

/// Selected `FROM intents i`: the source dispatch's hook comes from its row.
pub(crate) const INTENT_COLS: &str =
    "i.seq, i.intent_id, i.dispatch_id, i.capability_id, i.intent_kind, i.decision, i.executor_id, \
     i.reason_code, i.decided_at, i.done_at, i.doc, \
     (SELECT d.hook_id FROM dispatches d WHERE d.dispatch_id = i.dispatch_id)";

pub(crate) fn intent_row(r: &Row<'_>) -> rusqlite::Result<StoredIntent> {
    let decision: Option<String> = r.get(5)?;
    Ok(StoredIntent {
        seq: r.get(0)?,
        intent_id: r.get(1)?,
        dispatch_id: r.get(2)?,
        capability_id: r.get(3)?,
        intent_kind: r.get(4)?,
        decision: decision.as_deref().and_then(Decision::from_stored),
        executor_id: r.get(6)?,
        reason_code: r.get(7)?,
        decided_at: r.get(8)?,
        done_at: r.get(9)?,
        stored_json: r.get(10)?,
        hook_id: r.get::<_, Option<String>>(11)?.unwrap_or_default(),
        doc_json: None,
    })
}

fn page<T>(items: Vec<T>, limit: u32, seq: impl Fn(&T) -> i64) -> Page<T> {
    let next_cursor = if items.len() as u32 == limit { items.last().map(seq) } else { None };
    Page { items, next_cursor }
}

fn clamp(limit: u32) -> u32 {
    limit.clamp(1, MAX_PAGE)
}

/// Runs `sql` with `params`, mapping each row.
fn query<T>(
    conn: &Connection,
    sql: &str,
    params: &[&dyn ToSql],
    map: fn(&Row<'_>) -> rusqlite::Result<T>,
) -> Result<Vec<T>> {
    let mut stmt = conn.prepare_cached(sql)?;
    let rows = stmt.query_map(params, map)?;
    Ok(rows.collect::<rusqlite::Result<Vec<T>>>()?)
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

/// The SQLite queries behind the readers.
impl Readers {
    pub(crate) fn get_dispatch(&self, dispatch_id: &str) -> Result<Option<DispatchRow>> {
        static SQL: std::sync::LazyLock<String> =
            std::sync::LazyLock::new(|| format!("SELECT {DISPATCH_COLS} FROM dispatches WHERE dispatch_id = ?1"));
        self.one(|c| Ok(c.prepare_cached(&SQL)?.query_row([dispatch_id], dispatch_row).optional()?))
    }

    pub(crate) fn list_dispatches(&self, f: &DispatchFilter, limit: u32) -> Result<Vec<DispatchRow>> {
        let state = f.state.map(DispatchState::as_str);
        let after = f.after_cursor.unwrap_or(0);
        let mut sql = format!("SELECT {DISPATCH_COLS} FROM dispatches WHERE seq > ?1");
        let mut params: Vec<&dyn ToSql> = vec![&after];
        if let Some(s) = &state {
            params.push(s);
            sql += &format!(" AND state = ?{}", params.len());
        }
        if let Some(h) = &f.hook_id {
            params.push(h);
            sql += &format!(" AND hook_id = ?{}", params.len());
        }
        params.push(&limit);
        sql += &format!(" ORDER BY seq LIMIT ?{}", params.len());
        self.with(|c| query(c, &sql, &params, dispatch_row))
    }

    pub(crate) fn list_failures(&self, dispatch_id: &str) -> Result<Vec<FailureRow>> {
        self.with(|c| {
            query(
                c,
                "SELECT dispatch_id, attempt, code, rule, at FROM failures WHERE dispatch_id = ?1 ORDER BY attempt",
                &[&dispatch_id],
                |r| {
                    Ok(FailureRow {
                        dispatch_id: r.get(0)?,
                        attempt: r.get(1)?,
                        code: r.get(2)?,
                        rule: r.get(3)?,
                        at: r.get(4)?,
                    })
                },
            )
        })
    }

    pub(crate) fn list_intents(&self, f: &IntentFilter, limit: u32) -> Result<Vec<StoredIntent>> {
        let mut sql = format!("SELECT {INTENT_COLS} FROM intents i WHERE seq > ?1");
        let mut params: Vec<&dyn ToSql> = vec![&f.after_seq];
        for (col, value) in
            [("dispatch_id", &f.dispatch_id), ("capability_id", &f.capability_id), ("intent_kind", &f.intent_kind)]
        {
            if let Some(v) = value {
                params.push(v);
                sql += &format!(" AND {col} = ?{}", params.len());
            }
        }
        if f.pending_only {
            sql += &format!(" AND {INTENT_OPEN}");
        }
        params.push(&limit);
        sql += &format!(" ORDER BY seq LIMIT ?{}", params.len());
        self.with(|c| query(c, &sql, &params, intent_row))
    }

    pub(crate) fn unfinished(&self) -> Result<Vec<DispatchRow>> {
        let sql = format!("SELECT {DISPATCH_COLS} FROM dispatches WHERE {DISPATCH_UNFINISHED} ORDER BY seq");
        self.with(|c| query(c, &sql, &[], dispatch_row))
    }

    pub(crate) fn stats(&self) -> Result<JournalStats> {
        self.with(|c| {
            let mut s = JournalStats::default();
            let per_state = query(c, "SELECT state, count(*) FROM dispatches GROUP BY state", &[], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))
            })?;
            for (state, n) in per_state {
                let n = u64::try_from(n).unwrap_or_default();
                match DispatchState::parse(&state) {
                    Some(DispatchState::Checkpointed) => s.checkpointed = n,
                    Some(DispatchState::Failed) => s.failed = n,
                    Some(DispatchState::Proposed) => s.proposed = n,
                    Some(DispatchState::NotApplicable) => s.not_applicable = n,
                    Some(DispatchState::Exhausted) => s.exhausted = n,
                    None => {}
                }
            }
            let count = |sql: &str| -> Result<u64> {
                Ok(u64::try_from(c.query_row(sql, [], |r| r.get::<_, i64>(0))?).unwrap_or_default())
            };
            s.intents = count("SELECT count(*) FROM intents")?;
            s.intents_open = count(&format!("SELECT count(*) FROM intents WHERE {INTENT_OPEN}"))?;
            Ok(s)
        })
    }

    /// Corruption found while checking (SQLite answering "malformed") becomes
    /// one more message.
    pub(crate) fn integrity(&self) -> Result<IntegrityVerdict> {
        let checked = self.with(|c| {
            let mut messages = query(c, "PRAGMA integrity_check(100)", &[], |r| r.get::<_, String>(0))?;
            if messages.len() == 1 && messages[0] == "ok" {
                messages.clear();
            }
            let fk = query(c, "PRAGMA foreign_key_check", &[], |r| r.get::<_, String>(0))?;
            if !fk.is_empty() {
                messages.push(format!("{} foreign key violation(s) in {}", fk.len(), fk[0]));
            }
            Ok(IntegrityVerdict { ok: messages.is_empty(), messages })
        });
        match checked {
            Err(JournalError::Sqlite { code, what }) if code & 0xff == SQLITE_CORRUPT => {
                Ok(IntegrityVerdict { ok: false, messages: vec![what.to_owned()] })
            }
            Err(JournalError::NotAJournal) => {
                Ok(IntegrityVerdict { ok: false, messages: vec!["file is not a database".to_owned()] })
            }
            other => other,
        }
    }
}
