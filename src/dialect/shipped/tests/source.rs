use serde_json::{json, Value};

use super::*;
use crate::dialect::shipped::{hook_input, validate_source, Source, SourceStatus};
use crate::validate::fixtures::{assert_one, assert_violations, with, without};
use crate::validate::Rule::*;
use crate::validate::Verdict;

fn set(pointer: &str, value: Value) -> Verdict<Source> {
    validate_source(&with(source(), pointer, value))
}

#[test]
fn the_refresh_state_source_is_accepted_and_keeps_the_worked_example_id() {
    let s = typed_source();
    assert_eq!(s.status, SourceStatus::Committed);
    assert_eq!(s.identity.todo_id.as_deref(), Some("todo-1"));
    assert_eq!(s.receipt_id, None);
    assert_eq!(event_id_of(&s), EVENT_ID);
    // A replan travels on refresh_state with no todo; a completion is todo_complete.
    assert_eq!(set("/identity/todo_id", json!(null)).unwrap().identity.todo_id, None);
    assert_eq!(set("/event_kind", json!("todo_complete")).unwrap().event_kind, "todo_complete");
}

#[test]
fn exact_fields_and_the_optional_receipt_id() {
    assert_one(&set("/extra", json!(1)), "/extra", UnknownField);
    assert_one(&set("/identity/step_kind", json!("x")), "/identity/step_kind", UnknownField);
    for field in
        ["schema_version", "event_kind", "status", "durable", "identity", "state_version", "committed_at", "projection"]
    {
        let path = format!("/{field}");
        assert_one(&validate_source(&without(source(), &path)), &path, MissingField);
    }
    for field in ["goal_id", "agent_id", "todo_id", "turn_instance_id", "effect_id"] {
        let path = format!("/identity/{field}");
        assert_one(&validate_source(&without(source(), &path)), &path, MissingField);
    }
    assert_eq!(set("/receipt_id", json!(null)).unwrap().receipt_id, None);
    assert_eq!(set("/receipt_id", json!("")).unwrap().receipt_id, None);
    assert_eq!(set("/receipt_id", json!(" rcpt-1\u{85}")).unwrap().receipt_id.as_deref(), Some("rcpt-1"));
    assert_one(&set("/receipt_id", json!(7)), "/receipt_id", WrongType);
    assert_one(
        &set("/schema_version", json!("loopx_post_writeback_hook_input_v0")),
        "/schema_version",
        BadSchemaVersion,
    );
}

#[test]
fn every_string_is_stripped_with_pythons_whitespace_set() {
    let doc = with(
        with(source(), "/identity/goal_id", json!("\u{1c} goal-1\u{3000}")),
        "/state_version",
        json!("\tstate-v1\u{85}"),
    );
    let doc = with(with(doc, "/event_kind", json!(" refresh_state\n")), "/status", json!("committed\u{2029}"));
    let doc = with(doc, "/committed_at", json!("\u{a0}2026-09-02T12:00:00Z"));
    let s = validate_source(&doc).expect("stripped");
    assert_eq!(
        (s.identity.goal_id.as_str(), s.state_version.as_str(), s.event_kind.as_str(), s.committed_at.as_str()),
        ("goal-1", "state-v1", "refresh_state", "2026-09-02T12:00:00Z")
    );
    // Stripping never changes the identity of the history LoopX stored.
    assert_eq!(event_id_of(&s), EVENT_ID);
    // U+FEFF is not Python whitespace: it stays, and a goal id with it is no folder name.
    assert_eq!(set("/identity/agent_id", json!("\u{feff}a")).unwrap().identity.agent_id, "\u{feff}a");
    assert_one(&set("/identity/goal_id", json!("\u{feff}goal-1")), "/identity/goal_id", BadOpaqueRef);
}

#[test]
fn empty_after_stripping_is_a_rejection() {
    for path in [
        "/identity/goal_id",
        "/identity/agent_id",
        "/identity/turn_instance_id",
        "/identity/effect_id",
        "/state_version",
        "/committed_at",
        "/event_kind",
        "/status",
    ] {
        assert_one(&set(path, json!(" \u{1f}\u{85} ")), path, EmptyValue);
        assert_one(&set(path, json!("")), path, EmptyValue);
    }
    // "" is null for the two nullable ids, as LoopX decodes them; whitespace is not.
    assert_eq!(set("/identity/todo_id", json!("")).unwrap().identity.todo_id, None);
    assert_one(&set("/identity/todo_id", json!("  ")), "/identity/todo_id", EmptyValue);
    assert_one(&set("/receipt_id", json!("\u{2028}")), "/receipt_id", EmptyValue);
}

#[test]
fn grammars_and_values() {
    assert_one(&set("/identity/goal_id", json!("goal/1")), "/identity/goal_id", BadOpaqueRef);
    assert_one(&set("/identity/goal_id", json!(".hidden")), "/identity/goal_id", BadOpaqueRef);
    assert_one(&set("/identity/goal_id", json!("g".repeat(201))), "/identity/goal_id", TooLong);
    assert!(set("/identity/goal_id", json!("G".repeat(200))).is_ok());
    assert_one(&set("/event_kind", json!("Refresh State")), "/event_kind", BadToken);
    assert_one(&set("/event_kind", json!("e".repeat(97))), "/event_kind", TooLong);
    assert_one(&set("/status", json!("pending")), "/status", NotAllowedValue);
    assert_eq!(set("/status", json!("receipt_repaired")).unwrap().status, SourceStatus::ReceiptRepaired);
    assert_one(&set("/durable", json!(false)), "/durable", NotAllowedValue);
    assert_one(&set("/durable", json!("true")), "/durable", WrongType);
    assert_one(&set("/projection", json!([])), "/projection", WrongType);
    assert_one(&set("/identity", json!(null)), "/identity", WrongType);
    assert_one(&set("/identity/todo_id", json!(1)), "/identity/todo_id", WrongType);
}

#[test]
fn the_hook_input_reads_only_the_registered_projection_keys() {
    let registration = typed_registration();
    let built = hook_input(&typed_source(), EVENT_ID, &registration).expect("LoopX's input");
    assert_eq!(built, input());
    // A key the registration lists but the source lacks is simply absent.
    let lacking = validate_source(&without(source(), "/projection/project_progress")).unwrap();
    let built = hook_input(&lacking, EVENT_ID, &registration).unwrap();
    assert_eq!(built["projection"].as_object().unwrap().keys().collect::<Vec<_>>(), ["stage_completion"]);
}

#[test]
fn the_hook_input_is_validated_with_its_size_bound() {
    let mut registration = typed_registration();
    registration.budget.max_input_bytes = 1024;
    let big = typed_source();
    let mut big = big;
    big.projection.insert("stage_completion".into(), json!("x".repeat(1024)));
    assert_one(&hook_input(&big, EVENT_ID, &registration), "", InputTooLarge);
    // An event kind the hook does not take is refused for it.
    let other = validate_source(&with(source(), "/event_kind", json!("goal_archived"))).unwrap();
    assert_violations(
        &hook_input(&other, EVENT_ID, &typed_registration()),
        &[("/receipt/event_kind", UnknownEventKind)],
    );
}
