//! Reading a journal opened read-only while no writer has it: a WAL-mode
//! file with no `-wal` beside it holds all of it in its main file. SQLite
//! would create `-wal` and `-shm` to read it the usual way (a folder the
//! reader may not write refuses that, and an inspection should not do it),
//! so it is read as `immutable`, which creates nothing and takes no lock.
//! Without a lock a writer could open and checkpoint mid-read, so the file's
//! stamp is compared before and after, and a read across a change is not an
//! answer.

use std::path::{Path, PathBuf};

use rusqlite::Connection;

use super::super::{JournalError, Result};

/// Reads of a quiet file done again when it changed under them, before the
/// read is done on a live connection instead.
pub(crate) const QUIET_TRIES: usize = 3;

/// What a read of a quiet file came to.
pub(crate) enum Quiet<T> {
    /// The file did not change while it was read: the answer stands.
    Read(Result<T>),
    /// A writer has the file (or it is not in WAL mode): read it live.
    Live,
    /// The file changed while it was read: the answer may be torn.
    Changed,
}

/// What identifies one state of a file that no writer has open: a writer's
/// first write creates `-wal`, and a checkpoint rewrites the main file.
#[derive(PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
    wal: bool,
}

/// SQLITE_CANTOPEN: SQLite could not open a file it needs.
const SQLITE_CANTOPEN: i32 = 14;

/// A `-wal` whose frames a reader cannot open (no `-shm` beside it, and no
/// right to create one) holds part of the journal: reading around it would
/// answer without those frames, so it is left to a writer to recover.
pub(crate) fn wal_unreadable(path: &Path, e: JournalError) -> JournalError {
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    let cannot_open = matches!(e, JournalError::ReadOnly)
        || matches!(e, JournalError::Sqlite { code, .. } if code & 0xff == SQLITE_CANTOPEN);
    if cannot_open && Path::new(&wal).exists() {
        JournalError::NeedsRecovery
    } else {
        e
    }
}

fn stamp(path: &Path, wal: &Path) -> Result<Stamp> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path)?;
    Ok(Stamp {
        dev: m.dev(),
        ino: m.ino(),
        len: m.len(),
        mtime: (m.mtime(), m.mtime_nsec()),
        ctime: (m.ctime(), m.ctime_nsec()),
        wal: wal.try_exists()?,
    })
}

/// Runs `f` on a fresh `immutable` connection when the file at `path` is
/// quiet, and says whether its answer stands (see the module comment).
pub(crate) fn read<T>(path: &Path, f: &impl Fn(&Connection) -> Result<T>) -> Result<Quiet<T>> {
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    let wal = PathBuf::from(wal);
    let before = stamp(path, &wal)?;
    if before.wal {
        return Ok(Quiet::Live);
    }
    let header = match crate::sqlite_file::probe(path)? {
        crate::sqlite_file::Probe::Sqlite(h) if h.wal_mode => h,
        crate::sqlite_file::Probe::Sqlite(_) => return Ok(Quiet::Live),
        _ => return Err(JournalError::NotAJournal),
    };
    let conn = crate::sqlite_file::open_for_inspection(path, &header)?;
    let out = f(&conn);
    drop(conn);
    Ok(if stamp(path, &wal)? == before { Quiet::Read(out) } else { Quiet::Changed })
}
