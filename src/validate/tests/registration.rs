use serde_json::{json, Value};

use crate::contract::{EventKind, PostWritebackHookRegistration, ReadScope};
use crate::validate::fixtures::*;
use crate::validate::intent_kind::{validate_intent_kind_definition, IntentKinds};
use crate::validate::Rule::*;
use crate::validate::{validate_registration, Verdict};

fn check(doc: Value) -> Verdict<PostWritebackHookRegistration> {
    validate_registration(&doc, &kinds())
}

fn set(pointer: &str, value: Value) -> Verdict<PostWritebackHookRegistration> {
    check(with(registration(), pointer, value))
}

#[test]
fn rfc_example_is_accepted() {
    let typed = check(registration()).expect("RFC registration");
    assert_eq!(typed.hook_id, HOOK_ID);
    assert_eq!(typed.event_kinds, vec![EventKind::TodoCompleted, EventKind::ReplanRecorded]);
    assert_eq!(typed.requested_read_scope, vec![ReadScope::SettlementIdentity, ReadScope::BoundedEventProjection]);
    assert_eq!(typed.budget.max_result_bytes, 16384);
    assert!(set("/event_kinds", json!(["replan_recorded"])).is_ok());
    assert!(set("/requested_read_scope", json!(["settlement_identity"])).is_ok());
}

#[test]
fn integral_floats_are_integers() {
    let typed = set("/budget/timeout_ms", json!(1000.0)).expect("1000.0 is 1000");
    assert_eq!(typed.budget.timeout_ms, 1000);
}

#[test]
fn not_an_object() {
    for doc in [json!([]), json!(null), json!("registration"), json!(1)] {
        assert_one(&check(doc), "", WrongType);
    }
}

#[test]
fn exact_fields_at_every_level() {
    assert_one(&set("/extra", json!(1)), "/extra", UnknownField);
    // Member names are escaped in pointers (RFC 6901).
    assert_one(&set("/a~1b~0c", json!(1)), "/a~1b~0c", UnknownField);
    assert_one(&set("/budget/max_cost", json!(1)), "/budget/max_cost", UnknownField);
    for field in [
        "schema_version",
        "hook_id",
        "capability_id",
        "phase",
        "event_kinds",
        "intent_kinds",
        "requested_read_scope",
        "budget",
        "failure_policy",
    ] {
        let path = format!("/{field}");
        assert_one(&check(without(registration(), &path)), &path, MissingField);
    }
    for field in ["max_invocations_per_dispatch", "max_intents_per_dispatch", "max_result_bytes", "timeout_ms"] {
        let path = format!("/budget/{field}");
        assert_one(&check(without(registration(), &path)), &path, MissingField);
    }
    assert_one(&set("/budget", json!([1, 1, 256, 1])), "/budget", WrongType);
}

#[test]
fn schema_version_is_exact() {
    assert_one(
        &set("/schema_version", json!("loopx_post_writeback_capability_hook_registration_v1")),
        "/schema_version",
        BadSchemaVersion,
    );
    assert_one(&set("/schema_version", json!(0)), "/schema_version", WrongType);
}

#[test]
fn hook_id_is_an_owned_token() {
    let at_128 = format!("{CAPABILITY_ID}.{}", "a".repeat(128 - CAPABILITY_ID.len() - 1));
    assert!(set("/hook_id", json!(at_128)).is_ok());
    assert_one(&set("/hook_id", json!(format!("{at_128}b"))), "/hook_id", TooLong);
    assert_one(&set("/hook_id", json!("Periodic_report.x")), "/hook_id", BadToken);
    assert_one(&set("/hook_id", json!("1periodic_report.x")), "/hook_id", BadToken);
    assert_one(&set("/hook_id", json!("")), "/hook_id", BadToken);
    assert_one(&set("/hook_id", json!("periodic_report.")), "/hook_id", BadToken);
    assert_one(&set("/hook_id", json!(7)), "/hook_id", WrongType);
    assert_one(&set("/hook_id", json!("other_cap.runtime_trigger")), "/hook_id", CapabilityMismatch);
    assert_one(&set("/hook_id", json!("periodic_reports.runtime_trigger")), "/hook_id", CapabilityMismatch);
    assert_one(&set("/hook_id", json!("periodic_report")), "/hook_id", CapabilityMismatch);
    assert_one(&set("/hook_id", json!("ghp_periodic.x")), "/hook_id", CredentialLikeValue);
}

