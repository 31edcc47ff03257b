//! Recognising and creating the inbox file, as the journal does its own:
//! nothing is changed until the file is known to be an inbox or empty (a
//! non-SQLite file never reaches SQLite; a foreign or newer SQLite file is
//! refused from a read transaction), then WAL, `BEGIN IMMEDIATE`, the same
//! inspection again, the schema and the header stamps, COMMIT.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, TransactionBehavior};

use crate::sqlite_file::Probe;

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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Found {
    Empty,
    Current,
}

fn inspect(conn: &Connection) -> Result<Found> {
    let app_id: i32 = conn.pragma_query_value(None, "application_id", |r| r.get(0))?;
    let version: i32 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    let objects: i64 =
        conn.query_row("SELECT count(*) FROM sqlite_schema WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\'", [], |r| {
            r.get(0)
        })?;
    if app_id != APPLICATION_ID || version <= 0 {
        let blank = (app_id == 0 || app_id == APPLICATION_ID) && version == 0 && objects == 0;
        return if blank { Ok(Found::Empty) } else { Err(InboxError::NotAnInbox) };
    }
    if version > SCHEMA_VERSION {
        return Err(InboxError::TooNew { found: version, supported: SCHEMA_VERSION });
    }
    let list = TABLES.iter().map(|t| format!("'{t}'")).collect::<Vec<_>>().join(",");
    let sql = format!("SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name IN ({list})");
    let tables: i64 = conn.query_row(&sql, [], |r| r.get(0))?;
    if tables == TABLES.len() as i64 {
        Ok(Found::Current)
    } else {
        Err(InboxError::NotAnInbox)
    }
}

fn read_inspect(conn: &Connection) -> Result<Found> {
    conn.execute_batch("BEGIN DEFERRED")?;
    let found = inspect(conn);
    let _ = conn.execute_batch(if found.is_ok() { "COMMIT" } else { "ROLLBACK" });
    found
}

/// Refuses, from plain reads, a special file, a non-SQLite file, another
/// application's file, a newer inbox and a file we may not write; an SQLite
/// file is then inspected from a read-only connection that does not
/// checkpoint on close, so a refused file keeps its bytes (main, -wal, -journal).
fn recognise(path: &Path, busy_timeout_ms: u32) -> Result<()> {
    let header = match crate::sqlite_file::probe(path)? {
        Probe::Missing | Probe::Empty => return Ok(crate::sqlite_file::check_writable(path)?),
        Probe::NotSqlite => return Err(InboxError::NotAnInbox),
        Probe::Sqlite(h) => h,
    };
    if header.application_id != APPLICATION_ID && header.application_id != 0 {
        return Err(InboxError::NotAnInbox);
    }
    if header.application_id == APPLICATION_ID && header.user_version > SCHEMA_VERSION {
        return Err(InboxError::TooNew { found: header.user_version, supported: SCHEMA_VERSION });
    }
    crate::sqlite_file::check_writable(path)?;
    let conn = crate::sqlite_file::open_for_inspection(path, &header)?;
    conn.busy_timeout(Duration::from_millis(u64::from(busy_timeout_ms)))?;
    match read_inspect(&conn) {
        Ok(_) => Ok(()),
        // A hot rollback journal (read-only cannot roll it back): an inbox is
        // always WAL, so this file is not one.
        Err(InboxError::ReadOnly) => Err(InboxError::NotAnInbox),
        Err(e) => Err(e),
    }
}

/// Opens the store's connection, creating the schema in an empty file.
/// `path` is absolute (`sqlite_file::resolve`).
pub(super) fn open(path: &Path, busy_timeout_ms: u32) -> Result<Connection> {
    recognise(path, busy_timeout_ms)?;
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let mut conn = Connection::open_with_flags(path, flags)?;
    conn.busy_timeout(Duration::from_millis(u64::from(busy_timeout_ms)))?;
    let found = read_inspect(&conn)?;
    let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(InboxError::Sqlite { code: -1, what: "could not switch the inbox to WAL mode" });
    }
    if found == Found::Empty {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        if inspect(&tx)? == Found::Empty {
            tx.execute_batch(V1)?;
            tx.pragma_update(None, "application_id", APPLICATION_ID)?;
            tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
        }
        tx.commit()?;
    }
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
