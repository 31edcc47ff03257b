//! One turn-start dispatch as two synchronous steps around the provider
//! calls, so the JS layer calls each provider on its own thread with its
//! timeout counted from the call: a good hook is never timed out behind a
//! busy event loop. [`TurnStartKernel::dispatch`] drives the same steps over
//! Rust providers.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::hook::{hook_input, InstalledTurnStartHook};
use super::judge::{judge, TurnStartCallResult};
use super::kernel::TurnStartKernel;
use super::lane::project_required_reads;
use super::outcome::TurnStartOutcome;
use super::request::validate_turn_start_request;
use super::sessions::{DispatchStart, Granted};
use crate::provider_reply::ProviderReply;

/// One provider call to make, in hook_id order.
pub struct TurnStartCall {
    pub hook: Arc<InstalledTurnStartHook>,
    pub input_json: String,
    /// The call's session (token and grants) when an inbox is attached; ended
    /// by [`TurnStartKernel::end_call`] when the call ends, so it lives
    /// exactly as long as the call.
    session: Option<Granted>,
}

/// The calls of one dispatch, with the hooks they were planned against.
pub struct TurnStartPlan {
    pub calls: Vec<TurnStartCall>,
    hooks: Arc<Vec<Arc<InstalledTurnStartHook>>>,
    /// Which pending messages the attached inbox had read when the dispatch began.
    start: DispatchStart,
}

pub enum TurnStartPrepared {
    /// Refused, or the phase is disabled: nothing to call.
    Done(TurnStartOutcome),
    Run(TurnStartPlan),
}

impl TurnStartKernel {
    /// Validates the request and plans one call per allowed hook. An invalid
    /// request is refused with its violations before any provider is invoked.
    pub fn prepare(&self, request: &Value) -> TurnStartPrepared {
        let request = match validate_turn_start_request(request) {
            Ok(request) => request,
            Err(violations) => return TurnStartPrepared::Done(self.refused(violations.into())),
        };
        if !self.profile().enabled {
            return TurnStartPrepared::Done(TurnStartOutcome { admitted: true, ..self.refused(Vec::new()) });
        }
        let hooks = self.snapshot();
        let start = self.sessions().start();
        let calls = hooks
            .iter()
            .filter(|h| self.profile().allows(&h.registration.hook_id))
            .map(|h| {
                let r = &h.registration;
                let session = self.sessions().open(&r.hook_id, r.write_scopes.clone(), r.budget);
                let token = session.as_ref().map(|(t, _)| t.clone());
                TurnStartCall { hook: h.clone(), input_json: hook_input(h, &request, token), session }
            })
            .collect();
        TurnStartPrepared::Run(TurnStartPlan { calls, hooks, start })
    }

    /// Ends call `index`'s session the moment that call ends (answered,
    /// thrown, timed out, past its wall budget): nothing can be captured,
    /// read or reacted through it while later calls of the dispatch run.
    pub fn end_call(&self, plan: &TurnStartPlan, index: usize) {
        if let Some(granted) = plan.calls.get(index).and_then(|c| c.session.as_ref()) {
            self.sessions().end(granted);
        }
    }

    /// Judges the calls' results (one per planned call, in order; a missing
    /// one is a provider that threw), closes their sessions (core's counts
    /// stand where a receipt reported less), fails closed where a hook
    /// failed, projects the required reads and decides the lane from the
    /// inbox's standing per message when an inbox is attached.
    pub fn complete(&self, plan: &TurnStartPlan, results: Vec<TurnStartCallResult>) -> TurnStartOutcome {
        let mut results = results.into_iter();
        let mut outcomes: Vec<_> = plan
            .calls
            .iter()
            .map(|c| judge(&c.hook, results.next().unwrap_or(TurnStartCallResult::Reply(ProviderReply::Threw))))
            .collect();
        let counts = plan.calls.iter().map(|c| c.session.as_ref().map(|g| self.sessions().close(g))).collect();
        let lane = self.sessions().settle(&plan.start, &mut outcomes, counts);
        #[cfg(test)]
        for outcome in &outcomes {
            let doc = serde_json::to_value(&outcome.receipt).expect("a receipt serializes");
            if let Err(violations) = super::validate_turn_start_receipt(&doc) {
                panic!("core published a receipt its own validator rejects: {violations:?} in {doc}");
            }
        }
        let required_reads = project_required_reads(&plan.hooks, &outcomes);
        TurnStartOutcome {
            admitted: true,
            violations: Vec::new(),
            phase_enabled: true,
            hooks: outcomes,
            required_reads,
            lane,
        }
    }

    /// One turn-start dispatch over Rust providers, each under its timeout
    /// (its late answer is dropped with its future).
    pub async fn dispatch(&self, request: &Value) -> TurnStartOutcome {
        let plan = match self.prepare(request) {
            TurnStartPrepared::Done(outcome) => return outcome,
            TurnStartPrepared::Run(plan) => plan,
        };
        let mut results = Vec::with_capacity(plan.calls.len());
        for (index, call) in plan.calls.iter().enumerate() {
            let timeout = Duration::from_millis(u64::from(call.hook.registration.budget.timeout_ms));
            results.push(match &call.hook.provider {
                None => TurnStartCallResult::Reply(ProviderReply::Threw),
                Some(p) => match tokio::time::timeout(timeout, p.invoke(call.input_json.clone())).await {
                    Ok(reply) => TurnStartCallResult::Reply(reply),
                    Err(_) => TurnStartCallResult::TimedOut,
                },
            });
            self.end_call(&plan, index);
        }
        self.complete(&plan, results)
    }
}
