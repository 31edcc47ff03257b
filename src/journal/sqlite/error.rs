//! SQLite's errors as [`JournalError`]s: the file probe's, and the driver's.
//! The mapping keeps SQLite's result code and its static description only;
//! a driver error's own text can hold column names or values.

use super::super::JournalError;

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

/// SQLITE_READONLY_ROLLBACK: a hot journal a read-only connection cannot roll back.
const SQLITE_READONLY_ROLLBACK: i32 = 8 | (3 << 8);

impl From<rusqlite::Error> for JournalError {
    fn from(e: rusqlite::Error) -> Self {
        use rusqlite::ffi::ErrorCode;
        match e {
            rusqlite::Error::SqliteFailure(f, _) => match f.code {
                ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked => JournalError::Busy,
                ErrorCode::NotADatabase => JournalError::NotAJournal,
                ErrorCode::ReadOnly if f.extended_code == SQLITE_READONLY_ROLLBACK => JournalError::NeedsRecovery,
                ErrorCode::ReadOnly => JournalError::ReadOnly,
                _ => JournalError::Sqlite { code: f.extended_code, what: rusqlite::ffi::code_to_str(f.extended_code) },
            },
            // Not SQLite's answer but the driver's (a row of a shape the
            // code did not expect): no SQLite code to keep. Its own text can
            // hold column names or values: a fixed text instead.
            rusqlite::Error::QueryReturnedNoRows => JournalError::Internal { what: "query returned no rows" },
            rusqlite::Error::InvalidColumnType(..) | rusqlite::Error::FromSqlConversionFailure(..) => {
                JournalError::Internal { what: "unexpected column type" }
            }
            rusqlite::Error::IntegralValueOutOfRange(..) => JournalError::Internal { what: "integer out of range" },
            _ => JournalError::Internal { what: "sqlite driver error" },
        }
    }
}
