//! The embedded SQLite backend: one writer thread on the file's write
//! connection, a small pool of read-only connections. SQL and rusqlite code
//! only; the rules it runs are the core's (`..`).
//!
//! - `open.rs` recognises, creates and migrates the file; `schema.rs` is its
//!   DDL and migrations; `quiet.rs` reads a file no writer has open without
//!   creating anything beside it.
//! - `records.rs` holds the record statements the core's rule runs
//!   (`../record`); `read.rs` the readers' pool and queries.
//! - `outbox.rs` and `lease.rs` are the decisions' and the claims' SQL.
//! - `error.rs` maps SQLite's errors to [`super::JournalError`], once.

mod error;
mod lease;
pub(super) mod open;
mod outbox;
mod prune;
pub(super) mod quiet;
mod read;
mod records;
pub(super) mod schema;

use std::path::Path;
use std::time::Duration;

use rusqlite::Connection;

use super::commit::{commit_signal, CommitSignal};
use super::lease::ClaimRequest;
use super::outbox::{DecideArgs, DoneArgs};
use super::prune::{BatchArgs, BatchCounts, Exporter, StorageStats};
use super::record::{run_checkpoint, run_failure, run_final, run_many};
use super::store::Store;
use super::writer::{BatchConn, Writer};
use super::{
    AfterBatch, Answer, Checkpoint, CheckpointState, DecideOutcome, DispatchFilter, DispatchRow, DoneOutcome,
    FailureOutcome, FailureRecord, FailureRow, FinalRecord, IntegrityVerdict, IntentFilter, JournalError,
    JournalOptions, JournalStats, OpenMode, RecordAnswer, RecordCommand, RecordOutcome, Result, StoredIntent,
    WriterStats,
};
use lease::{claim_params, claim_sql, run_claim};
use outbox::{run_decide, run_done};

use read::Readers;

/// Whole-batch retries after the busy timeout expired.
const BUSY_RETRIES: u32 = 3;

pub(crate) struct SqliteStore {
    writer: Writer<Connection>,
    readers: Readers,
}

pub(crate) fn open(path: &Path, options: JournalOptions, mode: OpenMode) -> Result<(SqliteStore, CommitSignal)> {
    match mode {
        OpenMode::ReadWrite => open_writable(path, options),
        OpenMode::ReadOnly => open_read_only(path, options),
    }
}

fn open_writable(path: &Path, options: JournalOptions) -> Result<(SqliteStore, CommitSignal)> {
    // One absolute path for the writer and every reader: never a URI, and
    // pinned against a later change of directory.
    let path = crate::sqlite_file::resolve(path)?;
    let conn = open::open_writer(&path, &options)?;
    let commits = commit_signal(&path.to_string_lossy());
    let writer = Writer::spawn(conn, options, commits.clone())?;
    Ok((SqliteStore { writer, readers: Readers::new(&path, options) }, commits))
}

/// The folder of a journal file's attempt ledgers: beside it, named after
/// it as SQLite names its `-wal` (`ledger.rs`).
pub(crate) fn ledger_dir(path: &Path) -> Result<std::path::PathBuf> {
    let path = crate::sqlite_file::resolve(path)?;
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push("-attempts");
    Ok(path.with_file_name(name))
}

fn open_read_only(path: &Path, options: JournalOptions) -> Result<(SqliteStore, CommitSignal)> {
    let path = crate::sqlite_file::resolve(path)?;
    let header = match open::recognise(&path)? {
        crate::sqlite_file::Probe::Sqlite(header) => header,
        _ => return Err(JournalError::NotAJournal),
    };
    match open::inspect_read_only(&path, &header, &options).map_err(|e| quiet::wal_unreadable(&path, e))? {
        open::Found::Current | open::Found::Older(_) => {}
        open::Found::Empty => return Err(JournalError::NotAJournal),
    }
    let commits = commit_signal(&path.to_string_lossy());
    Ok((SqliteStore { writer: Writer::read_only(), readers: Readers::inspecting(&path, options) }, commits))
}

