use serde_json::{json, Value};

use super::*;
use crate::dialect::shipped::{validate_dispatch_result, DispatchResult};
use crate::validate::fixtures::{assert_one, with, without};
use crate::validate::Rule::*;
use crate::validate::Verdict;

fn set(pointer: &str, value: Value) -> Verdict<DispatchResult> {
    validate_dispatch_result(&with(dispatch_result(), pointer, value))
}

fn runtime_failure() -> Value {
    json!({
        "schema_version": "loopx_post_writeback_runtime_failure_v0",
        "phase": "finalize",
        "error_kind": "local_io_failed",
        "diagnostic_code": "runtime_transport_io_failed"
    })
}

#[test]
fn loopx_dispatch_results_are_accepted() {
    let typed = validate_dispatch_result(&dispatch_result()).expect("a dispatch");
    assert_eq!(typed.intent_count, 1);
    assert!(typed.runtime_failure.is_none());
    assert!(set("/runtime_failure", runtime_failure()).is_ok());
    // The host bridge's failures: any ref into its own retry journal, a refused
    // registration's hook id as it came.
    let bridge = json!([{ "hook_id": "", "capability_id": "", "error_code": "dispatch_failed", "durable_receipt_ref": "post-writeback-composition-retry:pwcr_0123456789abcdef" }]);
    assert!(set("/failures", bridge).is_ok());
    assert!(set("/failures/0/hook_id", json!("Not A Token")).is_ok());
    assert!(validate_dispatch_result(&without(dispatch_result(), "/failures/0/durable_receipt_ref")).is_ok());
}

#[test]
fn exact_fields() {
    assert_one(&set("/results", json!([])), "/results", UnknownField);
    assert_one(&set("/failures/0/rule", json!(null)), "/failures/0/rule", UnknownField);
    let failed = with(dispatch_result(), "/runtime_failure", runtime_failure());
    let extra = with(failed, "/runtime_failure/message", json!("x"));
    assert_one(&validate_dispatch_result(&extra), "/runtime_failure/message", UnknownField);
    for field in [
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
    ] {
        let path = format!("/{field}");
        assert_one(&validate_dispatch_result(&without(dispatch_result(), &path)), &path, MissingField);
    }
    for path in ["/failures/0/hook_id", "/failures/0/capability_id", "/failures/0/error_code"] {
        assert_one(&validate_dispatch_result(&without(dispatch_result(), path)), path, MissingField);
    }
}

#[test]
fn counts_and_flags() {
    assert_one(&set("/intent_count", json!(2)), "/intent_count", CountMismatch);
    assert_one(&set("/invoked_count", json!(3)), "/invoked_count", OutOfRange);
    assert_one(&set("/registered_count", json!(-1)), "/registered_count", OutOfRange);
    assert_one(&set("/primary_writeback_preserved", json!(false)), "/primary_writeback_preserved", NotAllowedValue);
    assert_one(&set("/external_writes_performed", json!(true)), "/external_writes_performed", NotAllowedValue);
    assert_one(&set("/phase", json!("turn_start")), "/phase", NotAllowedValue);
    assert_one(&set("/replayed_hooks", json!([HOOK_ID, HOOK_ID])), "/replayed_hooks/1", DuplicateItem);
    assert_one(&set("/retried_hooks", json!(["X"])), "/retried_hooks/0", BadToken);
}

#[test]
fn intents_share_one_source_and_distinct_keys() {
    let second = with(intent(), "/intent_kind", json!("periodic_report.other_kind"));
    let doc = with(with(dispatch_result(), "/intents", json!([intent(), second.clone()])), "/intent_count", json!(2));
    assert_one(&validate_dispatch_result(&doc), "/intents/1/idempotency_key", DuplicateItem);
    let keyed = with(second, "/idempotency_key", json!("periodic-report:stage-124"));
    let doc = with(with(dispatch_result(), "/intents", json!([intent(), keyed.clone()])), "/intent_count", json!(2));
    assert!(validate_dispatch_result(&doc).is_ok());
    let elsewhere = with(keyed, "/source_receipt_id", json!("pwr_000000000000000000000000"));
    let doc = with(with(dispatch_result(), "/intents", json!([intent(), elsewhere])), "/intent_count", json!(2));
    assert_one(&validate_dispatch_result(&doc), "/intents/1/source_receipt_id", SourceReceiptMismatch);
}

#[test]
fn failures_and_receipt_refs() {
    assert_one(&set("/failures/0/error_code", json!("producer_timed_out")), "/failures/0/error_code", NotAllowedValue);
    assert_one(
        &set("/failures/0/durable_receipt_ref", json!("post-writeback-hook:pwh_1")),
        "/failures/0/durable_receipt_ref",
        BadOpaqueRef,
    );
    assert_one(
        &set("/failures/0/durable_receipt_ref", json!(format!("pwh_{}", "0".repeat(64)))),
        "/failures/0/durable_receipt_ref",
        BadOpaqueRef,
    );
    let bridge = |r: &str| json!([{ "hook_id": HOOK_ID, "capability_id": CAPABILITY_ID, "error_code": "source_projection_failed", "durable_receipt_ref": r }]);
    assert_one(&set("/failures", bridge("/var/lib/x")), "/failures/0/durable_receipt_ref", BadOpaqueRef);
}

#[test]
fn the_runtime_failure_is_codes_only() {
    let with_failure = with(dispatch_result(), "/runtime_failure", runtime_failure());
    let check = |p: &str, v: Value| validate_dispatch_result(&with(with_failure.clone(), p, v));
    assert_one(&check("/runtime_failure/phase", json!("commit")), "/runtime_failure/phase", NotAllowedValue);
    assert_one(
        &check("/runtime_failure/error_kind", json!("Disk full at /var")),
        "/runtime_failure/error_kind",
        BadToken,
    );
    assert_one(
        &check("/runtime_failure/schema_version", json!("v0")),
        "/runtime_failure/schema_version",
        BadSchemaVersion,
    );
    assert_one(&set("/runtime_failure", json!(null)), "/runtime_failure", WrongType);
}
