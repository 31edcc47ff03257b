//! Recognising, creating and migrating the journal file, by the procedure
//! every SQLite store of this crate shares (`sqlite_file::claim`): nothing is
//! changed until the file is known to be a journal or empty, then WAL,
//! `BEGIN IMMEDIATE`, the inspection again, migrations and header stamps,
//! COMMIT. This file holds what is the journal's own: its spec (header
//! stamps, tables, migrations), the retry of the whole sequence on a busy
//! file, and how a refusal reads as a [`JournalError`].

use std::path::Path;
use std::time::{Duration, Instant};

use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags};

pub(crate) use crate::sqlite_file::Found;
use crate::sqlite_file::{Header, Probe, StoreSpec};

use super::super::{JournalError, JournalOptions, Result, APPLICATION_ID};
use super::schema::{self, MIGRATIONS, SCHEMA_VERSION, TABLES};

/// The journal's file, created or migrated through [`MIGRATIONS`].
const JOURNAL: StoreSpec<'static> = StoreSpec {
    application_id: APPLICATION_ID,
    version: SCHEMA_VERSION,
    tables: TABLES,
    migrate: &|conn, from| schema::migrate(conn, from, MIGRATIONS).map(drop),
    wal_only: false,
};

/// Opens a connection flagged for one thread at a time (the writer's or a
/// pooled reader's), without URI parsing so that a path is only ever a path.
pub(crate) fn connect(path: &Path, flags: OpenFlags, busy_timeout_ms: u32) -> Result<Connection> {
    let conn = Connection::open_with_flags(path, flags | OpenFlags::SQLITE_OPEN_NO_MUTEX)?;
    conn.busy_timeout(Duration::from_millis(u64::from(busy_timeout_ms)))?;
    Ok(conn)
}

/// Opens the writer's connection on a recognised (or freshly created) journal.
///
/// Some steps answer SQLITE_BUSY without consulting the busy handler (switching
/// a new file to WAL while another process reads it, deadlock avoidance when a
/// reader upgrades). Every step is idempotent, so the whole sequence is retried
/// on a fresh connection until the busy timeout has passed.
/// `path` must come from [`crate::sqlite_file::resolve`] (absolute).
pub(crate) fn open_writer(path: &Path, options: &JournalOptions) -> Result<Connection> {
    let deadline = Instant::now() + Duration::from_millis(u64::from(options.busy_timeout_ms));
    let mut pause = Duration::from_millis(1);
    loop {
        // The plain reads and the read-only inspection again on every try:
        // another process may be creating the file (its switch to WAL answers
        // BUSY without the busy handler).
        let attempt = crate::sqlite_file::precheck(path, &JOURNAL, options.busy_timeout_ms)
            .map_err(JournalError::from)
            .and_then(|()| try_open_writer(path, options));
        match attempt {
            Err(JournalError::Busy) if Instant::now() < deadline => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            other => return other,
        }
    }
}

/// Plain reads only. Refuses a special file, another application's file and
/// a newer journal by their header.
pub(crate) fn recognise(path: &Path) -> Result<Probe> {
    Ok(crate::sqlite_file::recognise(path, &JOURNAL)?)
}

/// A read-only connection that never checkpoints a WAL into the main file
/// when it closes, so inspecting cannot change the file.
pub(crate) fn connect_read_only(path: &Path, busy_timeout_ms: u32) -> Result<Connection> {
    let conn = connect(path, OpenFlags::SQLITE_OPEN_READ_ONLY, busy_timeout_ms)?;
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)?;
    Ok(conn)
}

/// Classifies an SQLite file from a read-only connection that creates
/// nothing beside it (see [`crate::sqlite_file::open_for_inspection`]).
pub(crate) fn inspect_read_only(path: &Path, header: &Header, options: &JournalOptions) -> Result<Found> {
    Ok(crate::sqlite_file::inspect_read_only(path, header, &JOURNAL, options.busy_timeout_ms)?)
}

fn try_open_writer(path: &Path, options: &JournalOptions) -> Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE;
    let conn = connect(path, flags, options.busy_timeout_ms)?;
    crate::sqlite_file::claim(&conn, &JOURNAL)?;
    conn.pragma_update(None, "foreign_keys", true)?;
    // The record and outbox statements, and the batch protocol's (`mod.rs`).
    conn.set_prepared_statement_cache_capacity(48);
    Ok(conn)
}

/// Creates or migrates inside `BEGIN IMMEDIATE`, re-inspecting under the
/// write lock, through `steps`: tests run a partial or failing list.
#[cfg(test)]
pub(crate) fn upgrade(conn: &Connection, steps: &[schema::Migration]) -> Result<()> {
    let migrate = |conn: &Connection, from| schema::migrate(conn, from, steps).map(drop);
    Ok(crate::sqlite_file::upgrade(conn, &StoreSpec { migrate: &migrate, ..JOURNAL })?)
}

/// Runs `f` in a deferred (read) transaction so its reads see one snapshot.
pub(crate) fn in_read_txn<T>(conn: &Connection, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
    crate::sqlite_file::in_read_txn(conn, f)
}
