//! The shipped hook result and its one intent, checked against the admitted
//! registration and the event id of the input the hook received.

use serde_json::Value;

use super::enums::{ShippedHookResultSchemaVersion, ShippedIntentSchemaVersion};
use super::{grammar, HookResult, Registration, ResultStatus};
use crate::contract::{Phase, Rule};
use crate::validate::{child, shape, Report, Verdict};

const FIELDS: &[&str] = &["schema_version", "hook_id", "capability_id", "phase", "status", "intent"];
const INTENT_FIELDS: &[&str] =
    &["schema_version", "intent_kind", "idempotency_key", "source_receipt_id", "payload", "requested_write_scope"];

/// What a result is checked against: the admitted registration and the
/// `receipt.event_id` of the input the hook was given.
#[derive(Clone, Copy, Debug)]
pub struct ResultContext<'a> {
    pub registration: &'a Registration,
    pub event_id: &'a str,
}

/// Validates a provider's result.
///
/// - `status: "not_applicable"` with a non-null intent, or `"intent"` with
///   a null one, is `not_allowed_value` at `/intent`; one intent at most is
///   the shape itself (an object or null);
/// - `hook_id` / `capability_id` must be the registration's
///   (`hook_mismatch` / `capability_mismatch`);
/// - the size rule (`result_too_large` at `""`) measures the document as
///   received against `budget.max_result_bytes`.
pub fn validate_result(doc: &Value, ctx: &ResultContext) -> Verdict<HookResult> {
    let mut r = Report::new();
    let Some(map) = shape::object(&mut r, doc, "", FIELDS) else { return Err(r.into_violations()) };
    let registration = ctx.registration;

    if let Some(v) = map.get("schema_version") {
        shape::schema_version(&mut r, v, "/schema_version", ShippedHookResultSchemaVersion::VALUE);
    }
    if let Some(v) = map.get("hook_id") {
        grammar::bound_token(&mut r, v, "/hook_id", &registration.hook_id, Rule::HookMismatch);
    }
    if let Some(v) = map.get("capability_id") {
        grammar::bound_token(&mut r, v, "/capability_id", &registration.capability_id, Rule::CapabilityMismatch);
    }
    if let Some(v) = map.get("phase") {
        shape::one_of(&mut r, v, "/phase", Phase::parse);
    }
    let status = map.get("status").and_then(|v| shape::one_of(&mut r, v, "/status", ResultStatus::parse));
    if let Some(v) = map.get("intent") {
        let check =
            IntentCheck { intent_kinds: Some(&registration.intent_kinds), source_receipt_id: Some(ctx.event_id) };
        match (status, v.is_null()) {
            (Some(ResultStatus::NotApplicable), false) | (Some(ResultStatus::Intent), true) => {
                r.add("/intent", Rule::NotAllowedValue)
            }
            _ => {}
        }
        if !v.is_null() {
            intent(&mut r, v, "/intent", &check);
        }
    }
    if grammar::json_len(doc) > registration.budget.max_result_bytes as usize {
        r.add("", Rule::ResultTooLarge);
    }
    r.finish(doc)
}

/// What an intent is checked against, when known: the kinds the
/// registration lists, and the event id it must name.
pub(super) struct IntentCheck<'a> {
    pub intent_kinds: Option<&'a [String]>,
    pub source_receipt_id: Option<&'a str>,
}

/// The parts of a valid-shaped intent other checks compare.
pub(super) struct IntentKeys<'a> {
    pub idempotency_key: Option<&'a str>,
    pub source_receipt_id: Option<&'a str>,
}

/// One intent. `idempotency_key` is any string the provider chooses that is
/// not empty once stripped (LoopX bounds it only through the result size).
pub(super) fn intent<'a>(r: &mut Report, v: &'a Value, path: &str, check: &IntentCheck) -> Option<IntentKeys<'a>> {
    let map = shape::object(r, v, path, INTENT_FIELDS)?;
    let at = |f: &str| child(path, f);
    if let Some(v) = map.get("schema_version") {
        shape::schema_version(r, v, &at("schema_version"), ShippedIntentSchemaVersion::VALUE);
    }
    if let Some(kind) = map.get("intent_kind").and_then(|v| grammar::token(r, v, &at("intent_kind"))) {
        if check.intent_kinds.is_some_and(|kinds| !kinds.iter().any(|k| k == kind)) {
            r.add(&at("intent_kind"), Rule::UnknownIntentKind);
        }
    }
    let idempotency_key = map.get("idempotency_key").and_then(|v| {
        grammar::stripped(r, v, &at("idempotency_key"))?;
        v.as_str()
    });
    let source_receipt_id = map.get("source_receipt_id").and_then(|v| {
        grammar::stripped(r, v, &at("source_receipt_id"))?;
        let s = v.as_str()?;
        if check.source_receipt_id.is_some_and(|expected| expected != s) {
            r.add(&at("source_receipt_id"), Rule::SourceReceiptMismatch);
        }
        Some(s)
    });
    if let Some(v) = map.get("payload") {
        grammar::free_object(r, v, &at("payload"));
    }
    if let Some(v) = map.get("requested_write_scope") {
        grammar::empty_write_scope(r, v, &at("requested_write_scope"));
    }
    Some(IntentKeys { idempotency_key, source_receipt_id })
}
