//! What an SQLite file is, found by the core's own file recognition, for
//! the reference stores in lib/ that open their files with better-sqlite3.

use napi_derive::napi;

use super::error::{misuse, Result};
use crate::error_code::Coded;
use crate::journal::JournalError;
use crate::sqlite_file::{probe, FileError, Probe};

/// What is at a path, read from `stat` and the header's first 100 bytes.
#[napi(object)]
pub struct SqliteFileProbe {
    /// `missing`, `empty`, `not_sqlite` or `sqlite`.
    #[napi(ts_type = "'missing' | 'empty' | 'not_sqlite' | 'sqlite'")]
    pub kind: String,
    /// The header's application_id (bytes 68..72); 0 unless `sqlite`.
    pub application_id: i32,
    /// The header's user_version (bytes 60..64); 0 unless `sqlite`.
    pub user_version: i32,
}

/// Probes `path` without opening it as a database. Throws
/// `ERR_LOOPX_NOT_A_FILE` for a special file (never opened: a FIFO would
/// block) and `ERR_LOOPX_JOURNAL_IO` when it cannot be read; no error names
/// the path.
#[napi]
pub fn probe_sqlite_file(path: String) -> Result<SqliteFileProbe> {
    let found = probe(std::path::Path::new(&path)).map_err(|e| {
        let reason =
            if e == FileError::NotAFile { "the path is not a regular file" } else { "the file could not be read" };
        misuse(JournalError::from(e).error_code(), reason)
    })?;
    let (kind, application_id, user_version) = match found {
        Probe::Missing => ("missing", 0, 0),
        Probe::Empty => ("empty", 0, 0),
        Probe::NotSqlite => ("not_sqlite", 0, 0),
        Probe::Sqlite(h) => ("sqlite", h.application_id, h.user_version),
    };
    Ok(SqliteFileProbe { kind: kind.to_owned(), application_id, user_version })
}
