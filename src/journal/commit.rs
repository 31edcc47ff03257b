//! The commit signal and the journal's clock, below both the writer and the
//! outbox: the writer bumps the signal and stamps its batches, consumers
//! wait on the signal and stamp their claims.
//!
//! Every journal of one file (or PostgreSQL schema) in a process shares a
//! commit generation ([`commit_signal`]), which the writer bumps after each
//! commit holding a record or a decision; consumers wait on it, and poll for
//! other processes' commits. On PostgreSQL, other hosts' commits bump it too,
//! through LISTEN/NOTIFY (`postgres/listen.rs`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{SystemTime, UNIX_EPOCH};

use tokio::sync::watch;

/// The commit generation shared by every journal of one key in this process.
pub(crate) type CommitSignal = Arc<watch::Sender<u64>>;

/// `key` names the journal: a SQLite file's path, or a PostgreSQL
/// server, database and schema (see `postgres::PgTarget::signal_key`).
pub(crate) fn commit_signal(key: &str) -> CommitSignal {
    static SIGNALS: OnceLock<Mutex<HashMap<String, Weak<watch::Sender<u64>>>>> = OnceLock::new();
    let mut map = SIGNALS.get_or_init(Mutex::default).lock().unwrap_or_else(|p| p.into_inner());
    if let Some(live) = map.get(key).and_then(Weak::upgrade) {
        return live;
    }
    map.retain(|_, w| w.strong_count() > 0);
    let signal = Arc::new(watch::channel(0).0);
    map.insert(key.to_owned(), Arc::downgrade(&signal));
    signal
}

/// Now, in Unix milliseconds: the timestamp of batches, leases and decisions.
pub(crate) fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}
