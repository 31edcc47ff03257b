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
//! is delivered only if the transaction commits.

use std::time::Duration;

use super::super::writer::BatchConn;
use super::super::{JournalError, Result};
use super::conn::{backoff, Link};

pub(crate) struct PgWriteConn {
    pub(super) link: Link,
    /// `NOTIFY "<schema>"; COMMIT`: the channel is the schema's name.
    notify: String,
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
}

impl PgWriteConn {
    pub(super) fn new(link: Link, schema: &str, synchronous_full: bool) -> Self {
        PgWriteConn {
            link,
            notify: format!("NOTIFY \"{schema}\"; COMMIT"),
            synchronous_full,
            careful: false,
            wants_care: false,
            savepoint_open: false,
            begin: None,
            replaying: false,
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

impl BatchConn for PgWriteConn {
    fn begin(&mut self, durable: bool) -> Result<()> {
        self.savepoint_open = false;
        self.link.sql_failed = false;
        // A batch of checkpoints or claims only is nobody's wait and is
        // reconstructible: it does not wait for its WAL flush (the next
        // durable commit flushes it), like SQLite's NORMAL.
        let lazy = !(durable && self.synchronous_full);
        if self.careful {
            self.begin = Some(if lazy {
                "BEGIN; SET LOCAL synchronous_commit = off; SAVEPOINT cmd"
            } else {
                "BEGIN; SAVEPOINT cmd"
            });
            return Ok(());
        }
        self.link.batch(if lazy { "BEGIN; SET LOCAL synchronous_commit = off" } else { "BEGIN" })
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
            // Nothing was sent: there is no transaction to commit.
            return Ok(());
        }
        self.link.batch(if wakes { &self.notify } else { "COMMIT" })?;
        self.replaying = false;
        self.careful = false;
        Ok(())
    }

    fn rollback(&mut self) {
        self.savepoint_open = false;
        if self.begin.take().is_some() {
            return;
        }
        if self.link.is_lost() || self.link.batch("ROLLBACK").is_err() {
            // The server rolls back a transaction whose connection went away.
            self.link.forget();
        }
    }

    fn retry_after(&self, e: &JournalError, tries: u32) -> Option<Duration> {
        if self.wants_care {
            return Some(Duration::ZERO);
        }
        backoff(e, tries)
    }

    fn prepare_retry(&mut self, unknown_commit: bool) -> Result<()> {
        if std::mem::take(&mut self.wants_care) {
            self.careful = true;
        }
        self.replaying |= unknown_commit;
        if self.link.is_lost() {
            self.link.forget();
        }
        self.link.client().map(|_| ())
    }

    fn merges(&self) -> bool {
        // Fast mode: a command's own failure wrote nothing (see the module's doc).
        !self.careful
    }
}
