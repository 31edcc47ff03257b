//! The last step of a dispatch: the providers' results validated, every
//! record of the dispatch handed to the writer as one command, and the
//! outcome settled on the writer thread once that command's commit is known.

use std::sync::{Arc, Mutex};

use super::dialect::RegisteredHook;
use super::judged::{Accepted, Failure};
use super::outcome::{DispatchOutcome, HookOutcome, HookOutcomeKind};
use super::profile::Profile;
use super::run::{accept, failed, from_final, outcome, set_receipt, CallResult};
use super::steps::{admitted, bad_ticket, Completion, Slot};
use super::{Dispatcher, Finished};
use crate::contract::{DispatchStatus, FailureCode, FailureDetail, ResultStatus};
use crate::journal::{
    CheckpointState, FailureOutcome, FailureRecord, FinalRecord, FinalStatus, JournalError, RecordAnswer,
    RecordCommand, RecordOutcome,
};

/// A record's hook, with the outcome to report when it is recorded as made.
struct Pending {
    slot: usize,
    hook: Arc<RegisteredHook>,
    dispatch_id: String,
    recorded: HookOutcome,
    new_digest: Option<String>,
}

impl Dispatcher {
    /// Validates the calls' results (one per planned call, in order) and hands
    /// every record of the dispatch to the writer as one command.
    pub fn complete(&self, ticket: u64, results: Vec<CallResult>) -> Result<Completion, JournalError> {
        let flight = self.flights.lock().unwrap_or_else(|p| p.into_inner()).remove(&ticket).ok_or_else(bad_ticket)?;
        let claimed = flight.claimed.clone();
        let finish_now = |outcome| {
            self.shared.release(&claimed, ticket);
            self.shared.stop_running();
            outcome
        };
        if results.len() != flight.calls.len() {
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
        for (i, (slot, result)) in flight.slots.into_iter().zip(by_slot).enumerate() {
            let result = result.unwrap_or(CallResult::NotStarted);
            match slot {
                Slot::Done(o) => {
                    keys.replayed(&o);
                    outcomes.push(Some(*o))
                }
                // Not started (the wall budget was spent): it stays owed.
                Slot::Call { hook, dispatch_id, begun: false, fresh: true, .. } | Slot::Defer { hook, dispatch_id } => {
                    outcomes.push(None);
                    records.push(RecordCommand::Defer(flight.request.checkpoint(&hook, &dispatch_id, 0)));
                    let f = Failure::new(FailureCode::DispatchBudgetExhausted, None);
                    let recorded = failed(&hook, &dispatch_id, 0, &f);
                    pending.push(Pending { slot: i, hook, dispatch_id, recorded, new_digest: None });
                }
                // Not started, and already owed by its unfinished row.
                Slot::Call { hook, dispatch_id, begun: false, .. } => {
                    let f = Failure::new(FailureCode::DispatchBudgetExhausted, None);
                    outcomes.push(Some(failed(&hook, &dispatch_id, 0, &f)));
                }
                Slot::Call { hook, dispatch_id, verify: Some(row), .. } => {
                    let mut o = match accept(&hook, kinds, result, &dispatch_id, &flight.request) {
                        Ok(accepted) => from_final(&hook, &dispatch_id, &row, Some(&accepted.digest)),
                        Err(f) => failed(&hook, &dispatch_id, 0, &f),
                    };
                    invoked(&mut o);
                    keys.replayed(&o);
                    outcomes.push(Some(o));
                }
                Slot::Call { hook, dispatch_id, attempt, .. } => {
                    outcomes.push(None);
                    let accepted = accept(&hook, kinds, result, &dispatch_id, &flight.request)
                        .and_then(|a| keys.admit(a))
                        .and_then(|a| totals.admit(a));
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
                            let record = RecordCommand::Final(FinalRecord {
                                dispatch_id: dispatch_id.clone(),
                                attempt,
                                status: final_status,
                                result_digest: Some(accepted.digest.clone()),
                                intents: accepted.intents,
                                failure: None,
                            });
                            (record, recorded, Some(accepted.digest))
                        }
                        Err(f) => {
                            let record = RecordCommand::Failure(FailureRecord {
                                dispatch_id: dispatch_id.clone(),
                                attempt,
                                code: rules.stored_code(&f).into(),
                                rule: f.rule.map(|r| r.as_str().into()),
                            });
                            (record, failed(&hook, &dispatch_id, attempt, &f), None)
                        }
                    };
                    invoked(&mut recorded);
                    records.push(record);
                    pending.push(Pending { slot: i, hook, dispatch_id, recorded, new_digest });
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
                    pending.push(Pending { slot: i, hook, dispatch_id, recorded, new_digest: None });
                }
            }
        }
        if records.is_empty() {
            return finish_now(Ok(Completion::Done(admitted(outcomes.into_iter().flatten().collect()))));
        }
        let shared = self.shared.clone();
        let checkpoint_error = flight.checkpoint_error.clone();
        let then_claimed = claimed.clone();
        let then = Box::new(move |answers: Result<Vec<Result<RecordAnswer, JournalError>>, JournalError>| {
            let outcome = settle(outcomes, pending, answers, &checkpoint_error);
            shared.release(&then_claimed, ticket);
            shared.finish(Finished { ticket, outcome });
            shared.stop_running();
        });
        // An inline commit finishes the dispatch inside `record_many`: its
        // caller gets the outcome now instead of from the next delivery.
        let inline = self.solo();
        let queued = if inline {
            self.shared.hold(ticket);
            self.journal.inline(|| self.journal.record_many(records, then))
        } else {
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
    pub(super) fn solo(&self) -> bool {
        self.journal.commits_inline() && *self.shared.running.borrow() == 1
    }

    /// Drops a prepared dispatch its caller will not complete: nothing more is
    /// recorded for it (a queued checkpoint stays for `recover()`).
    pub fn cancel(&self, ticket: u64) {
        if let Some(flight) = self.flights.lock().unwrap_or_else(|p| p.into_inner()).remove(&ticket) {
            self.shared.release(&flight.claimed, ticket);
            self.shared.stop_running();
        }
    }
}

/// Marks an outcome whose provider this dispatch called.
fn invoked(o: &mut HookOutcome) {
    if let Some(end) = o.shipped.as_deref_mut() {
        end.invoked = true;
    }
}

/// The `idempotency_key`s of a shipped dispatch's intents so far, in hook_id
/// order: a later hook reusing one gets `intent_key_conflict`, recorded as
/// its attempt's failure. Contract-v0 results carry no key and pass.
#[derive(Default)]
struct IntentKeys(std::collections::HashSet<String>);

impl IntentKeys {
    /// An earlier hook's receipt, replayed or verified, holds its key.
    fn replayed(&mut self, o: &HookOutcome) {
        if let Some(i) = o.shipped.as_deref().and_then(|e| e.receipt.as_ref()).and_then(|r| r.intent.as_ref()) {
            self.0.insert(i.idempotency_key.clone());
        }
    }

