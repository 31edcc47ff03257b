//! The journal in a PostgreSQL schema, for deployments whose orchestrators
//! or executors run on several hosts: one database all of them reach.
//!
//! Same API and outcomes as the SQLite file: the writer group-commits many
//! dispatches' records into one transaction (one WAL flush) and answers each
//! only after COMMIT returned (`writer.rs`); identities stay unique across
//! hosts through the tables' keys and row locks (`records.rs`); executors
//! share the outbox through `FOR UPDATE SKIP LOCKED` leases and are woken by
//! `LISTEN/NOTIFY` (`outbox.rs`, `listen.rs`).
//!
//! Failures: a lost connection, a server restart or a failover is retried
//! with backoff (about 15 s for writes); a batch whose COMMIT failed may have
//! committed, so its retry reads each identity back and answers what is
//! recorded. Past the retries the answer is [`JournalError::Unavailable`].
//! No error, log or debug output holds the connection string, host, user or
//! password (`conn.rs`).

mod conn;
mod listen;
mod merged;
mod outbox;
mod pool;
mod prune;
mod read;
mod records;
mod schema;
mod writer;

#[cfg(test)]
mod tests;

use std::str::FromStr;
use std::time::Duration;

use tokio_postgres::Config;

pub use schema::PG_SCHEMA_VERSION;

use super::commit::{commit_signal, CommitSignal};
use super::lease::ClaimRequest;
use super::outbox::{DecideArgs, DoneArgs};
use super::prune::{BatchArgs, BatchCounts, Exporter, StorageStats};
use super::store::Store;
use super::writer::Writer;
use super::{
    AfterBatch, Answer, Checkpoint, CheckpointState, DecideOutcome, DispatchFilter, DispatchRow, DoneOutcome,
    FailureOutcome, FailureRecord, FailureRow, FinalRecord, IntegrityVerdict, IntentFilter, JournalError,
    JournalOptions, JournalStats, OpenMode, PgTarget, RecordAnswer, RecordCommand, RecordOutcome, Result, StoredIntent,
    WriterStats,
};
use conn::{Bounds, Link};
use listen::Listener;
use pool::ReadPool;
use writer::PgWriteConn;

fn schema_ok(s: &str) -> bool {
    let b = s.as_bytes();
    (1..=48).contains(&b.len())
        && (b[0].is_ascii_lowercase() || b[0] == b'_')
        && b.iter().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'_')
        && !s.starts_with("pg_")
}

impl PgTarget {
    /// The driver's configuration, with a connect timeout when none is given.
    fn config(&self) -> Result<Config> {
        if !schema_ok(&self.schema) {
            return Err(JournalError::InvalidArgument { what: "schema" });
        }
        let mut config = Config::from_str(&self.connection_string)
            .map_err(|_| JournalError::InvalidArgument { what: "connectionString" })?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(Duration::from_secs(5));
        }
        if self.limits.statement_timeout_ms == 0 {
            return Err(JournalError::InvalidArgument { what: "statementTimeoutMs" });
        }
        Ok(config)
    }

    /// The bounds of every wait on the server (`conn.rs`).
    fn bounds(&self, config: &Config) -> Bounds {
        Bounds {
            connect: config.get_connect_timeout().copied().unwrap_or(Duration::from_secs(5)),
            statement: Duration::from_millis(u64::from(self.limits.statement_timeout_ms)),
        }
    }

    /// Names the journal for the in-process commit signal: server, database
    /// and schema, without credentials.
    fn signal_key(&self, config: &Config) -> String {
        format!("postgres:{:?}:{:?}:{:?}:{}", config.get_hosts(), config.get_ports(), config.get_dbname(), self.schema)
    }
}

pub(crate) struct PgStore {
    writer: Writer<PgWriteConn>,
    readers: ReadPool,
    listener: Listener,
    /// None when opened read-only.
    pruner: Option<prune::Pruner>,
}

pub(crate) fn open(target: &PgTarget, options: JournalOptions, mode: OpenMode) -> Result<(PgStore, CommitSignal)> {
    let read_only = mode == OpenMode::ReadOnly;
    // The `postgres` client blocks on a runtime of its own when it connects
    // and when it is dropped, which panics on an async runtime's thread:
    // opening runs on a plain thread, whoever calls it.
    std::thread::scope(|s| s.spawn(|| open_here(target, options, read_only)).join())
        .unwrap_or(Err(JournalError::Internal { what: "the journal's open thread panicked" }))
}

fn open_here(target: &PgTarget, options: JournalOptions, read_only: bool) -> Result<(PgStore, CommitSignal)> {
    let config = target.config()?;
    let tls = conn::tls(&config, target.ca_file.as_deref())?;
    let schema = target.schema.as_str();
    let bounds = target.bounds(&config);
    // A journal that counts attempts holds a lock of its own while open (`Link::holding`).
    let holder = (!read_only && options.attempt_ledger).then(holder_key);
    let mut link = Link::new(config.clone(), tls.clone(), schema, read_only, bounds)
        .lock_timeout(options.busy_timeout_ms)
        .holding(holder);
    let commits = commit_signal(&target.signal_key(&config));
    let writer = if read_only {
        schema::check_readable(&mut link, schema)?;
        Writer::read_only()
    } else {
        schema::ensure(&mut link, schema)?;
        let retry_for = Duration::from_millis(u64::from(target.limits.write_retry_ms));
        let conn = PgWriteConn::new(link, schema, options.synchronous_full, retry_for, holder);
        Writer::spawn(conn, options, commits.clone())?
    };
    let readers = ReadPool::spawn(&config, &tls, schema, options.busy_timeout_ms, bounds)?;
    let listener = Listener::spawn(&config, &tls, schema, bounds, commits.clone())?;
    let pruner = (!read_only).then(|| prune::Pruner::new(&config, &tls, schema, bounds, options.busy_timeout_ms));
    Ok((PgStore { writer, readers, listener, pruner }, commits))
}

