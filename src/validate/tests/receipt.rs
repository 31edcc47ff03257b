use serde_json::{json, Value};

use crate::contract::{DispatchReceipt, DispatchStatus, FailureCode, FailureReceipt};
use crate::validate::fixtures::*;
use crate::validate::Rule::{self, *};
use crate::validate::{validate_dispatch_receipt, validate_failure_receipt, Verdict};

fn check(doc: Value) -> Verdict<DispatchReceipt> {
    validate_dispatch_receipt(&doc)
}

fn set(pointer: &str, value: Value) -> Verdict<DispatchReceipt> {
    check(with(dispatch_receipt(), pointer, value))
}

fn check_failure(doc: Value) -> Verdict<FailureReceipt> {
    validate_failure_receipt(&doc)
}

fn set_failure(pointer: &str, value: Value) -> Verdict<FailureReceipt> {
    check_failure(with(failure_receipt(), pointer, value))
}

fn not_applicable_receipt() -> Value {
    let doc = with(dispatch_receipt(), "/status", json!("not_applicable"));
    with(doc, "/intent_ids", json!([]))
}

fn failed_receipt(status: &str, code: &str, rule: Value) -> Value {
    let mut doc = with(dispatch_receipt(), "/status", json!(status));
    doc = with(doc, "/intent_ids", json!([]));
    doc = with(doc, "/result_digest", json!(null));
    with(doc, "/failure", json!({"code": code, "rule": rule}))
}

fn ids(n: usize) -> Value {
    json!((0..n).map(|i| format!("pwi_{i:064x}")).collect::<Vec<_>>())
}

