//! The last step of a dispatch: the providers' results validated, every
//! record of the dispatch handed to the writer as one command, and the
//! outcome settled on the writer thread once that command's commit is known.

use std::sync::{Arc, Mutex};

use super::dialect::RegisteredHook;
use super::judged::{Accepted, Failure};
use super::keys::IntentKeys;
use super::outcome::{DispatchOutcome, HookOutcome, HookOutcomeKind};
use super::profile::Profile;
use super::run::{accept, failed, from_final, invoked, outcome, retried, set_receipt, verify, CallResult};
use super::steps::{admitted, bad_ticket, Completion, Slot};
use super::{Dispatcher, Finished};
use crate::contract::{DispatchStatus, FailureCode, FailureDetail, ResultStatus};
use crate::journal::{
    Begun, Checkpoint, CheckpointState, FailureOutcome, FailureRecord, FinalRecord, FinalStatus, JournalError, Keyed,
    RecordAnswer, RecordCommand, RecordOutcome,
};

/// A record's hook, with the outcome to report when it is recorded as made.
struct Pending {
    slot: usize,
    hook: Arc<RegisteredHook>,
    dispatch_id: String,
    recorded: HookOutcome,
    new_digest: Option<String>,
    /// What a keyed record yielding its key to another writer's receipt reports.
    instead: Option<HookOutcome>,
    /// Its provider was called in this dispatch.
    invoked: bool,
    /// Its receipt was retryable before this dispatch.
    retry: bool,
}

impl Pending {
    fn new(slot: usize, hook: Arc<RegisteredHook>, dispatch_id: String, recorded: HookOutcome) -> Self {
        Pending { slot, hook, dispatch_id, recorded, new_digest: None, instead: None, invoked: false, retry: false }
    }
}

