//! The owner-private inbox store that turn-start providers use (RFC
//! "Provider-Neutral Turn-Start Inbox Hook v0"; contract-v0 section 6). Its
//! own SQLite file, never the public journal: captured messages with their
//! private payloads, first Agent-read receipts, the Agent's dispositions and
//! effect bindings, acknowledgement reaction receipts, and provider cursors.
//! Nothing here reaches a public receipt except the counts of [`FirstReads`].
//!
//! Every operation is one SQLite transaction (`BEGIN IMMEDIATE` for writes),
//! so several processes can share one inbox file. Inbox traffic is a handful
//! of rows per Turn, so there is no writer thread: the binding runs each call
//! off the JS thread.
//!
//! What holds, by construction and by test:
//! - capture collapses by provider message identity `(route_id,
//!   provider_message_id)`; the self filter drops a message only when its
//!   sender is typed and its verified identity equals the configured one
//!   exactly, and otherwise fails open to capture;
//! - a message gets at most one first Agent-read receipt, ever;
//! - a message is acknowledged only after it was read and disposed, and a
//!   material disposition only once bound to a durable effect receipt;
//! - a reaction is admitted only on a captured, still-pending, human-authored
//!   message that a turn-start dispatch has read; at most one is ever added;
//!   an attempt is recorded before the provider creates anything, a fresh
//!   one blocks a second create, and an attempt whose effect is unknown (or
//!   that never finished) fails closed until a readback resolves it;
//! - reaction candidates rotate route priority per collector across calls,
//!   and each route keeps its own round-robin message cursor, so a failing
//!   backlog never starves other routes or messages;
//! - provider cursors are single-flight (claimed with a lease) and advance
//!   only after the read messages are found in the inbox and the new value is
//!   read back; history and acknowledgement cursors are independent.
//! - turn-start captures, first reads, cursor writes and reactions are
//!   crate-private: from outside they are reached only through a
//!   `TurnStartSession`, which grants its registration's write scopes and
//!   counts its budget, and a realtime collector holds an [`InboxCollector`],
//!   which captures only as realtime collection; so realtime collection
//!   cannot consume the reaction scope.

mod args;
mod collector;
mod cursors;
mod messages;
mod open;
mod reactions;
mod retention;
mod standing;
mod types;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use rusqlite::{params, Connection, OptionalExtension, Transaction, TransactionBehavior};
use serde_json::Value;

pub use args::parse_args;
pub use collector::InboxCollector;
pub use open::{APPLICATION_ID, SCHEMA_VERSION};
pub use retention::{Clock, RetentionCounts, DEFAULT_RETENTION_MS, MAX_RETENTION_MS};
pub use standing::{InboxStanding, ReadBefore};
pub use types::*;

use crate::validate::grammar::{is_opaque_ref, OPAQUE_REF_MAX};

/// Bounds of the private values (bytes).
pub const MAX_ID_BYTES: usize = 512;
pub const MAX_PAYLOAD_BYTES: usize = 65_536;
pub const MAX_PAGE: u32 = 1000;
/// The page of the private drain when the caller names none.
pub const DEFAULT_PAGE: u32 = 100;

