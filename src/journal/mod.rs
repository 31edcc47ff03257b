//! The sidecar journal and outbox of post-writeback dispatches: an embedded
//! SQLite file by default, or a PostgreSQL schema shared by several hosts.
//!
//! Plain Rust: it knows dispatch identities, states, JSON documents it stores
//! verbatim and compact codes, and nothing of hooks, providers or napi.
//!
//! This folder is the backend-neutral core; `sqlite/` and `postgres/` are
//! sibling backends holding only SQL and driver code, importing from the
//! core and never from each other, so a rule is written here once:
//!
//! - [`Journal`] is the API (this file, `record.rs`, `outbox.rs`,
//!   `lease.rs`, `read.rs`): it checks every argument, then forwards to its
//!   [`store::Store`] (`store.rs`), the one seam a backend implements.
//!   [`Journal::open`] takes a [`JournalTarget`] and an [`OpenMode`]
//!   (`target.rs`); only the target knows which backend it names.
//! - Every write goes through one writer thread per journal that group-commits
//!   whatever is waiting into one transaction (`writer.rs`, generic over the
//!   backend's connection through `BatchConn`; `job.rs` is a queued command,
//!   `merge.rs` which commands may run merged). The commands are the dispatch
//!   records (`record.rs`), the outbox decisions (`outbox.rs`: the verdicts
//!   both backends apply) and leases (`lease.rs`: the lease rule). Each
//!   returns a [`Reply`]: await it, or `wait()` for it off the async runtime.
//!   A reply resolves only after the transaction holding its command
//!   committed; the commit signal consumers wait on is `commit.rs`.
//! - The values (`types.rs`, `rows.rs`) and the attempt ledger (`ledger.rs`,
//!   plain files beside either backend) are the core's too.
//! - Readers use their own connections and never wait for the writer.
//!
//! Errors carry a stable [`JournalError::code`] and never the journal's path,
//! connection string or any stored text.

mod caller;
mod commit;
mod job;
mod lease;
mod ledger;
mod merge;
mod outbox;
pub mod postgres;
mod prune;
mod read;
mod record;
mod rows;
mod sqlite;
mod states;
mod store;
mod target;
mod types;
mod writer;

#[cfg(test)]
pub(crate) mod tests;

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::sync::oneshot;

use commit::CommitSignal;

pub use job::Answer;
pub use lease::{ClaimRequest, MAX_CLAIM_BATCH, MAX_LEASE_MS};
pub use outbox::{DecideOutcome, DoneOutcome, ExistingDecision};
pub use prune::{
    Exporter, PruneOptions, PruneReport, PrunedBatch, RetentionStats, StorageStats, DEFAULT_PRUNE_BATCH,
    MAX_PRUNE_BATCH,
};
pub use record::{Begun, FoldedAttempts, KeyOf, Keyed, RecordAnswer, RecordCommand};
pub use rows::{DispatchFilter, DispatchRow, FailureRow, IntentFilter, JournalStats, Page, StoredIntent, MAX_PAGE};
pub use sqlite::schema::SCHEMA_VERSION;
pub use states::{Decision, DispatchState, FinalStatus};
pub use target::{JournalTarget, OpenMode, PgLimits, PgTarget, DEFAULT_SCHEMA};
pub use types::{
    Checkpoint, CheckpointState, FailureOutcome, FailureRecord, FinalRecord, IntegrityVerdict, IntentRow, RecordOutcome,
};
pub use writer::{AfterBatch, BatchInfo, WriterStats, BATCH_SIZE_BOUNDS, COMMIT_MICROS_BOUNDS};

/// The journal's identity, whatever holds it: an SQLite file's `PRAGMA
/// application_id` and the `meta` row of a PostgreSQL schema. ASCII "LXHK".
pub const APPLICATION_ID: i32 = 0x4C58_484B;

