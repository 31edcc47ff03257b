//! Recognising and claiming a store's file, the one procedure of the journal
//! and the turn-start inbox. Nothing is changed until the file is known to
//! be the store's own or empty:
//! 1. `stat` and the first 100 bytes ([`super::probe`]): a special file, a
//!    non-SQLite file, another application's file (application_id) or a
//!    newer one (user_version) never reaches SQLite; a file this process may
//!    not write is refused too;
//! 2. an SQLite file is inspected in one read transaction on a read-only
//!    connection that does not checkpoint on close (un-checkpointed WAL
//!    frames or a hot rollback journal can hide what the header says): a
//!    foreign or newer file is refused here, its main file, `-wal` and
//!    `-journal` untouched;
//! 3. only then, on the connection opened for writing: the same inspection,
//!    WAL on, `BEGIN IMMEDIATE`, the inspection again (another process may
//!    have created or upgraded the file meanwhile), the schema and the header
//!    stamps, COMMIT. Concurrent openers of one new file serialise on the
//!    write lock and all but the first find a current file.

use std::path::Path;
use std::time::Duration;

use rusqlite::Connection;

use super::{check_writable, open_for_inspection, probe, FileError, Header, Probe};

/// What makes a file a given store's own.
pub(crate) struct StoreSpec<'a> {
    /// `PRAGMA application_id` of the store's files.
    pub application_id: i32,
    /// The schema version this build writes; a file stamped newer is refused.
    pub version: i32,
    /// The tables a current file holds, every one of them.
    pub tables: &'a [&'a str],
    /// Creates the schema from version `from` (0: an empty file) up to
    /// `version` and stamps both header fields; runs inside the claim's write
    /// transaction, so a failure leaves nothing behind.
    pub migrate: &'a dyn Fn(&Connection, i32) -> rusqlite::Result<()>,
    /// The store is always in WAL mode: a hot rollback journal, or a
    /// read-only refusal while inspecting, means the file is not its own.
    /// Otherwise a hot rollback journal on a file stamped ours is left to
    /// the writer, which rolls it back.
    pub wal_only: bool,
}

/// What an inspection found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Found {
    /// No schema objects and no stamps: ours to create.
    Empty,
    /// The store's file at this build's version.
    Current,
    /// The store's file at an older version, to migrate.
    Older(i32),
}

/// `rusqlite::Error` in the kinds the stores tell apart. No text from the
/// driver is kept: its errors can hold column names or values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SqliteError {
    Busy,
    NotADatabase,
    /// A hot rollback journal a read-only connection cannot roll back.
    NeedsRecovery,
    ReadOnly,
    /// SQLITE_FULL: the disk (or the file system's quota) is full; a file
    /// problem like any other I/O error, not a database one.
    Full,
    /// An SQLite extended result code and SQLite's static description of it.
    Code {
        code: i32,
        what: &'static str,
    },
    /// A driver-side error, described by a fixed text.
    Driver {
        what: &'static str,
    },
}

/// SQLITE_READONLY_ROLLBACK.
const SQLITE_READONLY_ROLLBACK: i32 = 8 | (3 << 8);

impl From<rusqlite::Error> for SqliteError {
    fn from(e: rusqlite::Error) -> Self {
        use rusqlite::ffi::ErrorCode;
        match e {
            rusqlite::Error::SqliteFailure(f, _) => match f.code {
                ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked => SqliteError::Busy,
                ErrorCode::NotADatabase => SqliteError::NotADatabase,
                ErrorCode::ReadOnly if f.extended_code == SQLITE_READONLY_ROLLBACK => SqliteError::NeedsRecovery,
                ErrorCode::ReadOnly => SqliteError::ReadOnly,
                ErrorCode::DiskFull => SqliteError::Full,
                _ => SqliteError::Code { code: f.extended_code, what: rusqlite::ffi::code_to_str(f.extended_code) },
            },
            rusqlite::Error::QueryReturnedNoRows => SqliteError::Driver { what: "query returned no rows" },
            rusqlite::Error::InvalidColumnType(..) | rusqlite::Error::FromSqlConversionFailure(..) => {
                SqliteError::Driver { what: "unexpected column type" }
            }
            rusqlite::Error::IntegralValueOutOfRange(..) => SqliteError::Driver { what: "integer out of range" },
            _ => SqliteError::Driver { what: "sqlite driver error" },
        }
    }
}

/// Why a file was not claimed; each store maps it to its own error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ClaimError {
    /// Not the store's file: not SQLite, another application's, or stamped
    /// ours without the store's tables. It was not changed.
    Foreign,
    /// The store's file, written by a newer build. It was not changed.
    TooNew {
        found: i32,
        supported: i32,
    },
    /// SQLite would not switch the file to WAL mode.
    NotWal,
    File(FileError),
    Sqlite(SqliteError),
}

