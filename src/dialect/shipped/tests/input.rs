use serde_json::{json, Value};

use super::*;
use crate::dialect::shipped::{validate_hook_input, HookInput};
use crate::validate::fixtures::{assert_one, with, without};
use crate::validate::Rule::*;
use crate::validate::Verdict;

fn check(doc: &Value) -> Verdict<HookInput> {
    validate_hook_input(doc, &typed_registration())
}

fn set(pointer: &str, value: Value) -> Verdict<HookInput> {
    check(&with(input(), pointer, value))
}

#[test]
fn loopx_input_is_accepted() {
    let typed = check(&input()).expect("LoopX's input");
    assert_eq!(typed.receipt.event_id, EVENT_ID);
    assert!(set("/identity/todo_id", json!(null)).is_ok());
    assert!(set("/projection", json!({})).is_ok());
    assert!(set("/receipt/status", json!("appended")).is_ok());
}

#[test]
fn exact_fields() {
    assert_one(&set("/dispatch_id", json!(DISPATCH_ID)), "/dispatch_id", UnknownField);
    assert_one(&set("/receipt/receipt_id", json!("r")), "/receipt/receipt_id", UnknownField);
    for path in [
        "/schema_version",
        "/receipt",
        "/identity",
        "/state_version",
        "/projection",
        "/receipt/schema_version",
        "/receipt/event_id",
        "/receipt/event_kind",
        "/receipt/status",
        "/receipt/recorded_at",
        "/receipt/durable",
        "/identity/todo_id",
    ] {
        assert_one(&check(&without(input(), path)), path, MissingField);
    }
    assert_one(
        &set("/schema_version", json!("loopx_post_writeback_hook_input_v0")),
        "/schema_version",
        BadSchemaVersion,
    );
    assert_one(&set("/receipt/schema_version", json!("x")), "/receipt/schema_version", BadSchemaVersion);
}

#[test]
fn a_projection_key_outside_the_read_scope_is_a_rejection() {
    assert_one(&set("/projection/last_report", json!({})), "/projection/last_report", NotAllowedValue);
    assert_one(&set("/projection", json!([])), "/projection", WrongType);
}

#[test]
fn the_receipt_is_a_durable_event_the_hook_takes() {
    assert_one(&set("/receipt/event_kind", json!("goal_archived")), "/receipt/event_kind", UnknownEventKind);
    assert_one(&set("/receipt/event_kind", json!("x")), "/receipt/event_kind", BadToken);
    assert_one(&set("/receipt/durable", json!(false)), "/receipt/durable", NotAllowedValue);
    assert_one(&set("/receipt/status", json!("pending")), "/receipt/status", NotAllowedValue);
    assert_one(&set("/receipt/event_id", json!(" ")), "/receipt/event_id", EmptyValue);
    assert_one(&set("/receipt/recorded_at", json!("")), "/receipt/recorded_at", EmptyValue);
}

#[test]
fn identity_ids_and_state_version() {
    assert_one(&set("/identity/goal_id", json!("../goal")), "/identity/goal_id", BadOpaqueRef);
    assert_one(&set("/identity/effect_id", json!("\u{85}")), "/identity/effect_id", EmptyValue);
    assert_one(&set("/identity/todo_id", json!("")), "/identity/todo_id", EmptyValue);
    assert_one(&set("/state_version", json!(" ")), "/state_version", EmptyValue);
    assert_one(&set("/state_version", json!(1)), "/state_version", WrongType);
}

#[test]
fn the_size_is_the_compact_json_of_the_input_as_received() {
    let mut registration = typed_registration();
    registration.budget.max_input_bytes = 1024;
    let fits = |doc: &Value| validate_hook_input(doc, &registration);
    // Pad the projection so the compact text is exactly the bound, then one byte past it.
    let base = with(input(), "/projection/stage_completion", json!(""));
    let len = serde_json::to_string(&base).unwrap().len();
    let exact = with(input(), "/projection/stage_completion", json!("x".repeat(1024 - len)));
    assert_eq!(serde_json::to_string(&exact).unwrap().len(), 1024);
    assert!(fits(&exact).is_ok());
    // A multi-byte character counts its UTF-8 bytes.
    let over = with(input(), "/projection/stage_completion", json!(format!("{}\u{e9}", "x".repeat(1023 - len))));
    assert_one(&fits(&over), "", InputTooLarge);
}
