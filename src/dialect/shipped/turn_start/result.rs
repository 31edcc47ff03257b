//! Acceptance of a shipped turn-start result, alone or against the
//! registration of the hook that answered it. The status rules are exactly
//! the combinations LoopX's own validator rejects; nothing else is refused.

use serde_json::Value;

use super::contract::*;
use super::text::token;
use crate::turn_start::TurnStartPhase;
use crate::validate::{child, shape, Report, Rule, Verdict};

const RESULT_FIELDS: &[&str] = &[
    "schema_version",
    "hook_id",
    "capability_id",
    "phase",
    "status",
    "observation_count",
    "agent_read_required",
    "external_reads_performed",
    "external_writes_performed",
    "local_private_state_mutated",
    "private_content_returned",
    "provider_payload_returned",
    "error_code",
];

/// The result's booleans, each `None` when absent or not a boolean (already reported).
struct Flags {
    read_required: Option<bool>,
    reads: Option<bool>,
    writes: Option<bool>,
    mutated: Option<bool>,
}

#[derive(Clone, Copy, PartialEq)]
enum Code {
    Null,
    Present,
    Unusable,
}

/// Validates a result; with `registration`, also against that hook.
///
/// Against the registration: hook_id and capability_id equal its own
/// (`hook_mismatch`, `capability_mismatch`); the result's JSON fits
/// `max_result_bytes` (`result_too_large` at the root); a local-private
/// mutation needs some write scope and an external write needs
/// `provider_message_reaction` (`authority_claimed`); and, for a v1
/// registration whose `required_read` is null, `agent_read_required` must be
/// false (LoopX: "required read route is missing"; v0 has no route to miss).
///
/// Always: `private_content_returned` and `provider_payload_returned` are
/// false; `observed` has observations, no error code and requires the read;
/// `empty` has none of the three; `not_applicable` has no observations, no
/// reads, writes, mutation, read requirement or error code; `partial`,
/// `unavailable` and `failed` carry an error code; `partial` with
/// observations requires the read; `unavailable` and `failed` do not. A
/// count that breaks its status is `out_of_range`, anything else that does is
/// `not_allowed_value` at the member. Any error-code token goes with any
/// failure status: `provider_contract_error` travels on `failed`, but LoopX
/// refuses it nowhere else, so neither does this.
pub fn validate_result(
    doc: &Value,
    registration: Option<&ShippedTurnStartRegistration>,
) -> Verdict<ShippedTurnStartResult> {
    let mut r = Report::new();
    let Some(map) = shape::object(&mut r, doc, "", RESULT_FIELDS) else { return Err(r.into_violations()) };

    if let Some(v) = map.get("schema_version") {
        shape::schema_version(&mut r, v, "/schema_version", ShippedTurnStartResultSchema::VALUE);
    }
    let hook = map.get("hook_id").and_then(|v| token(&mut r, v, "/hook_id"));
    let capability = map.get("capability_id").and_then(|v| token(&mut r, v, "/capability_id"));
    if let Some(v) = map.get("phase") {
        shape::one_of(&mut r, v, "/phase", TurnStartPhase::parse);
    }
    let status = map.get("status").and_then(|v| shape::one_of(&mut r, v, "/status", ShippedTurnStartStatus::parse));
    let count = map
        .get("observation_count")
        .and_then(|v| shape::integer(&mut r, v, "/observation_count", 0, i64::from(MAX_OBSERVATIONS)));
    let flag = |r: &mut Report, field: &str| map.get(field).and_then(|v| shape::boolean(r, v, &child("", field)));
    let flags = Flags {
        read_required: flag(&mut r, "agent_read_required"),
        reads: flag(&mut r, "external_reads_performed"),
        writes: flag(&mut r, "external_writes_performed"),
        mutated: flag(&mut r, "local_private_state_mutated"),
    };
    for field in ["private_content_returned", "provider_payload_returned"] {
        if flag(&mut r, field) == Some(true) {
            r.add(&child("", field), Rule::NotAllowedValue);
        }
    }
    let code = match map.get("error_code") {
        Some(Value::Null) => Code::Null,
        Some(v) => token(&mut r, v, "/error_code").map_or(Code::Unusable, |_| Code::Present),
        None => Code::Unusable,
    };
    if let Some(status) = status {
        status_rules(&mut r, status, count, &flags, code);
    }
    if let Some(registration) = registration {
        against(&mut r, doc, registration, (hook, capability), &flags);
    }
    r.finish(&shape::integral_numbers(doc))
}

