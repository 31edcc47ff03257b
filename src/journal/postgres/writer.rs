//! The PostgreSQL side of the writer's batch protocol (see `../writer.rs`).
//!
//! Round trips are what a batch costs here. A batch first runs *fast*: no
//! savepoints at all. A command that fails on its own with a Rust-level
//! answer (an unknown intent, a lease held by another executor) has written
//! nothing, so there is nothing to undo. Only a statement the server refused
//! (a duplicate intent id) leaves the transaction aborted; the batch is then
//! rolled back and run again at once *carefully*, one savepoint per command,
//! so that command fails alone while the others commit. In careful mode
//! `BEGIN` rides with the first `SAVEPOINT` and each release with the next.
//! The `NOTIFY` that wakes other hosts' consumers rides with `COMMIT`, and
//! is delivered only if the transaction commits. `BEGIN` of the next batch
//! rides with `COMMIT` too (`open`), and is rolled back when no command comes
//! for [`IDLE_CLOSE`]; a batch that need not wait for its WAL flush says so
//! just before COMMIT (`SET LOCAL synchronous_commit = off`, which counts at
//! commit time).

use std::cell::Cell;
use std::time::{Duration, Instant};

use super::super::writer::BatchConn;
use super::super::{JournalError, Result};
use super::conn::{backoff, Link};

/// How long a transaction opened for the next batch may wait for it: it holds
/// no snapshot, id or lock, but monitors show it as idle in transaction.
const IDLE_CLOSE: Duration = Duration::from_millis(20);

pub(crate) struct PgWriteConn {
    pub(super) link: Link,
    /// `NOTIFY "<schema>"; `: the channel is the schema's name.
    notify: String,
    /// A transaction is open on the link (sent `BEGIN`, maybe with the last COMMIT).
    open: bool,
    /// This batch commits without waiting for its WAL flush.
    lazy: bool,
    /// Whether `synchronous_commit` stays on for durable batches ('full').
    synchronous_full: bool,
    /// One savepoint per command (see the module's doc).
    pub(super) careful: bool,
    /// A fast batch hit a refused statement: retry it carefully, at once.
    wants_care: bool,
    /// Careful mode: a savepoint is open and not yet released.
    savepoint_open: bool,
    /// Careful mode: `BEGIN ...` not sent yet; it goes with the first savepoint.
    begin: Option<&'static str>,
    /// The batch being retried may have committed already (its COMMIT
    /// failed): commands read their identity back and answer what is there.
    pub(super) replaying: bool,
    /// How long a batch retries a lost or unreachable server.
    retry_for: Duration,
    /// When the current try of the batch began.
    try_began: Instant,
    /// When the failing batch's first try began: its retries count from
    /// there, so a first try that waited out its bound is not extra.
    failing_since: Cell<Option<Instant>>,
    /// A batch ran out of retries and nothing committed since: the next
    /// batch tries once, so a long outage answers queued commands quickly.
    gave_up: Cell<bool>,
    /// The advisory lock key this connection holds while the journal is
    /// open (its link was made `Link::holding` it), stored with each attempt
    /// it counts.
    pub(super) holder: Option<i64>,
}

impl PgWriteConn {
    pub(super) fn new(
        link: Link,
        schema: &str,
        synchronous_full: bool,
        retry_for: Duration,
        holder: Option<i64>,
    ) -> Self {
        PgWriteConn {
            link,
            holder,
            notify: format!("NOTIFY \"{schema}\"; "),
            open: false,
            lazy: false,
            synchronous_full,
            careful: false,
            wants_care: false,
            savepoint_open: false,
            begin: None,
            replaying: false,
            retry_for,
            try_began: Instant::now(),
            failing_since: Cell::new(None),
            gave_up: Cell::new(false),
        }
    }

    /// A command's own failure: in careful mode, rolls back what it wrote
    /// (its savepoint stays open for the writer to release); in fast mode, a
    /// refused statement asks for the careful retry (`Busy`, retried at once).
    pub(super) fn undo_command(&mut self) -> Result<()> {
        if self.careful {
            return self.link.batch("ROLLBACK TO cmd");
        }
        self.fail_fast()
    }

    fn fail_fast(&mut self) -> Result<()> {
        if self.link.sql_failed {
            self.wants_care = true;
            return Err(JournalError::Busy);
        }
        Ok(())
    }
}

impl PgWriteConn {
    /// Whether a transaction is open, and so whether the connection is pinned to it.
    fn set_open(&mut self, open: bool) {
        self.open = open;
        self.link.pinned = open;
    }
}

