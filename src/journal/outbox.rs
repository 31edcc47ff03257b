//! The outbox side: a governed executor admits or rejects each recorded intent
//! once, then marks admitted ones done. These are records, never effects: the
//! journal performs nothing. Executor ids and reason codes are tokens, so no
//! free text reaches the journal.
//!
//! Decisions commit with `synchronous=FULL` like records: unlike a checkpoint,
//! a lost decision is not reconstructible, and a second executor could then
//! decide the same intent differently.

use serde::Serialize;
use ts_rs::TS;

use super::lease::check_lease;
use super::states::Decision;
use super::{arg, Journal, JournalError, Reply, Result};

/// A decision already on record.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
#[serde(rename_all = "camelCase")]
pub struct ExistingDecision {
    pub decision: Decision,
    pub executor_id: String,
    pub reason_code: String,
    #[ts(type = "number")]
    pub decided_at: i64,
}

/// What `HookJournal.decide` did with a decision.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum DecideOutcome {
    /// Recorded now.
    Decided,
    /// The same executor already made the same decision with the same reason:
    /// nothing written.
    SameDecision,
    /// The intent was decided otherwise (another decision, executor or
    /// reason); the record stands.
    Conflict {
        existing: ExistingDecision,
    },
    UnknownIntent,
}

/// What `HookJournal.markDone` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
#[serde(rename_all = "snake_case")]
pub enum DoneOutcome {
    Done,
    AlreadyDone,
    /// Not admitted, rejected, or admitted by another executor.
    NotAdmitted,
    UnknownIntent,
}

pub(crate) struct DecideArgs {
    pub intent_id: String,
    pub executor_id: String,
    pub decision: Decision,
    pub reason_code: String,
}

pub(crate) struct DoneArgs {
    pub intent_id: String,
    pub executor_id: String,
}

impl Journal {
    /// Records an executor's admission or rejection of an intent, once:
    /// idempotent for the same (decision, executor, reason), a conflict
    /// otherwise.
    pub fn decide(
        &self,
        intent_id: &str,
        executor_id: &str,
        decision: Decision,
        reason_code: &str,
    ) -> Reply<DecideOutcome> {
        let checked = arg::digest_id(intent_id, "pwi_", "intentId")
            .and_then(|()| arg::token(executor_id, "executorId"))
            .and_then(|()| arg::token(reason_code, "reasonCode"));
        if let Err(e) = checked {
            return Reply::ready(Err(e));
        }
        let args = DecideArgs {
            intent_id: intent_id.to_owned(),
            executor_id: executor_id.to_owned(),
            decision,
            reason_code: reason_code.to_owned(),
        };
        self.queue(|then| self.store.decide(args, then))
    }

    /// Marks an intent the executor admitted as done.
    pub fn mark_done(&self, intent_id: &str, executor_id: &str) -> Reply<DoneOutcome> {
        let checked =
            arg::digest_id(intent_id, "pwi_", "intentId").and_then(|()| arg::token(executor_id, "executorId"));
        if let Err(e) = checked {
            return Reply::ready(Err(e));
        }
        let args = DoneArgs { intent_id: intent_id.to_owned(), executor_id: executor_id.to_owned() };
        self.queue(|then| self.store.mark_done(args, then))
    }
}

pub(super) struct DecisionRow {
    pub decision: Option<String>,
    pub executor_id: Option<String>,
    pub reason_code: Option<String>,
    pub decided_at: Option<i64>,
    pub done_at: Option<i64>,
    pub lease_owner: Option<String>,
    pub lease_until: Option<i64>,
}

/// What a decide or mark-done does, judged from the intent's row as read
/// inside the write transaction (shared by both backends).
pub(super) enum Verdict<T> {
    /// Write the decision (or done mark), then answer it.
    Write,
    /// Answer without writing.
    Answer(T),
}

pub(super) fn judge_decide(row: Option<DecisionRow>, a: &DecideArgs, now: i64) -> Result<Verdict<DecideOutcome>> {
    let Some(row) = row else {
        return Ok(Verdict::Answer(DecideOutcome::UnknownIntent));
    };
    let DecisionRow { decision, executor_id, reason_code, decided_at, .. } = row;
    let Some(decision) = decision else {
        check_lease(row.lease_owner.as_deref(), row.lease_until, &a.executor_id, now)?;
        return Ok(Verdict::Write);
    };
    let existing = ExistingDecision {
        decision: Decision::from_stored(&decision).ok_or(JournalError::Internal { what: "unknown decision" })?,
        executor_id: executor_id.unwrap_or_default(),
        reason_code: reason_code.unwrap_or_default(),
        decided_at: decided_at.unwrap_or_default(),
    };
    if existing.decision == a.decision && existing.executor_id == a.executor_id && existing.reason_code == a.reason_code
    {
        Ok(Verdict::Answer(DecideOutcome::SameDecision))
    } else {
        Ok(Verdict::Answer(DecideOutcome::Conflict { existing }))
    }
}

pub(super) fn judge_done(row: Option<DecisionRow>, a: &DoneArgs, now: i64) -> Result<Verdict<DoneOutcome>> {
    let Some(row) = row else {
        return Ok(Verdict::Answer(DoneOutcome::UnknownIntent));
    };
    if row.done_at.is_some() {
        let mine = row.executor_id.as_deref() == Some(a.executor_id.as_str());
        return Ok(Verdict::Answer(if mine { DoneOutcome::AlreadyDone } else { DoneOutcome::NotAdmitted }));
    }
    // The live lease authorises finishing what an earlier holder admitted.
    let leased = check_lease(row.lease_owner.as_deref(), row.lease_until, &a.executor_id, now)?;
    let admitted_by_caller = row.executor_id.as_deref() == Some(a.executor_id.as_str());
    if row.decision.as_deref() != Some("admitted") || !(leased || admitted_by_caller) {
        return Ok(Verdict::Answer(DoneOutcome::NotAdmitted));
    }
    Ok(Verdict::Write)
}