    fn admit(&mut self, a: Accepted) -> Result<Accepted, Failure> {
        match &a.shipped_intent {
            Some(i) if !self.0.insert(i.idempotency_key.clone()) => Err(Failure::intent_key_conflict()),
            _ => Ok(a),
        }
    }
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

/// The dispatch's outcome once its records' fate is known.
fn settle(
    mut outcomes: Vec<Option<HookOutcome>>,
    pending: Vec<Pending>,
    answers: Result<Vec<Result<RecordAnswer, JournalError>>, JournalError>,
    checkpoint_error: &Mutex<Option<JournalError>>,
) -> Result<DispatchOutcome, JournalError> {
    let explain = |e: JournalError| match (&e, checkpoint_error.lock().unwrap_or_else(|p| p.into_inner()).clone()) {
        (JournalError::UnknownDispatch, Some(cause)) => cause,
        _ => e,
    };
    let answers = answers.map_err(explain)?;
    for (p, answer) in pending.into_iter().zip(answers) {
        outcomes[p.slot] = Some(match answer.map_err(explain)? {
            RecordAnswer::Final(RecordOutcome::Recorded) | RecordAnswer::Failure(FailureOutcome::Recorded { .. }) => {
                p.recorded
            }
            RecordAnswer::Final(RecordOutcome::AlreadyFinal { row }) => {
                from_final(&p.hook, &p.dispatch_id, &row, p.new_digest.as_deref())
            }
            RecordAnswer::Failure(FailureOutcome::AlreadyFinal { row })
            | RecordAnswer::Deferred(CheckpointState::Final { row }) => from_final(&p.hook, &p.dispatch_id, &row, None),
            RecordAnswer::Deferred(_) => p.recorded,
        });
    }
    Ok(admitted(outcomes.into_iter().flatten().collect()))
}
