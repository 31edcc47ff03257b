use serde_json::{json, Value};

use super::*;
use crate::dialect::shipped::{validate_result, HookResult, ResultContext, ResultStatus};
use crate::validate::fixtures::{assert_one, assert_violations, with, without};
use crate::validate::Rule::*;
use crate::validate::Verdict;

fn check(doc: &Value) -> Verdict<HookResult> {
    let registration = typed_registration();
    validate_result(doc, &ResultContext { registration: &registration, event_id: EVENT_ID })
}

fn set(pointer: &str, value: Value) -> Verdict<HookResult> {
    check(&with(result(), pointer, value))
}

fn not_applicable() -> Value {
    with(with(result(), "/status", json!("not_applicable")), "/intent", json!(null))
}

#[test]
fn an_intent_and_not_applicable_are_accepted() {
    let typed = check(&result()).expect("the periodic-report intent");
    assert_eq!(typed.intent.unwrap().idempotency_key, "periodic-report:stage-123");
    assert_eq!(check(&not_applicable()).unwrap().status, ResultStatus::NotApplicable);
}

#[test]
fn exact_fields() {
    assert_one(&set("/intents", json!([])), "/intents", UnknownField);
    assert_one(&set("/intent/intent_id", json!("pwi_x")), "/intent/intent_id", UnknownField);
    for path in ["/schema_version", "/hook_id", "/capability_id", "/phase", "/status", "/intent"] {
        assert_one(&check(&without(result(), path)), path, MissingField);
    }
    for field in
        ["schema_version", "intent_kind", "idempotency_key", "source_receipt_id", "payload", "requested_write_scope"]
    {
        let path = format!("/intent/{field}");
        assert_one(&check(&without(result(), &path)), &path, MissingField);
    }
    assert_one(
        &set("/schema_version", json!("loopx_post_writeback_hook_result_v0")),
        "/schema_version",
        BadSchemaVersion,
    );
    assert_one(
        &set("/intent/schema_version", json!("loopx_post_writeback_intent_v0")),
        "/intent/schema_version",
        BadSchemaVersion,
    );
}

#[test]
fn the_result_names_its_hook() {
    assert_one(&set("/hook_id", json!("periodic_report.runtime_trigger")), "/hook_id", HookMismatch);
    assert_one(&set("/capability_id", json!("periodic_report")), "/capability_id", CapabilityMismatch);
    assert_one(&set("/phase", json!("turn_start")), "/phase", NotAllowedValue);
    assert_one(&set("/status", json!("proposed")), "/status", NotAllowedValue);
}

#[test]
fn status_and_intent_pair() {
    assert_one(&set("/intent", json!(null)), "/intent", NotAllowedValue);
    assert_one(&check(&with(not_applicable(), "/intent", intent())), "/intent", NotAllowedValue);
    // At most one intent: the member is one object or null, never a list.
    assert_one(&set("/intent", json!([intent()])), "/intent", WrongType);
}

#[test]
fn intent_rules() {
    assert_one(&set("/intent/intent_kind", json!("periodic_report.other")), "/intent/intent_kind", UnknownIntentKind);
    assert_one(
        &set("/intent/source_receipt_id", json!("pwr_000000000000000000000000")),
        "/intent/source_receipt_id",
        SourceReceiptMismatch,
    );
    assert_one(&set("/intent/idempotency_key", json!(" \u{85}")), "/intent/idempotency_key", EmptyValue);
    assert_one(&set("/intent/idempotency_key", json!(1)), "/intent/idempotency_key", WrongType);
    assert_one(&set("/intent/payload", json!("payload")), "/intent/payload", WrongType);
    assert_one(
        &set("/intent/requested_write_scope", json!(["owner_private_inbox"])),
        "/intent/requested_write_scope/0",
        NotAllowedValue,
    );
    // The key is the provider's: any non-empty string, hyphens, colons and spaces included.
    assert!(set("/intent/idempotency_key", json!("periodic-report: stage 1")).is_ok());
}

#[test]
fn the_size_is_the_compact_json_of_the_result_as_received() {
    let base = with(result(), "/intent/payload", json!({ "pad": "" }));
    let len = serde_json::to_string(&base).unwrap().len();
    let exact = with(result(), "/intent/payload", json!({ "pad": "x".repeat(16384 - len) }));
    assert!(check(&exact).is_ok());
    let over = with(result(), "/intent/payload", json!({ "pad": "x".repeat(16385 - len) }));
    assert_one(&check(&over), "", ResultTooLarge);
    // Oversize is said with the other faults, not instead of them.
    assert_violations(
        &check(&with(over, "/hook_id", json!("periodic_report.stage_completion_second"))),
        &[("", ResultTooLarge), ("/hook_id", HookMismatch)],
    );
}