#[test]
fn capability_id_is_a_token() {
    // An invalid capability_id is one violation: ownership is not judged against it.
    assert_one(&set("/capability_id", json!("Periodic")), "/capability_id", BadToken);
    assert_one(&set("/capability_id", json!("a".repeat(129))), "/capability_id", TooLong);
    assert_one(&set("/capability_id", json!("xoxb-periodic")), "/capability_id", CredentialLikeValue);
    assert_one(&set("/capability_id", json!(null)), "/capability_id", WrongType);
}

#[test]
fn phase_is_post_writeback() {
    assert_one(&set("/phase", json!("pre_writeback")), "/phase", NotAllowedValue);
    assert_one(&set("/phase", json!(["post_writeback"])), "/phase", WrongType);
}

#[test]
fn event_kinds() {
    assert_one(&set("/event_kinds", json!([])), "/event_kinds", TooFewItems);
    assert_violations(
        &set("/event_kinds", json!(["todo_completed", "replan_recorded", "todo_completed"])),
        &[("/event_kinds", TooManyItems), ("/event_kinds/2", DuplicateItem)],
    );
    assert_one(&set("/event_kinds", json!(["todo_completed", "todo_completed"])), "/event_kinds/1", DuplicateItem);
    assert_one(&set("/event_kinds", json!(["todo_deleted"])), "/event_kinds/0", UnknownEventKind);
    assert_one(&set("/event_kinds", json!(["Todo_completed"])), "/event_kinds/0", BadToken);
    assert_one(&set("/event_kinds", json!([1])), "/event_kinds/0", WrongType);
    assert_one(&set("/event_kinds", json!("todo_completed")), "/event_kinds", WrongType);
}

/// `n` kinds owned by the example capability, defined.
fn owned_kinds(n: usize) -> (IntentKinds, Vec<String>) {
    let mut kinds = kinds();
    let mut names = Vec::new();
    for i in 0..n {
        let name = format!("{CAPABILITY_ID}.kind_{i}");
        let definition = with(kind_definition(), "/intent_kind", json!(name));
        assert!(kinds.insert(validate_intent_kind_definition(&definition).expect("valid kind")));
        names.push(name);
    }
    (kinds, names)
}

#[test]
fn intent_kinds_bounds() {
    let (kinds, names) = owned_kinds(17);
    let doc = |n: usize| with(registration(), "/intent_kinds", json!(names[..n]));
    assert!(validate_registration(&doc(16), &kinds).is_ok());
    assert_one(&validate_registration(&doc(17), &kinds), "/intent_kinds", TooManyItems);
    assert_one(&validate_registration(&doc(0), &kinds), "/intent_kinds", TooFewItems);
}

#[test]
fn intent_kinds_items() {
    assert_one(&set("/intent_kinds", json!([INTENT_KIND, INTENT_KIND])), "/intent_kinds/1", DuplicateItem);
    assert_one(&set("/intent_kinds", json!(["periodic_report.undefined"])), "/intent_kinds/0", UnknownIntentKind);
    assert_one(&set("/intent_kinds", json!(["other_cap.do_thing"])), "/intent_kinds/0", CapabilityMismatch);
    assert_violations(
        &set("/intent_kinds", json!(["other_cap.undefined"])),
        &[("/intent_kinds/0", CapabilityMismatch), ("/intent_kinds/0", UnknownIntentKind)],
    );
    assert_one(&set("/intent_kinds", json!(["Periodic_report.x"])), "/intent_kinds/0", BadToken);
    assert_one(&set("/intent_kinds", json!([INTENT_KIND, "ghp_x"])), "/intent_kinds/1", CredentialLikeValue);
    assert_one(&set("/intent_kinds", json!([{}])), "/intent_kinds/0", WrongType);
    assert_one(&set("/intent_kinds", json!({})), "/intent_kinds", WrongType);
}