impl Dispatcher {
    /// Validates the calls' results (one per planned call, in order) and hands
    /// every record of the dispatch to the writer as one command.
    pub fn complete(&self, ticket: u64, results: Vec<CallResult>) -> Result<Completion, JournalError> {
        let mut flight =
            self.flights.lock().unwrap_or_else(|p| p.into_inner()).remove(&ticket).ok_or_else(bad_ticket)?;
        let claimed = flight.claimed.clone();
        // Queued just before the records, so the writer takes both at one wake-up.
        let deferred = std::mem::take(&mut flight.deferred);
        let finish_now = |outcome| {
            self.shared.release(&claimed, ticket);
            self.shared.stop_running();
            outcome
        };
        if results.len() != flight.calls.len() {
            self.queue_checkpoints(deferred, &flight.checkpoint_error);
            return finish_now(Err(JournalError::InvalidArgument { what: "results" }));
        }
        let mut by_slot: Vec<Option<CallResult>> = (0..flight.slots.len()).map(|_| None).collect();
        for (slot, r) in flight.calls.iter().zip(results) {
            by_slot[*slot] = Some(r);
        }
        let kinds = &flight.installed.kinds;
        let mut outcomes: Vec<Option<HookOutcome>> = Vec::with_capacity(flight.slots.len());
        let mut records = Vec::new();
        let mut pending = Vec::new();
        let mut totals = Totals::new(&self.profile);
        let rules = flight.request.rules();
        let mut keys = IntentKeys::default();
        // The key each fresh result took, by slot, for the final reduction.
        let mut own: Vec<Option<String>> = vec![None; flight.slots.len()];
        let key_of = rules.key_of();
        for (i, (slot, result)) in flight.slots.into_iter().zip(by_slot).enumerate() {
            let result = result.unwrap_or(CallResult::NotStarted);
            match slot {
                Slot::Done(mut o) => {
                    keys.settle(&mut o, None);
                    outcomes.push(Some(*o))
                }
                // Not started (the wall budget was spent): it stays owed.
                Slot::Call { hook, dispatch_id, begun: false, fresh: true, .. } | Slot::Defer { hook, dispatch_id } => {
                    outcomes.push(None);
                    records.push(RecordCommand::Defer(flight.request.checkpoint(&hook, &dispatch_id, 0)));
                    let f = Failure::new(FailureCode::DispatchBudgetExhausted, None);
                    let recorded = failed(&hook, &dispatch_id, 0, &f);
                    pending.push(Pending::new(i, hook, dispatch_id, recorded));
                }
                // Not started, and already owed by its unfinished row.
                Slot::Call { hook, dispatch_id, begun: false, retry, .. } => {
                    let f = Failure::new(FailureCode::DispatchBudgetExhausted, None);
                    let mut o = failed(&hook, &dispatch_id, 0, &f);
                    if retry {
                        retried(&mut o);
                    }
                    outcomes.push(Some(o));
                }
                Slot::Call { hook, dispatch_id, verify: Some(row), .. } => {
                    let mut o = verify(&hook, kinds, result, &row, &dispatch_id, &flight.request);
                    invoked(&mut o);
                    // A verified conflict keeps the stored receipt's key, not its own.
                    keys.settle(&mut o, None);
                    outcomes.push(Some(o));
                }
                Slot::Call { hook, dispatch_id, attempt, retry, .. } => {
                    outcomes.push(None);
                    let accepted = accept(&hook, kinds, result, &dispatch_id, &flight.request)
                        .and_then(|a| keys.admit(a))
                        .inspect(|a| own[i] = a.shipped_intent.as_ref().map(|k| k.idempotency_key.clone()))
                        .and_then(|a| totals.admit(a));
                    let mut instead = None;
                    let (record, mut recorded, new_digest) = match accepted {
                        Ok(accepted) => {
                            let (status, final_status, kind) = match accepted.status {
                                ResultStatus::Proposed => {
                                    (DispatchStatus::Proposed, FinalStatus::Proposed, HookOutcomeKind::Recorded)
                                }
                                ResultStatus::NotApplicable => (
                                    DispatchStatus::NotApplicable,
                                    FinalStatus::NotApplicable,
                                    HookOutcomeKind::NotApplicable,
                                ),
                            };
                            let mut recorded = outcome(&hook, &dispatch_id, kind, attempt);
                            set_receipt(&mut recorded, &flight.request, &hook, status, Some(&accepted), None);
                            let key = accepted.shipped_intent.as_ref().map(|k| k.idempotency_key.clone());
                            let record = FinalRecord {
                                dispatch_id: dispatch_id.clone(),
                                attempt,
                                status: final_status,
                                result_digest: Some(accepted.digest.clone()),
                                intents: accepted.intents,
                                failure: None,
                            };
                            let record = match (key, key_of) {
                                // An earlier record of this dispatch may find its identity
                                // recorded by another writer under this key.
                                (Some(key), Some(key_of)) if !records.is_empty() => {
                                    let f = Failure::intent_key_conflict();
                                    let mut lost = failed(&hook, &dispatch_id, attempt, &f);
                                    invoked(&mut lost);
                                    instead = Some(lost);
                                    let instead = FailureRecord {
                                        dispatch_id: dispatch_id.clone(),
                                        attempt,
                                        code: rules.stored_code(&f).into(),
                                        rule: None,
                                        pointer: None,
                                    };
                                    RecordCommand::Keyed(Keyed { record, key, key_of, instead })
                                }
                                _ => RecordCommand::Final(record),
                            };
                            (record, recorded, Some(accepted.digest))
                        }
                        Err(f) => {
                            let record = RecordCommand::Failure(FailureRecord {
                                dispatch_id: dispatch_id.clone(),
                                attempt,
                                code: rules.stored_code(&f).into(),
                                rule: f.rule.map(|r| r.as_str().into()),
                                pointer: f.pointer.clone(),
                            });
                            (record, failed(&hook, &dispatch_id, attempt, &f), None)
                        }
                    };
                    invoked(&mut recorded);
                    records.push(record);
                    pending.push(Pending {
                        new_digest,
                        instead,
                        invoked: true,
                        retry,
                        ..Pending::new(i, hook, dispatch_id, recorded)
                    });
                }
                Slot::Exhaust { hook, dispatch_id, used } => {
                    outcomes.push(None);
                    let detail = FailureDetail { code: FailureCode::DispatchBudgetExhausted, rule: None };
                    let mut recorded = HookOutcome {
                        failure_code: Some(FailureCode::DispatchBudgetExhausted),
                        ..outcome(&hook, &dispatch_id, HookOutcomeKind::Exhausted, used)
                    };
                    set_receipt(&mut recorded, &flight.request, &hook, DispatchStatus::Exhausted, None, Some(detail));
                    records.push(RecordCommand::Final(FinalRecord {
                        dispatch_id: dispatch_id.clone(),
                        attempt: used,
                        status: FinalStatus::Exhausted,
                        result_digest: None,
                        intents: Vec::new(),
                        failure: Some((FailureCode::DispatchBudgetExhausted.as_str().into(), None)),
                    }));
                    pending.push(Pending::new(i, hook, dispatch_id, recorded));
                }
            }
        }
        if records.is_empty() {
            self.queue_checkpoints(deferred, &flight.checkpoint_error);
            return finish_now(Ok(Completion::Done(admitted(outcomes.into_iter().flatten().collect()))));
        }
        let deferred = begun_with_records(deferred, &mut records);
        let shared = self.shared.clone();
        let checkpoint_error = flight.checkpoint_error.clone();
        let then_claimed = claimed.clone();
        let then = Box::new(move |answers: Result<Vec<Result<RecordAnswer, JournalError>>, JournalError>| {
            let outcome = settle(outcomes, pending, answers, &checkpoint_error, &own);
            shared.release(&then_claimed, ticket);
            shared.finish(Finished { ticket, outcome });
            shared.stop_running();
        });
        // An inline commit finishes the dispatch inside `record_many`: its
        // caller gets the outcome now instead of from the next delivery.
        let inline = self.solo();
        let queued = if inline {
            self.shared.hold(ticket);
            self.journal.inline(|| {
                self.queue_checkpoints(deferred, &flight.checkpoint_error);
                self.journal.record_many(records, then)
            })
        } else {
            self.queue_checkpoints(deferred, &flight.checkpoint_error);
            self.journal.record_many(records, then)
        };
        match (queued, inline.then(|| self.shared.take_held(ticket)).flatten()) {
            (_, Some(outcome)) => outcome.map(Completion::Done),
            (Ok(()), None) => Ok(Completion::Pending),
            (Err(e), None) => finish_now(Err(e)),
        }
    }

