use serde_json::{json, Value};

use super::*;
use crate::dialect::shipped::{validate_receipt, FailureCode, SidecarReceipt, SidecarStatus, MAX_ATTEMPT_COUNT};
use crate::validate::fixtures::{assert_one, assert_violations, with, without};
use crate::validate::Rule::*;
use crate::validate::Verdict;

fn set(pointer: &str, value: Value) -> Verdict<SidecarReceipt> {
    validate_receipt(&with(receipt(), pointer, value))
}

fn retryable() -> Value {
    let doc = with(with(receipt(), "/status", json!("retryable_failure")), "/intent", json!(null));
    with(with(doc, "/error_code", json!("producer_failed")), "/attempt_count", json!(2))
}

fn not_applicable() -> Value {
    with(with(receipt(), "/status", json!("not_applicable")), "/intent", json!(null))
}

#[test]
fn the_three_statuses_are_accepted() {
    assert_eq!(validate_receipt(&receipt()).unwrap().status, SidecarStatus::IntentRecorded);
    let failed = validate_receipt(&retryable()).unwrap();
    assert_eq!((failed.error_code, failed.attempt_count), (Some(FailureCode::ProducerFailed), 2));
    assert!(validate_receipt(&not_applicable()).is_ok());
}

#[test]
fn exact_fields() {
    assert_one(&set("/attempt", json!(1)), "/attempt", UnknownField);
    for field in [
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
    ] {
        let path = format!("/{field}");
        assert_one(&validate_receipt(&without(receipt(), &path)), &path, MissingField);
    }
    assert_one(
        &set("/schema_version", json!("loopx_post_writeback_dispatch_receipt_v0")),
        "/schema_version",
        BadSchemaVersion,
    );
}

#[test]
fn status_intent_and_error_code_pair() {
    assert_one(&set("/error_code", json!("producer_failed")), "/error_code", NotAllowedValue);
    assert_one(&set("/intent", json!(null)), "/intent", NotAllowedValue);
    assert_one(&validate_receipt(&with(retryable(), "/error_code", json!(null))), "/error_code", NotAllowedValue);
    assert_one(&validate_receipt(&with(retryable(), "/intent", intent())), "/intent", NotAllowedValue);
    assert_violations(
        &validate_receipt(&with(
            with(not_applicable(), "/intent", intent()),
            "/error_code",
            json!("contract_rejected"),
        )),
        &[("/error_code", NotAllowedValue), ("/intent", NotAllowedValue)],
    );
    assert_one(&set("/status", json!("failed")), "/status", NotAllowedValue);
}

#[test]
fn error_codes_are_the_twelve() {
    for code in FailureCode::ALL {
        assert!(validate_receipt(&with(retryable(), "/error_code", json!(code.as_str()))).is_ok());
    }
    assert_eq!(FailureCode::ALL.len(), 12);
    assert_one(
        &validate_receipt(&with(retryable(), "/error_code", json!("producer_timed_out"))),
        "/error_code",
        NotAllowedValue,
    );
    assert_one(&validate_receipt(&with(retryable(), "/error_code", json!("Producer Failed"))), "/error_code", BadToken);
}

#[test]
fn attempt_count_is_one_to_ten_thousand() {
    assert!(set("/attempt_count", json!(MAX_ATTEMPT_COUNT)).is_ok());
    assert_eq!(set("/attempt_count", json!(3.0)).unwrap().attempt_count, 3);
    assert_one(&set("/attempt_count", json!(0)), "/attempt_count", OutOfRange);
    assert_one(&set("/attempt_count", json!(10_001)), "/attempt_count", OutOfRange);
    assert_one(&set("/attempt_count", json!("1")), "/attempt_count", WrongType);
}

#[test]
fn ids_and_the_recorded_intent() {
    assert_one(&set("/dispatch_id", json!("pwh_XYZ")), "/dispatch_id", BadOpaqueRef);
    assert_one(&set("/hook_id", json!("ab")), "/hook_id", BadToken);
    assert_one(&set("/source_receipt_id", json!(" ")), "/source_receipt_id", EmptyValue);
    assert_one(&set("/recorded_at", json!("")), "/recorded_at", EmptyValue);
    // The recorded intent is re-validated and must name the receipt's source.
    assert_one(
        &set("/intent/source_receipt_id", json!("pwr_other")),
        "/intent/source_receipt_id",
        SourceReceiptMismatch,
    );
    assert_one(
        &set("/intent/requested_write_scope", json!(["scope_a"])),
        "/intent/requested_write_scope/0",
        NotAllowedValue,
    );
}
