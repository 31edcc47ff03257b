//! The journal's tables in a PostgreSQL schema the caller names, and their
//! versions.
//!
//! The layout mirrors the SQLite one (`../sqlite/schema.rs`) column for column, so
//! both backends answer the same rows. The schema's version lives in its
//! `meta` table (one row, with the journal's application id); opening runs,
//! under a transaction-scoped advisory lock so that hosts opening one new
//! schema at once do not race, every migration past the stamped version, and
//! refuses a newer one or a schema holding foreign tables without changing
//! anything.
//!
//! `outbox_events` is the intents with the columns of Debezium's outbox event
//! router (id, aggregatetype, aggregateid, type, payload), the payload being
//! the whole intent document: a team streaming its database with CDC gets the
//! intents on its bus without a poller, and without this build's code. The
//! view is therefore the SQL face of `dispatch::intent_from_stored`, which
//! defines the document; `schema/tests.rs` proves the two equal.

use super::super::APPLICATION_ID;
use super::super::{JournalError, Result};
use super::conn::Link;

#[cfg(test)]
mod tests;

/// One step: applying `sql` to a schema at `to - 1` yields version `to`.
pub(super) struct Migration {
    pub to: i32,
    pub sql: &'static str,
}

/// Every migration of the PostgreSQL layout, in order.
pub(super) const MIGRATIONS: &[Migration] = &[
    Migration { to: 1, sql: V1 },
    Migration { to: 2, sql: V2 },
    Migration { to: 3, sql: V3 },
    Migration { to: 4, sql: V4 },
    Migration { to: 5, sql: V5 },
    Migration { to: 6, sql: V6 },
];

/// The version this build writes and reads.
pub const PG_SCHEMA_VERSION: i32 = MIGRATIONS[MIGRATIONS.len() - 1].to;

const V1: &str = "
CREATE TABLE dispatches (
  seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  dispatch_id text NOT NULL UNIQUE,
  state text NOT NULL
    CHECK (state IN ('checkpointed','failed','proposed','not_applicable','exhausted')),
  attempts integer NOT NULL CHECK (attempts >= 0),
  hook_id text NOT NULL,
  capability_id text NOT NULL,
  receipt_id text NOT NULL,
  effect_id text NOT NULL,
  event_kind text NOT NULL,
  registration_digest text NOT NULL,
  result_digest text,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL,
  CHECK ((result_digest IS NULL) = (state IN ('checkpointed','failed','exhausted')))
);
CREATE INDEX dispatches_unfinished ON dispatches (seq) WHERE state IN ('checkpointed','failed');

CREATE TABLE requests (
  seq bigint PRIMARY KEY REFERENCES dispatches (seq),
  request text NOT NULL
);

CREATE TABLE failures (
  dispatch_id text NOT NULL REFERENCES dispatches (dispatch_id),
  attempt integer NOT NULL CHECK (attempt >= 1),
  code text NOT NULL,
  rule text,
  at bigint NOT NULL,
  PRIMARY KEY (dispatch_id, attempt)
);

CREATE TABLE intents (
  seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  intent_id text NOT NULL UNIQUE,
  dispatch_id text NOT NULL REFERENCES dispatches (dispatch_id),
  capability_id text NOT NULL,
  intent_kind text NOT NULL,
  decision text CHECK (decision IN ('admitted','rejected')),
  executor_id text,
  reason_code text,
  decided_at bigint,
  done_at bigint,
  lease_owner text,
  lease_until bigint,
  doc text NOT NULL,
  CHECK ((decision IS NULL) = (executor_id IS NULL)),
  CHECK (done_at IS NULL OR decision = 'admitted')
);
CREATE INDEX intents_dispatch ON intents (dispatch_id);
CREATE INDEX intents_open ON intents (seq)
  WHERE done_at IS NULL AND decision IS DISTINCT FROM 'rejected';

