//! One dispatch as synchronous steps, so that a caller on one thread (the JS
//! thread) drives it with no hop of its own: [`Dispatcher::prepare`] decides
//! everything that needs no provider, [`Dispatcher::begin`] queues a hook's
//! checkpoint just before its provider is called and gives the call's limit,
//! and [`Dispatcher::complete`] (`complete.rs`) validates what the providers
//! answered and hands all the dispatch's records to the writer as one
//! command. The dispatch finishes on the writer thread after that command's
//! group commit.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::outcome::{DispatchOutcome, HookOutcome};
use super::profile::ReplayMode;
use super::projection::{dispatch_id_for, project};
use super::registry::RegisteredHook;
use super::request::{admit, DispatchRequest};
use super::run::{failed, from_final, Failure};
use super::{Dispatcher, Installed};
use crate::contract::FailureCode;
use crate::journal::{Checkpoint, DispatchRow, DispatchState, JournalError};

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

pub(super) enum Slot {
    Done(Box<HookOutcome>),
    Call {
        hook: Arc<RegisteredHook>,
        dispatch_id: String,
        attempt: u32,
        verify: Option<Box<DispatchRow>>,
        /// The identity had no row when prepared.
        fresh: bool,
        begun: bool,
    },
    /// Past a per-dispatch ceiling with no row yet: journaled as deferred.
    Defer {
        hook: Arc<RegisteredHook>,
        dispatch_id: String,
    },
    Exhaust {
        hook: Arc<RegisteredHook>,
        dispatch_id: String,
        used: u32,
    },
}

pub(super) struct Flight {
    pub(super) request: DispatchRequest,
    pub(super) installed: Arc<Installed>,
    deadline: Instant,
    pub(super) slots: Vec<Slot>,
    /// Slot indices of the planned calls, in order.
    pub(super) calls: Vec<usize>,
    pub(super) claimed: Vec<String>,
    /// A queued checkpoint that failed (say BUSY) explains a record's `unknown_dispatch`.
    pub(super) checkpoint_error: Arc<Mutex<Option<JournalError>>>,
}

pub(super) fn bad_ticket() -> JournalError {
    JournalError::InvalidArgument { what: "ticket" }
}

impl Dispatcher {
    /// Admission, projection, identities and each identity's standing (read
    /// on a reader connection), replays in `return` mode answered at once.
    pub fn prepare(&self, request: DispatchRequest) -> Result<Prepared, JournalError> {
        self.prepare_for(request, None)
    }

