//! One hook's sidecar receipt as the transaction's store: read with a
//! snapshot of its bytes, and written under LoopX's lock file with LoopX's
//! compare-and-swap against what the file holds then.

use std::fs;
use std::io::Read as _;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::Value;

use super::request::parse_deep;
use crate::dialect::shipped::enums::ShippedSidecarReceiptSchemaVersion;
use crate::dialect::shipped::sidecar::mirror::{write_atomically, Lock};
use crate::dialect::shipped::sidecar::RECEIPT_DIR;
use crate::identity::sha256_hex;

/// Receipts nesting deeper than this are written without indentation.
const PRETTY_DEPTH: usize = 64;

fn nesting(v: &Value) -> usize {
    match v {
        Value::Array(a) => 1 + a.iter().map(nesting).max().unwrap_or(0),
        Value::Object(m) => 1 + m.values().map(nesting).max().unwrap_or(0),
        _ => 0,
    }
}

/// Larger than any receipt a 64 KiB result can give.
const MAX_RECEIPT_BYTES: u64 = 1 << 20;

pub fn receipt_path(runtime_root: &str, goal_id: &str, dispatch_id: &str) -> PathBuf {
    Path::new(runtime_root).join("goals").join(goal_id).join(RECEIPT_DIR).join(format!("{dispatch_id}.json"))
}

pub enum State {
    Missing,
    Present(Value),
    /// Unreadable, not JSON, or not a receipt of this dispatch.
    Malformed,
}

pub struct ReceiptRead {
    pub state: State,
    /// `sha256:<hex>` of the bytes, `missing` or `unreadable`.
    pub snapshot: String,
}

pub fn read(path: &Path, dispatch_id: &str) -> ReceiptRead {
    let unreadable = || ReceiptRead { state: State::Malformed, snapshot: "unreadable".into() };
    let file = fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK).open(path);
    let mut file = match file {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return ReceiptRead { state: State::Missing, snapshot: "missing".into() }
        }
        Err(_) => return unreadable(),
    };
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        return unreadable();
    }
    let mut bytes = Vec::new();
    if file.by_ref().take(MAX_RECEIPT_BYTES + 1).read_to_end(&mut bytes).is_err() {
        return unreadable();
    }
    let snapshot = format!("sha256:{}", sha256_hex(&bytes));
    let receipt = (bytes.len() as u64 <= MAX_RECEIPT_BYTES).then(|| parse_deep(&bytes)).flatten().filter(|v| {
        v.get("schema_version").and_then(Value::as_str) == Some(ShippedSidecarReceiptSchemaVersion::VALUE)
            && v.get("dispatch_id").and_then(Value::as_str) == Some(dispatch_id)
    });
    match receipt {
        Some(v) => ReceiptRead { state: State::Present(v), snapshot },
        None => ReceiptRead { state: State::Malformed, snapshot },
    }
}

/// What a write came to.
pub enum Stored {
    /// Written now, or the same retryable receipt was already there.
    Written,
    /// The same terminal receipt was already there (as it is stored).
    Replayed(Value),
    /// The file holds what this write may not replace: the bound terminal
    /// receipt when there is one.
    Conflict(Option<Value>),
    /// The lock was not taken within the budget, or the write failed.
    Failed,
}

/// What [`store`] needs of the hook.
pub struct Write<'a> {
    pub path: &'a Path,
    pub dispatch_id: &'a str,
    pub receipt: &'a Value,
    pub attempt_count: u32,
    /// A stored receipt judged against this hook: the receipt as bound, or none.
    pub bind: &'a dyn Fn(&Value) -> Option<Value>,
    /// Whether a stored receipt's clock stands (the source names its receipt).
    pub keeps_stored_clock: bool,
}

pub fn store(w: &Write, deadline: Instant) -> Stored {
    let Some(dir) = w.path.parent() else { return Stored::Failed };
    if fs::DirBuilder::new().recursive(true).mode(0o700).create(dir).is_err() {
        return Stored::Failed;
    }
    let Ok(lock) = Lock::acquire(w.path, deadline.saturating_duration_since(Instant::now())) else {
        return Stored::Failed;
    };
    let outcome = swap(w);
    lock.release();
    outcome
}

fn swap(w: &Write) -> Stored {
    match read(w.path, w.dispatch_id).state {
        State::Malformed => return Stored::Conflict(None),
        State::Present(current) => {
            let Some(bound) = (w.bind)(&current) else { return Stored::Conflict(None) };
            let mut candidate = w.receipt.clone();
            if w.keeps_stored_clock {
                candidate["recorded_at"] = bound["recorded_at"].clone();
            }
            let retryable = bound["status"] == "retryable_failure";
            if bound == candidate {
                return if retryable { Stored::Written } else { Stored::Replayed(bound) };
            }
            if !retryable {
                return Stored::Conflict(Some(bound));
            }
            if bound["attempt_count"].as_u64().map(|n| n + 1) != Some(u64::from(w.attempt_count)) {
                return Stored::Conflict(None);
            }
        }
        State::Missing if w.attempt_count != 1 => return Stored::Conflict(None),
        State::Missing => {}
    }
    // LoopX's writer indents by two; a deep intent is written compact, as
    // indenting grows with the square of its depth (LoopX reads either).
    let text = if nesting(w.receipt) <= PRETTY_DEPTH {
        serde_json::to_string_pretty(w.receipt)
    } else {
        serde_json::to_string(w.receipt)
    };
    let Ok(mut text) = text else { return Stored::Failed };
    text.push('\n');
    match write_atomically(w.path, text.as_bytes()) {
        Ok(()) => Stored::Written,
        Err(_) => Stored::Failed,
    }
}
