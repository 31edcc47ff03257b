//! SQLite's errors as [`JournalError`]s: the file probe's, the claim's and the
//! driver's. They keep SQLite's result code and its static description only;
//! a driver error's own text can hold column names or values.

use super::super::JournalError;
use crate::sqlite_file::{ClaimError, SqliteError};

impl From<crate::sqlite_file::FileError> for JournalError {
    fn from(e: crate::sqlite_file::FileError) -> Self {
        use crate::sqlite_file::FileError;
        match e {
            FileError::NotAFile => JournalError::NotAFile,
            FileError::ReadOnly => JournalError::ReadOnly,
            FileError::Io(kind) => JournalError::Io { kind },
        }
    }
}

/// The driver's errors through the one mapping every SQLite store shares
/// (`sqlite_file`), so the journal and the inbox read SQLite alike.
impl From<rusqlite::Error> for JournalError {
    fn from(e: rusqlite::Error) -> Self {
        SqliteError::from(e).into()
    }
}

impl From<SqliteError> for JournalError {
    fn from(e: SqliteError) -> Self {
        match e {
            SqliteError::Busy => JournalError::Busy,
            SqliteError::NotADatabase => JournalError::NotAJournal,
            SqliteError::NeedsRecovery => JournalError::NeedsRecovery,
            SqliteError::ReadOnly => JournalError::ReadOnly,
            SqliteError::Full => JournalError::Io { kind: std::io::ErrorKind::StorageFull },
            SqliteError::Code { code, what } => JournalError::Sqlite { code, what },
            SqliteError::Driver { what } => JournalError::Internal { what },
        }
    }
}

impl From<ClaimError> for JournalError {
    fn from(e: ClaimError) -> Self {
        match e {
            ClaimError::Foreign => JournalError::NotAJournal,
            ClaimError::TooNew { found, supported } => JournalError::TooNew { found, supported },
            ClaimError::NotWal => JournalError::Internal { what: "could not switch the journal to WAL mode" },
            ClaimError::File(e) => e.into(),
            ClaimError::Sqlite(e) => e.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A full disk is a file problem (`ERR_LOOPX_JOURNAL_IO`, as docs/errors.md
    /// says), not an SQLite one: SQLite's own SQLITE_FULL, made real by a page cap.
    #[test]
    fn a_full_disk_is_an_io_error() {
        let c = rusqlite::Connection::open_in_memory().unwrap();
        c.execute_batch("CREATE TABLE t (b BLOB); PRAGMA max_page_count = 4;").unwrap();
        let e = c.execute("INSERT INTO t VALUES (zeroblob(100000))", []).unwrap_err();
        assert_eq!(JournalError::from(e), JournalError::Io { kind: std::io::ErrorKind::StorageFull });
    }
}