    /// `prepare` for one installed hook only (recovery; no hook-count ceiling).
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
        // Recovery runs one hook: the hook-count ceiling does not apply.
        let ceiling = if only_hook.is_some() { usize::MAX } else { self.profile.max_hooks_per_dispatch as usize };
        let ids: Vec<String> = hooks.iter().map(|h| dispatch_id_for(&request, h)).collect();
        let ticket = self.next_ticket.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // Claim before reading standings: a claim is released only after its
        // holder's records committed, so what we read next is current.
        let mut claimed: Vec<String> = ids.clone();
        if let Err(holder) = self.shared.try_claim(&claimed, ticket) {
            return Ok(Prepared::Wait(holder));
        }
        let deadline = Instant::now() + Duration::from_millis(u64::from(self.profile.max_dispatch_wall_ms));
        let mut slots = Vec::with_capacity(hooks.len());
        let mut calls = Vec::new();
        let mut plan = Vec::new();
        let mut unclaim = Vec::new();
        for (i, (hook, dispatch_id)) in hooks.into_iter().zip(ids).enumerate() {
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
            match &row {
                // Verification compares results; an exhausted identity has none.
                Some(row) if row_final && row.result_digest.is_none() => {
                    slots.push(Slot::Done(Box::new(from_final(&hook, &dispatch_id, row, None))));
                    unclaim.push(dispatch_id);
                    continue;
                }
                Some(row)
                    if !row_final
                        && row.attempts >= hook.registration.budget.max_invocations_per_dispatch
                        && !may_be_live(row, &hook) =>
                {
                    slots.push(Slot::Exhaust { hook: hook.clone(), dispatch_id, used: row.attempts });
                    continue;
                }
                _ => {}
            }
            // Only hooks whose provider would be called count against the
            // ceiling. One past it is not invoked but stays owed: a new
            // identity is journaled as deferred, an unfinished one already is.
            if calls.len() >= ceiling {
                let f = Failure::new(FailureCode::DispatchBudgetExhausted, None);
                slots.push(match row {
                    None => Slot::Defer { hook, dispatch_id: dispatch_id.clone() },
                    Some(_) => Slot::Done(Box::new(failed(&hook, &dispatch_id, 0, &f))),
                });
                unclaim.push(dispatch_id);
                continue;
            }
            let fresh = row.is_none();
            let (attempt, verify) = match row {
                Some(row) if row_final => (0, Some(Box::new(row))),
                // Another process may be running that attempt: share it, as
                // two processes invoking one fresh identity at once do.
                Some(row) if may_be_live(&row, &hook) => (row.attempts, None),
                Some(row) => (row.attempts + 1, None),
                None => (1, None),
            };
            calls.push(i);
            plan.push(PlannedCall { slot: i, hook: hook.clone(), input_json: input.to_string() });
            slots.push(Slot::Call { hook, dispatch_id, attempt, verify, fresh, begun: false });
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
    /// provider is then not called; `complete` journals it as deferred).
    pub fn begin(&self, ticket: u64, slot: usize) -> Result<Option<Limit>, JournalError> {
        let mut flights = self.flights.lock().unwrap_or_else(|p| p.into_inner());
        let flight = flights.get_mut(&ticket).ok_or_else(bad_ticket)?;
        let now = Instant::now();
        if now >= flight.deadline {
            return Ok(None);
        }
        let remaining = (flight.deadline - now).as_millis() as u64 + 1;
        let Some(Slot::Call { hook, dispatch_id, attempt, verify, begun, .. }) = flight.slots.get_mut(slot) else {
            return Err(bad_ticket());
        };
        // Every invocation (not a verify-mode replay) is counted by its
        // checkpoint, so one cut short by a crash still spends an attempt.
        if verify.is_none() && !*begun {
            let failed = flight.checkpoint_error.clone();
            let c = checkpoint_for(&flight.request, hook, dispatch_id, *attempt);
            self.journal.checkpoint_then(
                c,
                Box::new(move |r| {
                    if let Err(e) = r {
                        *failed.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                    }
                }),
            )?;
        }
        *begun = true;
        let own = u64::from(hook.registration.budget.timeout_ms);
        Ok(Some(Limit { ms: own.min(remaining), wall: remaining < own }))
    }
}

/// How long past its hook's timeout a checkpointed attempt is still presumed
/// live (the time its dispatch needs to record the outcome).
pub(super) const LIVE_GRACE_MS: i64 = 250;

/// Whether the last counted attempt of an unfinished identity may still be
/// running in another process: it has no recorded outcome and its checkpoint
/// is younger than the hook's timeout plus [`LIVE_GRACE_MS`]. Past that it was
/// cut short (a crash) and stays counted. A claim serializes runs within this
/// process, so only another process (or a cancelled flight) gets here.
fn may_be_live(row: &DispatchRow, hook: &RegisteredHook) -> bool {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    row.state == DispatchState::Checkpointed
        && row.attempts >= 1
        && now.saturating_sub(row.updated_at) <= i64::from(hook.registration.budget.timeout_ms) + LIVE_GRACE_MS
}

/// The checkpoint of `hook`'s identity preceding invocation `attempt` (0: deferred).
pub(super) fn checkpoint_for(
    request: &DispatchRequest,
    hook: &RegisteredHook,
    dispatch_id: &str,
    attempt: u32,
) -> Checkpoint {
    Checkpoint {
        dispatch_id: dispatch_id.to_owned(),
        hook_id: hook.registration.hook_id.clone(),
        capability_id: hook.registration.capability_id.clone(),
        receipt_id: request.receipt.receipt_id.clone(),
        effect_id: request.receipt.effect_id.clone(),
        event_kind: request.event.event_kind.clone(),
        registration_digest: hook.digest.clone(),
        request_json: serde_json::to_string(request).unwrap_or_default(),
        attempt,
    }
}

pub(super) fn admitted(hooks: Vec<HookOutcome>) -> DispatchOutcome {
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
