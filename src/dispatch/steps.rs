//! One dispatch as synchronous steps, so that a caller on one thread (the JS
//! thread) drives it with no hop of its own: [`Dispatcher::prepare`]
//! (`prepare.rs`) decides everything that needs no provider,
//! [`Dispatcher::begin`] queues a hook's checkpoint just before its provider
//! is called and gives the call's limit (on a journal that counts attempts
//! on its server, [`Dispatcher::count_attempt`] commits that checkpoint
//! first and `begin` follows its answer), and [`Dispatcher::complete`] (`complete.rs`) validates what the providers
//! answered and hands all the dispatch's records to the writer as one
//! command. The dispatch finishes on the writer thread after that command's
//! group commit.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::dialect::RegisteredHook;
use super::dialect::Source;
use super::keys::IntentKeys;
use super::outcome::{DispatchOutcome, HookOutcome};
use super::{Dispatcher, Installed};
use crate::journal::{Checkpoint, CheckpointState, DispatchRow, DispatchState, JournalError, Reply};

/// A provider call the caller makes, in hook_id order.
pub struct PlannedCall {
    pub slot: usize,
    pub hook: Arc<RegisteredHook>,
    /// The projected, public-safe input as JSON text.
    pub input_json: String,
    /// The identity the call answers for, and the attempt it counts as (0 for
    /// a verify-mode replay), so a caller in another process can report them.
    pub dispatch_id: String,
    pub attempt: u32,
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

impl Limit {
    /// One number for the JS side: the milliseconds, negated when the wall
    /// budget is the bound (then at least 1, so the sign always tells).
    pub fn signed_ms(self) -> i64 {
        let ms = i64::try_from(self.ms.min(u64::from(u32::MAX))).unwrap_or_default();
        if self.wall {
            -ms.max(1)
        } else {
            ms
        }
    }
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
        /// Its last attempt had failed (a retryable receipt).
        retry: bool,
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
    pub(super) request: Source,
    pub(super) installed: Arc<Installed>,
    pub(super) deadline: Instant,
    pub(super) slots: Vec<Slot>,
    /// Slot indices of the planned calls, in order.
    pub(super) calls: Vec<usize>,
    pub(super) claimed: Vec<String>,
    /// A queued checkpoint that failed (say BUSY) explains a record's `unknown_dispatch`.
    pub(super) checkpoint_error: Arc<Mutex<Option<JournalError>>>,
    /// Checkpoints noted in the attempt ledger and not queued yet (`begin_deferred`).
    pub(super) deferred: Vec<Checkpoint>,
}

pub(super) fn bad_ticket() -> JournalError {
    JournalError::InvalidArgument { what: "ticket" }
}

impl Dispatcher {
    /// Called just before the provider of `slot` is: queues its checkpoint
    /// (not awaited; the writer commits it before any later record) and gives
    /// the call's limit, or `None` when the wall budget is already spent (the
    /// provider is then not called; `complete` journals it as deferred).
    pub fn begin(&self, ticket: u64, slot: usize) -> Result<Option<Limit>, JournalError> {
        self.begin_with(ticket, slot, false)
    }

    /// [`Dispatcher::begin`] for a caller that settles most providers at
    /// once: where the journal allows it ([`crate::journal::Journal::defers_checkpoints`]),
    /// the attempt is only written to the attempt ledger here, and the
    /// checkpoint is queued with the dispatch's records by `complete` (one
    /// hand-off and one transaction), or by [`Dispatcher::flush_checkpoints`],
    /// which the caller makes once a provider has not answered within its turn.
    pub fn begin_deferred(&self, ticket: u64, slot: usize) -> Result<Option<Limit>, JournalError> {
        self.begin_with(ticket, slot, true)
    }

    fn begin_with(&self, ticket: u64, slot: usize, defer: bool) -> Result<Option<Limit>, JournalError> {
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
            let c = flight.request.checkpoint(hook, dispatch_id, *attempt);
            // Held back, the checkpoint commits with its record: one
            // transaction, inline or on the writer thread.
            if defer && self.journal.defers_checkpoints() {
                self.journal.note_attempt(&c)?;
                flight.deferred.push(c);
            } else if self.solo() {
                let then = noting_failure(&flight.checkpoint_error);
                self.journal.inline(|| self.journal.checkpoint_then(c, then))?;
            } else {
                self.journal.checkpoint_then(c, noting_failure(&flight.checkpoint_error))?;
            }
        }
        *begun = true;
        Ok(Some(match hook.timeout_ms.map(u64::from) {
            Some(own) => Limit { ms: own.min(remaining), wall: remaining < own },
            None => Limit { ms: remaining, wall: true },
        }))
    }

