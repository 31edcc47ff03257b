//! The PostgreSQL side of the writer's batch protocol (see `../writer.rs`).
//!
//! Round trips are what a batch costs here, so: `BEGIN` and the batch's
//! durability ride with the first command's `SAVEPOINT`; releasing a
//! command's savepoint rides with the next command's `SAVEPOINT` (COMMIT
//! releases the last); the `NOTIFY` that wakes other hosts' consumers rides
//! with `COMMIT`, and is delivered only if the transaction commits.

use std::time::Duration;

use super::super::writer::BatchConn;
use super::super::{JournalError, Result};
use super::conn::{backoff, Link};

pub(crate) struct PgWriteConn {
    pub(super) link: Link,
    /// `NOTIFY "<schema>"`: the channel is the schema's name.
    notify: String,
    /// Whether `synchronous_commit` stays on for durable batches ('full').
    synchronous_full: bool,
    /// A savepoint is open and not yet released.
    savepoint_open: bool,
    /// `BEGIN ...` not sent yet: it goes with the first savepoint.
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
            savepoint_open: false,
            begin: None,
            replaying: false,
        }
    }
}

impl PgWriteConn {
    /// Rolls back what the running command wrote (its savepoint stays open
    /// for the writer to release) when it answers an error of its own.
    pub(super) fn undo_command(&mut self) -> Result<()> {
        self.link.batch("ROLLBACK TO cmd")
    }
}

impl BatchConn for PgWriteConn {
    fn begin(&mut self, durable: bool) -> Result<()> {
        self.savepoint_open = false;
        // A batch of checkpoints or claims only is nobody's wait and is
        // reconstructible: it does not wait for its WAL flush (the next
        // durable commit flushes it), like SQLite's NORMAL.
        self.begin = Some(if durable && self.synchronous_full {
            "BEGIN; SAVEPOINT cmd"
        } else {
            "BEGIN; SET LOCAL synchronous_commit = off; SAVEPOINT cmd"
        });
        Ok(())
    }

    fn savepoint(&mut self) -> Result<()> {
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
        // Deferred to the next savepoint or COMMIT: one round trip less.
        Ok(())
    }

    fn rollback_to(&mut self) -> Result<()> {
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
        backoff(e, tries)
    }

    fn prepare_retry(&mut self, unknown_commit: bool) -> Result<()> {
        self.replaying |= unknown_commit;
        if self.link.is_lost() {
            self.link.forget();
        }
        self.link.client().map(|_| ())
    }
}