    /// Whether this dispatch's commands may commit inline: the journal does,
    /// and no other dispatch of this runtime is in flight to share a group
    /// commit with (under load the writer thread batches them as always).
    /// One whose outcome is still on its way to its caller counts: that
    /// caller is about to start another, and a chain of inline commits would
    /// otherwise keep it waiting, one fsync per dispatch.
    pub(super) fn solo(&self) -> bool {
        self.journal.commits_inline() && *self.shared.running.borrow() == 1 && self.shared.all_delivered()
    }

    /// Drops a prepared dispatch its caller will not complete: nothing more is
    /// recorded for it (its checkpoints stay for `recover()`).
    pub fn cancel(&self, ticket: u64) {
        if let Some(mut flight) = self.flights.lock().unwrap_or_else(|p| p.into_inner()).remove(&ticket) {
            // Its providers ran: their attempts count, as a queued checkpoint would.
            self.queue_checkpoints(std::mem::take(&mut flight.deferred), &flight.checkpoint_error);
            self.shared.release(&flight.claimed, ticket);
            self.shared.stop_running();
        }
    }
}

/// Hands each held-back checkpoint to the final record of its attempt, as
/// one [`Begun`] record, so the writer writes that row once; returns the
/// checkpoints no final record took, to be queued on their own.
fn begun_with_records(deferred: Vec<Checkpoint>, records: &mut Vec<RecordCommand>) -> Vec<Checkpoint> {
    let mut rest = Vec::new();
    for checkpoint in deferred {
        let own = |r: &RecordCommand| matches!(r, RecordCommand::Final(f) if (&f.dispatch_id, f.attempt) == (&checkpoint.dispatch_id, checkpoint.attempt));
        match records.iter().position(own) {
            Some(i) => match records.remove(i) {
                RecordCommand::Final(record) => {
                    records.insert(i, RecordCommand::Begun(Box::new(Begun { checkpoint, record })))
                }
                other => {
                    records.insert(i, other);
                    rest.push(checkpoint);
                }
            },
            None => rest.push(checkpoint),
        }
    }
    rest
}

