//! Where a journal lives and how it is opened, as plain data: the caller
//! (the binding, the CLI, a test) names a target and never picks a backend's
//! constructor. Connecting is the backends' business (`sqlite/`, `postgres/`).

use std::path::{Path, PathBuf};

use super::{JournalError, Result};

/// The default schema of a PostgreSQL journal.
pub const DEFAULT_SCHEMA: &str = "loopx_hooks";

/// A journal's home: an SQLite file, or a schema of a PostgreSQL database.
/// `Debug` shows no path or connection string (they are the host's).
#[derive(Clone, PartialEq, Eq)]
pub enum JournalTarget {
    /// The file's path; a missing or empty file becomes a journal.
    File(PathBuf),
    Postgres(PgTarget),
}

/// Whether the opener may write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenMode {
    /// Creates or migrates the journal when needed; writes go to its writer.
    ReadWrite,
    /// Opens an existing journal only: nothing is created, migrated or
    /// changed, and writing methods answer [`super::JournalError::ReadOnly`].
    ReadOnly,
}

/// Where a PostgreSQL journal lives. The connection string is a libpq-style
/// URL or key=value string; it is private to the host and never echoed.
#[derive(Clone, PartialEq, Eq)]
pub struct PgTarget {
    pub connection_string: String,
    /// An unquoted-identifier-like name: `[a-z_][a-z0-9_]*`, at most 48 bytes
    /// (it also names the NOTIFY channel).
    pub schema: String,
    /// PEM certificates to verify the server by, for `sslmode=require`
    /// (default: the Mozilla roots).
    pub ca_file: Option<PathBuf>,
    pub limits: PgLimits,
}

/// How long a PostgreSQL journal waits on its server. Establishing a
/// connection is bounded by the connection string's `connect_timeout`
/// (default 5 s), which here covers TCP, TLS, startup and authentication.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PgLimits {
    /// One statement's round trip, on both sides: the session's
    /// `statement_timeout`, and the client's deadline for an answer from a
    /// server that stopped answering. At least 1.
    pub statement_timeout_ms: u32,
    /// How long a write keeps retrying a lost or unreachable server before
    /// its command is answered [`super::JournalError::Unavailable`].
    pub write_retry_ms: u32,
}

impl Default for PgLimits {
    fn default() -> Self {
        PgLimits { statement_timeout_ms: 5_000, write_retry_ms: 15_000 }
    }
}

impl std::fmt::Debug for PgTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgTarget").field("schema", &self.schema).finish_non_exhaustive()
    }
}

impl std::fmt::Debug for JournalTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JournalTarget::File(_) => f.write_str("File(..)"),
            JournalTarget::Postgres(t) => f.debug_tuple("Postgres").field(t).finish(),
        }
    }
}

impl JournalTarget {
    /// The target of a caller that names a file or a PostgreSQL schema:
    /// exactly one of them.
    pub fn either(file: Option<PathBuf>, postgres: Option<PgTarget>) -> Result<JournalTarget> {
        match (file, postgres) {
            (Some(path), None) => Ok(JournalTarget::File(path)),
            (None, Some(target)) => Ok(JournalTarget::Postgres(target)),
            _ => Err(JournalError::InvalidArgument { what: "journal" }),
        }
    }
}

impl From<&Path> for JournalTarget {
    fn from(path: &Path) -> Self {
        JournalTarget::File(path.to_path_buf())
    }
}

impl From<PathBuf> for JournalTarget {
    fn from(path: PathBuf) -> Self {
        JournalTarget::File(path)
    }
}

impl From<&PathBuf> for JournalTarget {
    fn from(path: &PathBuf) -> Self {
        JournalTarget::File(path.clone())
    }
}

impl From<PgTarget> for JournalTarget {
    fn from(target: PgTarget) -> Self {
        JournalTarget::Postgres(target)
    }
}

impl From<&PgTarget> for JournalTarget {
    fn from(target: &PgTarget) -> Self {
        JournalTarget::Postgres(target.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pg() -> PgTarget {
        PgTarget {
            connection_string: "postgres://u:hunter2@db.internal/x".into(),
            schema: "s".into(),
            ca_file: None,
            limits: PgLimits::default(),
        }
    }

    #[test]
    fn debug_shows_neither_the_path_nor_the_connection_string() {
        let file = format!("{:?}", JournalTarget::from(Path::new("/home/someone/private.sqlite")));
        let postgres = format!("{:?}", JournalTarget::from(pg()));
        for shown in [&file, &postgres] {
            for secret in ["someone", "private", "hunter2", "db.internal"] {
                assert!(!shown.contains(secret), "{shown}");
            }
        }
        assert!(postgres.contains("\"s\""), "{postgres}");
    }

    #[test]
    fn a_caller_names_exactly_one_journal() {
        let path = PathBuf::from("j.sqlite");
        assert_eq!(JournalTarget::either(Some(path.clone()), None), Ok(JournalTarget::File(path.clone())));
        assert_eq!(JournalTarget::either(None, Some(pg())), Ok(JournalTarget::Postgres(pg())));
        let refused = Err(JournalError::InvalidArgument { what: "journal" });
        assert_eq!(JournalTarget::either(None, None), refused);
        assert_eq!(JournalTarget::either(Some(path), Some(pg())), refused);
    }
}
