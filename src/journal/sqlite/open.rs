//! Recognising, creating and migrating the journal file.
//!
//! Nothing is changed until the file is known to be ours or empty:
//! 1. `stat` and the first 100 bytes, read with plain file I/O
//!    (`sqlite_file`): a special file, a non-SQLite file, another
//!    application's file (application_id) or a newer journal (user_version)
//!    never reaches SQLite at all; a file we may not write is refused too;
//! 2. an SQLite file is inspected in one read transaction on a read-only
//!    connection that does not checkpoint on close (un-checkpointed WAL
//!    frames or a hot rollback journal can hide what the header says): a
//!    foreign or newer file is refused here, its main file, `-wal` and
//!    `-journal` untouched;
//! 3. only then: WAL on, `BEGIN IMMEDIATE`, the same inspection again (another
//!    process may have created or upgraded the file meanwhile), migrations and
//!    header stamps, COMMIT. Concurrent openers of one new file serialise on
//!    the write lock and all but the first find a current journal.

use std::path::Path;
use std::time::{Duration, Instant};

use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags};

use crate::sqlite_file::{Header, Probe};

use super::super::{JournalError, JournalOptions, Result, APPLICATION_ID};
use super::schema::{self, Migration, MIGRATIONS, SCHEMA_VERSION, TABLES};

/// What an inspection found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Found {
    /// No schema objects, no application_id, user_version 0: ours to create.
    Empty,
    /// A journal at this build's version.
    Current,
    /// A journal at an older version, to migrate.
    Older(i32),
}

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
        // Steps 1 and 2 again on every try: another process may be creating
        // the file (its switch to WAL answers BUSY without the busy handler).
        match precheck(path, options).and_then(|()| try_open_writer(path, options)) {
            Err(JournalError::Busy) if Instant::now() < deadline => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            other => return other,
        }
    }
}

/// Steps 1 and 2: nothing has been opened for writing when this refuses.
fn precheck(path: &Path, options: &JournalOptions) -> Result<()> {
    match recognise(path)? {
        Probe::Missing | Probe::Empty => check_writable(path),
        Probe::NotSqlite => Err(JournalError::NotAJournal),
        Probe::Sqlite(header) => {
            check_writable(path)?;
            match inspect_read_only(path, &header, options) {
                Ok(_) => Ok(()),
                // A hot rollback journal: only our own file may be rolled back.
                Err(JournalError::NeedsRecovery) if header.application_id == APPLICATION_ID => Ok(()),
                Err(JournalError::NeedsRecovery) => Err(JournalError::NotAJournal),
                Err(e) => Err(e),
            }
        }
    }
}

/// Step 1: plain reads only. Refuses a special file, a non-SQLite file,
/// another application's file and a newer journal by their header.
pub(crate) fn recognise(path: &Path) -> Result<Probe> {
    let probe = crate::sqlite_file::probe(path)?;
    if let Probe::Sqlite(h) = probe {
        if h.application_id != APPLICATION_ID && h.application_id != 0 {
            return Err(JournalError::NotAJournal);
        }
        if h.application_id == APPLICATION_ID && h.user_version > SCHEMA_VERSION {
            return Err(JournalError::TooNew { found: h.user_version, supported: SCHEMA_VERSION });
        }
    }
    Ok(probe)
}

fn check_writable(path: &Path) -> Result<()> {
    Ok(crate::sqlite_file::check_writable(path)?)
}

/// A read-only connection that never checkpoints a WAL into the main file
/// when it closes, so inspecting cannot change the file.
pub(crate) fn connect_read_only(path: &Path, busy_timeout_ms: u32) -> Result<Connection> {
    let conn = connect(path, OpenFlags::SQLITE_OPEN_READ_ONLY, busy_timeout_ms)?;
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)?;
    Ok(conn)
}

/// Step 2: classifies an SQLite file from a read-only connection that
/// creates nothing beside it (see [`crate::sqlite_file::open_for_inspection`]).
pub(crate) fn inspect_read_only(path: &Path, header: &Header, options: &JournalOptions) -> Result<Found> {
    let conn = crate::sqlite_file::open_for_inspection(path, header)?;
    conn.busy_timeout(Duration::from_millis(u64::from(options.busy_timeout_ms)))?;
    in_read_txn(&conn, inspect)
}