/// Runs one statement of the batch protocol from the connection's statement
/// cache: the writer runs several per batch and per command, and parsing
/// each anew was a visible share of its time.
pub(super) fn cached(conn: &Connection, sql: &str) -> Result<()> {
    conn.prepare_cached(sql)?.execute([])?;
    Ok(())
}

/// SQLite's batch protocol: `BEGIN IMMEDIATE` takes the write lock up front
/// (no upgrade deadlock with another process), and the durability of the
/// batch is its `synchronous` level.
impl BatchConn for Connection {
    fn stay_awake_for(&self) -> Duration {
        super::writer::AWAKE_FOR
    }

    fn begin(&mut self, durable: bool) -> Result<()> {
        // May not change inside a transaction, so it is set per batch; it is
        // a flag on the connection, no I/O. Never from the statement cache:
        // SQLite applies this pragma when it prepares it, not when it runs.
        self.pragma_update(None, "synchronous", if durable { "FULL" } else { "NORMAL" })?;
        cached(self, "BEGIN IMMEDIATE")
    }

    fn savepoint(&mut self) -> Result<()> {
        cached(self, "SAVEPOINT cmd")
    }

    fn release(&mut self) -> Result<()> {
        cached(self, "RELEASE cmd")
    }

    fn rollback_to(&mut self) -> Result<()> {
        Ok(self.execute_batch("ROLLBACK TO cmd; RELEASE cmd")?)
    }

    fn commit(&mut self, _wakes: bool) -> Result<()> {
        cached(self, "COMMIT")
    }

    fn rollback(&mut self) {
        if !self.is_autocommit() {
            let _ = self.execute_batch("ROLLBACK");
        }
    }

    fn retry_after(&self, e: &JournalError, tries: u32) -> Option<Duration> {
        // The connection's busy timeout already waited; a few more tries.
        (*e == JournalError::Busy && tries < BUSY_RETRIES).then(|| Duration::from_millis(10 << (tries + 1)))
    }

    fn prepare_retry(&mut self, _unknown_commit: bool) -> Result<()> {
        // A failed COMMIT in SQLite rolled back: nothing is unknown.
        Ok(())
    }
}

impl Store for SqliteStore {
    fn checkpoint(&self, c: Checkpoint, awaited: bool, then: Answer<CheckpointState>) -> Result<()> {
        match awaited {
            true => self.writer.submit_awaited(c, run_checkpoint, None, then),
            false => self.writer.submit_then(false, c, run_checkpoint, then),
        }
    }

    fn record_many(&self, records: Vec<RecordCommand>, then: Answer<Vec<Result<RecordAnswer>>>) -> Result<()> {
        self.writer.submit_then(true, records, run_many, then)
    }

    fn record_final(&self, r: FinalRecord, then: Answer<RecordOutcome>) -> Result<()> {
        self.writer.submit_then(true, r, run_final, then)
    }

    fn record_failure(&self, r: FailureRecord, then: Answer<FailureOutcome>) -> Result<()> {
        self.writer.submit_then(true, r, run_failure, then)
    }

    fn decide(&self, a: DecideArgs, then: Answer<DecideOutcome>) -> Result<()> {
        self.writer.submit_then(true, a, run_decide, then)
    }

    fn mark_done(&self, a: DoneArgs, then: Answer<DoneOutcome>) -> Result<()> {
        self.writer.submit_then(true, a, run_done, then)
    }

    fn claim(&self, r: ClaimRequest, now: i64, then: Answer<Vec<StoredIntent>>) -> Result<()> {
        // Nothing claimable on a reader: no write transaction at all.
        let probe = self.readers.with(|c| {
            let (sql, _) = claim_sql("1", &r);
            let p = claim_params(&now, &r);
            Ok(c.prepare_cached(&format!("{sql} LIMIT 1"))?.exists(p.as_slice())?)
        });
        match probe {
            Ok(false) => {
                then(Ok(Vec::new()));
                Ok(())
            }
            Err(e) => Err(e),
            // A claim is a plain write: one lost to a power cut only expires sooner.
            Ok(true) => self.writer.submit_then(false, r, run_claim, then),
        }
    }

