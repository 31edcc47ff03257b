//! The attempt ledger: each invocation a queued checkpoint precedes, written
//! to a file of this process before the provider is called, so the attempt
//! counts even when the process dies before the writer commits it.
//!
//! A checkpoint is queued, not awaited, when its provider is called: waiting
//! for the commit would cost a cross-thread round trip per call. A provider
//! that ends its process at once (an abort, `process.exit`, a SIGKILL) would
//! then never be counted and run again on every restart. Here the checkpoint
//! is first written (one `pwrite` into the OS page cache, no fsync: it
//! survives the death of the process, not a power cut, like the queued
//! checkpoint itself) into a slot of this process's ledger file, and the slot
//! is cleared once a final record or a failure of that identity committed.
//!
//! Each process holds an exclusive lock on its own file while its journal is
//! open. A file whose lock can be taken belongs to a process that ended (or
//! closed): [`Ledger::orphans`] reads its entries, and the journal folds each
//! into the journal as the checkpoint plus a failed attempt
//! (`producer_failed`: the attempt ended without an outcome), then removes
//! the file.
//!
//! A file journal only: a PostgreSQL journal's server counts each attempt
//! before its call (`Journal::count_attempt`), and its ledger
//! ([`Ledger::in_memory`]) only remembers what was noted, so that a record
//! whose checkpoint the server lost can write it again.

use std::cell::RefCell;
use std::collections::HashMap;
use std::fs::{File, TryLockError};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::types::Checkpoint;
use super::{JournalError, Result};

mod folder;
mod slot;
#[cfg(test)]
mod tests;

const SUFFIX: &str = ".ledger";

/// This process's ledger file while the journal is open.
struct OwnFile {
    dir: PathBuf,
    path: PathBuf,
    file: File,
}

/// An attempt noted and not cleared yet: its slot in the file and the checkpoint itself.
struct Noted {
    slot: u64,
    checkpoint: Checkpoint,
}

#[derive(Default)]
struct State {
    by_id: HashMap<String, Noted>,
    free: Vec<u64>,
    next: u64,
    /// None in memory (a journal whose server counts attempts), or once closed.
    file: Option<OwnFile>,
    closed: bool,
}

pub(crate) struct Ledger {
    state: Mutex<State>,
}

/// A ledger file of a process that ended, locked by this one until dropped.
pub(crate) struct Orphan {
    path: PathBuf,
    lock: File,
    pub entries: Vec<Checkpoint>,
}

impl Orphan {
    /// Removes the file once its entries are in the journal.
    pub fn remove(self) {
        folder::remove_if_same(&self.path, &self.lock);
    }
}

/// What a scan of the ledger folder found.
#[derive(Default)]
pub(crate) struct Scan {
    pub orphans: Vec<Orphan>,
    /// Entries named like a ledger that are not a regular file of this user's
    /// (a symlink, a FIFO, a folder, another user's file): never opened for
    /// reading in a way that can block, never read, never removed.
    pub skipped: u32,
}

#[cfg(unix)]
fn write_at(file: &File, buf: &[u8], offset: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(file, buf, offset)
}

#[cfg(windows)]
fn write_at(file: &File, mut buf: &[u8], mut offset: u64) -> std::io::Result<()> {
    while !buf.is_empty() {
        let n = std::os::windows::fs::FileExt::seek_write(file, buf, offset)?;
        buf = &buf[n..];
        offset += n as u64;
    }
    Ok(())
}

/// Tries to make a fresh ledger file: a concurrent close in this process (a
/// journal collected without `close()`) may remove the empty folder between
/// its creation and the file's, so a vanished folder is made again.
const CREATE_TRIES: u32 = 8;

impl Ledger {
    /// Creates this process's ledger file in `dir` (created 0700 if missing;
    /// refused unless it is this user's own, see `folder.rs`).
    pub fn create(dir: &Path) -> Result<Ledger> {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let path = dir.join(format!("{}-{nanos}{SUFFIX}", std::process::id()));
        // Created and locked under a name no scan for orphans reads, then
        // renamed (the lock stays with the file): another process's scan can
        // never take a ledger for an orphan before its owner locked it.
        let fresh = dir.join(format!("{}-{nanos}.new", std::process::id()));
        let mut tries = 0;
        let file = loop {
            folder::own_dir(dir)?;
            match folder::create_file(&fresh) {
                Ok(file) => break file,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && tries < CREATE_TRIES => tries += 1,
                Err(e) => return Err(e.into()),
            }
        };
        if file.try_lock().is_err() {
            let _ = std::fs::remove_file(&fresh);
            return Err(JournalError::Io { kind: std::io::ErrorKind::WouldBlock });
        }
        std::fs::rename(&fresh, &path)?;
        let file = Some(OwnFile { dir: dir.to_owned(), path, file });
        Ok(Ledger { state: Mutex::new(State { file, ..State::default() }) })
    }

