//! The shipped dialect's turn-start on core's kernel. LoopX's documents go
//! in and come out (registration v0/v1, result, dispatch v1); in between run
//! core's inbox sessions (one per call, as the provider's context), the
//! settling of each hook against what core saw, the fail-closed read and the
//! lane, exactly as for contract-v0 (`crate::turn_start::InboxSessions`).
//!
//! Each hook is held as a contract-v0 receipt for the settling: its result's
//! status and counts, or a failure status when it failed. What core settles
//! flows back into the document only where LoopX's rules let it (a result
//! that answered may carry core's first-read count and a failed step as
//! `partial`; a failed result may claim no read), and the rest (fail-closed
//! reads, standings, lane) rides on the package's object around it.

use std::sync::Arc;

use serde_json::Value;

use super::contract::*;
use super::dispatch::{entry, plan, Judged, ShippedCall, ShippedPlan, CALL_LIMIT_MS};
use super::outcome::*;
use crate::turn_start::{
    DispatchStart, Granted, InboxSessions, PendingStanding, SessionCounts, TurnStartBudget, TurnStartCallResult,
    TurnStartErrorCode, TurnStartHookOutcome, TurnStartReceipt, TurnStartReceiptSchemaVersion, TurnStartStatus,
    TurnStartWriteScope, MAX_ATTEMPTS_PER_DISPATCH, MAX_ROUTES,
};

/// Shipped turn-start hooks run by core: the inbox its sessions grant, and
/// the call limit (LoopX's producers have no timeout of their own).
pub struct ShippedTurnStartKernel {
    sessions: Arc<InboxSessions>,
    call_limit_ms: u32,
}

/// One call of a run: what to call, and its session when an inbox is attached.
pub struct ShippedRunCall {
    pub call: ShippedCall,
    pub session: Option<Granted>,
}

/// A planned dispatch with its sessions.
pub struct ShippedRun {
    plan: ShippedPlan,
    pub calls: Vec<ShippedRunCall>,
    start: DispatchStart,
}

impl ShippedTurnStartKernel {
    /// `call_limit_ms`: an integer 1..=30,000 (default 30,000); None for
    /// any other value.
    pub fn new(call_limit_ms: Option<f64>) -> Option<Self> {
        let call_limit_ms = match call_limit_ms {
            None => CALL_LIMIT_MS,
            Some(ms) if ms.fract() == 0.0 && (1.0..=f64::from(CALL_LIMIT_MS)).contains(&ms) => ms as u32,
            Some(_) => return None,
        };
        Some(ShippedTurnStartKernel { sessions: Arc::new(InboxSessions::default()), call_limit_ms })
    }

    pub fn sessions(&self) -> &Arc<InboxSessions> {
        &self.sessions
    }

    pub fn call_limit_ms(&self) -> u32 {
        self.call_limit_ms
    }

    /// Plans a dispatch over raw registration documents (see [`plan`]) and
    /// opens a session per call when an inbox is attached and the
    /// registration writes to it (`owner_private_inbox`). LoopX's budget has
    /// no attempts or routes; a session gets contract-v0's ceilings.
    pub fn prepare(&self, registrations: &[Value]) -> ShippedRun {
        let plan = plan(registrations);
        let start = self.sessions.start();
        let budget = TurnStartBudget {
            timeout_ms: self.call_limit_ms,
            max_attempts_per_dispatch: MAX_ATTEMPTS_PER_DISPATCH,
            max_routes: MAX_ROUTES,
        };
        let calls = plan
            .calls()
            .map(|call| {
                let scopes: Vec<_> = call.registration.write_scopes().iter().filter_map(|s| core_scope(*s)).collect();
                // A hook that does not write to the inbox does not share it
                // (a capability with state of its own): no session, and the
                // inbox's count is not its floor.
                let session = if scopes.contains(&TurnStartWriteScope::OwnerPrivateInbox) {
                    self.sessions.open(call.registration.hook_id(), scopes, budget)
                } else {
                    None
                };
                ShippedRunCall { call: call.clone(), session }
            })
            .collect();
        ShippedRun { plan, calls, start }
    }

