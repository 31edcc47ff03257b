//! The dispatch record commands on PostgreSQL. They answer exactly what the
//! SQLite ones answer (`../record.rs`); what differs is how they stay right
//! when several hosts write one schema at once: a final record changes a row
//! only while it is unfinished (`UPDATE ... WHERE state IN (...)`, which
//! waits for a concurrent writer's row lock and then re-checks), so exactly
//! one final receipt per identity commits, and the loser reads the winner's.

use super::super::types::{
    Checkpoint, CheckpointState, DispatchState, FailureOutcome, FailureRecord, FinalRecord, RecordOutcome,
};
use super::super::{DispatchRow, JournalError, RecordAnswer, RecordCommand, Result};
use super::conn::{to_i32, UNIQUE_VIOLATION};
use super::read::{dispatch_row, DISPATCH_BY_ID_FOR_UPDATE};
use super::writer::PgWriteConn;

fn standing(conn: &mut PgWriteConn, dispatch_id: &str) -> Result<Option<DispatchRow>> {
    conn.link.query_opt(DISPATCH_BY_ID_FOR_UPDATE, &[&dispatch_id])?.as_ref().map(dispatch_row).transpose()
}

pub(super) fn run_checkpoint(conn: &mut PgWriteConn, c: &Checkpoint, now: i64) -> Result<CheckpointState> {
    let attempt = to_i32(c.attempt, "attempt")?;
    let fresh = conn.link.query_opt(
        "WITH d AS (
           INSERT INTO dispatches (dispatch_id, state, attempts, hook_id, capability_id, receipt_id, effect_id,
             event_kind, registration_digest, created_at, updated_at)
           VALUES ($1, 'checkpointed', $9, $2, $3, $4, $5, $6, $7, $8, $8)
           ON CONFLICT (dispatch_id) DO NOTHING RETURNING seq)
         INSERT INTO requests (seq, request) SELECT seq, $10 FROM d RETURNING seq",
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
        ],
    )?;
    if fresh.is_some() {
        return Ok(CheckpointState::Fresh);
    }
    checkpoint_standing(conn, c, attempt, now)
}

/// A checkpoint whose identity already had a row: where it stands, counting this attempt.
pub(super) fn checkpoint_standing(
    conn: &mut PgWriteConn,
    c: &Checkpoint,
    attempt: i32,
    now: i64,
) -> Result<CheckpointState> {
    let s = standing(conn, &c.dispatch_id)?.ok_or(JournalError::UnknownDispatch)?;
    if s.state.is_final() {
        return Ok(CheckpointState::Final { row: Box::new(s) });
    }
    if c.attempt > s.attempts {
        conn.link.execute(
            "UPDATE dispatches SET attempts = $2, updated_at = $3 WHERE dispatch_id = $1",
            &[&c.dispatch_id, &attempt, &now],
        )?;
    }
    Ok(CheckpointState::Pending { attempts_used: s.attempts })
}

// The writer's operation signature takes its arguments by reference to their own type.
#[allow(clippy::ptr_arg)]
pub(super) fn run_many(
    conn: &mut PgWriteConn,
    records: &Vec<RecordCommand>,
    now: i64,
) -> Result<Vec<Result<RecordAnswer>>> {
    let mut answers = Vec::with_capacity(records.len());
    // Careful mode only (see `writer.rs`): each record in its own savepoint,
    // unless the record is the whole command (the writer's savepoint is it).
    let isolate = conn.careful && records.len() > 1;
    for r in records {
        if isolate {
            conn.link.batch("SAVEPOINT rec")?;
        }
        conn.link.sql_failed = false;
        let answer = match r {
            RecordCommand::Final(f) => run_final(conn, f, now).map(RecordAnswer::Final),
            RecordCommand::Failure(f) => run_failure(conn, f, now).map(RecordAnswer::Failure),
            RecordCommand::Defer(c) => run_checkpoint(conn, c, now).map(RecordAnswer::Deferred),
        };
        match answer {
            // The batch cannot go on: the writer rolls it back and may retry.
            Err(e @ (JournalError::Busy | JournalError::Unavailable)) => return Err(e),
            Err(e) if isolate => {
                conn.link.batch("ROLLBACK TO rec; RELEASE rec")?;
                answers.push(Err(e));
            }
            Err(e) => {
                // Careful: undo this record; fast: a refused statement asks for the careful retry.
                conn.undo_command()?;
                answers.push(Err(e));
            }
            Ok(a) => {
                if isolate {
                    conn.link.batch("RELEASE rec")?;
                }
                answers.push(Ok(a));
            }
        }
    }
    Ok(answers)
}

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