const DISPATCH_FIELDS: [&str; 13] = [
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

#[test]
fn valid_receipts_are_accepted() {
    let proposed = check(dispatch_receipt()).expect("proposed receipt");
    assert_eq!(proposed.status, DispatchStatus::Proposed);
    assert_eq!(proposed.intent_ids, vec![intent()["intent_id"].as_str().unwrap().to_owned()]);
    assert!(check(not_applicable_receipt()).is_ok());
    let failed = check(failed_receipt("failed", "producer_timed_out", json!(null))).expect("failed receipt");
    assert_eq!(failed.failure.map(|f| (f.code, f.rule)), Some((FailureCode::ProducerTimedOut, None)));
    let rejected =
        check(failed_receipt("failed", "result_contract_rejected", json!("intent_id_mismatch"))).expect("rule");
    assert_eq!(rejected.failure.and_then(|f| f.rule), Some(Rule::IntentIdMismatch));
    assert!(check(failed_receipt("exhausted", "dispatch_budget_exhausted", json!(null))).is_ok());
    // A profile ceiling can fail one attempt with the budget code.
    assert!(check(failed_receipt("failed", "dispatch_budget_exhausted", json!(null))).is_ok());
}

#[test]
fn not_an_object() {
    assert_one(&check(json!([])), "", WrongType);
    assert_one(&check_failure(json!(null)), "", WrongType);
}

#[test]
fn exact_fields() {
    assert_one(&set("/message", json!("boom")), "/message", UnknownField);
    for field in DISPATCH_FIELDS {
        let path = format!("/{field}");
        assert_one(&check(without(dispatch_receipt(), &path)), &path, MissingField);
    }
    let failed = failed_receipt("failed", "producer_failed", json!(null));
    assert_one(&check(without(failed.clone(), "/failure/rule")), "/failure/rule", MissingField);
    assert_one(&check(without(failed.clone(), "/failure/code")), "/failure/code", MissingField);
    assert_one(&check(with(failed, "/failure/stack", json!("at x"))), "/failure/stack", UnknownField);
}

#[test]
fn grammars() {
    assert_one(
        &set("/schema_version", json!("loopx_post_writeback_failure_receipt_v0")),
        "/schema_version",
        BadSchemaVersion,
    );
    assert_one(&set("/dispatch_id", json!("pwh_sha256_opaque")), "/dispatch_id", DispatchIdMismatch);
    assert_one(&set("/hook_id", json!("Hook")), "/hook_id", BadToken);
    assert_one(&set("/hook_id", json!("other_cap.hook")), "/hook_id", CapabilityMismatch);
    assert_one(&set("/capability_id", json!("sk_live_x")), "/capability_id", CredentialLikeValue);
    assert_one(&set("/receipt_id", json!("C:\\receipts\\1")), "/receipt_id", BadOpaqueRef);
    assert_one(&set("/effect_id", json!("x".repeat(129))), "/effect_id", TooLong);
    assert_one(&set("/event_kind", json!("todo_started")), "/event_kind", UnknownEventKind);
    assert_one(&set("/event_kind", json!("Todo")), "/event_kind", BadToken);
    assert_one(&set("/registration_digest", json!("A".repeat(64))), "/registration_digest", BadOpaqueRef);
    assert_one(&set("/registration_digest", json!("a".repeat(63))), "/registration_digest", BadOpaqueRef);
    assert_one(&set("/registration_digest", json!(null)), "/registration_digest", WrongType);
    assert_one(&set("/status", json!("replayed")), "/status", NotAllowedValue);
    assert_one(&set("/result_digest", json!("abc")), "/result_digest", BadOpaqueRef);
    assert_one(&set("/result_digest", json!(7)), "/result_digest", WrongType);
    assert_one(&set("/failure", json!("producer_failed")), "/failure", WrongType);
}

#[test]
fn attempt_bounds() {
    assert!(set("/attempt", json!(4)).is_ok());
    assert_one(&set("/attempt", json!(0)), "/attempt", OutOfRange);
    assert_one(&set("/attempt", json!(5)), "/attempt", OutOfRange);
    assert_one(&set("/attempt", json!(1.5)), "/attempt", WrongType);
    assert!(set_failure("/attempt", json!(1)).is_ok());
    assert_one(&set_failure("/attempt", json!(5)), "/attempt", OutOfRange);
    assert_one(&set_failure("/attempt", json!("2")), "/attempt", WrongType);
}

#[test]
fn intent_ids() {
    assert!(set("/intent_ids", ids(16)).is_ok());
    assert_one(&set("/intent_ids", ids(17)), "/intent_ids", TooManyItems);
    let id = format!("pwi_{}", "a".repeat(64));
    assert_one(&set("/intent_ids", json!([id, id])), "/intent_ids/1", DuplicateItem);
    assert_one(&set("/intent_ids", json!([dispatch_id()])), "/intent_ids/0", IntentIdMismatch);
    assert_one(&set("/intent_ids", json!("pwi_x")), "/intent_ids", WrongType);
}

#[test]
fn failure_detail_codes() {
    let failed = || failed_receipt("failed", "producer_failed", json!(null));
    assert_one(&check(with(failed(), "/failure/code", json!("exception"))), "/failure/code", NotAllowedValue);
    assert_one(&check(with(failed(), "/failure/rule", json!("made_up_rule"))), "/failure/rule", NotAllowedValue);
    assert_one(&check(with(failed(), "/failure/rule", json!(3))), "/failure/rule", WrongType);
    assert_one(
        &check(with(failed(), "/failure/rule", json!("TypeError: x is undefined"))),
        "/failure/rule",
        NotAllowedValue,
    );
}

#[test]
fn status_consistency_of_successes() {
    assert_one(&set("/intent_ids", json!([])), "/intent_ids", TooFewItems);
    assert_one(&set("/result_digest", json!(null)), "/result_digest", NotAllowedValue);
    assert_one(&set("/failure", json!({"code": "producer_failed", "rule": null})), "/failure", NotAllowedValue);
    let na = not_applicable_receipt;
    assert_one(&check(with(na(), "/intent_ids", ids(1))), "/intent_ids", TooManyItems);
    assert_one(&check(with(na(), "/result_digest", json!(null))), "/result_digest", NotAllowedValue);
    assert_one(
        &check(with(na(), "/failure", json!({"code": "intent_conflict", "rule": null}))),
        "/failure",
        NotAllowedValue,
    );
    // Over 16 is reported once, by the bound.
    assert_one(&check(with(na(), "/intent_ids", ids(17))), "/intent_ids", TooManyItems);
}

#[test]
fn status_consistency_of_failures() {
    for status in ["failed", "exhausted"] {
        let doc = || failed_receipt(status, "dispatch_budget_exhausted", json!(null));
        assert_one(&check(with(doc(), "/failure", json!(null))), "/failure", NotAllowedValue);
        assert_one(&check(with(doc(), "/intent_ids", ids(2))), "/intent_ids", TooManyItems);
        assert_one(&check(with(doc(), "/result_digest", json!("a".repeat(64)))), "/result_digest", NotAllowedValue);
    }
    let exhausted = failed_receipt("exhausted", "producer_failed", json!(null));
    assert_one(&check(exhausted), "/failure/code", NotAllowedValue);
}

#[test]
fn several_faults_are_all_reported() {
    let mut doc = failed_receipt("exhausted", "producer_timed_out", json!("nope"));
    doc = with(doc, "/intent_ids", json!(["pwi_1"]));
    doc = with(doc, "/attempt", json!(9));
    doc = with(doc, "/receipt_id", json!("https://x.example/r"));
    doc = with(doc, "/error", json!("stack"));
    assert_violations(
        &check(doc),
        &[
            ("/attempt", OutOfRange),
            ("/error", UnknownField),
            ("/failure/code", NotAllowedValue),
            ("/failure/rule", NotAllowedValue),
            ("/intent_ids", TooManyItems),
            ("/intent_ids/0", IntentIdMismatch),
            ("/receipt_id", BadOpaqueRef),
        ],
    );
}

#[test]
fn failure_receipt_validation() {
    let typed = check_failure(failure_receipt()).expect("failure receipt");
    assert_eq!(
        (typed.code, typed.rule, typed.attempt),
        (FailureCode::ResultContractRejected, Some(Rule::IntentIdMismatch), 2)
    );
    assert!(set_failure("/rule", json!(null)).is_ok());
    assert_one(&set_failure("/message", json!("boom")), "/message", UnknownField);
    for field in ["schema_version", "dispatch_id", "hook_id", "code", "rule", "attempt"] {
        let path = format!("/{field}");
        assert_one(&check_failure(without(failure_receipt(), &path)), &path, MissingField);
    }
    assert_one(
        &set_failure("/schema_version", json!("loopx_post_writeback_dispatch_receipt_v0")),
        "/schema_version",
        BadSchemaVersion,
    );
    assert_one(
        &set_failure("/dispatch_id", json!(format!("pwi_{}", "a".repeat(64)))),
        "/dispatch_id",
        DispatchIdMismatch,
    );
    assert_one(&set_failure("/hook_id", json!("ghp_hook")), "/hook_id", CredentialLikeValue);
    assert_one(&set_failure("/code", json!("exhausted")), "/code", NotAllowedValue);
    assert_one(&set_failure("/rule", json!("bad_rule")), "/rule", NotAllowedValue);
    assert_one(&set_failure("/rule", json!(false)), "/rule", WrongType);
}
