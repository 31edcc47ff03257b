//! The journal's DDL and its migrations.
//!
//! A journal file is recognised by `PRAGMA application_id` = [`APPLICATION_ID`]
//! and carries its schema version in `PRAGMA user_version`. [`MIGRATIONS`] holds
//! every step from version 0 (an empty file) on; creating a journal is running
//! all of them, upgrading an older one is running those past its version. Both
//! happen inside the caller's `BEGIN IMMEDIATE` transaction, together with the
//! two header pragmas, so a journal is either fully at a version or untouched.
//!
//! Layout choices (journal bytes per dispatch are benchmarked):
//! - `dispatches` and `intents` are rowid tables whose `seq INTEGER PRIMARY KEY`
//!   aliases the rowid: it is the paging cursor and the global insertion order
//!   for free. Their rows carry JSON documents of ~0.5-2 KiB, and in a WITHOUT
//!   ROWID table (an index b-tree) rows over ~1 KiB spill to overflow pages, a
//!   whole page each; a rowid table keeps them local and pays one compact
//!   UNIQUE index on the text id instead.
//! - `failures` rows are small, so it is WITHOUT ROWID: its primary key is the
//!   only copy of the key.
//! - The two secondary indexes that serve hot paths are partial: only
//!   unfinished dispatches (for `recover()`) and only open intents (for the
//!   executor's pending list) are indexed, so they stay near-empty in steady
//!   state and cost no bytes per finished dispatch.
//! - Small columns come first and the JSON documents last, so scans that read
//!   only state or ids do not decode the documents.
//! - The dispatch request (~1 KiB, only `recover()` needs it) lives in
//!   `requests`, keyed by the dispatch's `seq`, exactly while the dispatch is
//!   unfinished: the final record deletes it. Kept in the dispatch row and
//!   nulled there, it would leave its bytes as slack in every page of final
//!   rows; in its own table the few live rows share a few pages, and freed
//!   pages are reused.
//! - Nothing derivable is stored. A final dispatch keeps no receipt document:
//!   its columns and its intents' ids are the receipt
//!   (`dispatch::receipt_from_row` builds it). An intent keeps its id, kind
//!   and capability as columns and only the rest of its document that the
//!   dispatch does not determine as `doc` (`dispatch::intent_from_stored`
//!   rebuilds the full document).

use rusqlite::Connection;

use super::super::APPLICATION_ID;

/// One schema step: applying `sql` to a journal at `to - 1` yields version `to`.
pub(crate) struct Migration {
    pub to: i32,
    pub sql: &'static str,
}

/// Every migration, in order; `MIGRATIONS[i].to == i + 1`.
pub(crate) const MIGRATIONS: &[Migration] = &[
    Migration { to: 1, sql: V1 },
    Migration { to: 2, sql: V2 },
    Migration { to: 3, sql: V3 },
    Migration { to: 4, sql: V4 },
    Migration { to: 5, sql: V5 },
    Migration { to: 6, sql: V6 },
    Migration { to: 7, sql: V7 },
];

/// The schema version this build writes and reads.
pub const SCHEMA_VERSION: i32 = MIGRATIONS[MIGRATIONS.len() - 1].to;

/// Tables a current journal must have (checked on open, cheaply).
pub(crate) const TABLES: &[&str] = &["dispatches", "failures", "intents", "intents_archive", "requests"];

const V1: &str = "
CREATE TABLE dispatches (
  seq INTEGER PRIMARY KEY,
  dispatch_id TEXT NOT NULL UNIQUE,
  state TEXT NOT NULL
    CHECK (state IN ('checkpointed','failed','proposed','not_applicable','exhausted')),
  attempts INTEGER NOT NULL CHECK (attempts >= 0),
  hook_id TEXT NOT NULL,
  capability_id TEXT NOT NULL,
  receipt_id TEXT NOT NULL,
  effect_id TEXT NOT NULL,
  event_kind TEXT NOT NULL,
  registration_digest TEXT NOT NULL,
  result_digest TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  CHECK ((result_digest IS NULL) = (state IN ('checkpointed','failed','exhausted')))
);
CREATE INDEX dispatches_unfinished ON dispatches(state)
  WHERE state IN ('checkpointed','failed');

CREATE TABLE requests (
  seq INTEGER PRIMARY KEY REFERENCES dispatches(seq),
  request TEXT NOT NULL
);

CREATE TABLE failures (
  dispatch_id TEXT NOT NULL REFERENCES dispatches(dispatch_id),
  attempt INTEGER NOT NULL CHECK (attempt >= 1),
  code TEXT NOT NULL,
  rule TEXT,
  at INTEGER NOT NULL,
  PRIMARY KEY (dispatch_id, attempt)
) WITHOUT ROWID;