pub(super) fn run_final(conn: &mut PgWriteConn, r: &FinalRecord, now: i64) -> Result<RecordOutcome> {
    let attempt = to_i32(r.attempt, "attempt")?;
    let state = DispatchState::from(r.status).as_str();
    let (code, rule) = match &r.failure {
        Some((code, rule)) => (Some(code.as_str()), rule.as_deref()),
        None => (None, None),
    };
    let ids: Vec<&str> = r.intents.iter().map(|i| i.intent_id.as_str()).collect();
    let caps: Vec<&str> = r.intents.iter().map(|i| i.capability_id.as_str()).collect();
    let kinds: Vec<&str> = r.intents.iter().map(|i| i.intent_kind.as_str()).collect();
    let docs: Vec<&str> = r.intents.iter().map(|i| i.stored_json.as_str()).collect();
    let changed = conn.link.query_opt(
        FINAL,
        &[&r.dispatch_id, &state, &attempt, &r.result_digest, &now, &code, &rule, &ids, &caps, &kinds, &docs],
    );
    let changed = match changed {
        Err(JournalError::Postgres { sqlstate }) if sqlstate == UNIQUE_VIOLATION => {
            return Err(JournalError::DuplicateIntent)
        }
        other => other?,
    };
    if changed.is_some() {
        return Ok(RecordOutcome::Recorded);
    }
    final_standing(conn, r, state)
}

/// A final record that changed no row: the identity is unknown, or final already.
pub(super) fn final_standing(conn: &mut PgWriteConn, r: &FinalRecord, state: &str) -> Result<RecordOutcome> {
    let s = standing(conn, &r.dispatch_id)?.ok_or(JournalError::UnknownDispatch)?;
    if !s.state.is_final() {
        // Unfinished but not changed: not a journal this build wrote.
        return Err(JournalError::Postgres { sqlstate: "XX001".to_owned() });
    }
    // Our own earlier try committed although its COMMIT reported an error.
    let ours = s.state.as_str() == state && s.attempts == r.attempt && s.result_digest == r.result_digest;
    if conn.replaying && ours {
        return Ok(RecordOutcome::Recorded);
    }
    Ok(RecordOutcome::AlreadyFinal { row: Box::new(s) })
}

pub(super) fn run_failure(conn: &mut PgWriteConn, r: &FailureRecord, now: i64) -> Result<FailureOutcome> {
    let s = standing(conn, &r.dispatch_id)?.ok_or(JournalError::UnknownDispatch)?;
    if s.state.is_final() {
        return Ok(FailureOutcome::AlreadyFinal { row: Box::new(s) });
    }
    let attempt = to_i32(r.attempt, "attempt")?;
    insert_failure(conn, &r.dispatch_id, attempt, &r.code, r.rule.as_deref(), now)?;
    conn.link.execute(
        "UPDATE dispatches SET state = 'failed', attempts = GREATEST(attempts, $2), updated_at = $3 \
         WHERE dispatch_id = $1",
        &[&r.dispatch_id, &attempt, &now],
    )?;
    Ok(FailureOutcome::Recorded { attempts_used: s.attempts.max(r.attempt) })
}

fn insert_failure(
    conn: &mut PgWriteConn,
    id: &str,
    attempt: i32,
    code: &str,
    rule: Option<&str>,
    now: i64,
) -> Result<()> {
    conn.link.execute(
        "INSERT INTO failures (dispatch_id, attempt, code, rule, at) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (dispatch_id, attempt) DO NOTHING",
        &[&id, &attempt, &code, &rule, &now],
    )?;
    Ok(())
}
