//! One dispatch as synchronous steps, so that a caller on one thread (the JS
//! thread) drives it with no hop of its own: [`Dispatcher::prepare`] decides
//! everything that needs no provider, [`Dispatcher::begin`] queues a hook's
//! checkpoint just before its provider is called and gives the call's limit,
//! and [`Dispatcher::complete`] validates what the providers answered and
//! hands all the dispatch's records to the writer as one command. The
//! dispatch finishes on the writer thread after that command's group commit.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::outcome::{DispatchOutcome, HookOutcome, HookOutcomeKind};
use super::profile::ReplayMode;
use super::projection::{dispatch_id_for, project};
use super::registry::RegisteredHook;
use super::request::{admit, DispatchRequest};
use super::run::{accept, failed, from_final, outcome, receipt, CallResult, Failure};
use super::stored::stored_intent;
use super::{Dispatcher, Finished, Installed};
use crate::contract::{DispatchStatus, FailureCode, FailureDetail, ResultStatus};
use crate::journal::{
    Checkpoint, DispatchRow, FailureOutcome, FailureRecord, FinalRecord, FinalStatus, JournalError, RecordAnswer,
    RecordCommand, RecordOutcome,
};

/// A provider call the caller makes, in hook_id order.
pub struct PlannedCall {
    pub slot: usize,
    pub hook: Arc<RegisteredHook>,
    /// The projected, public-safe input as JSON text.
    pub input_json: String,
}

pub struct Plan {
    pub ticket: u64,
    pub calls: Vec<PlannedCall>,
}

/// What `prepare` decided.
pub enum Prepared {
    /// Refused, or every hook answered without a provider call or a record
    /// (replays, input rejections, ceilings).
    Done(DispatchOutcome),
    /// An identity of this dispatch is in flight in this process under that
    /// ticket: prepare again once it finished (it then replays or retries).
    Wait(u64),
    /// Call `calls` (each after `begin`), then `complete`.
    Run(Plan),
}

/// How long one call may take, counted from the call (start-to-close).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limit {
    pub ms: u64,
    /// The dispatch's wall budget, not the hook's own timeout, is the bound.
    pub wall: bool,
}

pub enum Completion {
    Done(DispatchOutcome),
    /// Finishes after the group commit holding its records (see [`Finished`]).
    Pending,
}

enum Slot {
    Done(Box<HookOutcome>),
    Call {
        hook: Arc<RegisteredHook>,
        dispatch_id: String,
        attempt: u32,
        verify: Option<Box<DispatchRow>>,
        checkpoint: bool,
        begun: bool,
    },
    Exhaust {
        hook: Arc<RegisteredHook>,
        dispatch_id: String,
        used: u32,
    },
}

pub(super) struct Flight {
    request: DispatchRequest,
    installed: Arc<Installed>,
    deadline: Instant,
    slots: Vec<Slot>,
    /// Slot indices of the planned calls, in order.
    calls: Vec<usize>,
    claimed: Vec<String>,
    /// A queued checkpoint that failed (say BUSY) explains a record's `unknown_dispatch`.
    checkpoint_error: Arc<Mutex<Option<JournalError>>>,
}

/// A record's hook, with the outcome to report when it is recorded as made.
struct Pending {
    slot: usize,
    hook: Arc<RegisteredHook>,
    dispatch_id: String,
    recorded: HookOutcome,
    new_digest: Option<String>,
}

fn bad_ticket() -> JournalError {
    JournalError::InvalidArgument { what: "ticket" }
}

impl Dispatcher {
    /// Admission, projection, identities and each identity's standing (read
    /// on a reader connection), replays in `return` mode answered at once.
    pub fn prepare(&self, request: DispatchRequest) -> Result<Prepared, JournalError> {
        self.prepare_for(request, None)
    }

