use serde_json::{json, Value};

use super::*;
use crate::dialect::shipped::{validate_registration, Registration};
use crate::validate::fixtures::{assert_one, assert_violations, with, without};
use crate::validate::Rule::*;
use crate::validate::Verdict;

fn set(pointer: &str, value: Value) -> Verdict<Registration> {
    validate_registration(&with(registration(), pointer, value))
}

#[test]
fn the_periodic_report_registration_is_accepted() {
    let typed = validate_registration(&registration()).expect("LoopX's registration");
    assert_eq!(typed.capability_id, "periodic-report");
    assert_eq!(typed.event_kinds, ["refresh_state", "todo_complete"]);
    assert_eq!(typed.budget.max_input_bytes, 65536);
    // Nothing ties the hook id's prefix to the capability id.
    assert!(set("/hook_id", json!("periodic_report.runtime_trigger")).is_ok());
    assert!(set("/requested_read_scope", json!([])).is_ok());
    assert!(set("/budget/max_result_bytes", json!(1024.0)).is_ok());
}

#[test]
fn exact_fields() {
    assert_one(&set("/timeout_ms", json!(1000)), "/timeout_ms", UnknownField);
    assert_one(&set("/budget/timeout_ms", json!(1000)), "/budget/timeout_ms", UnknownField);
    assert_one(&set("/budget/max_intents_per_dispatch", json!(1)), "/budget/max_intents_per_dispatch", UnknownField);
    for field in [
        "schema_version",
        "hook_id",
        "capability_id",
        "policy_version",
        "phase",
        "event_kinds",
        "intent_kinds",
        "budget",
        "failure_policy",
        "requested_read_scope",
        "requested_write_scope",
    ] {
        let path = format!("/{field}");
        assert_one(&validate_registration(&without(registration(), &path)), &path, MissingField);
    }
    for field in ["max_invocations_per_dispatch", "max_input_bytes", "max_result_bytes"] {
        let path = format!("/budget/{field}");
        assert_one(&validate_registration(&without(registration(), &path)), &path, MissingField);
    }
    assert_one(&validate_registration(&json!([])), "", WrongType);
}

#[test]
fn schema_phase_and_policy() {
    assert_one(
        &set("/schema_version", json!("loopx_turn_start_capability_hook_registration_v0")),
        "/schema_version",
        BadSchemaVersion,
    );
    assert_one(&set("/phase", json!("turn_start")), "/phase", NotAllowedValue);
    assert_one(&set("/failure_policy", json!("retry")), "/failure_policy", PolicyNotIsolate);
}

#[test]
fn the_shipped_token_grammar() {
    // Hyphens and colons are tokens here; three characters at least, 96 at most.
    for ok in ["periodic-report", "a:b", "abc", &format!("a{}", "b".repeat(95))] {
        assert!(set("/capability_id", json!(ok)).is_ok(), "{ok}");
    }
    for bad in ["ab", "Periodic", "1abc", "-abc", "a b", "periodic/report", "péri"] {
        assert_one(&set("/capability_id", json!(bad)), "/capability_id", BadToken);
    }
    assert_one(&set("/hook_id", json!(format!("a{}", "b".repeat(96)))), "/hook_id", TooLong);
    assert_one(&set("/hook_id", json!(7)), "/hook_id", WrongType);
}

#[test]
fn the_policy_version_grammar() {
    for ok in ["v0", "0a", "weekly:v1-2_3.4"] {
        assert!(set("/policy_version", json!(ok)).is_ok(), "{ok}");
    }
    for bad in ["v", "V0", "_v0", "v 0", ""] {
        assert_one(&set("/policy_version", json!(bad)), "/policy_version", BadPolicyVersion);
    }
    assert_one(&set("/policy_version", json!(format!("v{}", "0".repeat(96)))), "/policy_version", TooLong);
}

#[test]
fn token_arrays_are_bounded_and_duplicate_free() {
    let tokens = |n: usize| json!((0..n).map(|i| format!("kind_{i}")).collect::<Vec<_>>());
    for field in ["/event_kinds", "/intent_kinds"] {
        assert_one(&set(field, json!([])), field, TooFewItems);
        assert!(set(field, tokens(16)).is_ok());
        assert_one(&set(field, tokens(17)), field, TooManyItems);
    }
    assert_one(&set("/requested_read_scope", tokens(17)), "/requested_read_scope", TooManyItems);
    assert_one(&set("/event_kinds", json!(["refresh_state", "refresh_state"])), "/event_kinds/1", DuplicateItem);
    assert_one(&set("/intent_kinds", json!([INTENT_KIND, "x"])), "/intent_kinds/1", BadToken);
    assert_one(&set("/requested_read_scope", json!(["stage_completion", 1])), "/requested_read_scope/1", WrongType);
}

#[test]
fn the_write_scope_is_empty() {
    assert_one(
        &set("/requested_write_scope", json!(["owner_private_inbox"])),
        "/requested_write_scope/0",
        NotAllowedValue,
    );
    let nine = json!((0..9).map(|i| format!("scope_{i}")).collect::<Vec<_>>());
    let v = set("/requested_write_scope", nine);
    let mut expected = vec![("/requested_write_scope".to_owned(), TooManyItems)];
    expected.extend((0..9).map(|i| (format!("/requested_write_scope/{i}"), NotAllowedValue)));
    let expected: Vec<(&str, _)> = expected.iter().map(|(p, r)| (p.as_str(), *r)).collect();
    assert_violations(&v, &expected);
}

#[test]
fn the_one_budget_envelope() {
    for (field, low, high) in
        [("max_invocations_per_dispatch", 0, 2), ("max_input_bytes", 1023, 262_145), ("max_result_bytes", 1023, 65_537)]
    {
        let path = format!("/budget/{field}");
        assert_one(&set(&path, json!(low)), &path, OutOfRange);
        assert_one(&set(&path, json!(high)), &path, OutOfRange);
        assert_one(&set(&path, json!(1024.5)), &path, WrongType);
    }
    assert!(set("/budget/max_input_bytes", json!(262_144)).is_ok());
    assert!(set("/budget/max_input_bytes", json!(1024)).is_ok());
    assert!(set("/budget/max_result_bytes", json!(65_536)).is_ok());
}
