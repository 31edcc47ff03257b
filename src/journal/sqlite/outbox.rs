//! Outbox decisions on SQLite: the intent's row is read and written inside
//! the writer's `BEGIN IMMEDIATE` transaction, which holds the file's write
//! lock; the verdicts are the shared ones (`../outbox.rs`).

use rusqlite::{params, Connection, OptionalExtension};

use super::super::outbox::{judge_decide, judge_done, DecideArgs, DecisionRow, DoneArgs, Verdict};
use super::super::{DecideOutcome, DoneOutcome, Result};

fn decision_row(conn: &Connection, intent_id: &str) -> Result<Option<DecisionRow>> {
    Ok(conn
        .prepare_cached(
            "SELECT decision, executor_id, reason_code, decided_at, done_at, lease_owner, lease_until \
             FROM intents WHERE intent_id = ?1",
        )?
        .query_row([intent_id], |r| {
            Ok(DecisionRow {
                decision: r.get(0)?,
                executor_id: r.get(1)?,
                reason_code: r.get(2)?,
                decided_at: r.get(3)?,
                done_at: r.get(4)?,
                lease_owner: r.get(5)?,
                lease_until: r.get(6)?,
            })
        })
        .optional()?)
}

pub(super) fn run_decide(conn: &mut Connection, a: &DecideArgs, now: i64) -> Result<DecideOutcome> {
    if let Verdict::Answer(outcome) = judge_decide(decision_row(conn, &a.intent_id)?, a, now)? {
        return Ok(outcome);
    }
    // A rejection closes the intent, and with it the lease.
    conn.prepare_cached(
        "UPDATE intents SET decision = ?2, executor_id = ?3, reason_code = ?4, decided_at = ?5, \
         lease_owner = CASE WHEN ?2 = 'rejected' THEN NULL ELSE lease_owner END, \
         lease_until = CASE WHEN ?2 = 'rejected' THEN NULL ELSE lease_until END \
         WHERE intent_id = ?1",
    )?
    .execute(params![a.intent_id, a.decision.as_stored(), a.executor_id, a.reason_code, now])?;
    Ok(DecideOutcome::Decided)
}

pub(super) fn run_done(conn: &mut Connection, a: &DoneArgs, now: i64) -> Result<DoneOutcome> {
    if let Verdict::Answer(outcome) = judge_done(decision_row(conn, &a.intent_id)?, a, now)? {
        return Ok(outcome);
    }
    conn.prepare_cached(
        "UPDATE intents SET done_at = ?2, lease_owner = NULL, lease_until = NULL WHERE intent_id = ?1",
    )?
    .execute(params![a.intent_id, now])?;
    Ok(DoneOutcome::Done)
}
