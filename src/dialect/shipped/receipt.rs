//! The sidecar receipt, one per dispatch id: checked when written, read
//! back or imported, so a receipt is never trusted because a host once
//! wrote it.

use serde_json::Value;

use super::enums::ShippedSidecarReceiptSchemaVersion;
use super::result::{intent, IntentCheck};
use super::{grammar, FailureCode, SidecarReceipt, SidecarStatus, MAX_ATTEMPT_COUNT};
use crate::contract::Rule;
use crate::validate::{shape, Report, Verdict};

const FIELDS: &[&str] = &[
    "schema_version",
    "dispatch_id",
    "hook_id",
    "capability_id",
    "source_receipt_id",
    "status",
    "intent",
    "error_code",
    "attempt_count",
    "recorded_at",
];

/// Validates a sidecar receipt on its own (no registration or input at hand).
///
/// - `intent_recorded` carries an intent and no error code, `not_applicable`
///   neither, `retryable_failure` an error code and no intent; a member that
///   breaks the pairing is `not_allowed_value` there;
/// - the intent's `source_receipt_id` must be the receipt's
///   (`source_receipt_mismatch`), the only binding checkable without the input;
/// - `error_code` is one of the twelve failure codes (`bad_token` when not a
///   token at all); LoopX's own check admits any token, but every code it
///   writes is one of them;
/// - `dispatch_id` is `pwh_` + 64 hex (`bad_opaque_ref`; it cannot be
///   recomputed here); `source_receipt_id` and `recorded_at` are non-empty.
pub fn validate_receipt(doc: &Value) -> Verdict<SidecarReceipt> {
    let mut r = Report::new();
    let Some(map) = shape::object(&mut r, doc, "", FIELDS) else { return Err(r.into_violations()) };

    if let Some(v) = map.get("schema_version") {
        shape::schema_version(&mut r, v, "/schema_version", ShippedSidecarReceiptSchemaVersion::VALUE);
    }
    if let Some(v) = map.get("dispatch_id") {
        shape::digest_id(&mut r, v, "/dispatch_id", "pwh_");
    }
    for field in ["hook_id", "capability_id"] {
        if let Some(v) = map.get(field) {
            grammar::token(&mut r, v, &format!("/{field}"));
        }
    }
    let source = map.get("source_receipt_id").and_then(|v| {
        grammar::stripped(&mut r, v, "/source_receipt_id")?;
        v.as_str()
    });
    let status = map.get("status").and_then(|v| shape::one_of(&mut r, v, "/status", SidecarStatus::parse));
    let has_intent = map.get("intent").map(|v| {
        if !v.is_null() {
            let check = IntentCheck { intent_kinds: None, source_receipt_id: source };
            intent(&mut r, v, "/intent", &check);
        }
        !v.is_null()
    });
    let has_error = map.get("error_code").map(|v| {
        if !v.is_null() {
            failure_code(&mut r, v, "/error_code");
        }
        !v.is_null()
    });
    if let Some(v) = map.get("attempt_count") {
        shape::integer(&mut r, v, "/attempt_count", 1, i64::from(MAX_ATTEMPT_COUNT));
    }
    if let Some(v) = map.get("recorded_at") {
        grammar::stripped(&mut r, v, "/recorded_at");
    }
    if let Some(status) = status {
        let (intent_wanted, error_wanted) = match status {
            SidecarStatus::IntentRecorded => (true, false),
            SidecarStatus::NotApplicable => (false, false),
            SidecarStatus::RetryableFailure => (false, true),
        };
        if has_intent.is_some_and(|has| has != intent_wanted) {
            r.add("/intent", Rule::NotAllowedValue);
        }
        if has_error.is_some_and(|has| has != error_wanted) {
            r.add("/error_code", Rule::NotAllowedValue);
        }
    }
    r.finish(&shape::integral_numbers(doc))
}

/// One of the twelve codes: `bad_token` when not a token, else
/// `not_allowed_value` when not a code.
pub(super) fn failure_code(r: &mut Report, v: &Value, path: &str) -> Option<FailureCode> {
    let s = grammar::token(r, v, path)?;
    let code = FailureCode::parse(s);
    if code.is_none() {
        r.add(path, Rule::NotAllowedValue);
    }
    code
}
