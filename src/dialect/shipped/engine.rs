//! The `loopx-shipped-v0` half of the engine: what the dispatcher asks of a
//! shipped source, registration and result, answered with the shipped
//! contract's own validators (`super`) and identities
//! (`crate::dialect::shipped::ids`). The journal, the writer, the claims, the
//! budgets and the outcome machinery are the engine's, shared with contract-v0.
//!
//! How the shipped contract sits on the engine:
//! - a dispatch identity is the shipped `pwh_` id; the journal's `receipt_id`
//!   column holds the source's `pwr_` event id and `recorded_at` its commit time;
//! - the one intent of a hook is journaled under an id derived from its
//!   dispatch and its `idempotency_key` (the shipped contract has no intent
//!   id), so replaying a dispatch never writes it twice;
//! - `attempt_count` is the identity's attempts, retried up to
//!   [`crate::dialect::shipped::MAX_ATTEMPT_COUNT`] (the registration's
//!   `max_invocations_per_dispatch: 1` is one call per dispatch, which the
//!   engine's claims already guarantee); past it the hook is isolated before
//!   its provider runs as `journal_write_failed` (as LoopX does) and nothing
//!   is recorded;
//! - failures are stored under their shipped codes.

use serde_json::{json, Map, Value};

use super::ids;
use super::{
    self as doc, DispatchFailure, DispatchResult, FailureCode, Intent, Registration, RuntimeFailure,
    RuntimeFailurePhase, SidecarReceipt, SidecarStatus,
};
use crate::contract::ResultStatus;
use crate::dispatch::{AdmissionRefusal, DispatchOutcome, HookOutcome, HookOutcomeKind, NotADispatchRequest};
use crate::identity;
use crate::journal::{DispatchRow, DispatchState, IntentRow};
use crate::validate::Violation;

/// A shipped source past parsing: stripped, with its event id; or why
/// admission refuses it (nothing is then invoked or recorded).
#[derive(Clone, Debug, PartialEq)]
pub enum ShippedSource {
    Admissible { source: Box<doc::Source>, event_id: String },
    Refused(AdmissionRefusal),
}

impl ShippedSource {
    /// JSON text that is not an object is the caller's misuse; an object
    /// that breaks the source contract is a refusal.
    pub fn parse(text: &str) -> Result<Self, NotADispatchRequest> {
        let v: Value = serde_json::from_str(text).map_err(|_| NotADispatchRequest)?;
        if !v.is_object() {
            return Err(NotADispatchRequest);
        }
        Ok(match doc::validate_source(&v) {
            Ok(source) => ShippedSource::Admissible { event_id: event_id(&source), source: Box::new(source) },
            Err(found) => ShippedSource::Refused(refusal(found.first())),
        })
    }
}

/// The refusal a source's first violation names.
fn refusal(first: Option<&Violation>) -> AdmissionRefusal {
    match first.map(|v| v.path.as_str()) {
        Some(p) if p.starts_with("/identity") => AdmissionRefusal::IdentityIncomplete,
        Some("/status") => AdmissionRefusal::ReceiptNotCommitted,
        Some("/durable") => AdmissionRefusal::ReceiptNotCheckpointed,
        _ => AdmissionRefusal::SourceRejected,
    }
}

/// The source's `pwr_` event id.
pub fn event_id(s: &doc::Source) -> String {
    let i = &s.identity;
    ids::event_id(&ids::EventFacts {
        event_kind: &s.event_kind,
        goal_id: &i.goal_id,
        agent_id: &i.agent_id,
        todo_id: i.todo_id.as_deref(),
        turn_instance_id: &i.turn_instance_id,
        effect_id: &i.effect_id,
        state_version: &s.state_version,
        receipt_id: s.receipt_id.as_deref(),
        committed_at: &s.committed_at,
    })
}

/// The registration's part of its hooks' identities, as the shipped
/// dispatch id takes it: a change of budget or read scope keeps it, a change
/// of `policy_version` rotates it. Recovery finds the installed hook by it.
pub fn registration_digest(r: &Registration) -> String {
    let parts = json!({
        "capability_id": r.capability_id,
        "hook_id": r.hook_id,
        "policy_version": r.policy_version,
        "registration_schema": ids::REGISTRATION_SCHEMA,
    });
    identity::sha256_hex(crate::dialect::shipped::pyjson::dumps(&parts).as_bytes())
}

