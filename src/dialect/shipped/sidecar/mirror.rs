//! Writing one receipt as LoopX's sidecar file, the way LoopX's own writer
//! does, so LoopX's readers (and a LoopX writer still running during a
//! migration) see a file they could have written:
//!
//! - under the sibling lock file `<file>.ts-effect.lock`, created
//!   exclusively and holding `{"pid","token"}`; a lock whose owner process is
//!   gone (or that holds no owner and is older than [`INVALID_LOCK_STALE`])
//!   is reclaimed; past the timeout the write fails `lock_acquire_timeout`;
//! - with LoopX's compare-and-swap rule on the previous content: the same
//!   receipt is a replay and writes nothing; a different one may replace
//!   only a `retryable_failure` of the same identity (schema, dispatch,
//!   hook, capability, source receipt and `recorded_at`) whose
//!   `attempt_count` is exactly one less; anything else is
//!   `receipt_conflict` and the file is left as it was;
//! - atomically: a temporary file in the same folder, fsynced, renamed over
//!   the receipt, then the folder fsynced.

use std::fs;
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;

use super::RECEIPT_DIR;
use crate::dialect::shipped::{self as doc, grammar::is_goal_id, SidecarReceipt};

/// LoopX's writer gives up on a held lock after this long.
pub const LOCK_TIMEOUT: Duration = Duration::from_secs(5);
const LOCK_POLL: Duration = Duration::from_millis(25);
/// A lock file without a readable owner is another writer's half-written
/// claim until it is this old.
pub const INVALID_LOCK_STALE: Duration = Duration::from_secs(10);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MirrorOutcome {
    Written,
    /// The file already held this receipt.
    Replayed,
}

impl MirrorOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            MirrorOutcome::Written => "written",
            MirrorOutcome::Replayed => "replayed",
        }
    }
}

/// Why a receipt was not mirrored. Codes only: never a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MirrorError {
    #[error("the goal id cannot name a folder")]
    BadGoalId,
    #[error("the receipt breaks the shipped receipt contract")]
    InvalidReceipt,
    #[error("another writer held the receipt's lock past the timeout")]
    LockAcquireTimeout,
    #[error("the file holds a receipt this one may not replace")]
    ReceiptConflict,
    #[error("the receipt file could not be read or written: {0:?}")]
    Io(std::io::ErrorKind),
}

impl MirrorError {
    pub fn code(&self) -> &'static str {
        match self {
            MirrorError::BadGoalId => "bad_goal_id",
            MirrorError::InvalidReceipt => "invalid_receipt",
            MirrorError::LockAcquireTimeout => "lock_acquire_timeout",
            MirrorError::ReceiptConflict => "receipt_conflict",
            MirrorError::Io(_) => "journal_write_failed",
        }
    }
}

impl From<std::io::Error> for MirrorError {
    fn from(e: std::io::Error) -> Self {
        MirrorError::Io(e.kind())
    }
}

/// Writes `receipt` as `<runtime_root>/goals/<goal_id>/post_writeback_hooks/<dispatch_id>.json`.
pub fn mirror_receipt(
    runtime_root: &Path,
    goal_id: &str,
    receipt: &SidecarReceipt,
    lock_timeout: Duration,
) -> Result<MirrorOutcome, MirrorError> {
    if !is_goal_id(goal_id) {
        return Err(MirrorError::BadGoalId);
    }
    let value = serde_json::to_value(receipt).map_err(|_| MirrorError::InvalidReceipt)?;
    doc::validate_receipt(&value).map_err(|_| MirrorError::InvalidReceipt)?;
    let dir = runtime_root.join("goals").join(goal_id).join(RECEIPT_DIR);
    fs::DirBuilder::new().recursive(true).mode(0o700).create(&dir)?;
    if !fs::symlink_metadata(&dir)?.is_dir() {
        return Err(MirrorError::Io(std::io::ErrorKind::InvalidInput));
    }
    let path = dir.join(format!("{}.json", receipt.dispatch_id));
    let lock = Lock::acquire(&path, lock_timeout)?;
    let outcome = swap(&path, &value);
    lock.release();
    outcome
}

/// [`mirror_receipt`] for a receipt of a dispatch of `source` (both JSON
/// documents as the runtime holds them): the goal is the source's stripped
/// `identity.goal_id`.
pub fn mirror_for_source(runtime_root: &Path, source: &str, receipt: &str) -> Result<MirrorOutcome, MirrorError> {
    let source: Value = serde_json::from_str(source).map_err(|_| MirrorError::InvalidReceipt)?;
    let source = doc::validate_source(&source).map_err(|_| MirrorError::BadGoalId)?;
    let receipt: Value = serde_json::from_str(receipt).map_err(|_| MirrorError::InvalidReceipt)?;
    let receipt = doc::validate_receipt(&receipt).map_err(|_| MirrorError::InvalidReceipt)?;
    mirror_receipt(runtime_root, &source.identity.goal_id, &receipt, LOCK_TIMEOUT)
}

