//! One intent inside a result, at `/intents/0`.

use serde_json::{json, Value};

use crate::contract::PostWritebackHookResult;
use crate::validate::fixtures::*;
use crate::validate::Rule::*;
use crate::validate::{validate_hook_result, ResultContext, Verdict};

fn check_intent(intent: Value) -> Verdict<PostWritebackHookResult> {
    let (registration, kinds, id) = (typed(&registration()), kinds(), dispatch_id());
    let ctx = ResultContext { registration: &registration, dispatch_id: &id, kinds: &kinds };
    validate_hook_result(&result_of(vec![intent]), &ctx)
}

/// The RFC intent with `pointer` (below the intent) set, intent_id left as is.
fn set(pointer: &str, value: Value) -> Verdict<PostWritebackHookResult> {
    check_intent(with(intent(), pointer, value))
}

/// The RFC intent with `pointer` set and its intent_id recomputed, so the
/// change under test is the only fault.
fn set_sealed(pointer: &str, value: Value) -> Verdict<PostWritebackHookResult> {
    check_intent(sealed(with(intent(), pointer, value)))
}

const FIELDS: [&str; 14] = [
    "schema_version",
    "intent_id",
    "hook_id",
    "capability_id",
    "source_dispatch_id",
    "intent_kind",
    "operation",
    "policy_version",
    "payload",
    "budget",
    "requested_write_scope",
    "failure_policy",
    "grants_new_action_authority",
    "external_write_performed",
];

#[test]
fn not_an_object() {
    for value in [json!([]), json!(null), json!("intent")] {
        assert_one(&check_intent(value), "/intents/0", WrongType);
    }
}

#[test]
fn exact_fields_at_every_level() {
    assert_one(&set("/executed", json!(false)), "/intents/0/executed", UnknownField);
    assert_one(&set("/budget/max_cost", json!(1)), "/intents/0/budget/max_cost", UnknownField);
    for field in FIELDS {
        let path = format!("/intents/0/{field}");
        assert_one(&check_intent(without(intent(), &format!("/{field}"))), &path, MissingField);
    }
    for field in ["max_attempts", "max_result_bytes"] {
        let path = format!("/intents/0/budget/{field}");
        assert_one(&check_intent(without(intent(), &format!("/budget/{field}"))), &path, MissingField);
    }
    assert_one(&set("/budget", json!(null)), "/intents/0/budget", WrongType);
}

#[test]
fn schema_version() {
    assert_one(
        &set("/schema_version", json!("loopx_post_writeback_intent_v1")),
        "/intents/0/schema_version",
        BadSchemaVersion,
    );
}

#[test]
fn intent_id_shape_and_identity() {
    let path = "/intents/0/intent_id";
    assert_one(&set("/intent_id", json!("pwi_sha256_opaque")), path, IntentIdMismatch);
    assert_one(&set("/intent_id", json!(dispatch_id())), path, IntentIdMismatch);
    assert_one(&set("/intent_id", json!(format!("pwi_{}", "A".repeat(64)))), path, IntentIdMismatch);
    assert_one(&set("/intent_id", json!(format!("pwi_{}", "a".repeat(64)))), path, IntentIdMismatch);
    // Each semantic input moves the id.
    assert_one(&set("/policy_version", json!("weekly_v1")), path, IntentIdMismatch);
    assert_one(&set("/payload/segment_ref", json!("segment_other")), path, IntentIdMismatch);
    assert_one(&set("/payload/source_event_refs", json!([])), path, IntentIdMismatch);
    // Not part of it: operation, budget, scope.
    assert!(set("/operation", json!("record_trigger_evaluation")).is_ok());
    assert!(set("/budget/max_attempts", json!(3)).is_ok());
    assert!(set("/requested_write_scope", json!(["periodic_report.outbox"])).is_ok());
}

