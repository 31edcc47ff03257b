//! The shipped dispatch result: one per source, what the host gets back.

use std::collections::HashSet;

use serde_json::Value;

use super::enums::{ShippedDispatchSchemaVersion, ShippedRuntimeFailureSchemaVersion};
use super::receipt::failure_code;
use super::result::{intent, IntentCheck};
use super::{grammar, DispatchResult, FailureCode, RuntimeFailurePhase};
use crate::contract::{Phase, Rule};
use crate::validate::{child, index, shape, Report, Verdict};

const FIELDS: &[&str] = &[
    "schema_version",
    "phase",
    "registered_count",
    "invoked_count",
    "replayed_hooks",
    "retried_hooks",
    "intent_count",
    "intents",
    "failures",
    "primary_writeback_preserved",
    "external_writes_performed",
];
const OPTIONAL: &[&str] = &["runtime_failure"];
const FAILURE_FIELDS: &[&str] = &["hook_id", "capability_id", "error_code"];
const RUNTIME_FAILURE_FIELDS: &[&str] = &["schema_version", "phase", "error_kind", "diagnostic_code"];
const RECEIPT_REF_PREFIX: &str = "post-writeback-hook:";

/// Validates a dispatch result.
///
/// - `intent_count` must equal the number of intents (`count_mismatch`) and
///   `invoked_count` may not exceed `registered_count` (`out_of_range`);
/// - the intents all come from one source and survived the key rule: a later
///   intent naming another `source_receipt_id` is `source_receipt_mismatch`,
///   one repeating an `idempotency_key` is `duplicate_item`;
/// - a failure's `hook_id` / `capability_id` are strings as registered (LoopX
///   reports `unknown`, `""` or the raw value for a registration it refused);
/// - `durable_receipt_ref` is `post-writeback-hook:` + a dispatch id, except
///   on the host bridge's two codes, whose refs name the host's own retry
///   journal: there any opaque ref (`bad_opaque_ref` otherwise).
pub fn validate_dispatch_result(doc: &Value) -> Verdict<DispatchResult> {
    let mut r = Report::new();
    let Some(map) = grammar::object(&mut r, doc, "", FIELDS, OPTIONAL) else { return Err(r.into_violations()) };

    if let Some(v) = map.get("schema_version") {
        shape::schema_version(&mut r, v, "/schema_version", ShippedDispatchSchemaVersion::VALUE);
    }
    if let Some(v) = map.get("phase") {
        shape::one_of(&mut r, v, "/phase", Phase::parse);
    }
    let count = |r: &mut Report, field: &str| {
        map.get(field).and_then(|v| shape::integer(r, v, &child("", field), 0, i64::from(u32::MAX)))
    };
    let registered = count(&mut r, "registered_count");
    if let (Some(invoked), Some(registered)) = (count(&mut r, "invoked_count"), registered) {
        if invoked > registered {
            r.add("/invoked_count", Rule::OutOfRange);
        }
    }
    for field in ["replayed_hooks", "retried_hooks"] {
        if let Some(v) = map.get(field) {
            grammar::token_array(&mut r, v, &child("", field), 0, usize::MAX);
        }
    }
    let intent_total = map.get("intents").and_then(|v| intents(&mut r, v));
    if let (Some(n), Some(total)) = (count(&mut r, "intent_count"), intent_total) {
        if n as usize != total {
            r.add("/intent_count", Rule::CountMismatch);
        }
    }
    if let Some(items) = map.get("failures").and_then(|v| shape::array(&mut r, v, "/failures", 0, usize::MAX)) {
        for (i, item) in items.iter().enumerate() {
            failure(&mut r, item, &index("/failures", i));
        }
    }
    if let Some(v) = map.get("primary_writeback_preserved") {
        grammar::must_be(&mut r, v, "/primary_writeback_preserved", true);
    }
    if let Some(v) = map.get("external_writes_performed") {
        grammar::must_be(&mut r, v, "/external_writes_performed", false);
    }
    if let Some(v) = map.get("runtime_failure") {
        runtime_failure(&mut r, v);
    }
    r.finish(&shape::integral_numbers(doc))
}

/// The intents; returns how many there are.
fn intents(r: &mut Report, v: &Value) -> Option<usize> {
    let items = shape::array(r, v, "/intents", 0, usize::MAX)?;
    let mut keys = HashSet::new();
    let mut source = None;
    let no_context = IntentCheck { intent_kinds: None, source_receipt_id: None };
    for (i, item) in items.iter().enumerate() {
        let path = index("/intents", i);
        let Some(found) = intent(r, item, &path, &no_context) else { continue };
        if let Some(id) = found.source_receipt_id {
            if *source.get_or_insert(id) != id {
                r.add(&child(&path, "source_receipt_id"), Rule::SourceReceiptMismatch);
            }
        }
        if let Some(key) = found.idempotency_key {
            if !keys.insert(key) {
                r.add(&child(&path, "idempotency_key"), Rule::DuplicateItem);
            }
        }
    }
    Some(items.len())
}

fn failure(r: &mut Report, v: &Value, path: &str) {
    let Some(map) = grammar::object(r, v, path, FAILURE_FIELDS, &["durable_receipt_ref"]) else { return };
    for field in ["hook_id", "capability_id"] {
        if let Some(v) = map.get(field) {
            shape::string(r, v, &child(path, field));
        }
    }
    let code = map.get("error_code").and_then(|v| failure_code(r, v, &child(path, "error_code")));
    if let Some(v) = map.get("durable_receipt_ref") {
        let at = child(path, "durable_receipt_ref");
        let Some(s) = shape::string(r, v, &at) else { return };
        let host_journal = matches!(code, Some(FailureCode::SourceProjectionFailed | FailureCode::DispatchFailed));
        let ok = if host_journal {
            s.len() <= 200 && crate::validate::grammar::is_opaque_ref(s)
        } else {
            s.strip_prefix(RECEIPT_REF_PREFIX).is_some_and(is_dispatch_id)
        };
        if !ok {
            r.add(&at, Rule::BadOpaqueRef);
        }
    }
}

fn is_dispatch_id(s: &str) -> bool {
    s.strip_prefix("pwh_")
        .is_some_and(|hex| hex.len() == 64 && hex.bytes().all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c)))
}

fn runtime_failure(r: &mut Report, v: &Value) {
    let Some(map) = shape::object(r, v, "/runtime_failure", RUNTIME_FAILURE_FIELDS) else { return };
    if let Some(v) = map.get("schema_version") {
        shape::schema_version(r, v, "/runtime_failure/schema_version", ShippedRuntimeFailureSchemaVersion::VALUE);
    }
    if let Some(v) = map.get("phase") {
        shape::one_of(r, v, "/runtime_failure/phase", RuntimeFailurePhase::parse);
    }
    for field in ["error_kind", "diagnostic_code"] {
        if let Some(v) = map.get(field) {
            grammar::token(r, v, &child("/runtime_failure", field));
        }
    }
}
