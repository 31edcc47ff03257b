//! One test per rule of the shipped registration (the result's are in
//! `result.rs`): each names the pointer and rule it expects, so it fails
//! when its rule is removed.

use serde_json::{json, Value};

use super::*;

mod dispatch;
mod kernel;
mod result;
use crate::validate::{Rule, Violation};

pub(super) const LARK_COMMAND: &str = "loopx --registry /abs/registry.json lark-inbox drain --goal-id G";

/// A LoopX-shaped lark-inbox registration v1.
pub(super) fn registration() -> Value {
    json!({
        "schema_version": "loopx_turn_start_capability_hook_registration_v1",
        "hook_id": "lark_inbox.turn_start",
        "capability_id": "lark-inbox",
        "phase": "turn_start",
        "budget": {"max_invocations_per_dispatch": 1, "max_result_bytes": 16384},
        "failure_policy": "isolate",
        "requested_read_scope": ["lark_inbox.messages"],
        "requested_write_scope": ["owner_private_inbox", "owner_private_cursor", "provider_message_reaction"],
        "required_read": {
            "kind": "lark_inbox_drain",
            "command": LARK_COMMAND,
            "reason": "Fresh Lark messages arrived before this turn.",
            "ordering": "before_work"
        }
    })
}

pub(super) fn result(status: &str) -> Value {
    let (count, read, code) = match status {
        "observed" => (2, true, Value::Null),
        "partial" => (1, true, json!("provider_unavailable")),
        "unavailable" => (0, false, json!("provider_unavailable")),
        "failed" => (0, false, json!("provider_contract_error")),
        _ => (0, false, Value::Null),
    };
    json!({
        "schema_version": "loopx_turn_start_capability_hook_result_v0",
        "hook_id": "lark_inbox.turn_start",
        "capability_id": "lark-inbox",
        "phase": "turn_start",
        "status": status,
        "observation_count": count,
        "agent_read_required": read,
        "external_reads_performed": status != "not_applicable",
        "external_writes_performed": false,
        "local_private_state_mutated": status != "not_applicable",
        "private_content_returned": false,
        "provider_payload_returned": false,
        "error_code": code
    })
}

pub(super) fn with(mut doc: Value, pointer: &str, value: Value) -> Value {
    let (parent, key) = pointer.rsplit_once('/').expect("a member pointer");
    doc.pointer_mut(parent).and_then(Value::as_object_mut).expect("parent exists").insert(key.into(), value);
    doc
}

pub(super) fn without(mut doc: Value, pointer: &str) -> Value {
    let (parent, key) = pointer.rsplit_once('/').unwrap();
    doc.pointer_mut(parent).and_then(Value::as_object_mut).unwrap().remove(key);
    doc
}

pub(super) fn one(path: &str, rule: Rule) -> Vec<Violation> {
    vec![Violation { path: path.into(), rule }]
}

pub(super) fn reg_rules(doc: &Value) -> Vec<Violation> {
    validate_registration(doc).expect_err("rejected").into_vec()
}

pub(super) fn admitted() -> ShippedTurnStartRegistration {
    validate_registration(&registration()).expect("the lark registration is valid")
}

pub(super) fn result_rules(doc: &Value) -> Vec<Violation> {
    validate_result(doc, Some(&admitted())).expect_err("rejected").into_vec()
}

#[test]
fn the_lark_registration_and_a_v0_one_are_admitted() {
    let admitted = admitted();
    assert_eq!(admitted.required_read().unwrap().command, LARK_COMMAND);
    let v0 = without(
        with(registration(), "/schema_version", json!("loopx_turn_start_capability_hook_registration_v0")),
        "/required_read",
    );
    assert!(matches!(validate_registration(&v0), Ok(ShippedTurnStartRegistration::V0(_))));
    let null_read = with(registration(), "/required_read", Value::Null);
    assert_eq!(validate_registration(&null_read).unwrap().required_read(), None);
}

#[test]
fn registration_fields_are_exact_per_version() {
    let v0 = with(registration(), "/schema_version", json!("loopx_turn_start_capability_hook_registration_v0"));
    assert_eq!(reg_rules(&v0), one("/required_read", Rule::UnknownField));
    assert_eq!(reg_rules(&without(registration(), "/required_read")), one("/required_read", Rule::MissingField));
    assert_eq!(
        reg_rules(&with(registration(), "/schema_version", json!("x_v9"))),
        one("/schema_version", Rule::BadSchemaVersion)
    );
}

#[test]
fn registration_tokens_phase_and_policy() {
    assert_eq!(reg_rules(&with(registration(), "/hook_id", json!("ab"))), one("/hook_id", Rule::BadToken));
    assert_eq!(
        reg_rules(&with(registration(), "/capability_id", json!("a".repeat(97)))),
        one("/capability_id", Rule::TooLong)
    );
    assert_eq!(
        reg_rules(&with(registration(), "/phase", json!("post_writeback"))),
        one("/phase", Rule::NotAllowedValue)
    );
    assert_eq!(
        reg_rules(&with(registration(), "/failure_policy", json!("retry"))),
        one("/failure_policy", Rule::PolicyNotIsolate)
    );
}

