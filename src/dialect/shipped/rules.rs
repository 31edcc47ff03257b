//! How the engine asks `loopx-shipped-v0` its questions, answered with the
//! shipped contract's own validators, identities and receipts (`engine.rs`).

use std::sync::Arc;

use serde_json::Value;

use super::engine::{self, ShippedSource};
use super::{FailureCode as ShippedCode, Registration, SidecarStatus};
use crate::contract::{Dialect, DispatchStatus, FailureCode, FailureDetail};
use crate::dispatch::{
    Accepted, AdmissionRefusal, CheckpointParts, DialectRules, DispatchOutcome, Failure, HookOutcome,
    NotADispatchRequest, PlannedHook, Provider, RegisteredHook, ShippedEnd, Source,
};
use crate::journal::{DispatchRow, KeyOf, StoredIntent};
use crate::validate::{IntentKinds, Violation, Violations};

/// The rules of `loopx-shipped-v0`.
pub struct LoopxShippedV0;

pub static LOOPX_SHIPPED_V0: LoopxShippedV0 = LoopxShippedV0;

fn shipped(source: &Source) -> Option<&ShippedSource> {
    source.doc::<ShippedSource>()
}

/// The admissible source and its event id.
fn admissible(source: &Source) -> Option<(&super::Source, &str)> {
    match shipped(source)? {
        ShippedSource::Admissible { source, event_id } => Some((source, event_id)),
        ShippedSource::Refused(_) => None,
    }
}

/// A failure's code in the shipped contract.
fn shipped_code(f: &Failure) -> ShippedCode {
    f.shipped.unwrap_or(match f.code {
        FailureCode::RegistrationRejected | FailureCode::InputBoundaryRejected => {
            ShippedCode::RegistrationOrInputRejected
        }
        FailureCode::ProducerFailed | FailureCode::ProducerTimedOut => ShippedCode::ProducerFailed,
        FailureCode::ResultContractRejected => ShippedCode::ContractRejected,
        FailureCode::IntentConflict => ShippedCode::ReceiptConflict,
        FailureCode::DispatchBudgetExhausted => ShippedCode::DispatchFailed,
    })
}

fn registration(hook: &RegisteredHook) -> Option<&Registration> {
    hook.registration::<Registration>()
}

impl DialectRules for LoopxShippedV0 {
    fn dialect(&self) -> Dialect {
        Dialect::LoopxShippedV0
    }

    fn parse_source(&'static self, text: &str) -> Result<Source, NotADispatchRequest> {
        ShippedSource::parse(text).map(|s| Source::new(self, s))
    }