/// The compare-and-swap, under the lock.
fn swap(path: &Path, next: &Value) -> Result<MirrorOutcome, MirrorError> {
    if let Some(previous) = read_existing(path)? {
        if &previous == next {
            return Ok(MirrorOutcome::Replayed);
        }
        if !may_replace(&previous, next) {
            return Err(MirrorError::ReceiptConflict);
        }
    }
    let mut text = serde_json::to_string_pretty(next).map_err(|_| MirrorError::InvalidReceipt)?;
    text.push('\n');
    write_atomically(path, text.as_bytes())?;
    Ok(MirrorOutcome::Written)
}

/// LoopX's retry transition: only a `retryable_failure` is replaced, by a
/// receipt of the same identity at the next attempt.
pub fn may_replace(previous: &Value, next: &Value) -> bool {
    const STABLE: [&str; 6] =
        ["schema_version", "dispatch_id", "hook_id", "capability_id", "source_receipt_id", "recorded_at"];
    let stable = STABLE.iter().all(|f| previous.get(f) == next.get(f));
    let attempts =
        (previous.get("attempt_count").and_then(Value::as_u64), next.get("attempt_count").and_then(Value::as_u64));
    previous.get("status").and_then(Value::as_str) == Some("retryable_failure")
        && stable
        && matches!(attempts, (Some(p), Some(n)) if n == p + 1)
}

/// The receipt file's JSON, or none. A file that is not JSON is no
/// receipt this write may replace.
fn read_existing(path: &Path) -> Result<Option<Value>, MirrorError> {
    let mut file = match fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW).open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let mut text = String::new();
    file.read_to_string(&mut text).map_err(|_| MirrorError::ReceiptConflict)?;
    serde_json::from_str(&text).map(Some).map_err(|_| MirrorError::ReceiptConflict)
}

pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), MirrorError> {
    let dir = path.parent().ok_or(MirrorError::Io(std::io::ErrorKind::InvalidInput))?;
    let temp = sibling(path, &format!("{}.{}.tmp", std::process::id(), token()));
    let written = (|| -> std::io::Result<()> {
        let mut f = fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&temp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        fs::rename(&temp, path)?;
        fs::File::open(dir)?.sync_all()
    })();
    if written.is_err() {
        let _ = fs::remove_file(&temp);
    }
    Ok(written?)
}

/// `<path><suffix>` beside `path` (a suffix to the full name, as LoopX's).
fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".");
    name.push(suffix);
    PathBuf::from(name)
}

/// A value no other writer picks: this process, the clock and a counter, hashed.
fn token() -> String {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let nanos = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    crate::identity::sha256_hex(format!("{}:{nanos}:{n}", std::process::id()).as_bytes())[..32].to_owned()
}

/// The lock file `<file>.ts-effect.lock`, held while it names our token.
pub(crate) struct Lock {
    path: PathBuf,
    token: String,
}

impl Lock {
    pub(crate) fn acquire(receipt: &Path, timeout: Duration) -> Result<Lock, MirrorError> {
        let mut name = receipt.as_os_str().to_owned();
        name.push(".ts-effect.lock");
        let path = PathBuf::from(name);
        let token = token();
        let owner = serde_json::json!({ "pid": std::process::id(), "token": token }).to_string();
        let deadline = Instant::now() + timeout;
        loop {
            match fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&path) {
                Ok(mut f) => {
                    if let Err(e) = f.write_all(owner.as_bytes()).and_then(|()| f.sync_all()) {
                        let _ = fs::remove_file(&path);
                        return Err(e.into());
                    }
                    return Ok(Lock { path, token });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e.into()),
            }
            reclaim_stale(&path, &token);
            if Instant::now() >= deadline {
                return Err(MirrorError::LockAcquireTimeout);
            }
            std::thread::sleep(LOCK_POLL);
        }
    }

    /// Removes the lock file if it still names our token.
    pub(crate) fn release(self) {
        if owner_of(&self.path).is_some_and(|(_, t)| t == self.token) {
            let _ = fs::remove_file(&self.path);
        }
    }
}

fn owner_of(lock: &Path) -> Option<(i64, String)> {
    let v: Value = serde_json::from_str(&fs::read_to_string(lock).ok()?).ok()?;
    Some((v.get("pid")?.as_i64()?, v.get("token")?.as_str()?.to_owned()))
}

fn alive(pid: i64) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else { return false };
    if pid <= 0 {
        return false;
    }
    // SAFETY: signal 0 only probes whether the process exists.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Moves a dead owner's lock (or an ownerless one past its grace) aside and
/// removes it; a rename makes two reclaimers agree on who removed it.
fn reclaim_stale(lock: &Path, token: &str) {
    match owner_of(lock) {
        Some((pid, _)) if alive(pid) => return,
        Some(_) => {}
        None => {
            let young = fs::metadata(lock)
                .and_then(|m| m.modified())
                .map(|t| t.elapsed().unwrap_or_default() < INVALID_LOCK_STALE)
                .unwrap_or(true);
            if young {
                return;
            }
        }
    }
    let stale = sibling(lock, &format!("stale.{token}"));
    if fs::rename(lock, &stale).is_ok() {
        let _ = fs::remove_file(&stale);
    }
}
