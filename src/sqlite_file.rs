//! What a file is, found with plain file I/O before SQLite is given it.
//!
//! The journal and the turn-start inbox both:
//! - hand SQLite an absolute path only ([`resolve`]): the bundled SQLite is
//!   built with URI filenames on, and an absolute path (it starts with `/`)
//!   can never be read as a `file:` URI, so a path is only ever a path and
//!   every connection of one store opens the same file;
//! - refuse what is not a regular file (a FIFO would block `open(2)` forever,
//!   a directory or device is never a store) and a file this process may not
//!   write, before any connection exists ([`probe`], [`check_writable`]);
//! - read the header (application_id at byte 68, user_version at byte 60,
//!   big-endian) so a foreign or newer file is refused untouched;
//! - then recognise and claim the file by one procedure (`claim.rs`).

use std::io::Read;
use std::path::{Path, PathBuf};

use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags};

mod claim;

#[cfg(test)]
pub(crate) use claim::upgrade;
pub(crate) use claim::{
    claim, in_read_txn, inspect_read_only, precheck, recognise, ClaimError, Found, SqliteError, StoreSpec,
};

const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";
const SQLITE_HEADER_LEN: usize = 100;

/// Why a path cannot be a store file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FileError {
    /// It exists and is not a regular file (FIFO, directory, device, socket).
    NotAFile,
    /// A regular file this process may not open for writing.
    ReadOnly,
    Io(std::io::ErrorKind),
}

impl From<std::io::Error> for FileError {
    fn from(e: std::io::Error) -> Self {
        FileError::Io(e.kind())
    }
}

/// The header fields that say whose file it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Header {
    pub application_id: i32,
    pub user_version: i32,
    /// File format read/write versions 2 (bytes 18-19): the file is in WAL mode.
    pub wal_mode: bool,
}

/// What [`probe`] found at a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Probe {
    Missing,
    Empty,
    /// Non-empty and not starting with a whole SQLite header.
    NotSqlite,
    Sqlite(Header),
}

/// The absolute path every connection of a store opens: the file's canonical
/// path when it exists, else its canonical folder joined with its name.
pub(crate) fn resolve(path: &Path) -> std::io::Result<PathBuf> {
    if path.as_os_str().is_empty() {
        return Err(std::io::ErrorKind::InvalidInput.into());
    }
    let absolute = std::path::absolute(path)?;
    match std::fs::canonicalize(&absolute) {
        Ok(p) => Ok(p),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // A missing file: pin its folder (which must exist) and keep the name.
            match (absolute.parent(), absolute.file_name()) {
                (Some(dir), Some(name)) => Ok(std::fs::canonicalize(dir)?.join(name)),
                _ => Err(std::io::ErrorKind::InvalidInput.into()),
            }
        }
        Err(e) => Err(e),
    }
}

/// Classifies `path` with `stat` and a plain read of its first 100 bytes. A
/// special file is refused from `stat` alone, before it is ever opened.
pub(crate) fn probe(path: &Path) -> Result<Probe, FileError> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Probe::Missing),
        Err(e) => return Err(e.into()),
    };
    if !meta.is_file() {
        return Err(FileError::NotAFile);
    }
    if meta.len() == 0 {
        return Ok(Probe::Empty);
    }
    let mut file = std::fs::File::open(path)?;
    let mut head = [0u8; SQLITE_HEADER_LEN];
    let mut n = 0;
    while n < head.len() {
        match file.read(&mut head[n..])? {
            0 => break,
            k => n += k,
        }
    }
    if n == 0 {
        return Ok(Probe::Empty);
    }
    if n < SQLITE_HEADER_LEN || !head.starts_with(SQLITE_MAGIC) {
        return Ok(Probe::NotSqlite);
    }
    let be = |at: usize| i32::from_be_bytes([head[at], head[at + 1], head[at + 2], head[at + 3]]);
    Ok(Probe::Sqlite(Header { user_version: be(60), application_id: be(68), wal_mode: head[18] == 2 && head[19] == 2 }))
}

/// A read-only connection for deciding whose file `path` is, which creates
/// nothing beside it. SQLite opens a WAL-mode file with `-wal` and `-shm`
/// files even read-only; when no `-wal` exists the main file holds the whole
/// database, so it is read as `immutable` (no locks, no side files). With a
/// `-wal` present its frames may hide the real header, so the plain read-only
/// open reads them (creating at most a `-shm`). Never checkpoints on close.
/// `path` must be absolute ([`resolve`]).
pub(crate) fn open_for_inspection(path: &Path, header: &Header) -> rusqlite::Result<Connection> {
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = if header.wal_mode && !Path::new(&wal).exists() {
        Connection::open_with_flags(immutable_uri(path), flags | OpenFlags::SQLITE_OPEN_URI)?
    } else {
        Connection::open_with_flags(path, flags)?
    };
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)?;
    Ok(conn)
}

/// `file:` URI of an absolute path with `immutable=1`; every byte that a URI
/// could read as syntax (`?`, `#`, `%`, non-ASCII) is percent-encoded.
fn immutable_uri(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut uri = String::from("file:");
    for &b in path.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'/' | b'.' | b'-' | b'_') {
            uri.push(b as char);
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri.push_str("?immutable=1");
    uri
}

/// Refuses an existing file this process may not write: opening it for
/// writing (no truncation, no creation) changes nothing.
pub(crate) fn check_writable(path: &Path) -> Result<(), FileError> {
    match std::fs::OpenOptions::new().write(true).open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => Err(FileError::ReadOnly),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("loopx-sqlite-file-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn resolve_is_absolute_and_never_a_uri() {
        let d = dir("resolve");
        let p = resolve(&d.join("file:x.db")).unwrap();
        assert!(p.is_absolute());
        assert!(p.ends_with("file:x.db"));
        assert!(!p.to_string_lossy().starts_with("file:"));
        std::fs::write(&p, b"").unwrap();
        assert_eq!(resolve(&d.join("file:x.db")).unwrap(), p);
        assert!(resolve(Path::new("")).is_err());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn probe_reads_the_header_and_refuses_special_files() {
        let d = dir("probe");
        assert_eq!(probe(&d.join("missing")).unwrap(), Probe::Missing);
        assert_eq!(probe(&d).unwrap_err(), FileError::NotAFile);
        std::fs::write(d.join("empty"), b"").unwrap();
        assert_eq!(probe(&d.join("empty")).unwrap(), Probe::Empty);
        std::fs::write(d.join("text"), b"hello").unwrap();
        assert_eq!(probe(&d.join("text")).unwrap(), Probe::NotSqlite);
        let mut head = vec![0u8; 4096];
        head[..16].copy_from_slice(SQLITE_MAGIC);
        head[60..64].copy_from_slice(&7i32.to_be_bytes());
        head[68..72].copy_from_slice(&0x4C58_484Bi32.to_be_bytes());
        std::fs::write(d.join("db"), &head).unwrap();
        assert_eq!(
            probe(&d.join("db")).unwrap(),
            Probe::Sqlite(Header { application_id: 0x4C58_484B, user_version: 7, wal_mode: false })
        );
        std::fs::remove_dir_all(&d).unwrap();
    }
}