-- The stored doc is [operation, policy_version, payload, [max_attempts,
-- max_result_bytes], requested_write_scope] (dispatch::stored_intent); the
-- rest of the document is the columns and what validation pinned.
CREATE VIEW outbox_events AS
SELECT i.intent_id AS id,
       i.capability_id AS aggregatetype,
       i.dispatch_id AS aggregateid,
       i.intent_kind AS type,
       jsonb_build_object(
         'schema_version', 'loopx_post_writeback_intent_v0',
         'intent_id', i.intent_id,
         'hook_id', d.hook_id,
         'capability_id', i.capability_id,
         'source_dispatch_id', i.dispatch_id,
         'intent_kind', i.intent_kind,
         'operation', i.doc::jsonb -> 0,
         'policy_version', i.doc::jsonb -> 1,
         'payload', i.doc::jsonb -> 2,
         'budget', jsonb_build_object('max_attempts', i.doc::jsonb -> 3 -> 0,
                                      'max_result_bytes', i.doc::jsonb -> 3 -> 1),
         'requested_write_scope', i.doc::jsonb -> 4,
         'failure_policy', 'isolate',
         'grants_new_action_authority', false,
         'external_write_performed', false
       ) AS payload
FROM intents i JOIN dispatches d ON d.dispatch_id = i.dispatch_id;
";

/// Version 2: the contract a row was written in (`dialect`, NULL for the
/// default `contract-v0`) and the source's commit time for dialects whose
/// receipt carries it; the outbox view builds each intent in its dispatch's
/// dialect. A `loopx-shipped-v0` intent stores `[idempotency_key,
/// source_receipt_id, payload]` (`dialect::shipped::engine::stored_intent`); its
/// write scope is always empty.
const V2: &str = "
ALTER TABLE dispatches ADD COLUMN dialect text, ADD COLUMN recorded_at text;
CREATE OR REPLACE VIEW outbox_events AS
SELECT i.intent_id AS id,
       i.capability_id AS aggregatetype,
       i.dispatch_id AS aggregateid,
       i.intent_kind AS type,
       CASE WHEN d.dialect = 'loopx-shipped-v0' THEN jsonb_build_object(
         'schema_version', 'loopx_capability_intent_v0',
         'intent_kind', i.intent_kind,
         'idempotency_key', i.doc::jsonb -> 0,
         'source_receipt_id', i.doc::jsonb -> 1,
         'payload', i.doc::jsonb -> 2,
         'requested_write_scope', '[]'::jsonb
       ) ELSE jsonb_build_object(
         'schema_version', 'loopx_post_writeback_intent_v0',
         'intent_id', i.intent_id,
         'hook_id', d.hook_id,
         'capability_id', i.capability_id,
         'source_dispatch_id', i.dispatch_id,
         'intent_kind', i.intent_kind,
         'operation', i.doc::jsonb -> 0,
         'policy_version', i.doc::jsonb -> 1,
         'payload', i.doc::jsonb -> 2,
         'budget', jsonb_build_object('max_attempts', i.doc::jsonb -> 3 -> 0,
                                      'max_result_bytes', i.doc::jsonb -> 3 -> 1),
         'requested_write_scope', i.doc::jsonb -> 4,
         'failure_policy', 'isolate',
         'grants_new_action_authority', false,
         'external_write_performed', false
       ) END AS payload
FROM intents i JOIN dispatches d ON d.dispatch_id = i.dispatch_id;
";

/// Version 3: the session that counted a checkpointed attempt
/// (`holder`, the key of an advisory lock its journal's writer connection
/// holds while it is open), so that another host knows when that process
/// ended (`read.rs`); null for rows written before, or without counting.
const V3: &str = "ALTER TABLE dispatches ADD COLUMN holder bigint;";

/// Version 4: where a failed attempt's rule was broken (`pointer`, a public
/// JSON Pointer; null for older rows and failures without a judged document).
const V4: &str = "ALTER TABLE failures ADD COLUMN pointer text;";

