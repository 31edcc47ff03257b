//! `contract-v0`, the default dialect: the RFC drafts with the binding
//! decisions of contract-v0. Its documents and validators are the crate's
//! shared vocabulary (`crate::contract`, `crate::validate`), its request,
//! projection and stored records are the dispatcher's
//! (`crate::dispatch::{request, projection, stored}`); this is how the
//! engine asks it its questions.

use std::sync::Arc;

use serde_json::Value;

use crate::contract::{
    Dialect, DispatchReceipt, DispatchReceiptSchemaVersion, DispatchStatus, EventKind, FailureCode, FailureDetail,
    PostWritebackHookRegistration,
};
use crate::dispatch::{
    admit, dispatch_id_for, intent_from_stored, project, receipt_from_row, recoverable_request, stored_intent,
    Accepted, AdmissionRefusal, CheckpointParts, DialectRules, DispatchOutcome, DispatchRequest, Failure, HookOutcome,
    NotADispatchRequest, Provider, RegisteredHook, Source,
};
use crate::identity;
use crate::journal::{DispatchRow, StoredIntent};
use crate::validate::{validate_hook_result, validate_registration, IntentKinds, ResultContext, Violation, Violations};

/// The rules of `contract-v0`.
pub struct ContractV0;

pub static CONTRACT_V0: ContractV0 = ContractV0;

impl From<DispatchRequest> for Source {
    fn from(r: DispatchRequest) -> Self {
        Source::new(&CONTRACT_V0, r)
    }
}

impl From<&DispatchRequest> for Source {
    fn from(r: &DispatchRequest) -> Self {
        Source::new(&CONTRACT_V0, r.clone())
    }
}

/// A contract-v0 hook over a registration already validated.
pub fn registered_hook(
    r: PostWritebackHookRegistration,
    digest: String,
    provider: Option<Arc<dyn Provider>>,
) -> RegisteredHook {
    RegisteredHook {
        hook_id: r.hook_id.clone(),
        capability_id: r.capability_id.clone(),
        event_kinds: r.event_kinds.iter().map(|k| k.as_str().to_owned()).collect(),
        max_attempts: r.budget.max_invocations_per_dispatch,
        timeout_ms: Some(r.budget.timeout_ms),
        max_result_bytes: r.budget.max_result_bytes,
        digest,
        rules: &CONTRACT_V0,
        registration: Arc::new(r),
        provider,
    }
}

fn request(source: &Source) -> Option<&DispatchRequest> {
    source.doc::<DispatchRequest>()
}

fn registration(hook: &RegisteredHook) -> Option<&PostWritebackHookRegistration> {
    hook.registration::<PostWritebackHookRegistration>()
}

impl DialectRules for ContractV0 {
    fn dialect(&self) -> Dialect {
        Dialect::ContractV0
    }

    fn parse_source(&'static self, text: &str) -> Result<Source, NotADispatchRequest> {
        DispatchRequest::from_json(text).map(|r| Source::new(self, r))
    }

