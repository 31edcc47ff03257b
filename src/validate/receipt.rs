//! Dispatch and failure receipts (contract-v0 sections 2 and 5): the sidecar
//! journal's public-safe records. Checked when read back or handed across the
//! binding, so a receipt is never trusted because core once wrote it.

use serde_json::{Map, Value};

use super::registration::event_kind;
use super::report::{Report, Verdict};
use super::{grammar, shape};
use crate::contract::{
    DispatchReceipt, DispatchReceiptSchemaVersion, DispatchStatus, FailureCode, FailureReceipt,
    FailureReceiptSchemaVersion, Rule,
};

const DISPATCH_FIELDS: &[&str] = &[
    "schema_version",
    "dispatch_id",
    "hook_id",
    "capability_id",
    "receipt_id",
    "effect_id",
    "event_kind",
    "registration_digest",
    "status",
    "attempt",
    "intent_ids",
    "result_digest",
    "failure",
];
const FAILURE_RECEIPT_FIELDS: &[&str] = &["schema_version", "dispatch_id", "hook_id", "code", "rule", "attempt"];
const FAILURE_FIELDS: &[&str] = &["code", "rule"];
const MAX_INTENTS: usize = 16;

/// What a nullable member held, for the status consistency checks. A member
/// that is absent or of the wrong type is already reported and takes no part.
#[derive(Clone, Copy, PartialEq)]
enum Slot<T> {
    Null,
    Present(T),
    Unusable,
}

/// Validates a dispatch receipt: grammars, then consistency of status with
/// intent_ids, result_digest and failure.
///
/// Choices where contract-v0 is silent:
/// - hook_id must start with `<capability_id>.` here too (`capability_mismatch`
///   at `/hook_id`), as everywhere the pair appears;
/// - a null result_digest where the status needs one, or a result_digest on a
///   `failed`/`exhausted` receipt, is `not_allowed_value` at `/result_digest`;
/// - intent_ids on `not_applicable`/`failed`/`exhausted` is `too_many_items`
///   at `/intent_ids` (not repeated when the array is over 16 anyway);
/// - a `failed` receipt may carry any failure code, `dispatch_budget_exhausted`
///   included (a profile ceiling can fail a hook without ending its identity);
/// - the failure's rule is not checked against its code.
pub fn validate_dispatch_receipt(doc: &Value) -> Verdict<DispatchReceipt> {
    let mut r = Report::new();
    let Some(map) = shape::object(&mut r, doc, "", DISPATCH_FIELDS) else { return Err(r.into_violations()) };

    if let Some(v) = map.get("schema_version") {
        shape::schema_version(&mut r, v, "/schema_version", DispatchReceiptSchemaVersion::VALUE);
    }
    if let Some(v) = map.get("dispatch_id") {
        shape::recomputed_id(&mut r, v, "/dispatch_id", "pwh_", Rule::DispatchIdMismatch);
    }
    let capability = map.get("capability_id").and_then(|v| shape::token(&mut r, v, "/capability_id"));
    if let Some(hook) = map.get("hook_id").and_then(|v| shape::token(&mut r, v, "/hook_id")) {
        if capability.is_some_and(|c| !grammar::is_owned_by(hook, c)) {
            r.add("/hook_id", Rule::CapabilityMismatch);
        }
    }
    for field in ["receipt_id", "effect_id"] {
        if let Some(v) = map.get(field) {
            shape::opaque_ref(&mut r, v, &format!("/{field}"));
        }
    }
    if let Some(v) = map.get("event_kind") {
        event_kind(&mut r, v, "/event_kind");
    }
    if let Some(v) = map.get("registration_digest") {
        shape::digest_id(&mut r, v, "/registration_digest", "");
    }
    let status = map.get("status").and_then(|v| shape::one_of(&mut r, v, "/status", DispatchStatus::parse));
    attempt(&mut r, map);
    let intent_count = map.get("intent_ids").and_then(|v| {
        let items = shape::unique_array(&mut r, v, "/intent_ids", 0, MAX_INTENTS);
        for (path, item) in &items {
            shape::recomputed_id(&mut r, item, path, "pwi_", Rule::IntentIdMismatch);
        }
        v.is_array().then_some(items.len())
    });
    let digest = match map.get("result_digest") {
        Some(Value::Null) => Slot::Null,
        Some(v) => shape::digest_id(&mut r, v, "/result_digest", "").map_or(Slot::Unusable, |_| Slot::Present(())),
        None => Slot::Unusable,
    };
    let failure = match map.get("failure") {
        Some(Value::Null) => Slot::Null,
        Some(v) => failure_detail(&mut r, v).map_or(Slot::Unusable, Slot::Present),
        None => Slot::Unusable,
    };
    if let Some(status) = status {
        consistency(&mut r, status, intent_count, digest, failure);
    }
    r.finish(&shape::integral_numbers(doc))
}