#[test]
fn bound_to_the_hook_capability_and_dispatch() {
    assert_one(&set("/hook_id", json!("periodic_report.other_hook")), "/intents/0/hook_id", HookMismatch);
    assert_one(&set("/hook_id", json!("1hook")), "/intents/0/hook_id", BadToken);
    assert_one(&set("/capability_id", json!("other_cap")), "/intents/0/capability_id", CapabilityMismatch);
    assert_one(&set("/capability_id", json!("Other")), "/intents/0/capability_id", BadToken);
    let path = "/intents/0/source_dispatch_id";
    assert_one(&set("/source_dispatch_id", json!(format!("pwh_{}", "0".repeat(64)))), path, DispatchMismatch);
    assert_one(&set("/source_dispatch_id", json!("receipt_opaque")), path, BadOpaqueRef);
    assert_one(&set("/source_dispatch_id", json!("pwh_sha256_opaque")), path, BadOpaqueRef);
}

#[test]
fn intent_kind_must_be_admitted() {
    let path = "/intents/0/intent_kind";
    assert_one(&set_sealed("/intent_kind", json!("periodic_report.undefined")), path, UnknownIntentKind);
    // Defined, but not in this registration's intent_kinds.
    assert_one(&set_sealed("/intent_kind", json!("other_cap.do_thing")), path, UnknownIntentKind);
    assert_one(&set("/intent_kind", json!("Periodic_report.x")), path, BadToken);
    assert_one(&set("/intent_kind", json!("a".repeat(129))), path, TooLong);
    assert_one(&set("/intent_kind", json!("ghs_periodic")), path, CredentialLikeValue);
    // Without an admitted kind there is no schema: the payload need only be an object.
    assert_violations(
        &check_intent(with(with(intent(), "/intent_kind", json!("periodic_report.undefined")), "/payload", json!([]))),
        &[(path, UnknownIntentKind), ("/intents/0/payload", WrongType)],
    );
}

#[test]
fn operation_must_be_the_kind_s() {
    let path = "/intents/0/operation";
    assert_one(&set("/operation", json!("delete_everything")), path, UnknownOperation);
    assert_one(&set("/operation", json!("Evaluate")), path, BadToken);
    assert_one(&set("/operation", json!(["evaluate_runtime_trigger"])), path, WrongType);
}

#[test]
fn policy_version_grammar() {
    let path = "/intents/0/policy_version";
    assert!(set_sealed("/policy_version", json!("a".repeat(64))).is_ok());
    assert!(set_sealed("/policy_version", json!("2026.08-rc_1")).is_ok());
    assert_one(&set_sealed("/policy_version", json!("a".repeat(65))), path, TooLong);
    for bad in ["Weekly", "-weekly", "", "weekly v0", "weekly/v0"] {
        assert_one(&set_sealed("/policy_version", json!(bad)), path, BadPolicyVersion);
    }
    assert_one(&set_sealed("/policy_version", json!(0)), path, WrongType);
}

#[test]
fn payload_follows_the_kind_schema() {
    // Payload violations carry paths into the payload; intent_id is not
    // recomputed over an invalid payload.
    let base = "/intents/0/payload";
    assert_one(&set_sealed("/payload/note", json!("free text")), "/intents/0/payload/note", UnknownField);
    assert_one(
        &check_intent(sealed(without(intent(), "/payload/segment_ref"))),
        "/intents/0/payload/segment_ref",
        MissingField,
    );
    assert_one(&set_sealed("/payload/segment_ref", json!("/home/me")), "/intents/0/payload/segment_ref", BadOpaqueRef);
    assert_one(
        &set_sealed("/payload/segment_ref", json!("glpat-abc")),
        "/intents/0/payload/segment_ref",
        CredentialLikeValue,
    );
    assert_one(
        &set_sealed("/payload/source_event_refs", json!(["e", "e"])),
        "/intents/0/payload/source_event_refs/1",
        DuplicateItem,
    );
    let nine = json!((0..9).map(|i| format!("event_{i}")).collect::<Vec<_>>());
    assert_one(&set_sealed("/payload/source_event_refs", nine), "/intents/0/payload/source_event_refs", TooManyItems);
    assert_one(&set_sealed("/payload", json!("segment_opaque")), base, WrongType);
}