/// A key no other open journal holds: positive, from the process, the time
/// and a counter, mixed by SHA-256.
fn holder_key() -> i64 {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let digest = crate::identity::sha256_hex(format!("{}:{nanos}:{n}", std::process::id()).as_bytes());
    i64::from_str_radix(&digest[..15], 16).unwrap_or(1)
}

impl Store for PgStore {
    fn reads_are_remote(&self) -> bool {
        true
    }

    fn checkpoint(&self, c: Checkpoint, awaited: bool, then: Answer<CheckpointState>) -> Result<()> {
        match awaited {
            true => self.writer.submit_awaited(c, records::run_checkpoint, Some(merged::checkpoints()), then),
            false => self.writer.submit_merged(false, c, (records::run_checkpoint, merged::checkpoints()), then),
        }
    }

    fn record_many(&self, records: Vec<RecordCommand>, then: Answer<Vec<Result<RecordAnswer>>>) -> Result<()> {
        self.writer.submit_merged(true, records, (records::run_many, merged::record_lists()), then)
    }

    fn record_final(&self, r: FinalRecord, then: Answer<RecordOutcome>) -> Result<()> {
        self.writer.submit_merged(true, r, (records::run_final, merged::finals()), then)
    }

    fn record_failure(&self, r: FailureRecord, then: Answer<FailureOutcome>) -> Result<()> {
        self.writer.submit_then(true, r, records::run_failure, then)
    }

    fn decide(&self, a: DecideArgs, then: Answer<DecideOutcome>) -> Result<()> {
        self.writer.submit_then(true, a, outbox::run_decide, then)
    }

    fn mark_done(&self, a: DoneArgs, then: Answer<DoneOutcome>) -> Result<()> {
        self.writer.submit_then(true, a, outbox::run_done, then)
    }

    fn claim(&self, r: ClaimRequest, _now: i64, then: Answer<Vec<StoredIntent>>) -> Result<()> {
        // A claim is a plain write: one lost to a crash only expires sooner.
        self.writer.submit_then(false, r, outbox::run_claim, then)
    }

    fn get_dispatch(&self, dispatch_id: &str) -> Result<Option<DispatchRow>> {
        let id = dispatch_id.to_owned();
        self.readers.read(move |l| read::get_dispatch(l, &id))
    }

    fn get_dispatches(&self, ids: &[String]) -> Result<Vec<Option<DispatchRow>>> {
        if let [id] = ids {
            return Ok(vec![self.get_dispatch(id)?]);
        }
        let ids = ids.to_vec();
        self.readers.read(move |l| read::get_dispatches(l, &ids))
    }

    fn list_dispatches(&self, f: &DispatchFilter, limit: u32) -> Result<Vec<DispatchRow>> {
        let f = f.clone();
        self.readers.read(move |l| read::list_dispatches(l, &f, limit))
    }

    fn list_failures(&self, dispatch_id: &str) -> Result<Vec<FailureRow>> {
        let id = dispatch_id.to_owned();
        self.readers.read(move |l| read::list_failures(l, &id))
    }

    fn list_intents(&self, f: &IntentFilter, limit: u32) -> Result<Vec<StoredIntent>> {
        let f = f.clone();
        self.readers.read(move |l| read::list_intents(l, &f, limit))
    }

    fn unfinished(&self) -> Result<Vec<DispatchRow>> {
        self.readers.read(read::unfinished)
    }

    fn stats(&self) -> Result<JournalStats> {
        self.readers.read(read::stats)
    }

    fn integrity(&self) -> Result<IntegrityVerdict> {
        self.readers.read(|l| {
            // One snapshot for every check.
            l.batch("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")?;
            let verdict = read::integrity(l);
            let _ = l.batch("COMMIT");
            verdict
        })
    }

    fn last_seq(&self) -> Result<i64> {
        self.pruner()?.last_seq()
    }

    fn prune_batch(&self, a: &BatchArgs, export: Option<Exporter<'_>>) -> Result<BatchCounts> {
        self.pruner()?.batch(a, export)
    }

    fn reclaim(&self) -> Result<u64> {
        // Autovacuum's: ordinary deletes leave dead tuples it reclaims.
        self.pruner()?;
        Ok(0)
    }

    fn storage(&self) -> Result<StorageStats> {
        match &self.pruner {
            Some(p) => p.storage(),
            None => self.readers.read(prune::storage_here),
        }
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
        if let Some(p) = &self.pruner {
            p.close();
        }
        self.writer.close();
        self.listener.close();
    }
}

impl PgStore {
    fn pruner(&self) -> Result<&prune::Pruner> {
        self.pruner.as_ref().ok_or(JournalError::ReadOnly)
    }
}
