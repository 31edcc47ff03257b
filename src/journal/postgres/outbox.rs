//! Outbox decisions and leases on PostgreSQL. The verdicts are the shared
//! ones (`../outbox.rs`), judged on the intent's row locked `FOR UPDATE`;
//! claims take open intents `FOR UPDATE SKIP LOCKED`, so executors on many
//! hosts claim disjoint intents without waiting on each other.

use super::super::lease::ClaimRequest;
use super::super::outbox::{judge_decide, judge_done, DecideArgs, DecisionRow, DoneArgs, Verdict};
use super::super::read::intent_cols;
use super::super::{DecideOutcome, DoneOutcome, Result, StoredIntent};
use super::read::intent_row;
use super::writer::PgWriteConn;

fn decision_row(conn: &mut PgWriteConn, intent_id: &str) -> Result<Option<DecisionRow>> {
    let row = conn.link.query_opt(
        "SELECT decision, executor_id, reason_code, decided_at, done_at, lease_owner, lease_until \
         FROM intents WHERE intent_id = $1 FOR UPDATE",
        &[&intent_id],
    )?;
    Ok(row.map(|r| DecisionRow {
        decision: r.get(0),
        executor_id: r.get(1),
        reason_code: r.get(2),
        decided_at: r.get(3),
        done_at: r.get(4),
        lease_owner: r.get(5),
        lease_until: r.get(6),
    }))
}

pub(super) fn run_decide(conn: &mut PgWriteConn, a: &DecideArgs, now: i64) -> Result<DecideOutcome> {
    if let Verdict::Answer(outcome) = judge_decide(decision_row(conn, &a.intent_id)?, a, now)? {
        return Ok(outcome);
    }
    // A rejection closes the intent, and with it the lease.
    conn.link.execute(
        "UPDATE intents SET decision = $2, executor_id = $3, reason_code = $4, decided_at = $5, \
         lease_owner = CASE WHEN $2 = 'rejected' THEN NULL ELSE lease_owner END, \
         lease_until = CASE WHEN $2 = 'rejected' THEN NULL ELSE lease_until END \
         WHERE intent_id = $1",
        &[&a.intent_id, &a.decision.as_stored(), &a.executor_id, &a.reason_code, &now],
    )?;
    Ok(DecideOutcome::Decided)
}

pub(super) fn run_done(conn: &mut PgWriteConn, a: &DoneArgs, now: i64) -> Result<DoneOutcome> {
    if let Verdict::Answer(outcome) = judge_done(decision_row(conn, &a.intent_id)?, a, now)? {
        return Ok(outcome);
    }
    conn.link.execute(
        "UPDATE intents SET done_at = $2, lease_owner = NULL, lease_until = NULL WHERE intent_id = $1",
        &[&a.intent_id, &now],
    )?;
    Ok(DoneOutcome::Done)
}

const CLAIM: &str = concat!(
    "WITH c AS (
       SELECT seq FROM intents
       WHERE done_at IS NULL AND decision IS DISTINCT FROM 'rejected'
         AND (lease_until IS NULL OR lease_until <= $1)
         AND ($2::text IS NULL OR capability_id = $2)
         AND ($3::text IS NULL OR intent_kind = $3)
       ORDER BY seq LIMIT $4
       FOR UPDATE SKIP LOCKED)
     UPDATE intents i SET lease_owner = $5, lease_until = $6 FROM c WHERE i.seq = c.seq
     RETURNING ",
    intent_cols!()
);

pub(super) fn run_claim(conn: &mut PgWriteConn, r: &ClaimRequest, now: i64) -> Result<Vec<StoredIntent>> {
    let until = now.saturating_add(i64::from(r.lease_ms));
    let batch = i64::from(r.batch);
    let rows = conn.link.query(CLAIM, &[&now, &r.capability_id, &r.intent_kind, &batch, &r.executor_id, &until])?;
    let mut claimed: Vec<StoredIntent> = rows.iter().map(intent_row).collect::<Result<_>>()?;
    // RETURNING has no order: oldest first, as on SQLite.
    claimed.sort_by_key(|i| i.seq);
    Ok(claimed)
}