/// What the dispatch's accepted results add up to, against the profile's
/// per-dispatch ceilings on intents and result bytes.
struct Totals {
    intents: usize,
    bytes: usize,
    max_intents: usize,
    max_bytes: usize,
}

impl Totals {
    fn new(profile: &Profile) -> Self {
        Totals {
            intents: 0,
            bytes: 0,
            max_intents: profile.max_intents_per_dispatch as usize,
            max_bytes: profile.max_result_bytes_per_dispatch as usize,
        }
    }

    /// Keeps `a` within the ceilings, or refuses it: the result is not
    /// recorded and the attempt it spent fails with `dispatch_budget_exhausted`,
    /// so the identity stays owed (a later dispatch or `recover()` runs it
    /// again, within its own invocation budget).
    fn admit(&mut self, a: Accepted) -> Result<Accepted, Failure> {
        let intents = self.intents + a.intents.len();
        let bytes = self.bytes + a.bytes;
        if intents > self.max_intents || bytes > self.max_bytes {
            return Err(Failure::new(FailureCode::DispatchBudgetExhausted, None));
        }
        self.intents = intents;
        self.bytes = bytes;
        Ok(a)
    }
}

/// The dispatch's outcome once its records' fate is known: each record's
/// outcome, then the intent keys reduced again in hook_id order, since a
/// receipt another writer recorded first holds its own key.
fn settle(
    mut outcomes: Vec<Option<HookOutcome>>,
    pending: Vec<Pending>,
    answers: Result<Vec<Result<RecordAnswer, JournalError>>, JournalError>,
    checkpoint_error: &Mutex<Option<JournalError>>,
    own: &[Option<String>],
) -> Result<DispatchOutcome, JournalError> {
    let explain = |e: JournalError| match (&e, checkpoint_error.lock().unwrap_or_else(|p| p.into_inner()).clone()) {
        (JournalError::UnknownDispatch, Some(cause)) => cause,
        _ => e,
    };
    let answers = answers.map_err(explain)?;
    for (p, answer) in pending.into_iter().zip(answers) {
        let mut o = match (answer.map_err(explain)?, p.instead) {
            // A keyed record whose key another writer's receipt took.
            (RecordAnswer::Failure(FailureOutcome::Recorded { .. }), Some(lost)) => lost,
            (
                RecordAnswer::Final(RecordOutcome::Recorded) | RecordAnswer::Failure(FailureOutcome::Recorded { .. }),
                _,
            ) => p.recorded,
            (
                RecordAnswer::Final(RecordOutcome::AlreadyFinal { row })
                | RecordAnswer::Failure(FailureOutcome::AlreadyFinal { row }),
                _,
            ) => from_final(&p.hook, &p.dispatch_id, &row, p.new_digest.as_deref()),
            (RecordAnswer::Deferred(CheckpointState::Final { row }), _) => {
                from_final(&p.hook, &p.dispatch_id, &row, None)
            }
            (RecordAnswer::Deferred(_), _) => p.recorded,
        };
        if p.invoked {
            invoked(&mut o);
        }
        if p.retry {
            retried(&mut o);
        }
        outcomes[p.slot] = Some(o);
    }
    IntentKeys::reduce(outcomes.iter_mut().zip(own).filter_map(|(o, k)| Some((o.as_mut()?, k.as_deref()))));
    Ok(admitted(outcomes.into_iter().flatten().collect()))
}
