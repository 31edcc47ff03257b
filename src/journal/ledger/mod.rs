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
//! Each process holds an exclusive lock on its own file for its life. A file
//! whose lock can be taken belongs to a process that ended: [`Ledger::orphans`]
//! reads its entries, and the journal folds each into the journal as the
//! checkpoint plus a failed attempt (`producer_failed`: the attempt ended
//! without an outcome), then removes the file.

use std::cell::RefCell;
use std::collections::HashMap;
use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use super::types::Checkpoint;
use crate::contract::Dialect;

/// Bytes per slot: a checkpoint's request is bounded by the contract's
/// grammars (32 fact refs of at most 128 bytes and a few ids), far below it.
const SLOT: u64 = 16 * 1024;
const MAGIC: [u8; 4] = *b"LXA1";
/// magic, payload length, FNV-1a 64 of the payload.
const HEADER: usize = 4 + 4 + 8;
const SUFFIX: &str = ".ledger";

#[derive(Serialize, Deserialize)]
struct Entry {
    dispatch_id: String,
    hook_id: String,
    capability_id: String,
    receipt_id: String,
    effect_id: String,
    event_kind: String,
    registration_digest: String,
    // Ledger files written before dialects existed hold neither field.
    #[serde(default)]
    dialect: Dialect,
    #[serde(default)]
    recorded_at: Option<String>,
    request_json: String,
    attempt: u32,
}

impl From<&Checkpoint> for Entry {
    fn from(c: &Checkpoint) -> Self {
        Entry {
            dispatch_id: c.dispatch_id.clone(),
            hook_id: c.hook_id.clone(),
            capability_id: c.capability_id.clone(),
            receipt_id: c.receipt_id.clone(),
            effect_id: c.effect_id.clone(),
            event_kind: c.event_kind.clone(),
            registration_digest: c.registration_digest.clone(),
            dialect: c.dialect,
            recorded_at: c.recorded_at.clone(),
            request_json: c.request_json.clone(),
            attempt: c.attempt,
        }
    }
}

impl From<Entry> for Checkpoint {
    fn from(e: Entry) -> Self {
        Checkpoint {
            dispatch_id: e.dispatch_id,
            hook_id: e.hook_id,
            capability_id: e.capability_id,
            receipt_id: e.receipt_id,
            effect_id: e.effect_id,
            event_kind: e.event_kind,
            registration_digest: e.registration_digest,
            dialect: e.dialect,
            recorded_at: e.recorded_at,
            request_json: e.request_json,
            attempt: e.attempt,
        }
    }
}

#[derive(Default)]
struct Slots {
    by_id: HashMap<String, u64>,
    free: Vec<u64>,
    next: u64,
}

pub(crate) struct Ledger {
    dir: PathBuf,
    path: PathBuf,
    file: File,
    slots: Mutex<Slots>,
}

/// A ledger file of a process that ended, locked by this one until dropped.
pub(crate) struct Orphan {
    path: PathBuf,
    _lock: File,
    pub entries: Vec<Checkpoint>,
}

impl Orphan {
    /// Removes the file once its entries are in the journal.
    pub fn remove(self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3))
}

#[cfg(unix)]
fn write_at(file: &File, buf: &[u8], offset: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(file, buf, offset)
}

#[cfg(unix)]
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(file, buf, offset)
}

#[cfg(windows)]
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    std::os::windows::fs::FileExt::seek_read(file, buf, offset)
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

#[cfg(unix)]
fn private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    match std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(not(unix))]
fn private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)
}

/// Whether `meta` belongs to the same user as this process's own file: a
/// ledger planted by another user in a shared folder is never read.
#[cfg(unix)]
fn same_owner(meta: &std::fs::Metadata, own: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    meta.uid() == own.uid()
}

#[cfg(not(unix))]
fn same_owner(_: &std::fs::Metadata, _: &std::fs::Metadata) -> bool {
    true
}

