//! SQLite's readers: synchronous queries on their own connections (WAL
//! readers never block the writer nor wait for it). Each call takes a pooled
//! connection and reads one snapshot. The columns, row mapping and filters
//! are the core's (`../read.rs`).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

use rusqlite::{Connection, OptionalExtension, Row, ToSql};

use super::super::read::{
    dispatch_cols, dispatch_from, dispatches_query, failure_cols, failure_from, intent_from, intents_query, stats_from,
    Columns, Param, SqlDialect,
};
use super::super::{
    DispatchFilter, DispatchRow, DispatchState, FailureRow, IntegrityVerdict, IntentFilter, JournalError,
    JournalOptions, JournalStats, Result, StoredIntent,
};
use super::open::{connect_read_only, in_read_txn};
use super::quiet::{self, Quiet, QUIET_TRIES};
use super::schema::{DISPATCH_UNFINISHED, INTENT_OPEN};

/// SQLite's primary result code for a damaged database file.
const SQLITE_CORRUPT: i32 = 11;

pub(crate) const DISPATCH_COLS: &str = dispatch_cols!("group_concat", "0");

const SQL_DIALECT: SqlDialect = SqlDialect { mark: |n| format!("?{n}"), intent_open: INTENT_OPEN };

impl Columns for Row<'_> {
    type Error = rusqlite::Error;
    fn text(&self, i: usize) -> rusqlite::Result<String> {
        self.get(i)
    }
    fn opt_text(&self, i: usize) -> rusqlite::Result<Option<String>> {
        self.get(i)
    }
    fn int(&self, i: usize) -> rusqlite::Result<i64> {
        self.get(i)
    }
    fn opt_int(&self, i: usize) -> rusqlite::Result<Option<i64>> {
        self.get(i)
    }
    fn count(&self, i: usize) -> rusqlite::Result<u32> {
        self.get(i)
    }
    fn unexpected(&self, i: usize) -> rusqlite::Error {
        rusqlite::Error::InvalidColumnType(i, "state".into(), rusqlite::types::Type::Text)
    }
}

pub(crate) fn dispatch_row(r: &Row<'_>) -> rusqlite::Result<DispatchRow> {
    dispatch_from(r)
}

pub(crate) fn intent_row(r: &Row<'_>) -> rusqlite::Result<StoredIntent> {
    intent_from(r)
}

pub(crate) fn failure_row(r: &Row<'_>) -> rusqlite::Result<FailureRow> {
    failure_from(r)
}