CREATE TABLE intents (
  seq INTEGER PRIMARY KEY,
  intent_id TEXT NOT NULL UNIQUE,
  dispatch_id TEXT NOT NULL REFERENCES dispatches(dispatch_id),
  capability_id TEXT NOT NULL,
  intent_kind TEXT NOT NULL,
  decision TEXT CHECK (decision IN ('admitted','rejected')),
  executor_id TEXT,
  reason_code TEXT,
  decided_at INTEGER,
  done_at INTEGER,
  doc TEXT NOT NULL,
  CHECK ((decision IS NULL) = (executor_id IS NULL)),
  CHECK (done_at IS NULL OR decision = 'admitted')
);
CREATE INDEX intents_dispatch ON intents(dispatch_id);
CREATE INDEX intents_open ON intents(capability_id, intent_kind)
  WHERE done_at IS NULL AND decision IS NOT 'rejected';
";

/// Version 2: outbox leases. An executor claims an open intent until
/// `lease_until` (Unix ms); while `lease_owner` is set, only that executor
/// may decide or mark it done, and only before `lease_until`. Both are
/// cleared when the intent closes (rejected or done). Columns added by ALTER
/// keep every v1 row as it was: NULL means never claimed.
const V2: &str = "
ALTER TABLE intents ADD COLUMN lease_owner TEXT;
ALTER TABLE intents ADD COLUMN lease_until INTEGER;
";

/// Version 3: `attempts` counts invocations begun (each checkpoint raises it
/// to the attempt it precedes), not only recorded failures, and a
/// checkpointed row with 0 attempts is a deferred hook never invoked. Before
/// v3 a checkpoint was written only just before an invocation, so a v2
/// checkpointed row with 0 attempts was invoked once and cut short: it counts.
const V3: &str = "
UPDATE dispatches SET attempts = 1 WHERE state = 'checkpointed' AND attempts = 0;
";

/// Version 4: the contract a row was written in (`dialect`, NULL for the
/// default `contract-v0`, so every older row keeps its meaning) and the
/// source's commit time for dialects whose receipt carries it.
const V4: &str = "
ALTER TABLE dispatches ADD COLUMN dialect TEXT;
ALTER TABLE dispatches ADD COLUMN recorded_at TEXT;
";

/// Version 5: where a failed attempt's rule was broken (`pointer`, a public
/// JSON Pointer; NULL for older rows and failures without a judged document).
const V5: &str = "
ALTER TABLE failures ADD COLUMN pointer TEXT;
";

/// Version 6: retention (`../prune.rs`). A pruned final dispatch keeps its
/// row as the identity's tombstone: `pruned_at` (Unix ms, NULL while not
/// pruned) and, when it was proposed, its intents' ids in `seq` order,
/// comma-separated, in `pruned_intents`, so its receipt is still built from
/// the row alone. `intents_archive` holds the closed intents a prune was
/// asked to archive instead of delete: the intent's columns as they were,
/// without a lease (a closed intent has none) and with `archived_at`.
const V6: &str = "
ALTER TABLE dispatches ADD COLUMN pruned_at INTEGER;
ALTER TABLE dispatches ADD COLUMN pruned_intents TEXT;
CREATE TABLE intents_archive (
  seq INTEGER PRIMARY KEY,
  intent_id TEXT NOT NULL UNIQUE,
  dispatch_id TEXT NOT NULL,
  capability_id TEXT NOT NULL,
  intent_kind TEXT NOT NULL,
  decision TEXT,
  executor_id TEXT,
  reason_code TEXT,
  decided_at INTEGER,
  done_at INTEGER,
  doc TEXT NOT NULL,
  archived_at INTEGER NOT NULL
);
";

/// Version 7: a pruned dispatch of a dialect whose receipt embeds its
/// intent (`loopx-shipped-v0`) keeps that intent, as its receipt reads it
/// (`<intent_kind> <stored doc>`), in `pruned_extra`: its intent rows can
/// go while a replay still returns the same receipt.
const V7: &str = "
ALTER TABLE dispatches ADD COLUMN pruned_extra TEXT;
";

/// The SQL condition that selects open intents; queries must spell it exactly
/// like this for SQLite to use the partial index `intents_open`.
pub(crate) const INTENT_OPEN: &str = "done_at IS NULL AND decision IS NOT 'rejected'";

/// The SQL condition of unfinished dispatches, matching `dispatches_unfinished`.
pub(crate) const DISPATCH_UNFINISHED: &str = "state IN ('checkpointed','failed')";

/// Applies every migration of `steps` past `from` and stamps the header.
/// Must run inside a write transaction the caller commits or rolls back; any
/// error leaves the transaction to be rolled back whole.
pub(crate) fn migrate(conn: &Connection, from: i32, steps: &[Migration]) -> rusqlite::Result<i32> {
    let mut version = from;
    for step in steps.iter().filter(|m| m.to > from) {
        debug_assert_eq!(step.to, version + 1, "migrations must be consecutive");
        conn.execute_batch(step.sql)?;
        version = step.to;
    }
    conn.pragma_update(None, "application_id", APPLICATION_ID)?;
    conn.pragma_update(None, "user_version", version)?;
    Ok(version)
}