impl From<FileError> for ClaimError {
    fn from(e: FileError) -> Self {
        ClaimError::File(e)
    }
}

impl From<rusqlite::Error> for ClaimError {
    fn from(e: rusqlite::Error) -> Self {
        match SqliteError::from(e) {
            SqliteError::NotADatabase => ClaimError::Foreign,
            e => ClaimError::Sqlite(e),
        }
    }
}

type Result<T, E = ClaimError> = std::result::Result<T, E>;

/// Step 1: plain reads only. Refuses a special file, another application's
/// file and a newer one by their header; a non-SQLite file is reported, not
/// refused, so a caller can tell it apart.
pub(crate) fn recognise(path: &Path, spec: &StoreSpec) -> Result<Probe> {
    let found = probe(path)?;
    if let Probe::Sqlite(h) = found {
        if h.application_id != spec.application_id && h.application_id != 0 {
            return Err(ClaimError::Foreign);
        }
        if h.application_id == spec.application_id && h.user_version > spec.version {
            return Err(ClaimError::TooNew { found: h.user_version, supported: spec.version });
        }
    }
    Ok(found)
}

/// Steps 1 and 2: nothing has been opened for writing when this refuses.
/// `path` must be absolute ([`super::resolve`]).
pub(crate) fn precheck(path: &Path, spec: &StoreSpec, busy_timeout_ms: u32) -> Result<()> {
    let header = match recognise(path, spec)? {
        Probe::Missing | Probe::Empty => return Ok(check_writable(path)?),
        Probe::NotSqlite => return Err(ClaimError::Foreign),
        Probe::Sqlite(header) => header,
    };
    check_writable(path)?;
    match inspect_read_only(path, &header, spec, busy_timeout_ms) {
        Ok(_) => Ok(()),
        Err(ClaimError::Sqlite(SqliteError::NeedsRecovery | SqliteError::ReadOnly)) if spec.wal_only => {
            Err(ClaimError::Foreign)
        }
        // A hot rollback journal: only our own file may be rolled back.
        Err(ClaimError::Sqlite(SqliteError::NeedsRecovery)) if header.application_id == spec.application_id => Ok(()),
        Err(ClaimError::Sqlite(SqliteError::NeedsRecovery)) => Err(ClaimError::Foreign),
        Err(e) => Err(e),
    }
}

/// Step 2: classifies an SQLite file from a read-only connection that
/// creates nothing beside it ([`open_for_inspection`]).
pub(crate) fn inspect_read_only(path: &Path, header: &Header, spec: &StoreSpec, busy_timeout_ms: u32) -> Result<Found> {
    let conn = open_for_inspection(path, header)?;
    conn.busy_timeout(Duration::from_millis(u64::from(busy_timeout_ms)))?;
    in_read_txn(&conn, |c| inspect(c, spec))
}

/// Classifies the database. Reads only.
fn inspect(conn: &Connection, spec: &StoreSpec) -> Result<Found> {
    let app_id: i32 = conn.pragma_query_value(None, "application_id", |r| r.get(0))?;
    let version: i32 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    let objects: i64 =
        conn.query_row("SELECT count(*) FROM sqlite_schema WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\'", [], |r| {
            r.get(0)
        })?;
    if app_id != spec.application_id {
        return if app_id == 0 && version == 0 && objects == 0 { Ok(Found::Empty) } else { Err(ClaimError::Foreign) };
    }
    if version > spec.version {
        return Err(ClaimError::TooNew { found: version, supported: spec.version });
    }
    if version <= 0 {
        // Stamped ours but never given a schema: only an empty file qualifies.
        return if objects == 0 { Ok(Found::Empty) } else { Err(ClaimError::Foreign) };
    }
    if version < spec.version {
        return Ok(Found::Older(version));
    }
    let list = spec.tables.iter().map(|t| format!("'{t}'")).collect::<Vec<_>>().join(",");
    let sql = format!("SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name IN ({list})");
    let tables: i64 = conn.query_row(&sql, [], |r| r.get(0))?;
    if tables == spec.tables.len() as i64 {
        Ok(Found::Current)
    } else {
        Err(ClaimError::Foreign)
    }
}

/// Step 3 on `conn`, a connection opened for writing on a file [`precheck`]
/// accepted: inspects again, switches to WAL, and creates or migrates the
/// schema under the write lock. Returns what it found before claiming.
pub(crate) fn claim(conn: &Connection, spec: &StoreSpec) -> Result<Found> {
    let found = in_read_txn(conn, |c| inspect(c, spec))?;
    ensure_wal(conn)?;
    if found != Found::Current {
        upgrade(conn, spec)?;
    }
    Ok(found)
}