    fn get_dispatch(&self, dispatch_id: &str) -> Result<Option<DispatchRow>> {
        // Between batches the writer's own connection has a current page
        // cache; under load it is busy and a pooled reader takes the read.
        match self.writer.read_if_idle(|c| read::dispatch_on_writer(c, dispatch_id)).flatten() {
            Some(row) => row,
            None => self.readers.get_dispatch(dispatch_id),
        }
    }

    fn list_dispatches(&self, f: &DispatchFilter, limit: u32) -> Result<Vec<DispatchRow>> {
        self.readers.list_dispatches(f, limit)
    }

    fn list_failures(&self, dispatch_id: &str) -> Result<Vec<FailureRow>> {
        self.readers.list_failures(dispatch_id)
    }

    fn list_intents(&self, f: &IntentFilter, limit: u32) -> Result<Vec<StoredIntent>> {
        self.readers.list_intents(f, limit)
    }

    fn unfinished(&self) -> Result<Vec<DispatchRow>> {
        self.readers.unfinished()
    }

    fn stats(&self) -> Result<JournalStats> {
        self.readers.stats()
    }

    fn integrity(&self) -> Result<IntegrityVerdict> {
        self.readers.integrity()
    }

    fn last_seq(&self) -> Result<i64> {
        if self.readers.inspect_only() {
            return Err(JournalError::ReadOnly);
        }
        self.readers.with(|c| Ok(c.query_row("SELECT coalesce(max(seq), 0) FROM dispatches", [], |r| r.get(0))?))
    }

    fn prune_batch(&self, a: &BatchArgs, export: Option<Exporter<'_>>) -> Result<BatchCounts> {
        let (found, scanned_to) = self.readers.with(|c| prune::candidates(c, a))?;
        if found.is_empty() {
            return Ok(BatchCounts { scanned_to, ..BatchCounts::default() });
        }
        if let Some(export) = export {
            export(&self.readers.with(|c| prune::rows_of(c, &found))?)?;
        }
        let cmd = prune::PruneCommand { found, args: *a };
        // Not durable: a prune a power cut undoes is done again by the next one.
        let counts = self.wait_for(|then| self.writer.submit_then(false, cmd, prune::run_batch, then))?;
        Ok(BatchCounts { scanned_to, ..counts })
    }

    fn reclaim(&self) -> Result<u64> {
        let (mode, page_size, before) = self.readers.with(|c| {
            Ok((prune::count(c, "PRAGMA auto_vacuum")?, prune::count(c, "PRAGMA page_size")?, {
                prune::count(c, "PRAGMA page_count")?
            }))
        })?;
        if mode != 2 {
            return Ok(0);
        }
        let mut left = self.readers.with(|c| prune::count(c, "PRAGMA freelist_count"))?;
        while left > 0 {
            let now = self.wait_for(|then| self.writer.submit_then(false, (), prune::run_vacuum_step, then))?;
            if now >= left {
                break;
            }
            left = now;
        }
        let after = self.readers.with(|c| prune::count(c, "PRAGMA page_count"))?;
        Ok(before.saturating_sub(after) * page_size)
    }

    fn storage(&self) -> Result<StorageStats> {
        self.readers.storage()
    }

    fn attach_ledger(&self, ledger: std::sync::Arc<super::ledger::Ledger>) {
        self.writer.attach_ledger(ledger);
    }

    fn after_batch(&self, f: AfterBatch) {
        self.writer.after_batch(f);
    }

    fn writer_stats(&self) -> WriterStats {
        self.writer.stats()
    }

    fn close(&self) {
        self.readers.close();
        self.writer.close();
    }
}

impl SqliteStore {
    /// Queues a writer command and blocks this thread until it committed
    /// (retention runs on a thread of its own, never an event loop's).
    fn wait_for<T: Send + 'static>(&self, submit: impl FnOnce(Answer<T>) -> Result<()>) -> Result<T> {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        submit(Box::new(move |r| {
            let _ = tx.send(r);
        }))?;
        rx.recv().unwrap_or(Err(JournalError::Closed))
    }
}