    /// Ends call `index`'s session the moment that call ends.
    pub fn end_call(&self, run: &ShippedRun, index: usize) {
        if let Some(granted) = run.calls.get(index).and_then(|c| c.session.as_ref()) {
            self.sessions.end(granted);
        }
    }

    /// Judges the answers (one per call, in order), settles each hook as
    /// contract-v0's kernel does, and builds the document and the object around it.
    pub fn complete(&self, run: &ShippedRun, answers: Vec<TurnStartCallResult>) -> ShippedTurnStartOutcome {
        let judged = run.plan.judge(answers);
        let mut held: Vec<TurnStartHookOutcome> =
            run.calls.iter().zip(&judged).map(|(c, j)| hold(&c.call, j)).collect();
        let counts: Vec<Option<SessionCounts>> =
            run.calls.iter().map(|c| c.session.as_ref().map(|g| self.sessions.close(g))).collect();
        let lane = self.sessions.settle(&run.start, &mut held, counts.clone());
        let judged: Vec<Judged> = judged
            .into_iter()
            .zip(run.calls.iter().zip(held.iter().zip(&counts)))
            .map(|(j, (c, (h, n)))| j.map(|result| settled(&c.call.registration, result, h, *n)))
            .collect();
        #[cfg(test)]
        for (c, j) in run.calls.iter().zip(&judged) {
            if let Ok(result) = j {
                let doc = serde_json::to_value(result).expect("a result serializes");
                if let Err(violations) = super::validate_result(&doc, Some(&c.call.registration)) {
                    panic!("core settled a result LoopX's rules reject: {violations:?} in {doc}");
                }
            }
        }
        let required_reads = enforced_reads(&run.calls, &judged, &held);
        let hooks = run.calls.iter().zip(&judged).zip(&held).map(|((c, j), h)| standing(&c.call, j, h)).collect();
        let document = run.plan.document(judged);
        #[cfg(test)]
        {
            let doc = serde_json::to_value(&document).expect("a dispatch serializes");
            if let Err(violations) = super::validate_dispatch(&doc) {
                panic!("core published a dispatch LoopX's rules reject: {violations:?} in {doc}");
            }
        }
        ShippedTurnStartOutcome { document, required_reads, hooks, lane }
    }
}

fn core_scope(scope: ShippedTurnStartWriteScope) -> Option<TurnStartWriteScope> {
    match scope {
        ShippedTurnStartWriteScope::OwnerPrivateInbox => Some(TurnStartWriteScope::OwnerPrivateInbox),
        ShippedTurnStartWriteScope::OwnerPrivateCursor => Some(TurnStartWriteScope::OwnerPrivateCursor),
        ShippedTurnStartWriteScope::ProviderMessageReaction => Some(TurnStartWriteScope::ProviderMessageReaction),
        ShippedTurnStartWriteScope::AgentPrivateCapabilityMemory => None,
    }
}

/// A result that answered a failure status, or a call that failed.
fn failed(judged: &Judged) -> bool {
    !matches!(judged, Ok(r) if !matches!(r.status, ShippedTurnStartStatus::Unavailable | ShippedTurnStartStatus::Failed))
}

/// The hook as a contract-v0 receipt, for core's settling.
fn hold(call: &ShippedCall, judged: &Judged) -> TurnStartHookOutcome {
    use ShippedTurnStartStatus as S;
    let (status, observations, read) = match judged {
        Ok(r) => match r.status {
            S::Observed => (TurnStartStatus::Ok, r.observation_count, r.agent_read_required),
            S::Partial => (TurnStartStatus::Partial, r.observation_count, r.agent_read_required),
            S::Empty | S::NotApplicable => (TurnStartStatus::Empty, 0, false),
            S::Unavailable => (TurnStartStatus::ProviderUnavailable, 0, false),
            S::Failed => (TurnStartStatus::ProviderContractError, 0, false),
        },
        Err(_) => (TurnStartStatus::ProviderContractError, 0, false),
    };
    let error_code = status.failure_code();
    TurnStartHookOutcome {
        hook_id: call.registration.hook_id().to_owned(),
        receipt: TurnStartReceipt {
            schema_version: TurnStartReceiptSchemaVersion::V0,
            hook_id: call.registration.hook_id().to_owned(),
            status,
            error_code,
            agent_read_required: read,
            observations_new: observations,
            pending: observations,
            direct_questions: 0,
            verified_replies: 0,
            routes_ok: u32::from(status.failure_code().is_none()),
            routes_failed: 0,
            reactions_added: 0,
            external_writes_performed: 0,
        },
        kernel_failure: None,
        pending_standing: PendingStanding::Reported,
    }
}