/// What can go wrong. `Display` never holds the path, an id or a payload.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InboxError {
    #[error("the file is not a loopx-hooks inbox")]
    NotAnInbox,
    #[error("inbox schema version {found} is newer than this build supports ({supported})")]
    TooNew { found: i32, supported: i32 },
    /// The path exists and is not a regular file (a FIFO, a folder, a device).
    #[error("the inbox path is not a regular file")]
    NotAFile,
    /// The file may not be written by this process; it was not changed.
    #[error("the inbox file is read-only")]
    ReadOnly,
    #[error("the inbox is closed")]
    Closed,
    #[error("the inbox is busy")]
    Busy,
    #[error("inbox i/o error: {kind}")]
    Io { kind: std::io::ErrorKind },
    #[error("inbox sqlite error: {what} (code {code})")]
    Sqlite { code: i32, what: &'static str },
    /// A caller's value is out of bounds; `what` names the argument.
    #[error("invalid argument: {what}")]
    InvalidArgument { what: &'static str },
    /// A fault of the inbox's own, where SQLite reported no result code (a
    /// driver error, a file that would not switch to WAL, a readback that
    /// differs from what was written); `what` is a fixed text.
    #[error("inbox internal error: {what}")]
    Internal { what: &'static str },
}

impl InboxError {
    pub fn code(&self) -> &'static str {
        match self {
            InboxError::NotAnInbox => "not_an_inbox",
            InboxError::TooNew { .. } => "inbox_too_new",
            InboxError::NotAFile => "not_a_file",
            InboxError::ReadOnly => "inbox_read_only",
            InboxError::Closed => "inbox_closed",
            InboxError::Busy => "busy",
            InboxError::Io { .. } => "io",
            InboxError::Sqlite { .. } => "sqlite",
            InboxError::InvalidArgument { .. } => "invalid_argument",
            InboxError::Internal { .. } => "inbox_internal",
        }
    }
}

impl From<std::io::Error> for InboxError {
    fn from(e: std::io::Error) -> Self {
        InboxError::Io { kind: e.kind() }
    }
}

impl From<crate::sqlite_file::FileError> for InboxError {
    fn from(e: crate::sqlite_file::FileError) -> Self {
        use crate::sqlite_file::FileError;
        match e {
            FileError::NotAFile => InboxError::NotAFile,
            FileError::ReadOnly => InboxError::ReadOnly,
            FileError::Io(kind) => InboxError::Io { kind },
        }
    }
}

impl From<rusqlite::Error> for InboxError {
    fn from(e: rusqlite::Error) -> Self {
        crate::sqlite_file::SqliteError::from(e).into()
    }
}

impl From<crate::sqlite_file::SqliteError> for InboxError {
    fn from(e: crate::sqlite_file::SqliteError) -> Self {
        use crate::sqlite_file::SqliteError;
        match e {
            SqliteError::Busy => InboxError::Busy,
            SqliteError::NotADatabase => InboxError::NotAnInbox,
            SqliteError::NeedsRecovery | SqliteError::ReadOnly => InboxError::ReadOnly,
            SqliteError::Full => InboxError::Io { kind: std::io::ErrorKind::StorageFull },
            SqliteError::Code { code, what } => InboxError::Sqlite { code, what },
            // No SQLite result code: the driver's own fixed text, as the journal keeps it.
            SqliteError::Driver { what } => InboxError::Internal { what },
        }
    }
}

pub type Result<T, E = InboxError> = std::result::Result<T, E>;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InboxOptions {
    pub busy_timeout_ms: u32,
    /// How long a begun reaction attempt may stay unfinished before it counts
    /// as uncertain (a crash, a lost answer) rather than in flight. Longer
    /// than any hook timeout (30 s) by default.
    pub attempt_stale_ms: u32,
    /// The configured profile's own identity, exactly as the provider
    /// verifies senders; messages from it are not captured.
    pub self_identity: Option<String>,
    /// How long an acknowledged message keeps its private payload; after it
    /// the payload is purged, and the message's row, its read, disposition
    /// and reaction receipts (and so every count) are kept.
    pub retention_ms: i64,
}

impl Default for InboxOptions {
    fn default() -> Self {
        InboxOptions {
            busy_timeout_ms: 5_000,
            attempt_stale_ms: 60_000,
            self_identity: None,
            retention_ms: DEFAULT_RETENTION_MS,
        }
    }
}

fn nanos() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos())
}

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

fn private_id(s: &str, what: &'static str) -> Result<()> {
    if !s.is_empty() && s.len() <= MAX_ID_BYTES {
        Ok(())
    } else {
        Err(InboxError::InvalidArgument { what })
    }
}

/// An identity the self filter may compare: "an exact identity verified for
/// the configured profile". One that is empty, over 512 bytes, or holds
/// U+FFFD (what a lone surrogate becomes on its way in, so the exact text is
/// lost) cannot match and counts as unresolved: "unresolved identity fails
/// open to capture".
pub(crate) fn exact_identity(s: &str) -> Option<&str> {
    (!s.is_empty() && s.len() <= MAX_ID_BYTES && !s.contains('\u{FFFD}')).then_some(s)
}

fn opaque_ref(s: &str, what: &'static str) -> Result<()> {
    if s.len() <= OPAQUE_REF_MAX && is_opaque_ref(s) {
        Ok(())
    } else {
        Err(InboxError::InvalidArgument { what })
    }
}

fn message_ref(m: &MessageRef) -> Result<()> {
    private_id(&m.route_id, "routeId")?;
    private_id(&m.provider_message_id, "providerMessageId")
}

fn enum_str<T: serde::Serialize>(v: T) -> String {
    serde_json::to_value(v).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
}

fn enum_parse<T: serde::de::DeserializeOwned>(s: &str) -> rusqlite::Result<T> {
    serde_json::from_value(Value::String(s.to_owned()))
        .map_err(|_| rusqlite::Error::InvalidColumnType(0, "enum".into(), rusqlite::types::Type::Text))
}