    /// Queues the checkpoints [`Dispatcher::begin_deferred`] held back, of
    /// every dispatch in flight: their providers are still running, and
    /// another process must see those attempts counted.
    pub fn flush_checkpoints(&self) {
        let mut flights = self.flights.lock().unwrap_or_else(|p| p.into_inner());
        for flight in flights.values_mut() {
            self.queue_checkpoints(std::mem::take(&mut flight.deferred), &flight.checkpoint_error);
        }
    }

    /// Queues held-back checkpoints. The attempt ledger holds them already,
    /// so one the writer refuses (closing) still counts.
    pub(super) fn queue_checkpoints(&self, deferred: Vec<Checkpoint>, failed: &Arc<Mutex<Option<JournalError>>>) {
        for c in deferred {
            let _ = self.journal.checkpoint_noted(c, noting_failure(failed));
        }
    }
}

/// A queued checkpoint's answer: a failure is kept for the record it explains.
fn noting_failure(failed: &Arc<Mutex<Option<JournalError>>>) -> crate::journal::Answer<CheckpointState> {
    let failed = failed.clone();
    Box::new(move |r| {
        if let Err(e) = r {
            *failed.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
        }
    })
}

impl Dispatcher {
    /// For a journal that counts attempts on its server
    /// ([`crate::journal::Journal::counts_attempts_on_server`]), called before
    /// [`Dispatcher::begin`]: commits the checkpoint of `slot`'s attempt,
    /// where every host sees it, and answers when it did. Then call
    /// [`Dispatcher::counted`] with the answer. None when nothing is to be
    /// counted (a verify-mode replay, a slot begun already, a spent wall
    /// budget, or a journal that counts in its attempt ledger file): call
    /// `begin` at once.
    pub fn count_attempt(&self, ticket: u64, slot: usize) -> Result<Option<Reply<CheckpointState>>, JournalError> {
        if !self.journal.counts_attempts_on_server() {
            return Ok(None);
        }
        let mut flights = self.flights.lock().unwrap_or_else(|p| p.into_inner());
        let flight = flights.get_mut(&ticket).ok_or_else(bad_ticket)?;
        if Instant::now() >= flight.deadline {
            return Ok(None);
        }
        let Some(Slot::Call { hook, dispatch_id, attempt, verify, begun, .. }) = flight.slots.get_mut(slot) else {
            return Err(bad_ticket());
        };
        if verify.is_some() || *begun {
            return Ok(None);
        }
        let c = flight.request.checkpoint(hook, dispatch_id, *attempt);
        *begun = true;
        Ok(Some(self.journal.count_attempt(c)))
    }

    /// After [`Dispatcher::count_attempt`]'s answer: the call's limit as
    /// [`Dispatcher::begin`] gives it, or `None` when the attempt could not
    /// be counted (the provider is then not called; the error explains the
    /// dispatch's own).
    pub fn counted(
        &self,
        ticket: u64,
        slot: usize,
        answer: Result<CheckpointState, JournalError>,
    ) -> Result<Option<Limit>, JournalError> {
        match answer {
            Ok(_) => self.begin(ticket, slot),
            Err(e) => {
                let flights = self.flights.lock().unwrap_or_else(|p| p.into_inner());
                let flight = flights.get(&ticket).ok_or_else(bad_ticket)?;
                *flight.checkpoint_error.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                Ok(None)
            }
        }
    }
}

/// How long past its hook's timeout a checkpointed attempt is still presumed
/// live (the time its dispatch needs to record the outcome).
pub(super) const LIVE_GRACE_MS: i64 = 250;

/// Whether the last counted attempt of an unfinished identity may still be
/// running in another process: it has no recorded outcome and its checkpoint
/// is younger than the hook's timeout plus [`LIVE_GRACE_MS`]. Past that it was
/// cut short (a crash) and stays counted; so it is at once when the process
/// that counted it is known to have ended (`DispatchRow::holder_ended`). A
/// claim serializes runs within this process, so only another process (or a
/// cancelled flight) gets here.
pub(super) fn may_be_live(row: &DispatchRow, hook: &RegisteredHook, wall_ms: u32) -> bool {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    row.state == DispatchState::Checkpointed
        && row.attempts >= 1
        && !row.holder_ended
        && now.saturating_sub(row.updated_at) <= i64::from(hook.timeout_ms.unwrap_or(wall_ms)) + LIVE_GRACE_MS
}

pub(super) fn admitted(hooks: Vec<HookOutcome>) -> DispatchOutcome {
    DispatchOutcome { admitted: true, refusal: None, hooks }
}

/// A dispatch every hook of which was answered while it was prepared.
pub(super) fn done_outcome(slots: Vec<Slot>) -> DispatchOutcome {
    let mut hooks: Vec<HookOutcome> = slots
        .into_iter()
        .filter_map(|s| match s {
            Slot::Done(o) => Some(*o),
            _ => None,
        })
        .collect();
    IntentKeys::reduce(hooks.iter_mut().map(|o| (o, None)));
    admitted(hooks)
}