    fn source_shape(&self) -> &'static str {
        "source does not have the shipped source shape"
    }

    fn source_json(&self, source: &Source) -> String {
        match admissible(source) {
            Some((s, _)) => serde_json::to_string(s).unwrap_or_default(),
            None => "null".into(),
        }
    }

    fn event_kind<'s>(&self, source: &'s Source) -> &'s str {
        admissible(source).map_or("", |(s, _)| &s.event_kind)
    }

    fn admit(&self, source: &Source, phase_enabled: bool) -> Result<(), AdmissionRefusal> {
        match shipped(source) {
            None => Err(AdmissionRefusal::SourceRejected),
            Some(ShippedSource::Refused(refusal)) => Err(*refusal),
            Some(ShippedSource::Admissible { .. }) if !phase_enabled => Err(AdmissionRefusal::PhaseDisabled),
            Some(ShippedSource::Admissible { .. }) => Ok(()),
        }
    }

    /// Its intent kinds are names only: the shipped contract checks no payload schema.
    fn register(
        &'static self,
        doc: &Value,
        _: &IntentKinds,
        provider: Option<Arc<dyn Provider>>,
    ) -> Result<RegisteredHook, Violations> {
        let r = super::validate_registration(doc)?;
        Ok(RegisteredHook {
            hook_id: r.hook_id.clone(),
            capability_id: r.capability_id.clone(),
            event_kinds: r.event_kinds.clone(),
            max_attempts: super::MAX_ATTEMPT_COUNT,
            timeout_ms: None,
            max_result_bytes: r.budget.max_result_bytes,
            digest: engine::registration_digest(&r),
            rules: self,
            registration: Arc::new(r),
            provider,
        })
    }

    fn dispatch_id(&self, source: &Source, hook: &RegisteredHook) -> String {
        match (admissible(source), registration(hook)) {
            (Some((s, event_id)), Some(reg)) => engine::dispatch_id(s, event_id, reg),
            _ => String::new(),
        }
    }

    fn input(&self, source: &Source, hook: &RegisteredHook, _: &str) -> Result<Value, Vec<Violation>> {
        match (admissible(source), registration(hook)) {
            (Some((s, event_id)), Some(reg)) => super::hook_input(s, event_id, reg).map_err(|v| v.into_vec()),
            _ => Err(Vec::new()),
        }
    }

    fn checkpoint_parts(&self, source: &Source, hook: &RegisteredHook) -> CheckpointParts {
        let (Some((s, event_id)), Some(reg)) = (admissible(source), registration(hook)) else {
            return CheckpointParts::default();
        };
        CheckpointParts {
            receipt_id: event_id.to_owned(),
            effect_id: s.identity.effect_id.clone(),
            recorded_at: Some(s.committed_at.clone()),
            request_json: engine::recoverable_source(s, reg),
        }
    }

    /// A shipped hook has no timeout of its own: the wall budget is its
    /// limit, and a producer that outlives it failed.
    fn wall_exceeded(&self) -> Failure {
        Failure::new(FailureCode::ProducerTimedOut, None)
    }

    fn max_result_depth(&self) -> usize {
        super::MAX_RESULT_DEPTH
    }

    fn accept(
        &self,
        doc: &Value,
        hook: &RegisteredHook,
        _: &IntentKinds,
        dispatch_id: &str,
        source: &Source,
    ) -> Result<Accepted, Failure> {
        let (Some((_, event_id)), Some(reg)) = (admissible(source), registration(hook)) else {
            return Err(Failure::new(FailureCode::InputBoundaryRejected, None));
        };
        let a = engine::accept(doc, reg, event_id)
            .map_err(|first| Failure::rejected(FailureCode::ResultContractRejected, first.as_ref()))?;
        let intents = a.intent.iter().map(|i| engine::stored_intent(dispatch_id, &hook.capability_id, i)).collect();
        Ok(Accepted { status: a.status, intents, shipped_intent: a.intent, digest: String::new(), bytes: 0 })
    }

    /// The shipped contract has no exhausted receipt: the identity stays a
    /// retryable failure, isolated before its provider runs, and nothing
    /// more is recorded.
    fn attempts_spent(&self) -> Option<Failure> {
        let mut f = Failure::new(FailureCode::DispatchBudgetExhausted, None);
        // As LoopX: isolated before the producer runs as `journal_write_failed`.
        f.shipped = Some(ShippedCode::JournalWriteFailed);
        Some(f)
    }

    /// As LoopX: a batch whose answer may exceed its transport envelope is
    /// refused before any provider runs, each hook `runtime_result_invalid`.
    fn admit_batch(&self, planned: &[PlannedHook<'_>], registered: u32) -> Option<Failure> {
        if super::batch::fits(planned, registered) {
            return None;
        }
        let mut f = Failure::new(FailureCode::DispatchBudgetExhausted, None);
        f.shipped = Some(ShippedCode::RuntimeResultInvalid);
        Some(f)
    }

    fn key_of(&self) -> Option<KeyOf> {
        Some(engine::intent_key)
    }

    fn fresh_outcome(&self, o: &mut HookOutcome, hook: &RegisteredHook) {
        o.shipped = Some(Box::new(ShippedEnd { capability_id: hook.capability_id.clone(), ..ShippedEnd::default() }));
    }

    fn failed_outcome(&self, o: &mut HookOutcome, f: &Failure) {
        if let Some(end) = o.shipped.as_deref_mut() {
            end.error_code = Some(shipped_code(f));
        }
    }

    fn set_receipt(
        &self,
        o: &mut HookOutcome,
        source: &Source,
        hook: &RegisteredHook,
        status: DispatchStatus,
        accepted: Option<&Accepted>,
        _: Option<FailureDetail>,
    ) {
        let (Some((s, event_id)), Some(end)) = (admissible(source), o.shipped.as_deref_mut()) else { return };
        let fresh = engine::Fresh {
            dispatch_id: &o.dispatch_id,
            hook_id: &hook.hook_id,
            capability_id: &hook.capability_id,
            event_id,
            recorded_at: &s.committed_at,
            attempt: o.attempt,
        };
        end.receipt = match status {
            DispatchStatus::Proposed => Some(fresh.receipt(
                SidecarStatus::IntentRecorded,
                accepted.and_then(|a| a.shipped_intent.clone()),
                None,
            )),
            DispatchStatus::NotApplicable => Some(fresh.receipt(SidecarStatus::NotApplicable, None, None)),
            DispatchStatus::Failed | DispatchStatus::Exhausted => None,
        };
    }

    fn final_receipt(&self, o: &mut HookOutcome, row: &DispatchRow, conflict: bool) {
        if let Some(end) = o.shipped.as_deref_mut() {
            end.receipt = engine::receipt_from_row(row);
            end.error_code = conflict.then_some(ShippedCode::ReceiptConflict);
        }
    }

    fn stored_code(&self, f: &Failure) -> &'static str {
        shipped_code(f).as_str()
    }

    fn receipt_json(&self, row: &DispatchRow) -> Option<String> {
        engine::receipt_from_row(row).and_then(|r| serde_json::to_string(&r).ok())
    }

    fn intent_doc_json(&self, intent: &StoredIntent) -> Option<String> {
        engine::intent_from_stored(&intent.intent_kind, &intent.stored_json)
            .and_then(|d| serde_json::to_string(&d).ok())
    }

    fn dispatch_result(&self, outcome: &DispatchOutcome, registered: u32) -> Option<Value> {
        serde_json::to_value(engine::dispatch_result(outcome, registered)).ok()
    }
}