/// Validates a failure receipt: one failed attempt, codes and ids only.
pub fn validate_failure_receipt(doc: &Value) -> Verdict<FailureReceipt> {
    let mut r = Report::new();
    let Some(map) = shape::object(&mut r, doc, "", FAILURE_RECEIPT_FIELDS) else { return Err(r.into_violations()) };

    if let Some(v) = map.get("schema_version") {
        shape::schema_version(&mut r, v, "/schema_version", FailureReceiptSchemaVersion::VALUE);
    }
    if let Some(v) = map.get("dispatch_id") {
        shape::recomputed_id(&mut r, v, "/dispatch_id", "pwh_", Rule::DispatchIdMismatch);
    }
    if let Some(v) = map.get("hook_id") {
        shape::token(&mut r, v, "/hook_id");
    }
    if let Some(v) = map.get("code") {
        shape::one_of(&mut r, v, "/code", FailureCode::parse);
    }
    if let Some(v) = map.get("rule") {
        nullable_rule(&mut r, v, "/rule");
    }
    attempt(&mut r, map);
    r.finish(&shape::integral_numbers(doc))
}

/// The 1-based attempt, bounded by max_invocations_per_dispatch's ceiling.
fn attempt(r: &mut Report, map: &Map<String, Value>) {
    if let Some(v) = map.get("attempt") {
        shape::integer(r, v, "/attempt", 1, 4);
    }
}

/// `{code, rule}`; returns the code when the member is an object (the code is
/// `None` when it is itself invalid).
fn failure_detail(r: &mut Report, v: &Value) -> Option<Option<FailureCode>> {
    let map = shape::object(r, v, "/failure", FAILURE_FIELDS)?;
    let code = map.get("code").and_then(|v| shape::one_of(r, v, "/failure/code", FailureCode::parse));
    if let Some(v) = map.get("rule") {
        nullable_rule(r, v, "/failure/rule");
    }
    Some(code)
}

/// `null`, or one of the stable rule codes of contract-v0 section 2.
fn nullable_rule(r: &mut Report, v: &Value, path: &str) {
    if !v.is_null() {
        shape::one_of(r, v, path, |s| serde_json::from_value::<Rule>(Value::String(s.to_owned())).ok());
    }
}

/// Status against the other members: final successes carry a digest and no
/// failure, failures carry a failure and nothing a result would produce.
fn consistency(
    r: &mut Report,
    status: DispatchStatus,
    intent_count: Option<usize>,
    digest: Slot<()>,
    failure: Slot<Option<FailureCode>>,
) {
    let has_intents = intent_count.is_some_and(|n| (1..=MAX_INTENTS).contains(&n));
    match status {
        DispatchStatus::Proposed | DispatchStatus::NotApplicable => {
            if status == DispatchStatus::Proposed && intent_count == Some(0) {
                r.add("/intent_ids", Rule::TooFewItems);
            }
            if status == DispatchStatus::NotApplicable && has_intents {
                r.add("/intent_ids", Rule::TooManyItems);
            }
            if digest == Slot::Null {
                r.add("/result_digest", Rule::NotAllowedValue);
            }
            if matches!(failure, Slot::Present(_)) {
                r.add("/failure", Rule::NotAllowedValue);
            }
        }
        DispatchStatus::Failed | DispatchStatus::Exhausted => {
            if has_intents {
                r.add("/intent_ids", Rule::TooManyItems);
            }
            if digest == Slot::Present(()) {
                r.add("/result_digest", Rule::NotAllowedValue);
            }
            match failure {
                Slot::Null => r.add("/failure", Rule::NotAllowedValue),
                Slot::Present(Some(code))
                    if status == DispatchStatus::Exhausted && code != FailureCode::DispatchBudgetExhausted =>
                {
                    r.add("/failure/code", Rule::NotAllowedValue)
                }
                _ => {}
            }
        }
    }
}
