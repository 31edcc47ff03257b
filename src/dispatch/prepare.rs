//! Step 1 of a dispatch: admission, projection, identities, and each
//! identity's standing, with replays in `return` mode answered at once (see
//! `steps.rs` for the steps after it). Many requests prepared together (a
//! catch-up chunk, or the dispatches one JS turn started) read every
//! identity's standing in one query: on PostgreSQL one round trip for all
//! of them instead of one each, on the thread that is also running the
//! providers.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::dialect::{PlannedHook, RegisteredHook, Source, Standing};
use super::judged::Failure;
use super::outcome::{DispatchOutcome, HookOutcome};
use super::profile::ReplayMode;
use super::run::{failed, from_final, retried};
use super::steps::{admitted, done_outcome, may_be_live, Flight, Plan, PlannedCall, Prepared, Slot};
use super::{Dispatcher, Installed};
use crate::contract::FailureCode;
use crate::journal::{DispatchRow, DispatchState, JournalError};

/// A request past admission whose identities its ticket now holds: what is
/// left is reading their standings and planning.
struct Claimed {
    request: Source,
    installed: Arc<Installed>,
    hooks: Vec<Arc<RegisteredHook>>,
    ids: Vec<String>,
    ceiling: usize,
    ticket: u64,
}

enum Admission {
    /// Refused, or waiting for another ticket: nothing to read.
    Decided(Prepared),
    Claimed(Box<Claimed>),
}

/// The journal errors after which a failed `prepare` is tried again.
pub const PREPARE_RETRYABLE: [JournalError; 1] = [JournalError::Unavailable];

/// Retries of a `prepare` whose journal was unavailable.
const PREPARE_RETRIES: u32 = 6;

/// How long to wait before trying again a `prepare` that failed with
/// `error`, `tries` retries in; None: the failure is final. Its standing
/// reads run on the caller's thread, which is usually the JS thread and must
/// not sleep there, so the caller waits with a timer instead: 25 ms doubling,
/// about 1.6 s in all, enough to ride out a database server's restart.
pub fn prepare_retry_after(error: &JournalError, tries: u32) -> Option<Duration> {
    match error {
        JournalError::Unavailable if tries < PREPARE_RETRIES => Some(Duration::from_millis(25 << tries)),
        _ => None,
    }
}

impl Dispatcher {
    /// Prepares one request.
    pub fn prepare(&self, request: impl Into<Source>) -> Result<Prepared, JournalError> {
        self.prepare_for(request.into(), None)
    }

    /// `prepare` for one installed hook only (recovery; no hook-count ceiling).
    pub fn prepare_for(&self, request: impl Into<Source>, only_hook: Option<&str>) -> Result<Prepared, JournalError> {
        let mut prepared = self.prepare_many(vec![(request.into(), only_hook)])?;
        prepared.pop().ok_or(JournalError::Closed)
    }

