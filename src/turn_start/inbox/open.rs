//! Recognising and creating the inbox file by the procedure the journal
//! shares (`sqlite_file::claim`): nothing is changed until the file is known
//! to be an inbox or empty (a non-SQLite file never reaches SQLite; a foreign
//! or newer SQLite file is refused from a read transaction), then WAL,
//! `BEGIN IMMEDIATE`, the same inspection again, the schema and the header
//! stamps, COMMIT. Then the inbox's own connection settings.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use crate::sqlite_file::{ClaimError, StoreSpec};

use super::{InboxError, Result};

/// `PRAGMA application_id` of an owner-private inbox: ASCII "LXIB" (the
/// public journal is "LXHK"; neither opens the other's file).
pub const APPLICATION_ID: i32 = 0x4C58_4942;
pub const SCHEMA_VERSION: i32 = 1;
const TABLES: &[&str] = &["messages", "reads", "dispositions", "reactions", "cursors"];

const V1: &str = "
CREATE TABLE messages (
  seq INTEGER PRIMARY KEY,
  route_id TEXT NOT NULL,
  provider_message_id TEXT NOT NULL,
  source TEXT NOT NULL CHECK (source IN ('collector','turn_start')),
  sender_kind TEXT NOT NULL CHECK (sender_kind IN ('human','bot','system','unknown')),
  attention TEXT NOT NULL
    CHECK (attention IN ('ordinary','mention','direct_question','verified_reply')),
  captured_at INTEGER NOT NULL,
  acked_at INTEGER,
  payload TEXT NOT NULL,
  UNIQUE (route_id, provider_message_id)
);
CREATE INDEX messages_pending ON messages(route_id, seq) WHERE acked_at IS NULL;

CREATE TABLE reads (
  message_seq INTEGER PRIMARY KEY REFERENCES messages(seq),
  read_ref TEXT NOT NULL,
  read_at INTEGER NOT NULL
);

CREATE TABLE dispositions (
  message_seq INTEGER PRIMARY KEY REFERENCES messages(seq),
  disposition TEXT NOT NULL CHECK (disposition IN
    ('steer_current_turn','replan_goal','record_context','continue_current_work','no_follow_up')),
  effect_receipt_id TEXT,
  decided_at INTEGER NOT NULL
);

CREATE TABLE reactions (
  message_seq INTEGER PRIMARY KEY REFERENCES messages(seq),
  state TEXT NOT NULL CHECK (state IN ('attempting','added','failed','uncertain')),
  attempts INTEGER NOT NULL CHECK (attempts >= 1),
  updated_at INTEGER NOT NULL
);

CREATE TABLE cursors (
  scope TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('history','ack','route_rotation','reaction_round_robin')),
  value TEXT,
  lease_token TEXT,
  lease_until INTEGER,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (scope, kind)
) WITHOUT ROWID;
";

/// The inbox's file. Version 1 is the only one, so `migrate` only ever
/// creates it from empty. An inbox is always WAL.
const INBOX: StoreSpec<'static> = StoreSpec {
    application_id: APPLICATION_ID,
    version: SCHEMA_VERSION,
    tables: TABLES,
    migrate: &|conn, _from| {
        conn.execute_batch(V1)?;
        conn.pragma_update(None, "application_id", APPLICATION_ID)?;
        conn.pragma_update(None, "user_version", SCHEMA_VERSION)
    },
    wal_only: true,
};

impl From<ClaimError> for InboxError {
    fn from(e: ClaimError) -> Self {
        match e {
            ClaimError::Foreign => InboxError::NotAnInbox,
            ClaimError::TooNew { found, supported } => InboxError::TooNew { found, supported },
            ClaimError::NotWal => InboxError::Internal { what: "could not switch the inbox to WAL mode" },
            ClaimError::File(e) => e.into(),
            ClaimError::Sqlite(e) => e.into(),
        }
    }
}

/// Opens the store's connection, creating the schema in an empty file.
/// `path` is absolute (`sqlite_file::resolve`).
pub(super) fn open(path: &Path, busy_timeout_ms: u32) -> Result<Connection> {
    crate::sqlite_file::precheck(path, &INBOX, busy_timeout_ms)?;
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags)?;
    conn.busy_timeout(Duration::from_millis(u64::from(busy_timeout_ms)))?;
    crate::sqlite_file::claim(&conn, &INBOX)?;
    conn.pragma_update(None, "foreign_keys", true)?;
    // Every commit is durable: a read receipt or a cursor must not be lost
    // after the provider acted on it.
    conn.pragma_update(None, "synchronous", "FULL")?;
    // A purged payload (retention) is overwritten, not left in free pages.
    conn.pragma_update(None, "secure_delete", true)?;
    // A process that died between a purge and its WAL truncation left the
    // purged text in the WAL: truncate it now, without waiting for readers
    // of other processes (they keep it for a later purge's truncation).
    conn.busy_timeout(Duration::ZERO)?;
    super::retention::truncate_wal(&conn);
    conn.busy_timeout(Duration::from_millis(u64::from(busy_timeout_ms)))?;
    Ok(conn)
}