/// The state of one message, read inside a transaction.
struct MessageState {
    seq: i64,
    acked: bool,
    human: bool,
    read: bool,
    disposition: Option<(Disposition, Option<String>)>,
    reaction: Option<String>,
    reaction_at: Option<i64>,
}

fn message_state(tx: &Transaction<'_>, m: &MessageRef) -> Result<Option<MessageState>> {
    let row = tx
        .query_row(
            "SELECT m.seq, m.acked_at IS NOT NULL, m.sender_kind = 'human', r.message_seq IS NOT NULL,
                    d.disposition, d.effect_receipt_id, x.state, x.updated_at
             FROM messages m
             LEFT JOIN reads r ON r.message_seq = m.seq
             LEFT JOIN dispositions d ON d.message_seq = m.seq
             LEFT JOIN reactions x ON x.message_seq = m.seq
             WHERE m.route_id = ?1 AND m.provider_message_id = ?2",
            params![m.route_id, m.provider_message_id],
            |r| {
                let disposition: Option<String> = r.get(4)?;
                Ok(MessageState {
                    seq: r.get(0)?,
                    acked: r.get(1)?,
                    human: r.get(2)?,
                    read: r.get(3)?,
                    disposition: match disposition {
                        Some(d) => Some((enum_parse(&d)?, r.get(5)?)),
                        None => None,
                    },
                    reaction: r.get(6)?,
                    reaction_at: r.get(7)?,
                })
            },
        )
        .optional()?;
    Ok(row)
}

/// An open inbox. Share it behind an `Arc`; every method takes `&self` and
/// blocks on SQLite (call it off an async runtime's worker threads).
pub struct InboxStore {
    conn: Mutex<Option<Connection>>,
    self_identity: Option<String>,
    attempt_stale_ms: i64,
    retention_ms: i64,
    /// The time of captures, reads, dispositions and ACKs, and of retention.
    clock: Clock,
    lease_counter: AtomicU64,
    /// A purge committed and the WAL may still hold the purged text.
    wal_dirty: AtomicBool,
}

impl std::fmt::Debug for InboxStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InboxStore").finish_non_exhaustive()
    }
}

impl InboxStore {
    /// Opens the inbox at `path`, creating it when missing or empty. A file
    /// that is not an inbox (a public journal included) or is newer than this
    /// build is refused unchanged.
    pub fn open(path: impl AsRef<Path>, options: InboxOptions) -> Result<InboxStore> {
        InboxStore::open_with_clock(path, options, retention::system_clock())
    }

    /// `open` with the clock the store reads instead of the system's (tests
    /// of retention inject one).
    pub fn open_with_clock(path: impl AsRef<Path>, options: InboxOptions, clock: Clock) -> Result<InboxStore> {
        if !(0..=MAX_RETENTION_MS).contains(&options.retention_ms) {
            return Err(InboxError::InvalidArgument { what: "retentionMs" });
        }
        // An absolute path: never read as a `file:` URI (see `sqlite_file`).
        let path = crate::sqlite_file::resolve(path.as_ref())?;
        let conn = open::open(&path, options.busy_timeout_ms)?;
        Ok(InboxStore {
            conn: Mutex::new(Some(conn)),
            self_identity: options.self_identity,
            attempt_stale_ms: i64::from(options.attempt_stale_ms),
            retention_ms: options.retention_ms,
            clock,
            lease_counter: AtomicU64::new(0),
            wal_dirty: AtomicBool::new(false),
        })
    }

    fn now(&self) -> i64 {
        (self.clock)()
    }

    /// Closes the connection; later calls answer `Closed`. Idempotent.
    pub fn close(&self) {
        self.conn.lock().unwrap_or_else(|p| p.into_inner()).take();
    }

    fn write<T>(&self, f: impl FnOnce(&Transaction<'_>) -> Result<T>) -> Result<T> {
        let mut guard = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        let conn = guard.as_mut().ok_or(InboxError::Closed)?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let out = f(&tx)?;
        tx.commit()?;
        if self.wal_dirty.load(Ordering::SeqCst) && retention::truncate_wal(conn) {
            self.wal_dirty.store(false, Ordering::SeqCst);
        }
        Ok(out)
    }

    fn read<T>(&self, f: impl FnOnce(&Transaction<'_>) -> Result<T>) -> Result<T> {
        let mut guard = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        let conn = guard.as_mut().ok_or(InboxError::Closed)?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Deferred)?;
        let out = f(&tx)?;
        tx.commit()?;
        Ok(out)
    }
}