    fn source_shape(&self) -> &'static str {
        "request does not have the DispatchRequest shape"
    }

    fn source_json(&self, source: &Source) -> String {
        request(source).and_then(|r| serde_json::to_string(r).ok()).unwrap_or_default()
    }

    fn event_kind<'s>(&self, source: &'s Source) -> &'s str {
        request(source).map_or("", |r| &r.event.event_kind)
    }

    fn admit(&self, source: &Source, phase_enabled: bool) -> Result<(), AdmissionRefusal> {
        request(source).map_or(Err(AdmissionRefusal::IdentityIncomplete), |r| admit(r, phase_enabled))
    }

    fn register(
        &'static self,
        doc: &Value,
        kinds: &IntentKinds,
        provider: Option<Arc<dyn Provider>>,
    ) -> Result<RegisteredHook, Violations> {
        let r = validate_registration(doc, kinds)?;
        Ok(registered_hook(r, identity::registration_digest(doc), provider))
    }

    fn dispatch_id(&self, source: &Source, hook: &RegisteredHook) -> String {
        request(source).map(|r| dispatch_id_for(r, hook)).unwrap_or_default()
    }

    fn input(&self, source: &Source, hook: &RegisteredHook, dispatch_id: &str) -> Result<Value, Vec<Violation>> {
        match (request(source), registration(hook)) {
            (Some(r), Some(reg)) => project(r, reg, &hook.digest, dispatch_id),
            _ => Err(Vec::new()),
        }
    }

    fn checkpoint_parts(&self, source: &Source, hook: &RegisteredHook) -> CheckpointParts {
        let (Some(r), Some(reg)) = (request(source), registration(hook)) else { return CheckpointParts::default() };
        CheckpointParts {
            receipt_id: r.receipt.receipt_id.clone(),
            effect_id: r.receipt.effect_id.clone(),
            recorded_at: None,
            request_json: serde_json::to_string(&recoverable_request(r, reg)).unwrap_or_default(),
        }
    }

    fn wall_exceeded(&self) -> Failure {
        Failure::new(FailureCode::DispatchBudgetExhausted, None)
    }

    fn accept(
        &self,
        doc: &Value,
        hook: &RegisteredHook,
        kinds: &IntentKinds,
        dispatch_id: &str,
        _: &Source,
    ) -> Result<Accepted, Failure> {
        let registration = registration(hook).ok_or(Failure::new(FailureCode::InputBoundaryRejected, None))?;
        let ctx = ResultContext { registration, dispatch_id, kinds };
        let result = validate_hook_result(doc, &ctx)
            .map_err(|v| Failure::rejected(FailureCode::ResultContractRejected, v.first()))?;
        let intents = result.intents.iter().map(stored_intent).collect();
        Ok(Accepted { status: result.status, intents, shipped_intent: None, digest: String::new(), bytes: 0 })
    }

    fn attempts_spent(&self) -> Option<Failure> {
        None
    }

    fn fresh_outcome(&self, _: &mut HookOutcome, _: &RegisteredHook) {}

    fn failed_outcome(&self, _: &mut HookOutcome, _: &Failure) {}

    fn set_receipt(
        &self,
        o: &mut HookOutcome,
        source: &Source,
        hook: &RegisteredHook,
        status: DispatchStatus,
        accepted: Option<&Accepted>,
        failure: Option<FailureDetail>,
    ) {
        let Some(request) = request(source) else { return };
        o.receipt = Some(DispatchReceipt {
            schema_version: DispatchReceiptSchemaVersion::V0,
            dispatch_id: o.dispatch_id.clone(),
            hook_id: hook.hook_id.clone(),
            capability_id: hook.capability_id.clone(),
            receipt_id: request.receipt.receipt_id.clone(),
            effect_id: request.receipt.effect_id.clone(),
            // The projection validated the event kind before we get here.
            event_kind: EventKind::parse(&request.event.event_kind).unwrap_or(EventKind::TodoCompleted),
            registration_digest: hook.digest.clone(),
            status,
            attempt: o.attempt,
            intent_ids: accepted.map(|a| a.intents.iter().map(|i| i.intent_id.clone()).collect()).unwrap_or_default(),
            result_digest: accepted.map(|a| a.digest.clone()),
            failure,
        })
    }

    fn final_receipt(&self, o: &mut HookOutcome, row: &DispatchRow, _: bool) {
        o.receipt = receipt_from_row(row);
        o.attempt = o.receipt.as_ref().map_or(0, |r| r.attempt);
    }

    fn stored_code(&self, f: &Failure) -> &'static str {
        f.code.as_str()
    }

    fn receipt_json(&self, row: &DispatchRow) -> Option<String> {
        receipt_from_row(row).and_then(|r| serde_json::to_string(&r).ok())
    }

    fn intent_doc_json(&self, intent: &StoredIntent) -> Option<String> {
        intent_from_stored(intent).and_then(|d| serde_json::to_string(&d).ok())
    }

    fn dispatch_result(&self, _: &DispatchOutcome, _: u32) -> Option<Value> {
        None
    }
}