pub fn dispatch_id(s: &doc::Source, event_id: &str, r: &Registration) -> String {
    ids::dispatch_id(event_id, &s.event_kind, &r.hook_id, &r.capability_id, &r.policy_version)
}

/// What the journal keeps of the source for recovering one hook: the
/// source with its projection cut to the keys that hook reads, so nothing
/// no hook reads reaches a file.
pub fn recoverable_source(s: &doc::Source, r: &Registration) -> String {
    let mut kept = s.clone();
    kept.projection = r
        .requested_read_scope
        .iter()
        .filter_map(|key| s.projection.get(key).map(|v| (key.clone(), v.clone())))
        .collect::<Map<String, Value>>();
    serde_json::to_string(&kept).unwrap_or_default()
}

/// The journal id of a hook's intent.
pub fn intent_id(dispatch_id: &str, idempotency_key: &str) -> String {
    let parts = json!({ "dispatch_id": dispatch_id, "idempotency_key": idempotency_key });
    format!("pwi_{}", identity::sha256_hex(crate::dialect::shipped::pyjson::dumps(&parts).as_bytes()))
}

/// The stored part of an intent: `[idempotency_key, source_receipt_id, payload]`
/// (its kind and capability are columns, its write scope always empty).
type Stored = (String, String, Map<String, Value>);

pub fn stored_intent(dispatch_id: &str, capability_id: &str, i: &Intent) -> IntentRow {
    let stored: Stored = (i.idempotency_key.clone(), i.source_receipt_id.clone(), i.payload.clone());
    IntentRow {
        intent_id: intent_id(dispatch_id, &i.idempotency_key),
        capability_id: capability_id.to_owned(),
        intent_kind: i.intent_kind.clone(),
        stored_json: serde_json::to_string(&stored).unwrap_or_default(),
    }
}

/// The intent document of a stored shipped intent.
pub fn intent_from_stored(intent_kind: &str, stored_json: &str) -> Option<Intent> {
    let (idempotency_key, source_receipt_id, payload): Stored =
        crate::validate::text::from_str_nested(stored_json, super::MAX_RESULT_DEPTH)?;
    Some(Intent {
        schema_version: Default::default(),
        intent_kind: intent_kind.to_owned(),
        idempotency_key,
        source_receipt_id,
        payload,
        requested_write_scope: Vec::new(),
    })
}

/// A validated result as the engine records it.
pub struct Accepted {
    pub status: ResultStatus,
    pub intent: Option<Intent>,
}

/// Validates a reply text's document against the hook's registration and
/// the input's event id.
/// The error is the first violated rule (the result is `contract_rejected`).
pub fn accept(doc_value: &Value, r: &Registration, event_id: &str) -> Result<Accepted, Option<Violation>> {
    let ctx = doc::ResultContext { registration: r, event_id };
    let result = doc::validate_result(doc_value, &ctx).map_err(|v| v.into_iter().next())?;
    Ok(Accepted {
        status: match result.status {
            doc::ResultStatus::Intent => ResultStatus::Proposed,
            doc::ResultStatus::NotApplicable => ResultStatus::NotApplicable,
        },
        intent: result.intent,
    })
}

/// The sidecar receipt of a journal row, when it has one: a final row, or
/// an unfinished one with a recorded failure (`retryable_failure`).
pub fn receipt_from_row(row: &DispatchRow) -> Option<SidecarReceipt> {
    let (status, intent, error_code) = match row.state {
        DispatchState::Proposed => {
            let (kind, stored) = row.receipt_extra.as_deref()?.split_once(' ')?;
            (SidecarStatus::IntentRecorded, Some(intent_from_stored(kind, stored)?), None)
        }
        DispatchState::NotApplicable => (SidecarStatus::NotApplicable, None, None),
        DispatchState::Failed => {
            let code = row.receipt_extra.as_deref().and_then(FailureCode::parse).unwrap_or(FailureCode::ProducerFailed);
            (SidecarStatus::RetryableFailure, None, Some(code))
        }
        DispatchState::Checkpointed | DispatchState::Exhausted => return None,
    };
    Some(SidecarReceipt {
        schema_version: Default::default(),
        dispatch_id: row.dispatch_id.clone(),
        hook_id: row.hook_id.clone(),
        capability_id: row.capability_id.clone(),
        source_receipt_id: row.receipt_id.clone(),
        status,
        intent,
        error_code,
        attempt_count: row.attempts,
        recorded_at: row.recorded_at.clone()?,
    })
}