/// The driver's parameters for a core list query.
fn bind<'a>(params: &'a [Param<'a>]) -> Vec<&'a dyn ToSql> {
    params
        .iter()
        .map(|p| match p {
            Param::Int(n) => n as &dyn ToSql,
            Param::Text(s) => s as &dyn ToSql,
        })
        .collect()
}

/// Idle reader connections kept per journal.
const POOL: usize = 4;

/// A small pool of read-only connections.
pub(crate) struct Readers {
    path: PathBuf,
    busy_timeout_ms: u32,
    idle: Mutex<Vec<Connection>>,
    closed: AtomicBool,
    /// Reads running now: `close` waits for them, so no connection of this
    /// journal touches its files once it has closed.
    reading: AtomicUsize,
    /// No writer of ours holds the file open (a journal opened `OpenMode::ReadOnly`).
    inspect_only: bool,
}

impl Readers {
    pub(crate) fn new(path: &Path, options: JournalOptions) -> Self {
        Readers {
            path: path.to_owned(),
            busy_timeout_ms: options.busy_timeout_ms,
            idle: Mutex::new(Vec::new()),
            closed: AtomicBool::new(false),
            reading: AtomicUsize::new(0),
            inspect_only: false,
        }
    }

    /// The readers of a journal opened read-only, which read a quiet file
    /// without creating anything beside it (see [`quiet::read`]).
    pub(crate) fn inspecting(path: &Path, options: JournalOptions) -> Self {
        Readers { inspect_only: true, ..Readers::new(path, options) }
    }

    /// These readers belong to a journal opened read-only.
    pub(crate) fn inspect_only(&self) -> bool {
        self.inspect_only
    }

    /// Closes the pool once the reads running now have ended (each is bounded
    /// by the busy timeout) and their connections are closed.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.idle.lock().unwrap_or_else(|p| p.into_inner()).clear();
        while self.reading.load(Ordering::SeqCst) > 0 {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
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
        // Counted before the check: `close` either sees this read or it is refused.
        self.reading.fetch_add(1, Ordering::SeqCst);
        let out = self.pooled_counted(f);
        self.reading.fetch_sub(1, Ordering::SeqCst);
        out
    }

    fn pooled_counted<T>(&self, f: impl Fn(&Connection) -> Result<T>) -> Result<T> {
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

/// One dispatch's row, read on `c`.
fn dispatch_on(c: &Connection, dispatch_id: &str) -> Result<Option<DispatchRow>> {
    static SQL: std::sync::LazyLock<String> =
        std::sync::LazyLock::new(|| format!("SELECT {DISPATCH_COLS} FROM dispatches WHERE dispatch_id = ?1"));
    Ok(c.prepare_cached(&SQL)?.query_row([dispatch_id], dispatch_row).optional()?)
}

/// One dispatch's row, read on the idle writer's connection (see
/// `super::SqliteStore::get_dispatch`); None when that connection holds a
/// transaction open, as a batch whose rollback failed could leave it, since
/// a read there would see rows not committed.
pub(crate) fn dispatch_on_writer(c: &Connection, dispatch_id: &str) -> Option<Result<Option<DispatchRow>>> {
    c.is_autocommit().then(|| dispatch_on(c, dispatch_id))
}

/// The SQLite queries behind the readers.
impl Readers {
    pub(crate) fn get_dispatch(&self, dispatch_id: &str) -> Result<Option<DispatchRow>> {
        self.one(|c| dispatch_on(c, dispatch_id))
    }

    pub(crate) fn list_dispatches(&self, f: &DispatchFilter, limit: u32) -> Result<Vec<DispatchRow>> {
        let q = dispatches_query(&SQL_DIALECT, DISPATCH_COLS, f, limit);
        self.with(|c| query(c, &q.sql, &bind(&q.params), dispatch_row))
    }

    pub(crate) fn list_failures(&self, dispatch_id: &str) -> Result<Vec<FailureRow>> {
        const SQL: &str = concat!("SELECT ", failure_cols!(), " FROM failures WHERE dispatch_id = ?1 ORDER BY attempt");
        self.with(|c| query(c, SQL, &[&dispatch_id], failure_row))
    }

    pub(crate) fn list_intents(&self, f: &IntentFilter, limit: u32) -> Result<Vec<StoredIntent>> {
        let q = intents_query(&SQL_DIALECT, f, limit);
        self.with(|c| query(c, &q.sql, &bind(&q.params), intent_row))
    }

    pub(crate) fn unfinished(&self) -> Result<Vec<DispatchRow>> {
        let sql = format!("SELECT {DISPATCH_COLS} FROM dispatches WHERE {DISPATCH_UNFINISHED} ORDER BY seq");
        self.with(|c| query(c, &sql, &[], dispatch_row))
    }

    pub(crate) fn stats(&self) -> Result<JournalStats> {
        self.with(|c| {
            let per_state = query(c, "SELECT state, count(*) FROM dispatches GROUP BY state", &[], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))
            })?;
            let per_state = per_state
                .into_iter()
                .filter_map(|(state, n)| Some((DispatchState::parse(&state)?, u64::try_from(n).unwrap_or_default())));
            let count = |sql: &str| -> Result<u64> {
                Ok(u64::try_from(c.query_row(sql, [], |r| r.get::<_, i64>(0))?).unwrap_or_default())
            };
            let intents = count("SELECT count(*) FROM intents")?;
            let open = count(&format!("SELECT count(*) FROM intents WHERE {INTENT_OPEN}"))?;
            Ok(stats_from(per_state, intents, open))
        })
    }

    /// Corruption found while checking (SQLite answering "malformed") becomes
    /// one more message.
    /// The file's size, its free pages and its tombstones.
    pub(crate) fn storage(&self) -> Result<super::super::StorageStats> {
        self.with(|c| {
            let n = |sql: &str| -> Result<u64> {
                let n: i64 = c.query_row(sql, [], |r| r.get(0))?;
                Ok(u64::try_from(n).unwrap_or(0))
            };
            let page_size = n("PRAGMA page_size")?;
            Ok(super::super::StorageStats {
                bytes: n("PRAGMA page_count")? * page_size,
                free_bytes: n("PRAGMA freelist_count")? * page_size,
                pruned: n("SELECT count(*) FROM dispatches WHERE pruned_at IS NOT NULL")?,
            })
        })
    }

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

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use super::*;
    use crate::journal::tests::{open_file, TempDir};

    /// The writer's connection is read only outside a transaction: inside
    /// one, a read would see what is not committed.
    #[test]
    fn a_writer_connection_inside_a_transaction_is_not_read() {
        let dir = TempDir::new("writer-read");
        let path = dir.file("j.sqlite");
        open_file(&path, JournalOptions::default()).unwrap().close();
        let c = Connection::open(&path).unwrap();
        assert_eq!(dispatch_on_writer(&c, "pwh_missing").map(|r| r.unwrap()), Some(None));
        c.execute_batch("BEGIN IMMEDIATE").unwrap();
        assert!(dispatch_on_writer(&c, "pwh_missing").is_none());
        c.execute_batch("ROLLBACK").unwrap();
        assert!(dispatch_on_writer(&c, "pwh_missing").is_some());
    }

    /// A read that started before `close` ends, and its connection closes,
    /// before `close` returns: nothing of the journal's is touched after it.
    #[test]
    fn close_waits_for_the_reads_running() {
        let dir = TempDir::new("readers-close");
        let path = dir.file("j.sqlite");
        open_file(&path, JournalOptions::default()).unwrap().close();
        let readers = Arc::new(Readers::new(&path, JournalOptions::default()));
        let (started, ended) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
        let read = {
            let (readers, started, ended) = (readers.clone(), started.clone(), ended.clone());
            std::thread::spawn(move || {
                readers.with(|c| {
                    started.store(true, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(150));
                    let n: i64 = c.query_row("SELECT count(*) FROM dispatches", [], |r| r.get(0))?;
                    ended.store(true, Ordering::SeqCst);
                    Ok(n)
                })
            })
        };
        while !started.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(1));
        }
        let t0 = Instant::now();
        readers.close();
        assert!(ended.load(Ordering::SeqCst), "close returned while a read was running");
        assert!(t0.elapsed() >= Duration::from_millis(100));
        assert_eq!(read.join().unwrap().unwrap(), 0);
        assert_eq!(readers.reading.load(Ordering::SeqCst), 0);
        assert_eq!(readers.with(|_| Ok(())).unwrap_err(), JournalError::Closed);
    }
}
