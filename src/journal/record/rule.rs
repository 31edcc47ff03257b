//! The record rules, written once: how a checkpoint, a final record, a failed
//! attempt and a record list change a dispatch's row, and what each answers.
//! A backend supplies only the statements ([`RecordSql`]): SQLite's in
//! `sqlite/records.rs`, PostgreSQL's in `postgres/records.rs`. PostgreSQL's
//! merged statements (`postgres/merged.rs`) write many commands at once and
//! answer every command whose row they did not write through these same
//! functions.
//!
//! A final record changes the row first, and only while it is unfinished;
//! the row is read only when nothing changed. On PostgreSQL that conditional
//! change is what lets several hosts race for one identity (it waits for a
//! concurrent writer's row lock, then re-checks), and it costs one statement
//! on the path every dispatch takes.

use super::super::states::DispatchState;
use super::super::types::{Checkpoint, CheckpointState, FailureOutcome, FailureRecord, FinalRecord, RecordOutcome};
use super::super::{DispatchRow, JournalError, Result};
use super::{Begun, RecordAnswer, RecordCommand};

/// The columns of one failures row.
#[derive(Clone, Copy)]
pub(crate) struct FailureCols<'a> {
    pub id: &'a str,
    pub attempt: u32,
    pub code: &'a str,
    pub rule: Option<&'a str>,
    pub pointer: Option<&'a str>,
}