/// What can go wrong. `Display` names the kind of failure only: never the
/// journal's path, a stored document or an SQL statement.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JournalError {
    /// The file (or PostgreSQL schema) exists and is not a loopx-hooks
    /// journal, or holds none; it was not changed.
    #[error("not a loopx-hooks journal")]
    NotAJournal,
    /// The journal was written by a newer build; it was not changed.
    #[error("journal schema version {found} is newer than this build supports ({supported})")]
    TooNew { found: i32, supported: i32 },
    /// The path exists and is not a regular file (a FIFO, a folder, a device).
    #[error("the journal path is not a regular file")]
    NotAFile,
    /// The file may not be written by this process, or the journal was
    /// opened read-only; it was not changed.
    #[error("the journal is read-only")]
    ReadOnly,
    /// A hot rollback journal must be rolled back by a writer before reading.
    #[error("the journal needs recovery by a writer")]
    NeedsRecovery,
    /// A token to be stored looks like a credential; `what` names the field.
    #[error("credential-like value refused at /{what}")]
    CredentialLike { what: &'static str },
    /// The intent is leased to another executor.
    #[error("the intent is leased to another executor")]
    LeaseNotHeld,
    /// The caller's lease on the intent has ended; claim it again.
    #[error("the lease on the intent has expired")]
    LeaseExpired,
    #[error("the journal is closed")]
    Closed,
    /// Another connection held the write lock past the busy timeout and retries.
    #[error("the journal is busy")]
    Busy,
    #[error("journal i/o error: {kind}")]
    Io { kind: std::io::ErrorKind },
    /// `what` is SQLite's static description of `code` (an extended result code).
    #[error("journal sqlite error: {what} (code {code})")]
    Sqlite { code: i32, what: &'static str },
    /// The PostgreSQL server could not be reached or went away, and bounded
    /// retries with backoff did not bring it back.
    #[error("the journal's database is unavailable")]
    Unavailable,
    /// PostgreSQL refused a statement; `sqlstate` is its five-character code
    /// (the server's message may quote values, so it is never kept).
    #[error("journal postgres error: sqlstate {sqlstate}")]
    Postgres { sqlstate: String },
    /// A caller's value broke the grammar of its field; `what` names the field.
    #[error("invalid argument: {what}")]
    InvalidArgument { what: &'static str },
    #[error("unknown dispatch")]
    UnknownDispatch,
    /// An intent_id being recorded is already in the journal (ids are unique forever).
    #[error("intent_id already recorded")]
    DuplicateIntent,
    /// A fault of the journal's own (a bug, or a stored value this build does
    /// not know), whichever database holds it; `what` is a fixed text.
    #[error("journal internal error: {what}")]
    Internal { what: &'static str },
}

impl JournalError {
    /// The stable code callers see.
    pub fn code(&self) -> &'static str {
        match self {
            JournalError::NotAJournal => "not_a_journal",
            JournalError::TooNew { .. } => "journal_too_new",
            JournalError::NotAFile => "not_a_file",
            JournalError::ReadOnly => "journal_read_only",
            JournalError::NeedsRecovery => "journal_needs_recovery",
            JournalError::CredentialLike { .. } => "credential_like_value",
            JournalError::LeaseNotHeld => "lease_not_held",
            JournalError::LeaseExpired => "lease_expired",
            JournalError::Closed => "journal_closed",
            JournalError::Busy => "busy",
            JournalError::Io { .. } => "io",
            JournalError::Sqlite { .. } => "sqlite",
            JournalError::Unavailable => "journal_unavailable",
            JournalError::Postgres { .. } => "postgres",
            JournalError::InvalidArgument { .. } => "invalid_argument",
            JournalError::UnknownDispatch => "unknown_dispatch",
            JournalError::DuplicateIntent => "duplicate_intent",
            JournalError::Internal { .. } => "journal_internal",
        }
    }
}

impl From<std::io::Error> for JournalError {
    fn from(e: std::io::Error) -> Self {
        JournalError::Io { kind: e.kind() }
    }
}

pub type Result<T, E = JournalError> = std::result::Result<T, E>;

/// How to open a journal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JournalOptions {
    /// Commit final records with `synchronous=FULL` (an fsync per group commit).
    /// `false` commits them with NORMAL: durable against a process crash, not
    /// against a power cut.
    pub synchronous_full: bool,
    /// How long a connection waits for another process's lock before `Busy`:
    /// SQLite's busy timeout, and on PostgreSQL every session's `lock_timeout`
    /// (a row, table or advisory lock another host holds).
    pub busy_timeout_ms: u32,
    /// Write each queued checkpoint's attempt to this process's attempt
    /// ledger before its provider runs (`ledger.rs`). `false` saves one
    /// `pwrite` per invocation and one per record, and lets an invocation
    /// whose process ends before the checkpoint commits go uncounted.
    pub attempt_ledger: bool,
    /// Let a command submitted within [`Journal::inline`] commit on the
    /// submitting thread when the writer has nothing queued and no batch
    /// open, instead of handing it over: no thread wake-up either way, but
    /// the caller waits for the commit (its fsync, and another process's
    /// lock up to the busy timeout). For a local file; off by default.
    pub inline_commit: bool,
}

impl Default for JournalOptions {
    fn default() -> Self {
        JournalOptions { synchronous_full: true, busy_timeout_ms: 5_000, attempt_ledger: true, inline_commit: false }
    }
}

/// An open journal. Share it behind an `Arc`; every method takes `&self`.
/// Dropping it closes it (see [`Journal::close`]).
pub struct Journal {
    store: Box<dyn store::Store>,
    /// Bumped after commits holding records or decisions (see `lease.rs`).
    commits: CommitSignal,
    /// Where a queued checkpoint's attempt survives this process (none when
    /// read-only); in memory only when the server counts attempts.
    ledger: Option<std::sync::Arc<ledger::Ledger>>,
    /// Each attempt is committed on the server before its provider runs
    /// ([`Journal::count_attempt`]), where every host sees it.
    attempts_on_server: bool,
    /// Bumped to end every pending [`Journal::wait_for_commit`] (see
    /// `lease.rs`); [`lease::CLOSED`] once closed.
    waits: tokio::sync::watch::Sender<u64>,
    /// Commands commit on the submitting thread when the writer is idle.
    inline_commit: bool,
    /// What prunes removed since the journal opened (`prune.rs`).
    retention: std::sync::Mutex<prune::RetentionStats>,
}

impl std::fmt::Debug for Journal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // No path or connection string: they are private to the host.
        f.debug_struct("Journal").field("writer", &self.store.writer_stats()).finish_non_exhaustive()
    }
}