fn status_rules(r: &mut Report, status: ShippedTurnStartStatus, count: Option<i64>, f: &Flags, code: Code) {
    use ShippedTurnStartStatus::*;
    let count_is = |r: &mut Report, ok: fn(i64) -> bool| {
        if count.is_some_and(|n| !ok(n)) {
            r.add("/observation_count", Rule::OutOfRange);
        }
    };
    let refuse = |r: &mut Report, value: Option<bool>, bad: bool, field: &str| {
        if value == Some(bad) {
            r.add(&child("", field), Rule::NotAllowedValue);
        }
    };
    let no_code = |r: &mut Report| {
        if code == Code::Present {
            r.add("/error_code", Rule::NotAllowedValue);
        }
    };
    match status {
        Observed => {
            count_is(r, |n| n > 0);
            no_code(r);
            refuse(r, f.read_required, false, "agent_read_required");
        }
        Empty => {
            count_is(r, |n| n == 0);
            no_code(r);
            refuse(r, f.read_required, true, "agent_read_required");
        }
        NotApplicable => {
            count_is(r, |n| n == 0);
            refuse(r, f.read_required, true, "agent_read_required");
            refuse(r, f.reads, true, "external_reads_performed");
            refuse(r, f.writes, true, "external_writes_performed");
            refuse(r, f.mutated, true, "local_private_state_mutated");
            no_code(r);
        }
        Partial | Unavailable | Failed => {
            if code == Code::Null {
                r.add("/error_code", Rule::NotAllowedValue);
            }
            if status == Partial {
                if count.is_some_and(|n| n > 0) {
                    refuse(r, f.read_required, false, "agent_read_required");
                }
            } else {
                refuse(r, f.read_required, true, "agent_read_required");
            }
        }
    }
}

fn against(
    r: &mut Report,
    doc: &Value,
    registration: &ShippedTurnStartRegistration,
    (hook, capability): (Option<&str>, Option<&str>),
    f: &Flags,
) {
    if hook.is_some_and(|h| h != registration.hook_id()) {
        r.add("/hook_id", Rule::HookMismatch);
    }
    if capability.is_some_and(|c| c != registration.capability_id()) {
        r.add("/capability_id", Rule::CapabilityMismatch);
    }
    let size = serde_json::to_string(doc).map_or(usize::MAX, |s| s.len());
    if size > registration.budget().max_result_bytes as usize {
        r.add("", Rule::ResultTooLarge);
    }
    let scopes = registration.write_scopes();
    if f.mutated == Some(true) && scopes.is_empty() {
        r.add("/local_private_state_mutated", Rule::AuthorityClaimed);
    }
    if f.writes == Some(true) && !scopes.contains(&ShippedTurnStartWriteScope::ProviderMessageReaction) {
        r.add("/external_writes_performed", Rule::AuthorityClaimed);
    }
    let routeless = matches!(registration, ShippedTurnStartRegistration::V1(v1) if v1.required_read.is_none());
    if routeless && f.read_required == Some(true) {
        r.add("/agent_read_required", Rule::NotAllowedValue);
    }
}

const INVOCATION_FIELDS: &[&str] = &["registration", "result"];

/// Validates `{registration, result}` as LoopX's invocation check does: the
/// registration first (its violations under `/registration`), then the result
/// against it (under `/result`).
pub fn validate_invocation(doc: &Value) -> Verdict<ShippedTurnStartResult> {
    let mut r = Report::new();
    let Some(map) = shape::object(&mut r, doc, "", INVOCATION_FIELDS) else { return Err(r.into_violations()) };
    let (Some(registration), Some(result)) = (map.get("registration"), map.get("result")) else {
        return Err(r.into_violations());
    };
    let registration =
        super::registration::validate_registration(registration).map_err(|v| v.prefixed("/registration"))?;
    validate_result(result, Some(&registration)).map_err(|v| v.prefixed("/result"))
}