/// Version 5: retention (`../prune.rs`), as SQLite's version 6: a pruned
/// final dispatch's row is its tombstone (`pruned_at`, and `pruned_intents`,
/// its intents' ids in `seq` order, comma-separated), and `intents_archive`
/// holds the closed intents a prune archived instead of deleting.
const V5: &str = "
ALTER TABLE dispatches ADD COLUMN pruned_at bigint, ADD COLUMN pruned_intents text;
CREATE TABLE intents_archive (
  seq bigint PRIMARY KEY,
  intent_id text NOT NULL UNIQUE,
  dispatch_id text NOT NULL,
  capability_id text NOT NULL,
  intent_kind text NOT NULL,
  decision text,
  executor_id text,
  reason_code text,
  decided_at bigint,
  done_at bigint,
  doc text NOT NULL,
  archived_at bigint NOT NULL
);
";

/// Version 6: `dispatches.pruned_extra`, as SQLite's version 7.
const V6: &str = "ALTER TABLE dispatches ADD COLUMN pruned_extra text;";

/// The SQL condition of open intents (matches the partial index `intents_open`).
pub(super) const INTENT_OPEN: &str = "done_at IS NULL AND decision IS DISTINCT FROM 'rejected'";

/// What opening found.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Found {
    Current,
    Older(i32),
    /// No journal in the schema (it may not exist).
    Missing,
}

/// Reads the schema's stamp. A schema that holds tables but no journal
/// stamp, or another application's stamp, is [`JournalError::NotAJournal`].
fn inspect(link: &mut Link, schema: &str) -> Result<Found> {
    let has_meta = link.query_dynamic("SELECT to_regclass($1) IS NOT NULL", &[&format!("\"{schema}\".meta")])?;
    if !has_meta.first().is_some_and(|r| r.get::<_, bool>(0)) {
        let foreign = link.query_dynamic(
            "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1",
            &[&schema],
        )?;
        return match foreign.first().map(|r| r.get::<_, i64>(0)) {
            Some(0) | None => Ok(Found::Missing),
            Some(_) => Err(JournalError::NotAJournal),
        };
    }
    let rows = link.query_dynamic(&format!("SELECT application_id, version FROM \"{schema}\".meta"), &[])?;
    let Some(row) = rows.first() else { return Err(JournalError::NotAJournal) };
    let (app, version): (i32, i32) = (row.get(0), row.get(1));
    if app != APPLICATION_ID {
        return Err(JournalError::NotAJournal);
    }
    match version {
        v if v == PG_SCHEMA_VERSION => Ok(Found::Current),
        v if v > PG_SCHEMA_VERSION => Err(JournalError::TooNew { found: v, supported: PG_SCHEMA_VERSION }),
        v => Ok(Found::Older(v)),
    }
}

/// Creates or migrates the journal in `schema`, all in one transaction.
pub(super) fn ensure(link: &mut Link, schema: &str) -> Result<()> {
    link.batch("BEGIN")?;
    let done = (|| {
        // Serializes hosts opening the same schema; released at COMMIT/ROLLBACK.
        link.query_dynamic(
            "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
            &[&format!("loopx_hooks:{schema}")],
        )?;
        let found = inspect(link, schema)?;
        let from = match found {
            Found::Current => return Ok(()),
            Found::Older(v) => v,
            Found::Missing => {
                link.batch(&format!("CREATE SCHEMA IF NOT EXISTS \"{schema}\""))?;
                link.batch(&format!(
                    "CREATE TABLE \"{schema}\".meta (only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row), \
                     application_id integer NOT NULL, version integer NOT NULL); \
                     INSERT INTO \"{schema}\".meta (application_id, version) VALUES ({APPLICATION_ID}, 0)"
                ))?;
                0
            }
        };
        for step in MIGRATIONS.iter().filter(|m| m.to > from) {
            link.batch(step.sql)?;
            link.batch(&format!("UPDATE \"{schema}\".meta SET version = {}", step.to))?;
        }
        Ok(())
    })();
    match done {
        Ok(()) => link.batch("COMMIT"),
        Err(e) => {
            let _ = link.batch("ROLLBACK");
            Err(e)
        }
    }
}

/// Checks, without writing, that `schema` holds a journal this build reads.
pub(super) fn check_readable(link: &mut Link, schema: &str) -> Result<()> {
    match inspect(link, schema)? {
        Found::Current | Found::Older(_) => Ok(()),
        Found::Missing => Err(JournalError::NotAJournal),
    }
}