#[test]
fn intent_budget_bounds() {
    for (field, min, max) in [("max_attempts", 1, 8), ("max_result_bytes", 256, 65536)] {
        let pointer = format!("/budget/{field}");
        let path = format!("/intents/0/budget/{field}");
        assert!(set(&pointer, json!(min)).is_ok(), "{path} = {min}");
        assert!(set(&pointer, json!(max)).is_ok(), "{path} = {max}");
        assert_one(&set(&pointer, json!(min - 1)), &path, OutOfRange);
        assert_one(&set(&pointer, json!(max + 1)), &path, OutOfRange);
        assert_one(&set(&pointer, json!(1.5)), &path, WrongType);
        assert_one(&set(&pointer, json!("8")), &path, WrongType);
    }
}

#[test]
fn requested_write_scope() {
    let path = "/intents/0/requested_write_scope";
    let scopes = |n: usize| json!((0..n).map(|i| format!("periodic_report.scope_{i}")).collect::<Vec<_>>());
    assert!(set("/requested_write_scope", scopes(8)).is_ok());
    assert_one(&set("/requested_write_scope", scopes(9)), path, TooManyItems);
    assert_one(&set("/requested_write_scope", json!(["a", "a"])), "/intents/0/requested_write_scope/1", DuplicateItem);
    assert_one(&set("/requested_write_scope", json!(["Repo"])), "/intents/0/requested_write_scope/0", BadToken);
    assert_one(&set("/requested_write_scope", json!(["/repo"])), "/intents/0/requested_write_scope/0", BadToken);
    assert_one(
        &set("/requested_write_scope", json!(["ghp_scope"])),
        "/intents/0/requested_write_scope/0",
        CredentialLikeValue,
    );
    assert_one(&set("/requested_write_scope", json!("repo")), path, WrongType);
}

#[test]
fn failure_policy_and_authority() {
    assert_one(&set("/failure_policy", json!("propagate")), "/intents/0/failure_policy", PolicyNotIsolate);
    assert_one(&set("/failure_policy", json!(null)), "/intents/0/failure_policy", WrongType);
    for flag in ["grants_new_action_authority", "external_write_performed"] {
        let path = format!("/intents/0/{flag}");
        assert_one(&set(&format!("/{flag}"), json!(true)), &path, AuthorityClaimed);
        assert_one(&set(&format!("/{flag}"), json!("false")), &path, WrongType);
    }
}

#[test]
fn several_faults_in_one_intent() {
    let mut doc = intent();
    doc = with(doc, "/intent_id", json!(format!("pwi_{}", "f".repeat(64))));
    doc = with(doc, "/capability_id", json!("other_cap"));
    doc = with(doc, "/operation", json!("publish_now"));
    doc = with(doc, "/budget/max_result_bytes", json!(100));
    doc = with(doc, "/requested_write_scope", json!(["sink", "sink"]));
    doc = with(doc, "/failure_policy", json!("retry"));
    doc = with(doc, "/external_write_performed", json!(true));
    doc = with(doc, "/stack", json!("Error: at x"));
    assert_violations(
        &check_intent(doc),
        &[
            ("/intents/0/budget/max_result_bytes", OutOfRange),
            ("/intents/0/capability_id", CapabilityMismatch),
            ("/intents/0/external_write_performed", AuthorityClaimed),
            ("/intents/0/failure_policy", PolicyNotIsolate),
            ("/intents/0/intent_id", IntentIdMismatch),
            ("/intents/0/operation", UnknownOperation),
            ("/intents/0/requested_write_scope/1", DuplicateItem),
            ("/intents/0/stack", UnknownField),
        ],
    );
}