/// The `idempotency_key` of a final row's intent (see `RecordCommand::Keyed`).
pub fn intent_key(row: &DispatchRow) -> Option<String> {
    receipt_from_row(row)?.intent.map(|i| i.idempotency_key)
}

/// The receipt a record writes, built before the record commits.
pub struct Fresh<'a> {
    pub dispatch_id: &'a str,
    pub hook_id: &'a str,
    pub capability_id: &'a str,
    pub event_id: &'a str,
    pub recorded_at: &'a str,
    pub attempt: u32,
}

impl Fresh<'_> {
    pub fn receipt(
        &self,
        status: SidecarStatus,
        intent: Option<Intent>,
        error_code: Option<FailureCode>,
    ) -> SidecarReceipt {
        SidecarReceipt {
            schema_version: Default::default(),
            dispatch_id: self.dispatch_id.to_owned(),
            hook_id: self.hook_id.to_owned(),
            capability_id: self.capability_id.to_owned(),
            source_receipt_id: self.event_id.to_owned(),
            status,
            intent,
            error_code,
            attempt_count: self.attempt,
            recorded_at: self.recorded_at.to_owned(),
        }
    }
}

/// The shipped dispatch result of an engine outcome (`registered`: the
/// hooks installed when it ran).
pub fn dispatch_result(outcome: &DispatchOutcome, registered: u32) -> DispatchResult {
    let mut r = DispatchResult {
        schema_version: Default::default(),
        phase: crate::contract::Phase::PostWriteback,
        registered_count: registered,
        invoked_count: 0,
        replayed_hooks: Vec::new(),
        retried_hooks: Vec::new(),
        intent_count: 0,
        intents: Vec::new(),
        failures: Vec::new(),
        primary_writeback_preserved: true,
        external_writes_performed: false,
        runtime_failure: None,
    };
    if let Some(refusal) = outcome.refusal {
        r.runtime_failure = Some(RuntimeFailure {
            schema_version: Default::default(),
            phase: RuntimeFailurePhase::Preflight,
            // What LoopX's host bridge reports when its source decoder refuses a source.
            error_kind: FailureCode::SourceProjectionFailed.as_str().to_owned(),
            diagnostic_code: serde_json::to_value(refusal)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default(),
        });
        return r;
    }
    for h in &outcome.hooks {
        add_hook(&mut r, h);
    }
    if outcome.hooks.iter().any(|h| h.shipped.as_deref().is_some_and(|e| e.batch_refused)) {
        // What LoopX's host reports when its transaction refuses the batch
        // as one whose answer may exceed the transport envelope.
        r.runtime_failure = Some(RuntimeFailure {
            schema_version: Default::default(),
            phase: RuntimeFailurePhase::Preflight,
            error_kind: "request_rejected".to_owned(),
            diagnostic_code: "post_writeback_transaction_envelope".to_owned(),
        });
    }
    r.intent_count = r.intents.len() as u32;
    r
}

fn add_hook(r: &mut DispatchResult, h: &HookOutcome) {
    let end = h.shipped.as_deref().cloned().unwrap_or_default();
    if end.invoked {
        r.invoked_count += 1;
    }
    // As LoopX: every hook whose receipt was retryable, run again or not
    // (isolated past its attempts); and any run at a later attempt.
    if end.retried || (end.invoked && h.attempt > 1) {
        r.retried_hooks.push(h.hook_id.clone());
    }
    if h.outcome == HookOutcomeKind::Replayed {
        r.replayed_hooks.push(h.hook_id.clone());
    }
    if let Some(code) = end.error_code {
        // As LoopX: a failure names its receipt when this dispatch stored
        // one, a failed attempt; not a conflict with a receipt it found, nor
        // a hook isolated at its last attempt before its provider ran.
        let isolated = code == FailureCode::JournalWriteFailed && !end.invoked;
        let durable = h.outcome != HookOutcomeKind::Conflict && h.attempt >= 1 && !isolated;
        r.failures.push(DispatchFailure {
            hook_id: h.hook_id.clone(),
            capability_id: end.capability_id.clone(),
            error_code: code,
            durable_receipt_ref: durable.then(|| format!("post-writeback-hook:{}", h.dispatch_id)),
        });
        return;
    }
    if let Some(intent) = end.receipt.and_then(|rc| rc.intent) {
        r.intents.push(intent);
    }
}