/// Creates or migrates inside `BEGIN IMMEDIATE`, re-inspecting under the
/// write lock; rolls back on any failure.
pub(crate) fn upgrade(conn: &Connection, spec: &StoreSpec) -> Result<()> {
    conn.execute_batch("BEGIN IMMEDIATE")?;
    let outcome = (|| {
        let from = match inspect(conn, spec)? {
            Found::Current => return Ok(()),
            Found::Empty => 0,
            Found::Older(v) => v,
        };
        (spec.migrate)(conn, from)?;
        Ok(())
    })();
    let outcome = outcome.and_then(|()| Ok(conn.execute_batch("COMMIT")?));
    if outcome.is_err() && !conn.is_autocommit() {
        let _ = conn.execute_batch("ROLLBACK");
    }
    outcome
}

/// Runs `f` in a deferred (read) transaction so its reads see one snapshot.
pub(crate) fn in_read_txn<T, E: From<rusqlite::Error>>(
    conn: &Connection,
    f: impl FnOnce(&Connection) -> std::result::Result<T, E>,
) -> std::result::Result<T, E> {
    conn.execute_batch("BEGIN DEFERRED")?;
    let out = f(conn);
    let end = conn.execute_batch(if out.is_ok() { "COMMIT" } else { "ROLLBACK" });
    let out = out?;
    end?;
    Ok(out)
}

/// Switches an accepted file to WAL (persistent; a no-op when it already is).
fn ensure_wal(conn: &Connection) -> Result<()> {
    let mode: String = conn.pragma_query_value(None, "journal_mode", |r| r.get(0))?;
    if mode.eq_ignore_ascii_case("wal") {
        return Ok(());
    }
    let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
    if mode.eq_ignore_ascii_case("wal") {
        Ok(())
    } else {
        Err(ClaimError::NotWal)
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    const APP: i32 = 0x5445_5354;

    fn spec(wal_only: bool) -> StoreSpec<'static> {
        StoreSpec {
            application_id: APP,
            version: 1,
            tables: &["t"],
            migrate: &|conn, _| {
                conn.execute_batch("CREATE TABLE t(x)")?;
                conn.pragma_update(None, "application_id", APP)?;
                conn.pragma_update(None, "user_version", 1)
            },
            wal_only,
        }
    }

    fn dir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("loopx-claim-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn bytes(path: &Path) -> Vec<Option<Vec<u8>>> {
        ["", "-wal", "-journal"].iter().map(|s| std::fs::read(format!("{}{s}", path.display())).ok()).collect()
    }

    fn writer(path: &Path) -> Connection {
        Connection::open(path).unwrap()
    }

    #[test]
    fn claims_an_empty_file_once_and_refuses_a_newer_or_foreign_one_untouched() {
        let d = dir("claim");
        let path = d.join("a.db");
        precheck(&path, &spec(false), 100).unwrap();
        assert_eq!(claim(&writer(&path), &spec(false)).unwrap(), Found::Empty);
        assert_eq!(claim(&writer(&path), &spec(false)).unwrap(), Found::Current);
        let newer = StoreSpec { version: 0, ..spec(false) };
        let before = bytes(&path);
        assert_eq!(precheck(&path, &newer, 100).unwrap_err(), ClaimError::TooNew { found: 1, supported: 0 });
        let other = StoreSpec { application_id: APP + 1, ..spec(false) };
        assert_eq!(precheck(&path, &other, 100).unwrap_err(), ClaimError::Foreign);
        assert_eq!(bytes(&path), before);
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// A file stamped ours with a hot rollback journal: left to the writer
    /// unless the store is always WAL, then it is not the store's file.
    #[test]
    fn a_hot_rollback_journal_on_our_file_is_refused_only_by_a_wal_only_store() {
        let d = dir("hot");
        let live = d.join("live.db");
        let c = writer(&live);
        c.execute_batch("PRAGMA journal_mode=DELETE; PRAGMA cache_size=1;").unwrap();
        upgrade(&c, &spec(false)).unwrap();
        c.execute_batch(
            "BEGIN; CREATE TABLE filler(x); WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n \
             WHERE i < 200) INSERT INTO filler SELECT zeroblob(2000) FROM n;",
        )
        .unwrap();
        let copy = d.join("copy.db");
        for s in ["", "-journal"] {
            std::fs::copy(format!("{}{s}", live.display()), format!("{}{s}", copy.display())).unwrap();
        }
        let before = bytes(&copy);
        assert!(before[2].is_some(), "the copy has a rollback journal");
        assert_eq!(precheck(&copy, &spec(true), 100).unwrap_err(), ClaimError::Foreign);
        assert_eq!(bytes(&copy), before);
        precheck(&copy, &spec(false), 100).unwrap();
        assert_eq!(bytes(&copy), before, "the precheck only reads");
        drop(c);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