/// A result that answered, with what core settled where LoopX's rules let
/// it: core's first-read count, a failed private write or reaction as
/// `partial`, and the flags those writes imply. A failed result, or one of a
/// registration that names no read, keeps what it said.
fn settled(
    registration: &ShippedTurnStartRegistration,
    mut result: ShippedTurnStartResult,
    held: &TurnStartHookOutcome,
    counts: Option<SessionCounts>,
) -> ShippedTurnStartResult {
    use ShippedTurnStartStatus as S;
    let routeless = matches!(registration, ShippedTurnStartRegistration::V1(v1) if v1.required_read.is_none());
    let (Some(counts), false) = (counts, routeless) else { return result };
    if matches!(result.status, S::Unavailable | S::Failed) {
        return result;
    }
    let receipt = &held.receipt;
    let step_failed = receipt.status == TurnStartStatus::Partial && result.status != S::Partial;
    let write_failed = counts.write_failures > 0;
    result.observation_count = receipt.observations_new.min(MAX_OBSERVATIONS);
    if step_failed || (write_failed && result.status == S::Partial) {
        result.status = S::Partial;
        result.error_code = receipt.error_code.map(|c: TurnStartErrorCode| c.as_str().to_owned());
    } else if result.observation_count > 0 && matches!(result.status, S::Empty | S::NotApplicable) {
        result.status = S::Observed;
    }
    match result.status {
        S::Observed => result.agent_read_required = true,
        // After a failed private write the result's own claim is not
        // trusted: core's fail-closed read stands in for it.
        S::Partial if write_failed => result.agent_read_required = result.observation_count > 0,
        S::Partial => result.agent_read_required |= result.observation_count > 0,
        _ => {}
    }
    result.local_private_state_mutated |= counts.first_reads.observations_new > 0;
    result.external_writes_performed |= counts.external_writes > 0;
    result.external_reads_performed |= counts.routes_read > 0;
    result
}

/// Every read before work, the document's first: a hook whose settled
/// standing requires its read, and whose registration names one.
fn enforced_reads(
    calls: &[ShippedRunCall],
    judged: &[Judged],
    held: &[TurnStartHookOutcome],
) -> Vec<ShippedEnforcedRead> {
    let mut reads: Vec<ShippedEnforcedRead> = Vec::new();
    for basis in [ShippedReadBasis::Result, ShippedReadBasis::FailClosed] {
        for ((c, j), h) in calls.iter().zip(judged).zip(held) {
            let in_document = matches!(j, Ok(r) if r.agent_read_required);
            let wanted = match basis {
                ShippedReadBasis::Result => in_document,
                ShippedReadBasis::FailClosed => !in_document && h.read_required(),
            };
            let Some(read) = c.call.registration.required_read().filter(|_| wanted) else { continue };
            if reads.iter().any(|r| r.command == read.command) {
                continue;
            }
            let e = entry(read, &c.call.registration);
            reads.push(ShippedEnforcedRead {
                command: e.command,
                hook_id: e.hook_id,
                capability_id: e.capability_id,
                kind: e.kind,
                reason: e.reason,
                ordering: e.ordering,
                prompt_budget_bytes: e.prompt_budget_bytes,
                source: e.source,
                basis,
            });
        }
    }
    reads
}

fn standing(call: &ShippedCall, judged: &Judged, held: &TurnStartHookOutcome) -> ShippedHookStanding {
    ShippedHookStanding {
        hook_id: call.registration.hook_id().to_owned(),
        capability_id: call.registration.capability_id().to_owned(),
        failed: failed(judged),
        observations_new: held.receipt.observations_new,
        pending: held.receipt.pending,
        read_required: held.read_required(),
        pending_standing: held.pending_standing,
    }
}