impl Ledger {
    /// Creates this process's ledger file in `dir` (created 0700 if missing).
    pub fn create(dir: &Path) -> std::io::Result<Ledger> {
        private_dir(dir)?;
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let path = dir.join(format!("{}-{nanos}{SUFFIX}", std::process::id()));
        // Created and locked under a name no scan for orphans reads, then
        // renamed (the lock stays with the file): another process's scan can
        // never take a ledger for an orphan before its owner locked it.
        let fresh = dir.join(format!("{}-{nanos}.new", std::process::id()));
        let file = OpenOptions::new().read(true).write(true).create_new(true).open(&fresh)?;
        if file.try_lock().is_err() {
            let _ = std::fs::remove_file(&fresh);
            return Err(std::io::Error::from(std::io::ErrorKind::WouldBlock));
        }
        std::fs::rename(&fresh, &path)?;
        Ok(Ledger { dir: dir.to_owned(), path, file, slots: Mutex::default() })
    }

    /// Writes `c` (attempt >= 1) to its identity's slot before its provider runs.
    pub fn note(&self, c: &Checkpoint) -> std::io::Result<()> {
        let mut entry = Entry::from(c);
        let mut payload = serde_json::to_vec(&entry).map_err(std::io::Error::other)?;
        if HEADER + payload.len() > SLOT as usize {
            // A request too large for a slot (a dialect whose inputs may be
            // large) is left out: the attempt still counts, and the next
            // dispatch of its source runs the identity; only `recover()`,
            // which re-dispatches from the stored request, then skips it.
            entry.request_json = "null".into();
            payload = serde_json::to_vec(&entry).map_err(std::io::Error::other)?;
        }
        if HEADER + payload.len() > SLOT as usize {
            return Err(std::io::Error::from(std::io::ErrorKind::InvalidInput));
        }
        let mut record = Vec::with_capacity(HEADER + payload.len());
        record.extend_from_slice(&MAGIC);
        record.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        record.extend_from_slice(&fnv1a(&payload).to_le_bytes());
        record.extend_from_slice(&payload);
        let slot = {
            let mut s = self.slots.lock().unwrap_or_else(|p| p.into_inner());
            match s.by_id.get(&c.dispatch_id) {
                Some(slot) => *slot,
                None => {
                    let slot = s.free.pop().unwrap_or_else(|| {
                        s.next += 1;
                        s.next - 1
                    });
                    s.by_id.insert(c.dispatch_id.clone(), slot);
                    slot
                }
            }
        };
        write_at(&self.file, &record, slot * SLOT)
    }

    /// The checkpoint noted for `dispatch_id` and not cleared yet, read back
    /// from its slot.
    pub fn noted(&self, dispatch_id: &str) -> Option<Checkpoint> {
        let s = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        let slot = *s.by_id.get(dispatch_id)?;
        let mut bytes = vec![0; SLOT as usize];
        let read = read_at(&self.file, &mut bytes, slot * SLOT).ok()?;
        drop(s);
        parse_slot(&bytes[..read]).filter(|c| c.dispatch_id == dispatch_id)
    }

    /// Clears the slot of `dispatch_id`, whose outcome is now in the journal.
    pub fn clear(&self, dispatch_id: &str) {
        let mut s = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(slot) = s.by_id.remove(dispatch_id) {
            // Cleared in memory even if this write fails: folding an entry
            // whose identity already has an outcome changes nothing.
            let _ = write_at(&self.file, &[0; 4], slot * SLOT);
            s.free.push(slot);
        }
    }

    /// The ledgers in this folder whose process ended, each locked until
    /// dropped or removed. Unreadable or foreign files are skipped.
    pub fn orphans(&self) -> Vec<Orphan> {
        let Ok(own) = self.file.metadata() else { return Vec::new() };
        let Ok(listing) = std::fs::read_dir(&self.dir) else { return Vec::new() };
        let mut out = Vec::new();
        for entry in listing.flatten() {
            let path = entry.path();
            if path == self.path || !path.to_string_lossy().ends_with(SUFFIX) {
                continue;
            }
            let Ok(file) = File::open(&path) else { continue };
            match file.metadata() {
                Ok(meta) if meta.is_file() && same_owner(&meta, &own) => {}
                _ => continue,
            }
            match file.try_lock() {
                Ok(()) => {}
                Err(TryLockError::WouldBlock) | Err(TryLockError::Error(_)) => continue,
            }
            let entries = read_entries(&file);
            out.push(Orphan { path, _lock: file, entries });
        }
        out
    }