#[test]
fn requested_read_scope() {
    assert_one(&set("/requested_read_scope", json!([])), "/requested_read_scope", TooFewItems);
    assert_violations(
        &set(
            "/requested_read_scope",
            json!(["settlement_identity", "bounded_event_projection", "settlement_identity"]),
        ),
        &[("/requested_read_scope", TooManyItems), ("/requested_read_scope/2", DuplicateItem)],
    );
    assert_one(
        &set("/requested_read_scope", json!(["complete_writeback_payload"])),
        "/requested_read_scope/0",
        NotAllowedValue,
    );
    assert_one(&set("/requested_read_scope", json!([true])), "/requested_read_scope/0", WrongType);
}

#[test]
fn budget_bounds() {
    let cases = [
        ("max_invocations_per_dispatch", 1, 4),
        ("max_intents_per_dispatch", 1, 16),
        ("max_result_bytes", 256, 65536),
        ("timeout_ms", 1, 30000),
    ];
    for (field, min, max) in cases {
        let path = format!("/budget/{field}");
        assert!(set(&path, json!(min)).is_ok(), "{path} = {min}");
        assert!(set(&path, json!(max)).is_ok(), "{path} = {max}");
        assert_one(&set(&path, json!(min - 1)), &path, OutOfRange);
        assert_one(&set(&path, json!(max + 1)), &path, OutOfRange);
        assert_one(&set(&path, json!(1.5)), &path, WrongType);
        assert_one(&set(&path, json!("1")), &path, WrongType);
        assert_one(&set(&path, json!(null)), &path, WrongType);
    }
    assert_one(&set("/budget/timeout_ms", json!(-1)), "/budget/timeout_ms", OutOfRange);
    assert_one(&set("/budget/timeout_ms", json!(u64::MAX)), "/budget/timeout_ms", OutOfRange);
}

#[test]
fn failure_policy_is_isolate() {
    assert_one(&set("/failure_policy", json!("retry")), "/failure_policy", PolicyNotIsolate);
    assert_one(&set("/failure_policy", json!("Isolate")), "/failure_policy", PolicyNotIsolate);
    assert_one(&set("/failure_policy", json!("")), "/failure_policy", PolicyNotIsolate);
    assert_one(&set("/failure_policy", json!(false)), "/failure_policy", WrongType);
    assert_one(&set("/failure_policy", json!("sk-live-abc")), "/failure_policy", CredentialLikeValue);
}

#[test]
fn several_faults_are_all_reported() {
    let mut doc = registration();
    doc = with(doc, "/schema_version", json!("v0"));
    doc = with(doc, "/hook_id", json!("other_cap.hook"));
    doc = with(doc, "/phase", json!("pre_writeback"));
    doc = with(doc, "/event_kinds", json!(["todo_completed", "nope"]));
    doc = with(doc, "/intent_kinds", json!(["periodic_report.undefined"]));
    doc = without(doc, "/requested_read_scope");
    doc = with(doc, "/budget/timeout_ms", json!(0));
    doc = with(doc, "/budget/max_result_bytes", json!(1.5));
    doc = with(doc, "/budget/extra", json!(0));
    doc = with(doc, "/failure_policy", json!("retry"));
    doc = with(doc, "/note", json!("hello"));
    assert_violations(
        &check(doc),
        &[
            ("/budget/extra", UnknownField),
            ("/budget/max_result_bytes", WrongType),
            ("/budget/timeout_ms", OutOfRange),
            ("/event_kinds/1", UnknownEventKind),
            ("/failure_policy", PolicyNotIsolate),
            ("/hook_id", CapabilityMismatch),
            ("/intent_kinds/0", UnknownIntentKind),
            ("/note", UnknownField),
            ("/phase", NotAllowedValue),
            ("/requested_read_scope", MissingField),
            ("/schema_version", BadSchemaVersion),
        ],
    );
}