impl BatchConn for PgWriteConn {
    fn begin(&mut self, durable: bool) -> Result<()> {
        self.try_began = Instant::now();
        self.savepoint_open = false;
        self.link.sql_failed = false;
        // A batch of checkpoints or claims only is nobody's wait and is
        // reconstructible: it does not wait for its WAL flush (the next
        // durable commit flushes it), like SQLite's NORMAL.
        self.lazy = !(durable && self.synchronous_full);
        // A transaction opened on a connection since lost went with it.
        if self.open && self.link.is_lost() {
            self.set_open(false);
        }
        if self.careful {
            self.begin = Some(if self.open { "SAVEPOINT cmd" } else { "BEGIN; SAVEPOINT cmd" });
            return Ok(());
        }
        if !self.open {
            self.link.batch("BEGIN")?;
            self.set_open(true);
        }
        Ok(())
    }

    fn savepoint(&mut self) -> Result<()> {
        if !self.careful {
            self.link.sql_failed = false;
            return Ok(());
        }
        let sql = match self.begin.take() {
            Some(begin) => begin,
            None if self.savepoint_open => "RELEASE cmd; SAVEPOINT cmd",
            None => "SAVEPOINT cmd",
        };
        self.link.batch(sql)?;
        self.set_open(true);
        self.savepoint_open = true;
        Ok(())
    }

    fn release(&mut self) -> Result<()> {
        // Careful mode: deferred to the next savepoint or COMMIT, one round trip less.
        Ok(())
    }

    fn rollback_to(&mut self) -> Result<()> {
        if !self.careful {
            return self.fail_fast();
        }
        self.link.batch("ROLLBACK TO cmd; RELEASE cmd")?;
        self.savepoint_open = false;
        Ok(())
    }

    fn commit(&mut self, wakes: bool) -> Result<()> {
        self.savepoint_open = false;
        if self.begin.take().is_some() {
            // Nothing was sent: there is nothing to commit.
            return Ok(());
        }
        let lazy = if self.lazy { "SET LOCAL synchronous_commit = off; " } else { "" };
        let notify = if wakes { self.notify.as_str() } else { "" };
        // Still pinned: COMMIT must reach the connection the transaction is on.
        self.open = false;
        self.link.batch(&format!("{lazy}{notify}COMMIT; BEGIN"))?;
        self.set_open(true);
        self.replaying = false;
        self.careful = false;
        self.gave_up.set(false);
        Ok(())
    }

    fn rollback(&mut self) {
        self.savepoint_open = false;
        if self.begin.take().is_some() && !self.open {
            return;
        }
        self.set_open(false);
        if self.link.is_lost() || self.link.batch("ROLLBACK").is_err() {
            // The server rolls back a transaction whose connection went away.
            self.link.forget();
        }
    }

    fn retry_after(&self, e: &JournalError, tries: u32) -> Option<Duration> {
        // Every failing batch starts its own span, whatever its first error:
        // a server shutting down refuses the statement first (the careful
        // retry, below) and only then the connection.
        if tries == 0 {
            self.failing_since.set(Some(self.try_began));
        }
        if self.wants_care {
            return Some(Duration::ZERO);
        }
        if *e != JournalError::Unavailable {
            return backoff(e, tries);
        }
        // Unreachable: retried for a span of time, not a count of tries, since
        // a try against a silent server waits out its whole bound.
        let now = Instant::now();
        let since = self.failing_since.get().unwrap_or(self.try_began);
        let delay = backoff(e, tries.min(11))?;
        if self.gave_up.get() || now.saturating_duration_since(since) + delay > self.retry_for {
            self.gave_up.set(true);
            return None;
        }
        Some(delay)
    }

    fn prepare_retry(&mut self, unknown_commit: bool) -> Result<()> {
        if std::mem::take(&mut self.wants_care) {
            self.careful = true;
        }
        self.replaying |= unknown_commit;
        // The failed transaction is gone: the retry may reconnect.
        if !self.open {
            self.link.pinned = false;
        }
        if self.link.is_lost() {
            self.link.forget();
        }
        self.link.client().map(|_| ())
    }

    fn open_early(&mut self) {
        // A failure here is the batch's: its `begin` sends BEGIN again or fails.
        if !self.careful && !self.open && !self.link.is_lost() && self.link.batch("BEGIN").is_ok() {
            self.set_open(true);
        }
    }

    fn idle_after(&self) -> Option<Duration> {
        self.open.then_some(IDLE_CLOSE)
    }

    fn idle(&mut self) {
        self.rollback();
    }

    fn merges(&self) -> bool {
        // Fast mode: a command's own failure wrote nothing (see the module's doc).
        !self.careful
    }
}

#[cfg(test)]
mod tests;