    /// Removes this process's file when no slot is in use (a clean close);
    /// otherwise it stays for the next opener to fold.
    pub fn close(&self) {
        let s = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        if s.by_id.is_empty() {
            let _ = std::fs::remove_file(&self.path);
            // Leaves nothing beside the journal when no other ledger is left
            // (fails, harmlessly, while another process's file is there).
            let _ = std::fs::remove_dir(&self.dir);
        }
    }
}

/// Every whole entry of a ledger file; a torn or foreign slot is skipped
/// (a torn write was never followed by its provider call).
fn read_entries(file: &File) -> Vec<Checkpoint> {
    use std::io::Read;
    let mut bytes = Vec::new();
    if (&*file).read_to_end(&mut bytes).is_err() {
        return Vec::new();
    }
    bytes.chunks(SLOT as usize).filter_map(parse_slot).collect()
}

/// A slot's whole entry; a torn or foreign slot is none.
fn parse_slot(slot: &[u8]) -> Option<Checkpoint> {
    if slot.len() < HEADER || slot[..4] != MAGIC {
        return None;
    }
    let len = u32::from_le_bytes(slot[4..8].try_into().ok()?) as usize;
    let sum = u64::from_le_bytes(slot[8..16].try_into().ok()?);
    let payload = slot.get(HEADER..HEADER + len)?;
    if fnv1a(payload) != sum {
        return None;
    }
    let entry: Entry = serde_json::from_slice(payload).ok()?;
    (entry.attempt >= 1).then(|| entry.into())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::tests::{checkpoint, TempDir};

    #[test]
    fn a_noted_attempt_is_read_back_from_an_ended_process_and_a_cleared_one_is_not() {
        let dir = TempDir::new("ledger");
        let ended = Ledger::create(&dir.file("attempts")).unwrap();
        let (a, b, c) = (checkpoint("a"), checkpoint("b"), checkpoint("c"));
        ended.note(&a).unwrap();
        ended.note(&b).unwrap();
        let mut b2 = b.clone();
        b2.attempt = 2;
        ended.note(&b2).unwrap();
        ended.note(&c).unwrap();
        ended.clear(&c.dispatch_id);
        let reader = Ledger::create(&dir.file("attempts")).unwrap();
        // The writer's lock is held while it lives: not an orphan yet.
        assert!(reader.orphans().is_empty());
        // Dropping the file handle is what the end of a process does to its lock.
        drop(ended);
        let orphans = reader.orphans();
        assert_eq!(orphans.len(), 1);
        let mut got = orphans[0].entries.clone();
        got.sort_by(|x, y| x.dispatch_id.cmp(&y.dispatch_id));
        let mut want = vec![a, b2];
        want.sort_by(|x, y| x.dispatch_id.cmp(&y.dispatch_id));
        assert_eq!(got, want);
        for o in orphans {
            o.remove();
        }
        assert!(reader.orphans().is_empty());
        reader.close();
        assert!(!dir.file("attempts").exists(), "a clean close leaves no folder behind");
    }

    #[test]
    fn a_torn_or_foreign_slot_is_skipped() {
        let dir = TempDir::new("ledger-torn");
        let ended = Ledger::create(&dir.file("attempts")).unwrap();
        ended.note(&checkpoint("a")).unwrap();
        ended.note(&checkpoint("b")).unwrap();
        let path = ended.path.clone();
        drop(ended.file);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[HEADER + 10] ^= 0xff; // slot 0's payload, torn
        bytes.truncate(SLOT as usize + HEADER + 20); // slot 1 cut short
        bytes.extend_from_slice(&[7; 100]);
        std::fs::write(&path, &bytes).unwrap();
        std::fs::write(dir.file("attempts").join("junk.ledger"), b"LXA1 not a ledger").unwrap();
        let reader = Ledger::create(&dir.file("attempts")).unwrap();
        let orphans = reader.orphans();
        assert_eq!(orphans.len(), 2);
        assert!(orphans.iter().all(|o| o.entries.is_empty()));
    }
}