fn try_open_writer(path: &Path, options: &JournalOptions) -> Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE;
    let conn = connect(path, flags, options.busy_timeout_ms)?;
    let found = in_read_txn(&conn, inspect)?;
    ensure_wal(&conn)?;
    if found != Found::Current {
        upgrade(&conn, MIGRATIONS)?;
    }
    conn.pragma_update(None, "foreign_keys", true)?;
    conn.set_prepared_statement_cache_capacity(32);
    Ok(conn)
}

/// Step 2 (and the re-check of step 3): classify the database. Reads only.
pub(crate) fn inspect(conn: &Connection) -> Result<Found> {
    let app_id: i32 = conn.pragma_query_value(None, "application_id", |r| r.get(0))?;
    let version: i32 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    let objects: i64 =
        conn.query_row("SELECT count(*) FROM sqlite_schema WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\'", [], |r| {
            r.get(0)
        })?;
    if app_id != APPLICATION_ID {
        return if app_id == 0 && version == 0 && objects == 0 {
            Ok(Found::Empty)
        } else {
            Err(JournalError::NotAJournal)
        };
    }
    if version > SCHEMA_VERSION {
        return Err(JournalError::TooNew { found: version, supported: SCHEMA_VERSION });
    }
    if version <= 0 {
        // Stamped ours but never given a schema: only an empty file qualifies.
        return if objects == 0 { Ok(Found::Empty) } else { Err(JournalError::NotAJournal) };
    }
    if version < SCHEMA_VERSION {
        return Ok(Found::Older(version));
    }
    let sql = format!(
        "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name IN ({})",
        TABLES.iter().map(|t| format!("'{t}'")).collect::<Vec<_>>().join(",")
    );
    let tables: i64 = conn.query_row(&sql, [], |r| r.get(0))?;
    if tables == TABLES.len() as i64 {
        Ok(Found::Current)
    } else {
        Err(JournalError::NotAJournal)
    }
}

/// Step 3: create or migrate inside `BEGIN IMMEDIATE`, re-inspecting under
/// the write lock. `steps` is a parameter so tests can run a failing list.
pub(crate) fn upgrade(conn: &Connection, steps: &[Migration]) -> Result<()> {
    conn.execute_batch("BEGIN IMMEDIATE")?;
    let outcome = (|| {
        let from = match inspect(conn)? {
            Found::Current => return Ok(()),
            Found::Empty => 0,
            Found::Older(v) => v,
        };
        schema::migrate(conn, from, steps)?;
        Ok(())
    })();
    match outcome {
        Ok(()) => conn.execute_batch("COMMIT").map_err(|e| rollback_after(conn, e.into())),
        Err(e) => Err(rollback_after(conn, e)),
    }
}

fn rollback_after(conn: &Connection, e: JournalError) -> JournalError {
    if !conn.is_autocommit() {
        let _ = conn.execute_batch("ROLLBACK");
    }
    e
}

/// Runs `f` in a deferred (read) transaction so its reads see one snapshot.
pub(crate) fn in_read_txn<T>(conn: &Connection, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
    conn.execute_batch("BEGIN DEFERRED")?;
    let out = f(conn);
    let end = conn.execute_batch(if out.is_ok() { "COMMIT" } else { "ROLLBACK" });
    let out = out?;
    end?;
    Ok(out)
}

/// Switches a recognised or empty journal to WAL (persistent; a no-op when it
/// already is). Called only after [`inspect`] accepted the file.
fn ensure_wal(conn: &Connection) -> Result<()> {
    let mode: String = conn.pragma_query_value(None, "journal_mode", |r| r.get(0))?;
    if mode.eq_ignore_ascii_case("wal") {
        return Ok(());
    }
    let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
    if mode.eq_ignore_ascii_case("wal") {
        Ok(())
    } else {
        Err(JournalError::Internal { what: "could not switch the journal to WAL mode" })
    }
}