impl Journal {
    /// Opens the journal at `target`: a path (`&Path`, `PathBuf`) or a
    /// [`PgTarget`].
    ///
    /// [`OpenMode::ReadWrite`] creates the journal when the file (or schema)
    /// is missing or empty and migrates it when older. A file that is not a
    /// journal ([`JournalError::NotAJournal`]) or is newer than this build
    /// ([`JournalError::TooNew`]) is left byte-for-byte unchanged. Safe when
    /// several processes (or hosts) open one new journal at once. The
    /// attempt ledgers of processes that ended are folded in before it
    /// answers (`ledger.rs`).
    ///
    /// [`OpenMode::ReadOnly`] opens an existing journal and changes nothing:
    /// on SQLite every connection is SQLITE_OPEN_READONLY (nothing is
    /// created, migrated, switched or checkpointed, and a read-only file
    /// works); on PostgreSQL every transaction is read-only. Writing methods
    /// answer [`JournalError::ReadOnly`]; a missing, empty or foreign journal
    /// is [`JournalError::NotAJournal`].
    pub fn open(target: impl Into<JournalTarget>, options: JournalOptions, mode: OpenMode) -> Result<Journal> {
        let target = target.into();
        // Each command would wait for a network round trip on the caller's thread.
        if options.inline_commit && matches!(target, JournalTarget::Postgres(_)) {
            return Err(JournalError::InvalidArgument { what: "inline_commit" });
        }
        let (store, commits) = target.open_store(options, mode)?;
        let counting = mode == OpenMode::ReadWrite && options.attempt_ledger;
        let attempts_on_server = counting && matches!(target, JournalTarget::Postgres(_));
        let ledger = match &target {
            JournalTarget::File(path) if counting => Some(ledger::Ledger::create(&sqlite::ledger_dir(path)?)?),
            // The server counts each attempt; the note in memory only rewrites
            // a checkpoint the server lost (`record/rule.rs`).
            JournalTarget::Postgres(_) if counting => Some(ledger::Ledger::in_memory()),
            _ => None,
        }
        .map(std::sync::Arc::new);
        if let Some(l) = &ledger {
            store.attach_ledger(std::sync::Arc::clone(l));
        }
        let waits = tokio::sync::watch::channel(0).0;
        let journal = Journal {
            store,
            commits,
            ledger,
            attempts_on_server,
            waits,
            inline_commit: options.inline_commit,
            retention: Default::default(),
        };
        journal.fold_ended_attempts();
        Ok(journal)
    }

    /// Whether a command may commit on the thread that submits it (and its
    /// answer be given before the submitting call returns).
    pub fn commits_inline(&self) -> bool {
        self.inline_commit
    }

    /// Runs `f`, letting the commands it submits commit on this thread when
    /// the journal commits inline and its writer is idle (no batch open,
    /// nothing queued); otherwise they are queued as always.
    pub fn inline<R>(&self, f: impl FnOnce() -> R) -> R {
        if self.inline_commit {
            writer::inline_here(f)
        } else {
            f()
        }
    }