    /// `prepare` for one installed hook only (recovery; no per-dispatch ceiling).
    pub fn prepare_for(&self, request: DispatchRequest, only_hook: Option<&str>) -> Result<Prepared, JournalError> {
        if self.closing.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(JournalError::Closed);
        }
        self.shared.start_running();
        let prepared = self.prepare_inner(request, only_hook);
        if !matches!(prepared, Ok(Prepared::Run(_))) {
            self.shared.stop_running();
        }
        prepared
    }

    fn prepare_inner(&self, request: DispatchRequest, only_hook: Option<&str>) -> Result<Prepared, JournalError> {
        if let Err(refusal) = admit(&request, self.profile.enabled) {
            return Ok(Prepared::Done(DispatchOutcome::refused(refusal)));
        }
        let installed = self.snapshot();
        let hooks: Vec<Arc<RegisteredHook>> = installed
            .registry
            .subscribed(&request.event.event_kind)
            .filter(|h| self.profile.allows(&h.registration.hook_id))
            .filter(|h| only_hook.is_none_or(|id| h.registration.hook_id == id))
            .cloned()
            .collect();
        let ceiling = if only_hook.is_some() { usize::MAX } else { self.profile.max_hooks_per_dispatch as usize };
        let ids: Vec<String> = hooks.iter().map(|h| dispatch_id_for(&request, h)).collect();
        let ticket = self.next_ticket.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // Claim before reading standings: a claim is released only after its
        // holder's records committed, so what we read next is current.
        let mut claimed: Vec<String> = ids.iter().take(ceiling).cloned().collect();
        if let Err(holder) = self.shared.try_claim(&claimed, ticket) {
            return Ok(Prepared::Wait(holder));
        }
        let deadline = Instant::now() + Duration::from_millis(u64::from(self.profile.max_dispatch_wall_ms));
        let mut slots = Vec::with_capacity(hooks.len());
        let mut calls = Vec::new();
        let mut plan = Vec::new();
        let mut unclaim = Vec::new();
        for (i, (hook, dispatch_id)) in hooks.into_iter().zip(ids).enumerate() {
            // Hooks past the per-dispatch ceiling are not started: nothing is
            // invoked or recorded, so a later dispatch with room runs them.
            if i >= ceiling {
                let f = Failure::new(FailureCode::DispatchBudgetExhausted, None);
                slots.push(Slot::Done(Box::new(failed(&hook, &dispatch_id, 0, &f))));
                continue;
            }
            let row = match self.journal.get_dispatch(&dispatch_id) {
                Ok(row) => row,
                Err(e) => {
                    self.shared.release(&claimed, ticket);
                    return Err(e);
                }
            };
            let row_final = row.as_ref().is_some_and(|r| r.state.is_final());
            if row_final && self.profile.replay == ReplayMode::Return {
                if let Some(row) = &row {
                    slots.push(Slot::Done(Box::new(from_final(&hook, &dispatch_id, row, None))));
                }
                unclaim.push(dispatch_id);
                continue;
            }
            // An input the boundary cannot prove public-safe is neither sent
            // nor journaled (the request itself may carry what must not be stored).
            let input = match project(&request, &hook, &dispatch_id) {
                Ok(input) => input,
                Err(v) => {
                    let f = Failure::new(FailureCode::InputBoundaryRejected, v.first().map(|v| v.rule));
                    slots.push(Slot::Done(Box::new(failed(&hook, &dispatch_id, 0, &f))));
                    unclaim.push(dispatch_id);
                    continue;
                }
            };
            let slot = match row {
                // Verification compares results; an exhausted identity has none.
                Some(row) if row_final && row.result_digest.is_none() => {
                    unclaim.push(dispatch_id.clone());
                    Slot::Done(Box::new(from_final(&hook, &dispatch_id, &row, None)))
                }
                Some(row) if row_final => Slot::Call {
                    hook: hook.clone(),
                    dispatch_id,
                    attempt: 0,
                    verify: Some(Box::new(row)),
                    checkpoint: false,
                    begun: false,
                },
                Some(row) if row.attempts >= hook.registration.budget.max_invocations_per_dispatch => {
                    Slot::Exhaust { hook: hook.clone(), dispatch_id, used: row.attempts }
                }
                Some(row) => Slot::Call {
                    hook: hook.clone(),
                    dispatch_id,
                    attempt: row.attempts + 1,
                    verify: None,
                    checkpoint: false,
                    begun: false,
                },
                None => Slot::Call {
                    hook: hook.clone(),
                    dispatch_id,
                    attempt: 1,
                    verify: None,
                    checkpoint: true,
                    begun: false,
                },
            };
            if matches!(slot, Slot::Call { .. }) {
                calls.push(i);
                plan.push(PlannedCall { slot: i, hook, input_json: input.to_string() });
            }
            slots.push(slot);
        }
        self.shared.release(&unclaim, ticket);
        claimed.retain(|id| !unclaim.contains(id));
        if !slots.iter().any(|s| !matches!(s, Slot::Done(_))) {
            self.shared.release(&claimed, ticket);
            return Ok(Prepared::Done(done_outcome(slots)));
        }
        let flight = Flight { request, installed, deadline, slots, calls, claimed, checkpoint_error: Arc::default() };
        self.flights.lock().unwrap_or_else(|p| p.into_inner()).insert(ticket, flight);
        Ok(Prepared::Run(Plan { ticket, calls: plan }))
    }

    /// Called just before the provider of `slot` is: queues its checkpoint
    /// (not awaited; the writer commits it before any later record) and gives
    /// the call's limit, or `None` when the wall budget is already spent (the
    /// provider is then not called and nothing is recorded for it).
    pub fn begin(&self, ticket: u64, slot: usize) -> Result<Option<Limit>, JournalError> {
        let mut flights = self.flights.lock().unwrap_or_else(|p| p.into_inner());
        let flight = flights.get_mut(&ticket).ok_or_else(bad_ticket)?;
        let now = Instant::now();
        if now >= flight.deadline {
            return Ok(None);
        }
        let remaining = (flight.deadline - now).as_millis() as u64 + 1;
        let Some(Slot::Call { hook, dispatch_id, checkpoint, begun, .. }) = flight.slots.get_mut(slot) else {
            return Err(bad_ticket());
        };
        if *checkpoint {
            let failed = flight.checkpoint_error.clone();
            let c = Checkpoint {
                dispatch_id: dispatch_id.clone(),
                hook_id: hook.registration.hook_id.clone(),
                capability_id: hook.registration.capability_id.clone(),
                receipt_id: flight.request.receipt.receipt_id.clone(),
                effect_id: flight.request.receipt.effect_id.clone(),
                event_kind: flight.request.event.event_kind.clone(),
                registration_digest: hook.digest.clone(),
                request_json: serde_json::to_string(&flight.request).unwrap_or_default(),
            };
            self.journal.checkpoint_then(
                c,
                Box::new(move |r| {
                    if let Err(e) = r {
                        *failed.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                    }
                }),
            )?;
            *checkpoint = false;
        }
        *begun = true;
        let own = u64::from(hook.registration.budget.timeout_ms);
        Ok(Some(Limit { ms: own.min(remaining), wall: remaining < own }))
    }

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
        for (i, (slot, result)) in flight.slots.into_iter().zip(by_slot).enumerate() {
            let result = result.unwrap_or(CallResult::NotStarted);
            match slot {
                Slot::Done(o) => outcomes.push(Some(*o)),
                Slot::Call { hook, dispatch_id, begun: false, .. } => {
                    let f = Failure::new(FailureCode::DispatchBudgetExhausted, None);
                    outcomes.push(Some(failed(&hook, &dispatch_id, 0, &f)));
                }
                Slot::Call { hook, dispatch_id, verify: Some(row), .. } => {
                    outcomes.push(Some(match accept(&hook, kinds, result, &dispatch_id) {
                        Ok(accepted) => from_final(&hook, &dispatch_id, &row, Some(&accepted.digest)),
                        Err(f) => failed(&hook, &dispatch_id, 0, &f),
                    }));
                }
                Slot::Call { hook, dispatch_id, attempt, .. } => {
                    outcomes.push(None);
                    let (record, recorded, new_digest) = match accept(&hook, kinds, result, &dispatch_id) {
                        Ok(accepted) => {
                            let (status, final_status, kind) = match accepted.result.status {
                                ResultStatus::Proposed => {
                                    (DispatchStatus::Proposed, FinalStatus::Proposed, HookOutcomeKind::Recorded)
                                }
                                ResultStatus::NotApplicable => (
                                    DispatchStatus::NotApplicable,
                                    FinalStatus::NotApplicable,
                                    HookOutcomeKind::NotApplicable,
                                ),
                            };
                            let r =
                                receipt(&flight.request, &hook, &dispatch_id, status, attempt, Some(&accepted), None);
                            let record = RecordCommand::Final(FinalRecord {
                                dispatch_id: dispatch_id.clone(),
                                attempt,
                                status: final_status,
                                result_digest: Some(accepted.digest.clone()),
                                intents: accepted.result.intents.iter().map(stored_intent).collect(),
                                failure: None,
                            });
                            let recorded =
                                HookOutcome { receipt: Some(r), ..outcome(&hook, &dispatch_id, kind, attempt) };
                            (record, recorded, Some(accepted.digest))
                        }
                        Err(f) => {
                            let record = RecordCommand::Failure(FailureRecord {
                                dispatch_id: dispatch_id.clone(),
                                attempt,
                                code: f.code.as_str().into(),
                                rule: f.rule.map(|r| r.as_str().into()),
                            });
                            (record, failed(&hook, &dispatch_id, attempt, &f), None)
                        }
                    };
                    records.push(record);
                    pending.push(Pending { slot: i, hook, dispatch_id, recorded, new_digest });
                }
                Slot::Exhaust { hook, dispatch_id, used } => {
                    outcomes.push(None);
                    let detail = FailureDetail { code: FailureCode::DispatchBudgetExhausted, rule: None };
                    let r = receipt(
                        &flight.request,
                        &hook,
                        &dispatch_id,
                        DispatchStatus::Exhausted,
                        used,
                        None,
                        Some(detail),
                    );
                    records.push(RecordCommand::Final(FinalRecord {
                        dispatch_id: dispatch_id.clone(),
                        attempt: used,
                        status: FinalStatus::Exhausted,
                        result_digest: None,
                        intents: Vec::new(),
                        failure: Some((FailureCode::DispatchBudgetExhausted.as_str().into(), None)),
                    }));
                    let recorded = HookOutcome {
                        receipt: Some(r),
                        failure_code: Some(FailureCode::DispatchBudgetExhausted),
                        ..outcome(&hook, &dispatch_id, HookOutcomeKind::Exhausted, used)
                    };
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
        match self.journal.record_many(records, then) {
            Ok(()) => Ok(Completion::Pending),
            Err(e) => finish_now(Err(e)),
        }
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

fn admitted(hooks: Vec<HookOutcome>) -> DispatchOutcome {
    DispatchOutcome { admitted: true, refusal: None, hooks }
}

fn done_outcome(slots: Vec<Slot>) -> DispatchOutcome {
    admitted(
        slots
            .into_iter()
            .filter_map(|s| match s {
                Slot::Done(o) => Some(*o),
                _ => None,
            })
            .collect(),
    )
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
            RecordAnswer::Failure(FailureOutcome::AlreadyFinal { row }) => {
                from_final(&p.hook, &p.dispatch_id, &row, None)
            }
        });
    }
    Ok(admitted(outcomes.into_iter().flatten().collect()))
}