    /// A ledger that keeps noted attempts in this process's memory only: for
    /// a journal whose server counts each attempt before its provider runs,
    /// where the noted checkpoint only rewrites one the server lost.
    pub fn in_memory() -> Ledger {
        Ledger { state: Mutex::default() }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Writes `c` (attempt >= 1) to its identity's slot before its provider runs.
    pub fn note(&self, c: &Checkpoint) -> Result<()> {
        let mut s = self.lock();
        if s.closed {
            return Err(JournalError::Closed);
        }
        let slot = match s.by_id.get(&c.dispatch_id) {
            Some(n) => n.slot,
            None => s.free.pop().unwrap_or_else(|| {
                s.next += 1;
                s.next - 1
            }),
        };
        if let Some(own) = &s.file {
            let record = slot::encode(c).ok_or(JournalError::InvalidArgument { what: "checkpoint" })?;
            write_at(&own.file, &record, slot * slot::SLOT)?;
        }
        s.by_id.insert(c.dispatch_id.clone(), Noted { slot, checkpoint: c.clone() });
        Ok(())
    }

    /// The checkpoint noted for `dispatch_id` and not cleared yet.
    pub fn noted(&self, dispatch_id: &str) -> Option<Checkpoint> {
        self.lock().by_id.get(dispatch_id).map(|n| n.checkpoint.clone())
    }

    /// Clears the slot of `dispatch_id`, whose outcome is now in the journal.
    pub fn clear(&self, dispatch_id: &str) {
        let mut s = self.lock();
        if let Some(n) = s.by_id.remove(dispatch_id) {
            // Cleared in memory even if this write fails: folding an entry
            // whose identity already has an outcome changes nothing.
            if let Some(own) = &s.file {
                let _ = write_at(&own.file, &slot::CLEARED, n.slot * slot::SLOT);
            }
            s.free.push(n.slot);
        }
    }

    /// The ledgers in this folder whose process ended, each locked until
    /// dropped or removed, and how many entries were skipped (`Scan`).
    pub fn orphans(&self) -> Scan {
        let s = self.lock();
        let Some(own) = &s.file else { return Scan::default() };
        let Ok(listing) = std::fs::read_dir(&own.dir) else { return Scan::default() };
        let mut scan = Scan::default();
        for entry in listing.flatten() {
            let path = entry.path();
            if path == own.path || !entry.file_name().to_string_lossy().ends_with(SUFFIX) {
                continue;
            }
            let Some(file) = folder::open_own_file(&path) else {
                scan.skipped += 1;
                continue;
            };
            match file.try_lock() {
                Ok(()) => {}
                // A live process's own.
                Err(TryLockError::WouldBlock) => continue,
                Err(TryLockError::Error(_)) => {
                    scan.skipped += 1;
                    continue;
                }
            }
            let entries = slot::entries(&folder::read_bounded(&file));
            scan.orphans.push(Orphan { path, lock: file, entries });
        }
        scan
    }

    /// Releases the file (its descriptor and lock) once; removes it when no
    /// slot is in use (a clean close), otherwise it stays for the next opener
    /// to fold. Later notes answer `Closed`.
    pub fn close(&self) {
        let mut s = self.lock();
        s.closed = true;
        let Some(own) = s.file.take() else { return };
        if s.by_id.is_empty() {
            folder::remove_if_same(&own.path, &own.file);
            // Leaves nothing beside the journal when no other ledger is left
            // (fails, harmlessly, while another process's file is there).
            let _ = std::fs::remove_dir(&own.dir);
        }
    }
}

thread_local! {
    /// The ledger of the journal whose writer runs on this thread (each
    /// journal has one writer thread), for the record rules.
    static WRITER_LEDGER: RefCell<Option<Arc<Ledger>>> = const { RefCell::new(None) };
}

/// Called on a journal's writer thread: its record rules consult `ledger`.
pub(crate) fn adopt(ledger: Arc<Ledger>) {
    WRITER_LEDGER.with(|l| *l.borrow_mut() = Some(ledger));
}

/// Runs `f` (an inline commit on a caller's thread) with `ledger` as this
/// thread's, then puts back whatever was there: one thread may commit for
/// several journals.
pub(crate) fn while_adopted<R>(ledger: Option<Arc<Ledger>>, f: impl FnOnce() -> R) -> R {
    let before = WRITER_LEDGER.with(|l| std::mem::replace(&mut *l.borrow_mut(), ledger));
    let out = f();
    WRITER_LEDGER.with(|l| *l.borrow_mut() = before);
    out
}

/// On a writer thread: the checkpoint this process noted for `dispatch_id`
/// before calling its provider, if its outcome is not recorded yet.
pub(crate) fn noted_here(dispatch_id: &str) -> Option<Checkpoint> {
    WRITER_LEDGER.with(|l| l.borrow().as_ref().and_then(|ledger| ledger.noted(dispatch_id)))
}