    /// Stops accepting commands, lets the writer commit and answer everything
    /// already queued, joins it and drops the reader connections. Idempotent;
    /// afterwards every call answers [`JournalError::Closed`].
    pub fn close(&self) {
        // First, so that no waiter keeps its caller's process alive meanwhile.
        self.waits.send_replace(lease::CLOSED);
        self.store.close();
        if let Some(ledger) = &self.ledger {
            ledger.close();
        }
    }

    /// Runs `f` on the writer thread after each group commit's commands were
    /// answered (see [`Journal::record_many`]).
    pub fn after_batch(&self, f: AfterBatch) {
        self.store.after_batch(f);
    }

    /// Group-commit counters of this journal's writer.
    pub fn writer_stats(&self) -> WriterStats {
        self.store.writer_stats()
    }

    /// Committed write transactions so far (group commits; a batch of many
    /// commands counts once).
    pub fn commit_count(&self) -> u64 {
        self.store.writer_stats().commits
    }

    /// Queues a command through `submit` and answers its [`Reply`].
    fn queue<T: Send + 'static>(&self, submit: impl FnOnce(Answer<T>) -> Result<()>) -> Reply<T> {
        let (tx, rx) = oneshot::channel();
        // The caller may have stopped waiting; that is not the writer's concern.
        match submit(Box::new(move |r| {
            let _ = tx.send(r);
        })) {
            Ok(()) => Reply::waiting(rx),
            Err(e) => Reply::ready(Err(e)),
        }
    }
}

impl JournalTarget {
    /// The backend that holds the journal, opened.
    fn open_store(&self, options: JournalOptions, mode: OpenMode) -> Result<(Box<dyn store::Store>, CommitSignal)> {
        Ok(match self {
            JournalTarget::File(path) => {
                let (store, commits) = sqlite::open(path, options, mode)?;
                (Box::new(store), commits)
            }
            JournalTarget::Postgres(target) => {
                let (store, commits) = postgres::open(target, options, mode)?;
                (Box::new(store), commits)
            }
        })
    }
}

impl Drop for Journal {
    fn drop(&mut self) {
        self.close();
    }
}

/// The answer to one writer command, available once its transaction committed
/// (or failed). Await it from async code, or call [`Reply::wait`] from a plain
/// thread. The command is queued when the method returns, not when the reply
/// is first polled, so many commands can be in flight and share a commit.
#[must_use = "the command runs anyway; the reply tells whether it was recorded"]
pub struct Reply<T>(ReplyState<T>);

enum ReplyState<T> {
    Waiting(oneshot::Receiver<Result<T>>),
    Ready(Option<Result<T>>),
}

impl<T> Reply<T> {
    pub(crate) fn ready(value: Result<T>) -> Self {
        Reply(ReplyState::Ready(Some(value)))
    }

    pub(crate) fn waiting(rx: oneshot::Receiver<Result<T>>) -> Self {
        Reply(ReplyState::Waiting(rx))
    }

    /// Blocks the current thread until the answer arrives. Must not be called
    /// on an async runtime's worker thread (await the reply there).
    pub fn wait(self) -> Result<T> {
        match self.0 {
            ReplyState::Waiting(rx) => rx.blocking_recv().unwrap_or(Err(JournalError::Closed)),
            ReplyState::Ready(v) => v.unwrap_or(Err(JournalError::Closed)),
        }
    }
}

// No pinned projection into `T` ever happens: the reply only moves values out.
impl<T> Unpin for Reply<T> {}

impl<T> Future for Reply<T> {
    type Output = Result<T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut self.get_mut().0 {
            ReplyState::Waiting(rx) => Pin::new(rx).poll(cx).map(|r| r.unwrap_or(Err(JournalError::Closed))),
            ReplyState::Ready(v) => Poll::Ready(v.take().unwrap_or(Err(JournalError::Closed))),
        }
    }
}

/// Argument grammar, so that no free text reaches the journal.
pub(crate) mod arg {
    use super::{JournalError, Result};
    use crate::validate::grammar::{
        is_credential_like, is_opaque_ref, is_shipped_token, is_token, OPAQUE_REF_MAX, TOKEN_MAX,
    };

    /// A token, and not credential-like (the contracts' check): what the
    /// journal stores may be printed by any reader.
    pub fn token(s: &str, what: &'static str) -> Result<()> {
        any_token(s, what, false)
    }