#[test]
fn registration_scopes() {
    let many: Vec<String> = (0..17).map(|i| format!("scope_{i}")).collect();
    assert_eq!(
        reg_rules(&with(registration(), "/requested_read_scope", json!(many))),
        one("/requested_read_scope", Rule::TooManyItems)
    );
    assert_eq!(
        reg_rules(&with(registration(), "/requested_read_scope", json!(["abc", "abc"]))),
        one("/requested_read_scope/1", Rule::DuplicateItem)
    );
    assert_eq!(
        reg_rules(&with(registration(), "/requested_read_scope", json!(["A"]))),
        one("/requested_read_scope/0", Rule::BadToken)
    );
    assert_eq!(
        reg_rules(&with(registration(), "/requested_write_scope", json!(["repository_write"]))),
        one("/requested_write_scope/0", Rule::NotAllowedValue)
    );
    let memory = json!(["agent_private_capability_memory"]);
    assert!(validate_registration(&with(registration(), "/requested_write_scope", memory.clone())).is_ok());
    let v0 = without(
        with(registration(), "/schema_version", json!("loopx_turn_start_capability_hook_registration_v0")),
        "/required_read",
    );
    assert_eq!(
        reg_rules(&with(v0, "/requested_write_scope", memory)),
        one("/requested_write_scope/0", Rule::NotAllowedValue)
    );
    let nine: Vec<String> = (0..9).map(|i| format!("scope_{i}")).collect();
    assert_eq!(
        reg_rules(&with(registration(), "/requested_write_scope", json!(nine)))[0],
        one("/requested_write_scope", Rule::TooManyItems)[0]
    );
}

#[test]
fn registration_budget_is_exact() {
    assert_eq!(
        reg_rules(&with(registration(), "/budget/max_invocations_per_dispatch", json!(2))),
        one("/budget/max_invocations_per_dispatch", Rule::OutOfRange)
    );
    assert_eq!(
        reg_rules(&with(registration(), "/budget/max_result_bytes", json!(1023))),
        one("/budget/max_result_bytes", Rule::OutOfRange)
    );
    assert_eq!(
        reg_rules(&with(registration(), "/budget/max_result_bytes", json!(65537))),
        one("/budget/max_result_bytes", Rule::OutOfRange)
    );
    assert_eq!(
        reg_rules(&with(registration(), "/budget/timeout_ms", json!(1))),
        one("/budget/timeout_ms", Rule::UnknownField)
    );
}

#[test]
fn required_read_command() {
    let padded = with(registration(), "/required_read/command", json!(format!("\u{feff} {LARK_COMMAND}\n")));
    assert_eq!(validate_registration(&padded).unwrap().required_read().unwrap().command, LARK_COMMAND);
    let path = "/required_read/command";
    let long = format!("loopx {}", "é".repeat(510));
    assert_eq!(long.len(), 1026);
    assert_eq!(reg_rules(&with(registration(), path, json!(long))), one(path, Rule::TooLong));
    assert!(validate_registration(&with(registration(), path, json!(format!("loopx {}", "é".repeat(509))))).is_ok());
    assert_eq!(reg_rules(&with(registration(), path, json!("loopx\tdrain"))), one(path, Rule::NotAllowedValue));
    assert_eq!(reg_rules(&with(registration(), path, json!("loopx \u{7f}"))), one(path, Rule::NotAllowedValue));
    assert_eq!(reg_rules(&with(registration(), path, json!(" \u{3000} "))), one(path, Rule::NotAllowedValue));
    assert_eq!(
        reg_rules(&with(registration(), path, json!("loopx --token=ghp_abc drain"))),
        one(path, Rule::CredentialLikeValue)
    );
}

#[test]
fn required_read_reason_kind_and_ordering() {
    let path = "/required_read/reason";
    assert!(validate_registration(&with(registration(), path, json!("é".repeat(240)))).is_ok());
    assert_eq!(reg_rules(&with(registration(), path, json!("😀".repeat(121)))), one(path, Rule::TooLong));
    assert_eq!(reg_rules(&with(registration(), path, json!("a\nb"))), one(path, Rule::NotAllowedValue));
    assert_eq!(reg_rules(&with(registration(), path, json!("see sk-live-123"))), one(path, Rule::CredentialLikeValue));
    assert_eq!(
        reg_rules(&with(registration(), "/required_read/kind", json!("Drain"))),
        one("/required_read/kind", Rule::BadToken)
    );
    assert_eq!(
        reg_rules(&with(registration(), "/required_read/ordering", json!("after_work"))),
        one("/required_read/ordering", Rule::NotAllowedValue)
    );
    assert_eq!(
        reg_rules(&with(registration(), "/required_read/extra", json!(1))),
        one("/required_read/extra", Rule::UnknownField)
    );
    assert_eq!(reg_rules(&without(registration(), "/required_read/reason")), one(path, Rule::MissingField));
}

#[test]
fn prompt_budget_bounds_the_descriptor() {
    let path = "/required_read/prompt_budget_bytes";
    let read = admitted().required_read().unwrap().clone();
    let needed = descriptor_bytes(&ShippedRequiredRead { prompt_budget_bytes: Some(100), ..read }) as u64;
    assert!(validate_registration(&with(registration(), path.rsplit_once('/').unwrap().0, {
        let mut r = registration()["required_read"].clone();
        r["prompt_budget_bytes"] = json!(needed);
        r
    }))
    .is_ok());
    let mut tight = registration();
    tight["required_read"]["prompt_budget_bytes"] = json!(needed - 1);
    assert_eq!(reg_rules(&tight), one("/required_read", Rule::TooLong));
    tight["required_read"]["prompt_budget_bytes"] = json!(2049);
    assert_eq!(reg_rules(&tight), one(path, Rule::OutOfRange));
    tight["required_read"]["prompt_budget_bytes"] = json!(0);
    assert_eq!(reg_rules(&tight), one(path, Rule::OutOfRange));
}
