//! One shipped turn-start dispatch, as LoopX runs it, in two steps around the
//! provider calls (the caller makes them, as the JS layer does): `plan` sorts
//! the registrations by hook_id, isolates every repeat of a hook_id
//! (`duplicate_hook_id`) and every invalid registration
//! (`registration_rejected`) without calling it; `complete` judges each call's
//! answer (`producer_failed`, `contract_rejected`) and builds the dispatch v1
//! document with the required reads of the hooks whose results require them,
//! deduplicated by command (the first in hook_id order wins).

use std::collections::HashSet;

use serde_json::Value;

use super::contract::*;
use super::registration::validate_registration;
use super::result::validate_result;
use super::text::is_token;
use crate::provider_reply::ProviderReply;
use crate::turn_start::{TurnStartCallResult, TurnStartPhase};
use crate::validate::grammar::is_credential_like;

/// Shipped providers are synchronous callables with no timeout of their own;
/// one that has not answered within this is `producer_failed`, so a provider
/// that never settles cannot hold a turn.
pub const CALL_LIMIT_MS: u32 = 30_000;

/// One provider call to make, in hook_id order.
#[derive(Clone, Debug, PartialEq)]
pub struct ShippedCall {
    /// The registration's index in the list `plan` was given.
    pub index: usize,
    pub registration: ShippedTurnStartRegistration,
}