    /// A token of either dialect's grammar (the ids a dispatch record
    /// carries). Which grammar a document had to meet is its contract's
    /// rule; here it only matters that no free text is stored.
    pub fn dialect_token(s: &str, what: &'static str) -> Result<()> {
        any_token(s, what, true)
    }

    fn any_token(s: &str, what: &'static str, shipped_too: bool) -> Result<()> {
        if is_credential_like(s) {
            return Err(JournalError::CredentialLike { what });
        }
        if s.len() <= TOKEN_MAX && (is_token(s) || (shipped_too && is_shipped_token(s))) {
            Ok(())
        } else {
            Err(JournalError::InvalidArgument { what })
        }
    }

    pub fn opt_token(s: Option<&str>, what: &'static str) -> Result<()> {
        s.map_or(Ok(()), |s| token(s, what))
    }

    pub fn opaque_ref(s: &str, what: &'static str) -> Result<()> {
        if is_credential_like(s) {
            return Err(JournalError::CredentialLike { what });
        }
        if s.len() <= OPAQUE_REF_MAX && is_opaque_ref(s) {
            Ok(())
        } else {
            Err(JournalError::InvalidArgument { what })
        }
    }

    /// An id of a dialect that lets ids be any stripped text (the settlement
    /// ids of `loopx-shipped-v0`): not empty, at most 256 bytes, no control
    /// character, and not credential-like.
    pub fn free_id(s: &str, what: &'static str) -> Result<()> {
        if is_credential_like(s) {
            return Err(JournalError::CredentialLike { what });
        }
        if !s.is_empty() && s.len() <= 256 && !s.chars().any(char::is_control) {
            Ok(())
        } else {
            Err(JournalError::InvalidArgument { what })
        }
    }

    /// A JSON document none of whose strings (keys included) is
    /// credential-like: the last scan before a document reaches a file, so
    /// a caller that forgot to project a request still cannot store a
    /// credential with it. The document is walked as it is parsed, never
    /// built: this runs on every dispatch's request.
    pub fn public_json(text: &str, what: &'static str) -> Result<()> {
        match serde_json::from_str::<Public>(text) {
            Ok(Public(true)) => Ok(()),
            Ok(Public(false)) => Err(JournalError::CredentialLike { what }),
            Err(_) => Err(JournalError::InvalidArgument { what }),
        }
    }

    /// Whether a JSON value holds no credential-like string, keys included.
    struct Public(bool);

    impl<'de> serde::Deserialize<'de> for Public {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
            d.deserialize_any(PublicVisitor).map(Public)
        }
    }

    struct PublicVisitor;

    impl<'de> serde::de::Visitor<'de> for PublicVisitor {
        type Value = bool;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a JSON value")
        }

        fn visit_bool<E>(self, _: bool) -> std::result::Result<bool, E> {
            Ok(true)
        }

        fn visit_i64<E>(self, _: i64) -> std::result::Result<bool, E> {
            Ok(true)
        }

        fn visit_u64<E>(self, _: u64) -> std::result::Result<bool, E> {
            Ok(true)
        }

        fn visit_f64<E>(self, _: f64) -> std::result::Result<bool, E> {
            Ok(true)
        }

        fn visit_unit<E>(self) -> std::result::Result<bool, E> {
            Ok(true)
        }

        fn visit_str<E>(self, s: &str) -> std::result::Result<bool, E> {
            Ok(!is_credential_like(s))
        }

        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<bool, A::Error> {
            // Every element is read even after a dirty one: the parser must
            // still reach the end to tell a document from malformed text.
            let mut clean = true;
            while let Some(Public(c)) = seq.next_element()? {
                clean &= c;
            }
            Ok(clean)
        }

        fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> std::result::Result<bool, A::Error> {
            let mut clean = true;
            while let Some((Public(k), Public(v))) = map.next_entry()? {
                clean &= k && v;
            }
            Ok(clean)
        }
    }

    /// `<prefix>` followed by 64 lowercase hex digits (dispatch and intent ids).
    pub fn digest_id(s: &str, prefix: &str, what: &'static str) -> Result<()> {
        match s.strip_prefix(prefix) {
            Some(hex) if is_sha256_hex(hex) => Ok(()),
            _ => Err(JournalError::InvalidArgument { what }),
        }
    }

    pub fn sha256_hex(s: &str, what: &'static str) -> Result<()> {
        if is_sha256_hex(s) {
            Ok(())
        } else {
            Err(JournalError::InvalidArgument { what })
        }
    }

    fn is_sha256_hex(s: &str) -> bool {
        s.len() == 64 && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    }
}
