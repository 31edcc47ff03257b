//! The shipped hook input: built from a source for one registration, and
//! checked against that registration: what a provider may rely on, and what
//! core refuses to hand it.

use serde_json::{json, Map, Value};

use super::enums::{InputReceiptSchema, ShippedHookInputSchemaVersion};
use super::pyjson::py_strip;
use super::source::identity;
use super::{grammar, HookInput, Registration, Source, SourceStatus};
use crate::contract::Rule;
use crate::validate::{child, shape, Report, Verdict, Violations};

const FIELDS: &[&str] = &["schema_version", "receipt", "identity", "state_version", "projection"];
const RECEIPT_FIELDS: &[&str] = &["schema_version", "event_id", "event_kind", "status", "recorded_at", "durable"];

/// Validates a hook input for `registration`.
///
/// Read scopes are projection keys: a projection member the registration's
/// `requested_read_scope` does not list is `not_allowed_value` at that
/// member; a listed key the projection lacks is no fault (the source did
/// not carry it). The size rule (`input_too_large` at `""`) measures the
/// document as received against `budget.max_input_bytes`.
///
/// Choices where the shipped contract is silent:
/// - `receipt.event_id` is any non-empty string (core's are `pwr_` + 24
///   hex; LoopX's boundary asks no more), as is `recorded_at`;
/// - a `receipt.event_kind` the registration does not list is
///   `unknown_event_kind` (LoopX refuses such an input for that hook);
/// - the ids are checked stripped, as the source's are, and `todo_id` is
///   null or a non-empty id (`""` is already null in a source);
/// - a string that is blank to JavaScript's `trim` once stripped (U+FEFF
///   alone, say) is `empty_value`, as LoopX's TypeScript boundary refuses it;
/// - `receipt.schema_version` is a primary writeback receipt's or, on the
///   legacy path where a host hands in a ready input, a rollout event's.
pub fn validate_hook_input(doc: &Value, registration: &Registration) -> Verdict<HookInput> {
    walk(doc, registration).finish(doc)
}

/// The verdict of `validate_hook_input` without the typed document.
pub fn check_hook_input(doc: &Value, registration: &Registration) -> Result<(), Violations> {
    walk(doc, registration).into_result()
}

fn walk(doc: &Value, registration: &Registration) -> Report {
    let mut r = Report::new();
    let Some(map) = shape::object(&mut r, doc, "", FIELDS) else { return r };

    if let Some(v) = map.get("schema_version") {
        shape::schema_version(&mut r, v, "/schema_version", ShippedHookInputSchemaVersion::VALUE);
    }
    if let Some(v) = map.get("receipt") {
        receipt(&mut r, v, registration);
    }
    if let Some(v) = map.get("identity") {
        identity(&mut r, v, "/identity", false);
    }
    if let Some(v) = map.get("state_version") {
        grammar::stripped(&mut r, v, "/state_version");
    }
    if let Some(projection) = map.get("projection").and_then(|v| grammar::free_object(&mut r, v, "/projection")) {
        for key in projection.keys() {
            if !registration.requested_read_scope.iter().any(|s| s == key) {
                r.add(&child("/projection", key), Rule::NotAllowedValue);
            }
        }
    }
    if grammar::json_len(doc) > registration.budget.max_input_bytes as usize {
        r.add("", Rule::InputTooLarge);
    }
    js_blanks(&mut r, doc);
    r
}

/// `empty_value` at each string LoopX's boundary requires that Python's strip
/// leaves but JavaScript's `trim` empties.
fn js_blanks(r: &mut Report, doc: &Value) {
    const RECEIPT: &[&str] = &["schema_version", "event_id", "event_kind", "status", "recorded_at"];
    const IDENTITY: &[&str] = &["goal_id", "agent_id", "todo_id", "turn_instance_id", "effect_id"];
    let strings = RECEIPT
        .iter()
        .map(|f| (doc.pointer(&format!("/receipt/{f}")), child("/receipt", f)))
        .chain(IDENTITY.iter().map(|f| (doc.pointer(&format!("/identity/{f}")), child("/identity", f))))
        .chain(std::iter::once((doc.get("state_version"), "/state_version".to_owned())));
    for (value, path) in strings {
        if let Some(Value::String(s)) = value {
            let stripped = py_strip(s);
            if !stripped.is_empty() && grammar::js_blank(stripped) {
                r.add(&path, Rule::EmptyValue);
            }
        }
    }
}

fn receipt(r: &mut Report, v: &Value, registration: &Registration) {
    let Some(map) = shape::object(r, v, "/receipt", RECEIPT_FIELDS) else { return };
    if let Some(v) = map.get("schema_version") {
        if shape::string(r, v, "/receipt/schema_version").is_some_and(|s| InputReceiptSchema::parse(s).is_none()) {
            r.add("/receipt/schema_version", Rule::BadSchemaVersion);
        }
    }
    for field in ["event_id", "recorded_at"] {
        if let Some(v) = map.get(field) {
            grammar::stripped(r, v, &child("/receipt", field));
        }
    }
    if let Some(kind) = map.get("event_kind").and_then(|v| grammar::token(r, v, "/receipt/event_kind")) {
        if !registration.event_kinds.iter().any(|k| k == kind) {
            r.add("/receipt/event_kind", Rule::UnknownEventKind);
        }
    }
    if let Some(v) = map.get("status") {
        shape::one_of(r, v, "/receipt/status", SourceStatus::parse);
    }
    if let Some(v) = map.get("durable") {
        grammar::must_be(r, v, "/receipt/durable", true);
    }
}

/// The hook input of `source` for `registration`: the source's receipt
/// (with core's `event_id`), identity and state version, and its projection
/// filtered to the keys the registration reads. A key the registration
/// lists but the source lacks is simply absent. The input is then
/// validated, its size bound included.
pub fn hook_input(source: &Source, event_id: &str, registration: &Registration) -> Verdict<Value> {
    let projection: Map<String, Value> = registration
        .requested_read_scope
        .iter()
        .filter_map(|key| source.projection.get(key).map(|v| (key.clone(), v.clone())))
        .collect();
    let input = json!({
        "schema_version": ShippedHookInputSchemaVersion::VALUE,
        "receipt": {
            "schema_version": InputReceiptSchema::PrimaryWriteback.as_str(),
            "event_id": event_id,
            "event_kind": source.event_kind,
            "status": source.status,
            "recorded_at": source.committed_at,
            "durable": source.durable,
        },
        "identity": source.identity,
        "state_version": source.state_version,
        "projection": projection,
    });
    check_hook_input(&input, registration)?;
    Ok(input)
}
