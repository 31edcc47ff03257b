//! Canonical JSON and the content-derived ids (contract-v0 section 3), and
//! the provider helper that builds a well-formed intent.

use napi_derive::napi;
use serde::Deserialize;
use serde_json::Value;

use super::error::{misuse, Code, Result};
use super::js_value::{read_document, read_value, JsAny};
use crate::builder::{build_intent as core_build_intent, IntentOrigin, IntentSpec};
use crate::contract::{IntentBudget, PostWritebackHookInput, PostWritebackIntent};
use crate::{canonical, identity};

fn json_value(value: JsAny, what: &str) -> Result<Value> {
    read_value(value).map_err(|v| {
        let at = v.first().map(|v| v.path.as_str()).unwrap_or("");
        misuse(Code::NotJsonValue, &format!("{what} holds a value JSON cannot hold at '{at}'"))
    })
}

fn json_document(value: JsAny, what: &str) -> Result<Value> {
    read_document(value)
        .map(|d| match d {
            super::js_value::Document::Text(v) | super::js_value::Document::Object(v) => v,
        })
        .map_err(|_| misuse(Code::NotJsonValue, &format!("{what} is not a JSON value or JSON text")))
}

/// RFC 8785 canonical JSON of a JS value (a string argument is a JSON string value).
#[napi(ts_args_type = "value: unknown")]
pub fn canonical_json(value: JsAny) -> Result<String> {
    Ok(canonical::canonical_json(&json_value(value, "value")?))
}

/// sha256 of the registration's canonical JSON (no prefix). Accepts the
/// registration as a JS value or JSON text.
#[napi(ts_args_type = "registration: PostWritebackHookRegistration | string")]
pub fn registration_digest(registration: JsAny) -> Result<String> {
    Ok(identity::registration_digest(&json_document(registration, "registration")?))
}

/// The parts of a dispatch identity.
#[napi(object)]
pub struct DispatchIdentityParts {
    /// The committed primary receipt's id.
    pub receipt_id: String,
    /// The primary effect's id.
    pub effect_id: String,
    /// The hook's id.
    pub hook_id: String,
    /// The hook's capability id.
    pub capability_id: String,
    /// The registration's digest (`registrationDigest`).
    pub registration_digest: String,
    /// The registration's `schema_version`.
    pub registration_schema_version: String,
    /// The committed event's kind.
    pub event_kind: String,
}

/// `"pwh_" + sha256(JCS({domain, ...parts}))`.
#[napi]
pub fn dispatch_id(parts: DispatchIdentityParts) -> String {
    identity::dispatch_id(&identity::DispatchIdentity {
        receipt_id: &parts.receipt_id,
        effect_id: &parts.effect_id,
        hook_id: &parts.hook_id,
        capability_id: &parts.capability_id,
        registration_digest: &parts.registration_digest,
        registration_schema_version: &parts.registration_schema_version,
        event_kind: &parts.event_kind,
    })
}

/// `"pwi_" + sha256(JCS({domain, dispatch_id, intent_kind, policy_version, payload}))`.
#[napi(ts_args_type = "parts: { dispatchId: string; intentKind: string; policyVersion: string; payload: unknown }")]
pub fn intent_id(parts: JsAny) -> Result<String> {
    let parts = json_value(parts, "parts")?;
    let field = |name: &str| parts.get(name).and_then(Value::as_str).map(str::to_owned);
    let (Some(dispatch_id), Some(intent_kind), Some(policy_version), Some(payload)) =
        (field("dispatchId"), field("intentKind"), field("policyVersion"), parts.get("payload"))
    else {
        return Err(misuse(
            Code::InvalidArgument,
            "intentId needs dispatchId, intentKind, policyVersion (strings) and payload",
        ));
    };
    Ok(identity::intent_id(&dispatch_id, &intent_kind, &policy_version, payload))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct IntentSpecArg {
    intent_kind: String,
    operation: String,
    policy_version: String,
    payload: Value,
    #[serde(default)]
    budget: Option<IntentBudget>,
    #[serde(default)]
    requested_write_scope: Vec<String>,
}

/// Builds a well-formed intent answering `input`: every id and fixed field
/// filled in. It judges nothing; the dispatcher validates the result.
#[napi(
    ts_args_type = "input: PostWritebackHookInput, spec: { intentKind: string; operation: string; policyVersion: string; payload: unknown; budget?: IntentBudget; requestedWriteScope?: string[] }",
    ts_return_type = "PostWritebackIntent"
)]
pub fn build_intent(input: JsAny, spec: JsAny) -> Result<serde_json::Value> {
    let input = json_document(input, "input")?;
    let input = PostWritebackHookInput::deserialize(&input)
        .map_err(|_| misuse(Code::InvalidArgument, "input does not have the hook input contract's shape"))?;
    let spec = IntentSpecArg::deserialize(json_value(spec, "spec")?)
        .map_err(|_| misuse(Code::InvalidArgument, "spec needs intentKind, operation, policyVersion and payload"))?;
    let origin =
        IntentOrigin { dispatch_id: &input.dispatch_id, hook_id: &input.hook_id, capability_id: &input.capability_id };
    let intent: PostWritebackIntent = core_build_intent(
        &origin,
        IntentSpec {
            intent_kind: spec.intent_kind,
            operation: spec.operation,
            policy_version: spec.policy_version,
            payload: spec.payload,
            budget: spec.budget,
            requested_write_scope: spec.requested_write_scope,
        },
    );
    serde_json::to_value(intent).map_err(|_| misuse(Code::Internal, "intent could not be serialized"))
}