/// The statements the record rules need, run on the writer inside the
/// batch's transaction.
pub(crate) trait RecordSql {
    /// Inserts the identity's checkpoint row (attempts = the checkpoint's
    /// attempt) and its request, unless the identity has a row: whether it did.
    fn insert_checkpoint(&mut self, c: &Checkpoint, now: i64) -> Result<bool>;
    /// The identity's row as this transaction sees it; where other writers
    /// may race, locked until the transaction ends.
    fn standing(&mut self, dispatch_id: &str) -> Result<Option<DispatchRow>>;
    /// Sets the row's attempts (a later attempt of an unfinished identity).
    fn raise_attempts(&mut self, dispatch_id: &str, attempt: u32, now: i64) -> Result<()>;
    /// Only while the row is unfinished: sets its final state, attempts and
    /// result digest, deletes its request, inserts the exhausted failure and
    /// the intents in order. Whether it changed the row.
    /// [`JournalError::DuplicateIntent`] when an intent id is already taken.
    fn finish_if_unfinished(&mut self, r: &FinalRecord, state: DispatchState, now: i64) -> Result<bool>;
    /// Only while the identity has no row: inserts it final at once, with
    /// `c`'s columns and `r`'s state, attempts and result digest (no
    /// request: a final identity never needs it), then `r`'s exhausted
    /// failure and intents. Whether it did. A backend without it answers
    /// false, and the checkpoint and the record run one after the other.
    fn insert_final(&mut self, _c: &Checkpoint, _r: &FinalRecord, _state: DispatchState, _now: i64) -> Result<bool> {
        Ok(false)
    }
    /// Inserts a failed attempt's row; an attempt already recorded keeps its first row.
    fn insert_failure(&mut self, f: FailureCols<'_>, now: i64) -> Result<()>;
    /// State `failed`, attempts = max(attempts, `attempt`).
    fn mark_failed(&mut self, dispatch_id: &str, attempt: u32, now: i64) -> Result<()>;
    /// The batch is the retry of one whose COMMIT failed: it may have committed.
    fn replaying(&self) -> bool {
        false
    }
    /// Before each record of a record list of `count`: isolates it (a
    /// savepoint) when the backend needs to; whether it did.
    fn enter_record(&mut self, count: usize) -> Result<bool>;
    /// After that record: keeps it (`ok`) or undoes what it wrote.
    fn leave_record(&mut self, isolated: bool, ok: bool) -> Result<()>;
}

pub(crate) fn run_checkpoint<S: RecordSql>(sql: &mut S, c: &Checkpoint, now: i64) -> Result<CheckpointState> {
    if sql.insert_checkpoint(c, now)? {
        return Ok(CheckpointState::Fresh);
    }
    checkpoint_existing(sql, c, now)
}

/// A checkpoint whose identity already had a row: where it stands, counting this attempt.
pub(crate) fn checkpoint_existing<S: RecordSql>(sql: &mut S, c: &Checkpoint, now: i64) -> Result<CheckpointState> {
    let s = sql.standing(&c.dispatch_id)?.ok_or(JournalError::UnknownDispatch)?;
    if s.state.is_final() {
        return Ok(CheckpointState::Final { row: Box::new(s) });
    }
    if c.attempt > s.attempts {
        sql.raise_attempts(&c.dispatch_id, c.attempt, now)?;
    }
    Ok(CheckpointState::Pending { attempts_used: s.attempts })
}

/// Records the final receipt of a checkpointed, not yet final identity.
/// `attempts` becomes the attempt that produced it: the receipt's `attempt`
/// (failed attempts keep their own rows in `failures`).
pub(crate) fn run_final<S: RecordSql>(sql: &mut S, r: &FinalRecord, now: i64) -> Result<RecordOutcome> {
    if sql.finish_if_unfinished(r, DispatchState::from(r.status), now)? {
        return Ok(RecordOutcome::Recorded);
    }
    final_unchanged(sql, r, now)
}

/// A [`Begun`] record: the final row at once when the identity has none,
/// else its checkpoint then its record, as if queued one after the other.
pub(crate) fn run_begun<S: RecordSql>(sql: &mut S, b: &Begun, now: i64) -> Result<RecordOutcome> {
    if sql.insert_final(&b.checkpoint, &b.record, DispatchState::from(b.record.status), now)? {
        return Ok(RecordOutcome::Recorded);
    }
    run_checkpoint(sql, &b.checkpoint, now)?;
    run_final(sql, &b.record, now)
}

/// A final record that changed no row: the identity is unknown, or final
/// already, or its checkpoint was lost.
pub(crate) fn final_unchanged<S: RecordSql>(sql: &mut S, r: &FinalRecord, now: i64) -> Result<RecordOutcome> {
    let Some(s) = sql.standing(&r.dispatch_id)? else {
        return final_without_row(sql, r, now);
    };
    if !s.state.is_final() {
        // The conditional change and the read disagree: not a journal this build wrote.
        return Err(JournalError::Internal { what: "an unfinished dispatch was not finished" });
    }
    // Our own earlier try committed although its COMMIT reported an error.
    let ours =
        s.state == DispatchState::from(r.status) && s.attempts == r.attempt && s.result_digest == r.result_digest;
    if sql.replaying() && ours {
        return Ok(RecordOutcome::Recorded);
    }
    Ok(RecordOutcome::AlreadyFinal { row: Box::new(s) })
}

/// A final record of an identity without a row. When this process noted its
/// checkpoint before the provider ran (the attempt ledger, `ledger.rs`), the
/// server lost that checkpoint: PostgreSQL may, crashing after a commit that
/// did not wait for its WAL flush. The checkpoint is written again here, in
/// the record's transaction and with its own attempt, and the record applied
/// to it, so finished work is never turned into the caller's error. Without
/// a noted checkpoint the identity is foreign to this journal.
fn final_without_row<S: RecordSql>(sql: &mut S, r: &FinalRecord, now: i64) -> Result<RecordOutcome> {
    let c = super::super::ledger::noted_here(&r.dispatch_id).ok_or(JournalError::UnknownDispatch)?;
    sql.insert_checkpoint(&c, now)?;
    if sql.finish_if_unfinished(r, DispatchState::from(r.status), now)? {
        return Ok(RecordOutcome::Recorded);
    }
    Err(JournalError::Internal { what: "a checkpoint written again was not finished" })
}

/// Records a failed attempt: state `failed`, attempts = max(used, attempt).
pub(crate) fn run_failure<S: RecordSql>(sql: &mut S, r: &FailureRecord, now: i64) -> Result<FailureOutcome> {
    let s = sql.standing(&r.dispatch_id)?.ok_or(JournalError::UnknownDispatch)?;
    if s.state.is_final() {
        return Ok(FailureOutcome::AlreadyFinal { row: Box::new(s) });
    }
    let cols = FailureCols {
        id: &r.dispatch_id,
        attempt: r.attempt,
        code: &r.code,
        rule: r.rule.as_deref(),
        pointer: r.pointer.as_deref(),
    };
    sql.insert_failure(cols, now)?;
    sql.mark_failed(&r.dispatch_id, r.attempt, now)?;
    Ok(FailureOutcome::Recorded { attempts_used: s.attempts.max(r.attempt) })
}

/// A record list: each record answered on its own; one that fails is undone
/// alone while the others stay. A [`RecordCommand::Keyed`] record yields to
/// an earlier record's identity found final under its key.
// The writer's operation signature takes its arguments by reference to their own type.
#[allow(clippy::ptr_arg)]
pub(crate) fn run_many<S: RecordSql>(
    sql: &mut S,
    records: &Vec<RecordCommand>,
    now: i64,
) -> Result<Vec<Result<RecordAnswer>>> {
    let mut answers = Vec::with_capacity(records.len());
    // Rows earlier records found final already: another writer's receipts.
    let mut won: Vec<DispatchRow> = Vec::new();
    for r in records {
        let isolated = sql.enter_record(records.len())?;
        let answer = match r {
            RecordCommand::Final(f) => run_final(sql, f, now).map(RecordAnswer::Final),
            RecordCommand::Failure(f) => run_failure(sql, f, now).map(RecordAnswer::Failure),
            RecordCommand::Defer(c) => run_checkpoint(sql, c, now).map(RecordAnswer::Deferred),
            RecordCommand::Begun(b) => run_begun(sql, b, now).map(RecordAnswer::Final),
            RecordCommand::Keyed(k) if won.iter().any(|row| (k.key_of)(row).as_deref() == Some(k.key.as_str())) => {
                run_failure(sql, &k.instead, now).map(RecordAnswer::Failure)
            }
            RecordCommand::Keyed(k) => run_final(sql, &k.record, now).map(RecordAnswer::Final),
        };
        if let Ok(
            RecordAnswer::Final(RecordOutcome::AlreadyFinal { row })
            | RecordAnswer::Failure(FailureOutcome::AlreadyFinal { row })
            | RecordAnswer::Deferred(CheckpointState::Final { row }),
        ) = &answer
        {
            won.push((**row).clone());
        }
        match answer {
            // The batch cannot go on: the writer rolls it back and may retry.
            Err(e @ (JournalError::Busy | JournalError::Unavailable)) => return Err(e),
            Err(e) => {
                sql.leave_record(isolated, false)?;
                if let RecordCommand::Begun(b) = r {
                    // Undone with its record: the attempt it counted is written again, alone.
                    let isolated = sql.enter_record(records.len())?;
                    let counted = run_checkpoint(sql, &b.checkpoint, now);
                    sql.leave_record(isolated, counted.is_ok())?;
                    if let Err(e @ (JournalError::Busy | JournalError::Unavailable)) = counted {
                        return Err(e);
                    }
                }
                answers.push(Err(e));
            }
            Ok(a) => {
                sql.leave_record(isolated, true)?;
                answers.push(Ok(a));
            }
        }
    }
    Ok(answers)
}
