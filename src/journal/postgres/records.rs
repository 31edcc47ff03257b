//! PostgreSQL's statements for the record rules (`../record/rule.rs`). What
//! differs from SQLite is how they stay right when several hosts write one
//! schema at once: the final record changes a row only while it is
//! unfinished (`UPDATE ... WHERE state IN (...)`, which waits for a
//! concurrent writer's row lock and then re-checks), so exactly one final
//! receipt per identity commits, and the loser reads the winner's; the
//! standing is read `FOR UPDATE`.

use super::super::read::stored_dialect;
use super::super::record::{FailureCols, RecordSql};
use super::super::states::DispatchState;
use super::super::types::{Checkpoint, FinalRecord};
use super::super::{DispatchRow, JournalError, Result};
use super::conn::{to_i32, UNIQUE_VIOLATION};
use super::read::{dispatch_row, DISPATCH_BY_ID_FOR_UPDATE};
use super::writer::PgWriteConn;

pub(super) use super::super::record::{run_checkpoint, run_failure, run_final, run_many};

/// The checkpoint row and its request in one statement.
const CHECKPOINT: &str = "
WITH d AS (
  INSERT INTO dispatches (dispatch_id, state, attempts, hook_id, capability_id, receipt_id, effect_id,
    event_kind, registration_digest, created_at, updated_at, dialect, recorded_at, holder)
  VALUES ($1, 'checkpointed', $9, $2, $3, $4, $5, $6, $7, $8, $8, $11, $12, $13)
  ON CONFLICT (dispatch_id) DO NOTHING RETURNING seq)
INSERT INTO requests (seq, request) SELECT seq, $10 FROM d RETURNING seq";

/// The whole final record in one statement (one round trip): the row
/// changes only while unfinished, and only then are its request deleted, its
/// exhausted failure and its intents inserted. A duplicate intent id fails
/// the statement, so nothing of the record is written.
const FINAL: &str = "
WITH d AS (
  UPDATE dispatches SET state = $2, attempts = $3, result_digest = $4, updated_at = $5
  WHERE dispatch_id = $1 AND state IN ('checkpointed','failed') RETURNING seq),
r AS (DELETE FROM requests q USING d WHERE q.seq = d.seq),
f AS (
  INSERT INTO failures (dispatch_id, attempt, code, rule, at)
  SELECT $1, $3, $6, $7, $5 FROM d WHERE $6::text IS NOT NULL
  ON CONFLICT (dispatch_id, attempt) DO NOTHING),
i AS (
  INSERT INTO intents (intent_id, dispatch_id, capability_id, intent_kind, doc)
  SELECT t.id, $1, t.cap, t.kind, t.doc
  FROM d, unnest($8::text[], $9::text[], $10::text[], $11::text[]) WITH ORDINALITY AS t(id, cap, kind, doc, n)
  ORDER BY t.n)
SELECT seq FROM d";

impl RecordSql for PgWriteConn {
    fn insert_checkpoint(&mut self, c: &Checkpoint, now: i64) -> Result<bool> {
        let attempt = to_i32(c.attempt, "attempt")?;
        let fresh = self.link.query_opt(
            CHECKPOINT,
            &[
                &c.dispatch_id,
                &c.hook_id,
                &c.capability_id,
                &c.receipt_id,
                &c.effect_id,
                &c.event_kind,
                &c.registration_digest,
                &now,
                &attempt,
                &c.request_json,
                &stored_dialect(c.dialect),
                &c.recorded_at,
                &self.holder,
            ],
        )?;
        Ok(fresh.is_some())
    }

    fn standing(&mut self, dispatch_id: &str) -> Result<Option<DispatchRow>> {
        self.link.query_opt(DISPATCH_BY_ID_FOR_UPDATE, &[&dispatch_id])?.as_ref().map(dispatch_row).transpose()
    }

    fn raise_attempts(&mut self, dispatch_id: &str, attempt: u32, now: i64) -> Result<()> {
        let attempt = to_i32(attempt, "attempt")?;
        self.link.execute(
            "UPDATE dispatches SET attempts = $2, updated_at = $3, holder = $4 WHERE dispatch_id = $1",
            &[&dispatch_id, &attempt, &now, &self.holder],
        )?;
        Ok(())
    }

    fn finish_if_unfinished(&mut self, r: &FinalRecord, state: DispatchState, now: i64) -> Result<bool> {
        let attempt = to_i32(r.attempt, "attempt")?;
        let state = state.as_str();
        let (code, rule) = match &r.failure {
            Some((code, rule)) => (Some(code.as_str()), rule.as_deref()),
            None => (None, None),
        };
        let ids: Vec<&str> = r.intents.iter().map(|i| i.intent_id.as_str()).collect();
        let caps: Vec<&str> = r.intents.iter().map(|i| i.capability_id.as_str()).collect();
        let kinds: Vec<&str> = r.intents.iter().map(|i| i.intent_kind.as_str()).collect();
        let docs: Vec<&str> = r.intents.iter().map(|i| i.stored_json.as_str()).collect();
        let changed = self.link.query_opt(
            FINAL,
            &[&r.dispatch_id, &state, &attempt, &r.result_digest, &now, &code, &rule, &ids, &caps, &kinds, &docs],
        );
        match changed {
            Err(JournalError::Postgres { sqlstate }) if sqlstate == UNIQUE_VIOLATION => {
                Err(JournalError::DuplicateIntent)
            }
            other => Ok(other?.is_some()),
        }
    }

    fn insert_failure(&mut self, f: FailureCols<'_>, now: i64) -> Result<()> {
        let attempt = to_i32(f.attempt, "attempt")?;
        self.link.execute(
            "INSERT INTO failures (dispatch_id, attempt, code, rule, at, pointer) VALUES ($1, $2, $3, $4, $5, $6)
             ON CONFLICT (dispatch_id, attempt) DO NOTHING",
            &[&f.id, &attempt, &f.code, &f.rule, &now, &f.pointer],
        )?;
        Ok(())
    }

    fn mark_failed(&mut self, dispatch_id: &str, attempt: u32, now: i64) -> Result<()> {
        let attempt = to_i32(attempt, "attempt")?;
        self.link.execute(
            "UPDATE dispatches SET state = 'failed', attempts = GREATEST(attempts, $2), updated_at = $3 \
             WHERE dispatch_id = $1",
            &[&dispatch_id, &attempt, &now],
        )?;
        Ok(())
    }

    fn replaying(&self) -> bool {
        self.replaying
    }

    fn enter_record(&mut self, count: usize) -> Result<bool> {
        // Careful mode only (see `writer.rs`): each record in its own savepoint,
        // unless the record is the whole command (the writer's savepoint is it).
        let isolate = self.careful && count > 1;
        if isolate {
            self.link.batch("SAVEPOINT rec")?;
        }
        self.link.sql_failed = false;
        Ok(isolate)
    }

    fn leave_record(&mut self, isolated: bool, ok: bool) -> Result<()> {
        match (isolated, ok) {
            (true, true) => self.link.batch("RELEASE rec"),
            (true, false) => self.link.batch("ROLLBACK TO rec; RELEASE rec"),
            (false, true) => Ok(()),
            // Careful: undo this record; fast: a refused statement asks for the careful retry.
            (false, false) => self.undo_command(),
        }
    }
}