    /// Prepares requests in order (each with its optional only hook), reading
    /// the standings of all their identities at once. A failed read prepares
    /// none of them, and releases every claim taken.
    pub fn prepare_many(&self, requests: Vec<(Source, Option<&str>)>) -> Result<Vec<Prepared>, JournalError> {
        if self.closing.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(JournalError::Closed);
        }
        // The binding parses each source in its runtime's dialect; a Rust
        // caller handing another is misuse, refused before anything runs.
        if requests.iter().any(|(r, _)| r.dialect() != self.rules.dialect()) {
            return Err(JournalError::InvalidArgument { what: "dialect" });
        }
        let admissions: Vec<Admission> = requests
            .into_iter()
            .map(|(request, only_hook)| {
                self.shared.start_running();
                self.admit_and_claim(request, only_hook)
            })
            .collect();
        let ids: Vec<String> = admissions
            .iter()
            .filter_map(|a| match a {
                Admission::Claimed(c) => Some(c.ids.iter().cloned()),
                Admission::Decided(_) => None,
            })
            .flatten()
            .collect();
        let rows = match if ids.is_empty() { Ok(Vec::new()) } else { self.journal.get_dispatches(&ids) } {
            Ok(rows) if rows.len() == ids.len() => rows,
            failed => {
                for a in &admissions {
                    if let Admission::Claimed(c) = a {
                        self.shared.release(&c.ids, c.ticket);
                    }
                    self.shared.stop_running();
                }
                return Err(failed.err().unwrap_or(JournalError::Closed));
            }
        };
        let mut rows = rows.into_iter();
        let mut out = Vec::with_capacity(admissions.len());
        for admission in admissions {
            let prepared = match admission {
                Admission::Decided(p) => p,
                Admission::Claimed(c) => {
                    let mine: Vec<Option<DispatchRow>> = rows.by_ref().take(c.ids.len()).collect();
                    self.plan(*c, mine)
                }
            };
            if !matches!(prepared, Prepared::Run(_)) {
                self.shared.stop_running();
            }
            out.push(prepared);
        }
        Ok(out)
    }

    fn admit_and_claim(&self, request: Source, only_hook: Option<&str>) -> Admission {
        if let Err(refusal) = request.admit(self.profile.enabled) {
            return Admission::Decided(Prepared::Done(DispatchOutcome::refused(refusal)));
        }
        let installed = self.snapshot();
        let hooks: Vec<Arc<RegisteredHook>> = installed
            .registry
            .subscribed(request.event_kind())
            .filter(|h| self.profile.allows(&h.hook_id))
            .filter(|h| only_hook.is_none_or(|id| h.hook_id == id))
            .cloned()
            .collect();
        // Recovery runs one hook: the hook-count ceiling does not apply.
        let ceiling = if only_hook.is_some() { usize::MAX } else { self.profile.max_hooks_per_dispatch as usize };
        let ids: Vec<String> = hooks.iter().map(|h| request.dispatch_id(h)).collect();
        let ticket = self.next_ticket.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // Claim before reading standings: a claim is released only after its
        // holder's records committed, so what is read next is current.
        if let Err(holder) = self.shared.try_claim(&ids, ticket) {
            return Admission::Decided(Prepared::Wait(holder));
        }
        Admission::Claimed(Box::new(Claimed { request, installed, hooks, ids, ceiling, ticket }))
    }

    /// Plans a claimed request from its identities' rows (in `ids` order).
    fn plan(&self, c: Claimed, rows: Vec<Option<DispatchRow>>) -> Prepared {
        let Claimed { request, installed, hooks, ids, ceiling, ticket } = c;
        let mut claimed: Vec<String> = ids.clone();
        let deadline = Instant::now() + Duration::from_millis(u64::from(self.profile.max_dispatch_wall_ms));
        let mut slots = Vec::with_capacity(hooks.len());
        let mut calls = Vec::new();
        let mut plan = Vec::new();
        let mut unclaim = Vec::new();
        let all: Vec<(Arc<RegisteredHook>, String)> = hooks.iter().cloned().zip(ids.iter().cloned()).collect();
        for (i, ((hook, dispatch_id), row)) in hooks.into_iter().zip(ids).zip(rows).enumerate() {
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
            let input = match request.input(&hook, &dispatch_id) {
                Ok(input) => input,
                Err(v) => {
                    let f = Failure::rejected(FailureCode::InputBoundaryRejected, v.first());
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
                        && row.attempts >= hook.max_attempts
                        && !may_be_live(row, &hook, self.profile.max_dispatch_wall_ms) =>
                {
                    // A dialect without an exhausted receipt isolates the
                    // identity before its provider runs and records nothing.
                    if let Some(f) = hook.rules.attempts_spent() {
                        let mut o = failed(&hook, &dispatch_id, row.attempts, &f);
                        if row.state == DispatchState::Failed {
                            retried(&mut o);
                        }
                        slots.push(Slot::Done(Box::new(o)));
                        unclaim.push(dispatch_id);
                    } else {
                        slots.push(Slot::Exhaust { hook: hook.clone(), dispatch_id, used: row.attempts });
                    }
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
                    Some(row) => {
                        let mut o = failed(&hook, &dispatch_id, 0, &f);
                        if row.state == DispatchState::Failed {
                            retried(&mut o);
                        }
                        Slot::Done(Box::new(o))
                    }
                });
                unclaim.push(dispatch_id);
                continue;
            }
            let fresh = row.is_none();
            let retry = row.as_ref().is_some_and(|r| r.state == DispatchState::Failed);
            let (attempt, verify) = match row {
                Some(row) if row_final => (0, Some(Box::new(row))),
                // Another process may be running that attempt: share it, as
                // two processes invoking one fresh identity at once do.
                Some(row) if may_be_live(&row, &hook, self.profile.max_dispatch_wall_ms) => (row.attempts, None),
                Some(row) => (row.attempts + 1, None),
                None => (1, None),
            };
            calls.push(i);
            plan.push(PlannedCall {
                slot: i,
                hook: hook.clone(),
                // Straight into bytes: `Value`'s `Display` goes through a formatter, which costs more.
                input_json: serde_json::to_string(&input).unwrap_or_else(|_| input.to_string()),
                dispatch_id: dispatch_id.clone(),
                attempt,
            });
            slots.push(Slot::Call { hook, dispatch_id, attempt, verify, fresh, retry, begun: false });
        }
        if let Some(f) = self.rules.admit_batch(&planned(&slots, &all), self.registered_count()) {
            // Refused whole: no provider runs and nothing is written.
            self.shared.release(&claimed, ticket);
            let hooks = all.iter().map(|(hook, id)| batch_refused(failed(hook, id, 0, &f))).collect();
            return Prepared::Done(admitted(hooks));
        }
        self.shared.release(&unclaim, ticket);
        claimed.retain(|id| !unclaim.contains(id));
        if !slots.iter().any(|s| !matches!(s, Slot::Done(_))) {
            self.shared.release(&claimed, ticket);
            return Prepared::Done(done_outcome(slots));
        }
        let flight = Flight {
            request,
            installed,
            deadline,
            slots,
            calls,
            claimed,
            checkpoint_error: Arc::default(),
            deferred: Vec::new(),
        };
        self.flights.lock().unwrap_or_else(|p| p.into_inner()).insert(ticket, flight);
        Prepared::Run(Plan { ticket, calls: plan })
    }
}