impl ShippedCall {
    /// A reply longer than this (in UTF-16 units, a lower bound of its UTF-8
    /// bytes) is over `max_result_bytes` and need not cross at all.
    pub fn max_reply_length(&self) -> usize {
        self.registration.budget().max_result_bytes as usize
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Step {
    Isolated(ShippedTurnStartFailure),
    Call(ShippedCall),
}

/// A planned dispatch: what runs, and what was isolated before anything ran.
#[derive(Clone, Debug, PartialEq)]
pub struct ShippedPlan {
    registered: usize,
    steps: Vec<Step>,
}

/// A string member that is a valid token and not credential-like (the token
/// grammar admits `ghp_...`), else `""`: a failure names the hook it isolates
/// without echoing anything that is not public-safe.
fn public_id(doc: &Value, field: &str) -> String {
    let safe = |s: &&str| is_token(s) && !is_credential_like(s);
    doc.get(field).and_then(Value::as_str).filter(safe).unwrap_or_default().to_owned()
}

fn failure(doc: &Value, code: ShippedTurnStartFailureCode) -> ShippedTurnStartFailure {
    ShippedTurnStartFailure {
        hook_id: public_id(doc, "hook_id"),
        capability_id: public_id(doc, "capability_id"),
        error_code: code,
    }
}

fn failed(registration: &ShippedTurnStartRegistration, code: ShippedTurnStartFailureCode) -> ShippedTurnStartFailure {
    ShippedTurnStartFailure {
        hook_id: registration.hook_id().to_owned(),
        capability_id: registration.capability_id().to_owned(),
        error_code: code,
    }
}

/// Plans a dispatch over raw registration documents. Sorted by hook_id
/// (code point order, as Python sorts; a registration without a string
/// hook_id sorts first); a hook_id seen before is `duplicate_hook_id` before
/// its registration is even read, as LoopX does.
pub fn plan(registrations: &[Value]) -> ShippedPlan {
    let key = |i: &usize| registrations[*i].get("hook_id").and_then(Value::as_str).unwrap_or("");
    let mut order: Vec<usize> = (0..registrations.len()).collect();
    order.sort_by(|a, b| key(a).cmp(key(b)));
    let mut seen = HashSet::new();
    let steps = order
        .into_iter()
        .map(|index| {
            let doc = &registrations[index];
            if let Some(hook_id) = doc.get("hook_id").and_then(Value::as_str) {
                if !seen.insert(hook_id) {
                    return Step::Isolated(failure(doc, ShippedTurnStartFailureCode::DuplicateHookId));
                }
            }
            match validate_registration(doc) {
                Ok(registration) => Step::Call(ShippedCall { index, registration }),
                Err(_) => Step::Isolated(failure(doc, ShippedTurnStartFailureCode::RegistrationRejected)),
            }
        })
        .collect();
    ShippedPlan { registered: registrations.len(), steps }
}

impl ShippedPlan {
    /// The calls to make, in order.
    pub fn calls(&self) -> impl Iterator<Item = &ShippedCall> {
        self.steps.iter().filter_map(|s| match s {
            Step::Call(call) => Some(call),
            Step::Isolated(_) => None,
        })
    }

    /// Builds the dispatch from the calls' answers, one per planned call in
    /// order (a missing one is a provider that failed).
    pub fn complete(&self, answers: Vec<TurnStartCallResult>) -> ShippedTurnStartDispatch {
        self.document(self.judge(answers))
    }

    /// Each call's answer judged against its registration, in call order
    /// (a missing one is a provider that failed).
    pub fn judge(&self, answers: Vec<TurnStartCallResult>) -> Vec<Judged> {
        let mut answers = answers.into_iter();
        self.calls()
            .map(|call| {
                judge(&call.registration, answers.next().unwrap_or(TurnStartCallResult::Reply(ProviderReply::Threw)))
            })
            .collect()
    }

    /// The dispatch document from the judged calls (one per call, in order):
    /// the failures isolated at planning and judging, the results, and the
    /// required reads of the results that require them, deduplicated by
    /// command (the first in hook_id order wins).
    pub fn document(&self, judged: Vec<Judged>) -> ShippedTurnStartDispatch {
        let mut judged = judged.into_iter();
        let mut results = Vec::new();
        let mut failures = Vec::new();
        let mut required_reads: Vec<ShippedRequiredReadEntry> = Vec::new();
        for step in &self.steps {
            let call = match step {
                Step::Isolated(f) => {
                    failures.push(f.clone());
                    continue;
                }
                Step::Call(call) => call,
            };
            let result = match judged.next().unwrap_or(Err(ShippedTurnStartFailureCode::ProducerFailed)) {
                Ok(result) => result,
                Err(code) => {
                    failures.push(failed(&call.registration, code));
                    continue;
                }
            };
            if result.agent_read_required {
                if let Some(read) = call.registration.required_read() {
                    if required_reads.iter().all(|r| r.command != read.command) {
                        required_reads.push(entry(read, &call.registration));
                    }
                }
            }
            results.push(result);
        }
        ShippedTurnStartDispatch {
            schema_version: ShippedTurnStartDispatchSchema::V0,
            phase: TurnStartPhase::TurnStart,
            registered_count: u32::try_from(self.registered).unwrap_or(u32::MAX),
            invoked_count: u32::try_from(results.len()).unwrap_or(u32::MAX),
            results,
            required_reads,
            failures,
        }
    }
}

/// One call judged: its admitted result, or the failure code that isolates it.
pub type Judged = Result<ShippedTurnStartResult, ShippedTurnStartFailureCode>;

/// One answer, judged against its registration.
fn judge(registration: &ShippedTurnStartRegistration, answer: TurnStartCallResult) -> Judged {
    use ShippedTurnStartFailureCode::{ContractRejected, ProducerFailed};
    let text = match answer {
        TurnStartCallResult::Reply(ProviderReply::Json(text)) => text,
        TurnStartCallResult::TooLarge => return Err(ContractRejected),
        TurnStartCallResult::Reply(ProviderReply::Threw | ProviderReply::NotJson) | TurnStartCallResult::TimedOut => {
            return Err(ProducerFailed)
        }
    };
    if text.len() > registration.budget().max_result_bytes as usize {
        return Err(ContractRejected);
    }
    let doc: Value = serde_json::from_str(&text).map_err(|_| ContractRejected)?;
    validate_result(&doc, Some(registration)).map_err(|_| ContractRejected)
}

pub(super) fn entry(
    read: &ShippedRequiredRead,
    registration: &ShippedTurnStartRegistration,
) -> ShippedRequiredReadEntry {
    ShippedRequiredReadEntry {
        kind: read.kind.clone(),
        command: read.command.clone(),
        reason: read.reason.clone(),
        ordering: read.ordering,
        prompt_budget_bytes: read.prompt_budget_bytes,
        source: ShippedRequiredReadSource::V0,
        hook_id: registration.hook_id().to_owned(),
        capability_id: registration.capability_id().to_owned(),
    }
}

/// The whole dispatch over Rust providers (tests, and any Rust host): each
/// registration's answer comes from `answer(index, registration)`.
pub fn dispatch_v1(
    registrations: &[Value],
    mut answer: impl FnMut(usize, &ShippedTurnStartRegistration) -> TurnStartCallResult,
) -> ShippedTurnStartDispatch {
    let plan = plan(registrations);
    let answers = plan.calls().map(|c| answer(c.index, &c.registration)).collect();
    plan.complete(answers)
}