/// The slots of a dispatch as its dialect's batch admission reads them.
fn planned<'a>(slots: &'a [Slot], all: &'a [(Arc<RegisteredHook>, String)]) -> Vec<PlannedHook<'a>> {
    slots
        .iter()
        .zip(all)
        .map(|(slot, (hook, dispatch_id))| {
            let (standing, retried) = match slot {
                Slot::Done(o) => (Standing::Done(o), o.shipped.as_deref().is_some_and(|e| e.retried)),
                Slot::Call { verify, retry, .. } => (Standing::Call { terminal: verify.as_deref() }, *retry),
                Slot::Defer { .. } | Slot::Exhaust { .. } => (Standing::Deferred, false),
            };
            PlannedHook { hook, dispatch_id, standing, retried }
        })
        .collect()
}

/// A hook's outcome in a dispatch refused whole.
fn batch_refused(mut o: HookOutcome) -> HookOutcome {
    if let Some(end) = o.shipped.as_deref_mut() {
        end.batch_refused = true;
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An unavailable journal is tried again six times, 25 ms doubling (about
    /// 1.6 s in all); anything else is final at once.
    #[test]
    fn only_an_unavailable_journal_is_retried_and_not_for_ever() {
        let waits: Vec<Duration> =
            (0..).map_while(|tries| prepare_retry_after(&JournalError::Unavailable, tries)).collect();
        assert_eq!(waits.len(), 6);
        assert_eq!(waits.iter().sum::<Duration>(), Duration::from_millis(1575));
        for final_error in [JournalError::Busy, JournalError::Closed, JournalError::NotAJournal] {
            assert_eq!(prepare_retry_after(&final_error, 0), None, "{final_error:?}");
        }
        assert!(PREPARE_RETRYABLE.iter().all(|e| prepare_retry_after(e, 0).is_some()));
    }
}
