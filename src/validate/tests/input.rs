use serde_json::{json, Value};

use crate::contract::{BoundaryAttestation, PostWritebackHookInput, Transition};
use crate::identity::{self, DispatchIdentity};
use crate::validate::fixtures::*;
use crate::validate::validate_hook_input;
use crate::validate::Rule::*;
use crate::validate::Verdict;

fn check(doc: Value) -> Verdict<PostWritebackHookInput> {
    validate_hook_input(&doc, &typed(&registration()), &registration_digest())
}

fn set(pointer: &str, value: Value) -> Verdict<PostWritebackHookInput> {
    check(with(input(), pointer, value))
}

const SOURCE_REFS: [&str; 7] =
    ["receipt_id", "effect_id", "goal_id", "agent_id", "todo_id", "turn_instance_id", "state_revision"];

#[test]
fn rfc_example_with_real_dispatch_id_is_accepted() {
    let typed = check(input()).expect("RFC input");
    assert_eq!(typed.dispatch_id, dispatch_id());
    assert!(typed.dispatch_id.starts_with("pwh_") && typed.dispatch_id.len() == 68);
    assert_eq!(typed.projection.transition, Transition::SegmentCompleted);
    assert_eq!(typed.boundary, BoundaryAttestation::default());
}

#[test]
fn replan_input_is_accepted() {
    let mut doc = with(input(), "/source/event_kind", json!("replan_recorded"));
    doc = with(doc, "/projection/transition", json!("replan_recorded"));
    doc = with(doc, "/projection/fact_refs", json!([]));
    doc = with(doc, "/dispatch_id", json!(dispatch_id_for("receipt_opaque", "effect_opaque", "replan_recorded")));
    assert!(check(doc).is_ok());
}

#[test]
fn not_an_object() {
    for doc in [json!([]), json!(null), json!(true)] {
        assert_one(&check(doc), "", WrongType);
    }
}

#[test]
fn exact_fields_at_every_level() {
    assert_one(&set("/prompt", json!("x")), "/prompt", UnknownField);
    assert_one(&set("/source/raw_payload", json!({})), "/source/raw_payload", UnknownField);
    assert_one(&set("/projection/facts", json!([])), "/projection/facts", UnknownField);
    assert_one(&set("/boundary/env_recorded", json!(false)), "/boundary/env_recorded", UnknownField);
    for field in ["schema_version", "hook_id", "capability_id", "projection", "boundary"] {
        let path = format!("/{field}");
        assert_one(&check(without(input(), &path)), &path, MissingField);
    }
    // Without the id, the source or its parts there is nothing to recompute.
    assert_one(&check(without(input(), "/dispatch_id")), "/dispatch_id", MissingField);
    assert_one(&check(without(input(), "/source")), "/source", MissingField);
    for field in SOURCE_REFS.iter().copied().chain(["step_kind", "event_kind", "committed_at"]) {
        let path = format!("/source/{field}");
        assert_one(&check(without(input(), &path)), &path, MissingField);
    }
    for field in ["schema_version", "transition", "fact_refs"] {
        let path = format!("/projection/{field}");
        assert_one(&check(without(input(), &path)), &path, MissingField);
    }
    for field in BoundaryAttestation::FIELDS {
        let path = format!("/boundary/{field}");
        assert_one(&check(without(input(), &path)), &path, MissingField);
    }
}

#[test]
fn wrong_types_stop_at_the_member() {
    assert_one(&set("/source", json!([])), "/source", WrongType);
    assert_one(&set("/projection", json!("segment_completed")), "/projection", WrongType);
    assert_one(&set("/boundary", json!(false)), "/boundary", WrongType);
    assert_one(&set("/source/receipt_id", json!(1)), "/source/receipt_id", WrongType);
    assert_one(&set("/projection/fact_refs", json!("fact_opaque")), "/projection/fact_refs", WrongType);
}

#[test]
fn schema_versions() {
    assert_one(
        &set("/schema_version", json!("loopx_post_writeback_hook_input_v1")),
        "/schema_version",
        BadSchemaVersion,
    );
    assert_one(
        &set("/projection/schema_version", json!("loopx_post_writeback_hook_input_v0")),
        "/projection/schema_version",
        BadSchemaVersion,
    );
}

#[test]
fn dispatch_id_shape_and_identity() {
    // Not `pwh_` + 64 lowercase hex: it cannot equal the digest (contract-v0 section 2).
    assert_one(&set("/dispatch_id", json!("pwh_sha256_opaque")), "/dispatch_id", DispatchIdMismatch);
    assert_one(&set("/dispatch_id", json!(dispatch_id().to_uppercase())), "/dispatch_id", DispatchIdMismatch);
    assert_one(&set("/dispatch_id", json!(dispatch_id().replace("pwh_", "pwi_"))), "/dispatch_id", DispatchIdMismatch);
    assert_one(&set("/dispatch_id", json!(format!("pwh_{}", "0".repeat(64)))), "/dispatch_id", DispatchIdMismatch);
    // Each identity part moves the id.
    assert_one(&set("/source/receipt_id", json!("receipt_other")), "/dispatch_id", DispatchIdMismatch);
    assert_one(&set("/source/effect_id", json!("effect_other")), "/dispatch_id", DispatchIdMismatch);
    let doc = with(input(), "/dispatch_id", json!(dispatch_id_for("receipt_other", "effect_opaque", "todo_completed")));
    assert!(check(with(doc, "/source/receipt_id", json!("receipt_other"))).is_ok());
    let other_digest = identity::registration_digest(&json!({}));
    assert_one(
        &validate_hook_input(&input(), &typed(&registration()), &other_digest),
        "/dispatch_id",
        DispatchIdMismatch,
    );
    // Not part of the identity: the rest of the source.
    assert!(set("/source/goal_id", json!("goal_other")).is_ok());
    // An invalid part means no recompute, so one fault is one violation.
    assert_one(&set("/source/receipt_id", json!("a/b")), "/source/receipt_id", BadOpaqueRef);
    assert_one(&set("/source/event_kind", json!("todo_deleted")), "/source/event_kind", UnknownEventKind);
}

#[test]
fn dispatch_id_uses_the_registration_identity() {
    // The id is recomputed from the registration's own hook and capability.
    let expected = identity::dispatch_id(&DispatchIdentity {
        receipt_id: "receipt_opaque",
        effect_id: "effect_opaque",
        hook_id: "periodic_report.other_hook",
        capability_id: CAPABILITY_ID,
        registration_digest: &registration_digest(),
        registration_schema_version: REGISTRATION_SCHEMA,
        event_kind: "todo_completed",
    });
    let doc = with(with(input(), "/dispatch_id", json!(expected)), "/hook_id", json!("periodic_report.other_hook"));
    assert_violations(&check(doc), &[("/dispatch_id", DispatchIdMismatch), ("/hook_id", HookMismatch)]);
}

#[test]
fn hook_and_capability_are_the_registration_s() {
    assert_one(&set("/hook_id", json!("periodic_report.other_hook")), "/hook_id", HookMismatch);
    assert_one(&set("/hook_id", json!("Periodic")), "/hook_id", BadToken);
    assert_one(&set("/capability_id", json!("other_cap")), "/capability_id", CapabilityMismatch);
    assert_one(&set("/capability_id", json!("")), "/capability_id", BadToken);
    assert_one(&set("/capability_id", json!("gho_token")), "/capability_id", CredentialLikeValue);
}

#[test]
fn source_refs_are_opaque() {
    for field in SOURCE_REFS.iter().filter(|f| !matches!(**f, "receipt_id" | "effect_id")) {
        let path = format!("/source/{field}");
        assert!(set(&path, json!("A".repeat(128))).is_ok(), "{path} at 128");
        assert_one(&set(&path, json!("A".repeat(129))), &path, TooLong);
        for bad in ["/home/me/todo", "https://example.com/x", "me@example.com", "a b", "a%2F", "", "_x", "ü"] {
            assert_one(&set(&path, json!(bad)), &path, BadOpaqueRef);
        }
        assert_one(&set(&path, json!("AKIAIOSFODNN7EXAMPLE")), &path, CredentialLikeValue);
        assert_one(&set(&path, json!("eyJhbGciOi.eyJzdWIiOi.c2lnbmF0dXJl")), &path, CredentialLikeValue);
        assert_one(&set(&path, json!(["goal_opaque"])), &path, WrongType);
    }
}

#[test]
fn step_kind_and_timestamp() {
    assert_one(&set("/source/step_kind", json!("prepared_writeback")), "/source/step_kind", NotAllowedValue);
    assert_one(&set("/source/step_kind", json!(0)), "/source/step_kind", WrongType);
    assert!(set("/source/committed_at", json!("2024-02-29T23:59:59.999999999Z")).is_ok());
    for bad in ["2026-08-26", "2026-08-26T00:00:00+00:00", "2023-02-29T00:00:00Z", "2026-08-26T24:00:00Z", "yesterday"]
    {
        assert_one(&set("/source/committed_at", json!(bad)), "/source/committed_at", BadTimestamp);
    }
    assert_one(&set("/source/committed_at", json!(1_787_000_000)), "/source/committed_at", WrongType);
}

#[test]
fn event_kind_must_be_known_and_subscribed() {
    assert_one(&set("/source/event_kind", json!("Todo_completed")), "/source/event_kind", BadToken);
    assert_one(&set("/source/event_kind", json!(null)), "/source/event_kind", WrongType);
    // A known kind this registration does not subscribe to.
    let only_completed = with(registration(), "/event_kinds", json!(["todo_completed"]));
    let digest = identity::registration_digest(&only_completed);
    let id = identity::dispatch_id(&DispatchIdentity {
        receipt_id: "receipt_opaque",
        effect_id: "effect_opaque",
        hook_id: HOOK_ID,
        capability_id: CAPABILITY_ID,
        registration_digest: &digest,
        registration_schema_version: REGISTRATION_SCHEMA,
        event_kind: "replan_recorded",
    });
    let mut doc = with(input(), "/source/event_kind", json!("replan_recorded"));
    doc = with(doc, "/projection/transition", json!("replan_recorded"));
    doc = with(doc, "/dispatch_id", json!(id));
    let verdict = validate_hook_input(&doc, &typed(&only_completed), &digest);
    assert_one(&verdict, "/source/event_kind", UnknownEventKind);
}

#[test]
fn projection_transition_belongs_to_the_event_kind() {
    assert_one(&set("/projection/transition", json!("replan_recorded")), "/projection/transition", TransitionMismatch);
    assert_one(&set("/projection/transition", json!("segment_started")), "/projection/transition", NotAllowedValue);
    assert_one(&set("/projection/transition", json!(false)), "/projection/transition", WrongType);
}

#[test]
fn fact_refs() {
    let refs = |n: usize| json!((0..n).map(|i| format!("fact_{i}")).collect::<Vec<_>>());
    assert!(set("/projection/fact_refs", refs(0)).is_ok());
    assert!(set("/projection/fact_refs", refs(32)).is_ok());
    assert_one(&set("/projection/fact_refs", refs(33)), "/projection/fact_refs", TooManyItems);
    assert_one(&set("/projection/fact_refs", json!(["a", "b", "a"])), "/projection/fact_refs/2", DuplicateItem);
    assert_one(&set("/projection/fact_refs", json!(["a", "/var/log/x"])), "/projection/fact_refs/1", BadOpaqueRef);
    assert_one(&set("/projection/fact_refs", json!(["ghp_abcdef"])), "/projection/fact_refs/0", CredentialLikeValue);
    assert_one(&set("/projection/fact_refs", json!([7])), "/projection/fact_refs/0", WrongType);
}

#[test]
fn boundary_flags_are_all_false() {
    for field in BoundaryAttestation::FIELDS {
        let path = format!("/boundary/{field}");
        assert_one(&set(&path, json!(true)), &path, NotAllowedValue);
        assert_one(&set(&path, json!("false")), &path, WrongType);
        assert_one(&set(&path, json!(0)), &path, WrongType);
    }
}

#[test]
fn several_faults_are_all_reported() {
    let mut doc = input();
    doc = with(doc, "/schema_version", json!("v0"));
    doc = with(doc, "/hook_id", json!("periodic_report.other"));
    doc = with(doc, "/capability_id", json!("other_cap"));
    doc = with(doc, "/dispatch_id", json!(format!("pwh_{}", "1".repeat(64))));
    doc = with(doc, "/source/goal_id", json!("/abs/path"));
    doc = with(doc, "/source/step_kind", json!("inferred"));
    doc = with(doc, "/source/committed_at", json!("2026-02-30T00:00:00Z"));
    doc = without(doc, "/source/todo_id");
    doc = with(doc, "/projection/transition", json!("replan_recorded"));
    doc = with(doc, "/projection/fact_refs", json!(["x", "x"]));
    doc = with(doc, "/boundary/raw_logs_recorded", json!(true));
    doc = with(doc, "/boundary/absolute_paths_recorded", json!(null));
    doc = with(doc, "/task_text", json!("do the thing"));
    assert_violations(
        &check(doc),
        &[
            ("/boundary/absolute_paths_recorded", WrongType),
            ("/boundary/raw_logs_recorded", NotAllowedValue),
            ("/capability_id", CapabilityMismatch),
            ("/dispatch_id", DispatchIdMismatch),
            ("/hook_id", HookMismatch),
            ("/projection/fact_refs/1", DuplicateItem),
            ("/projection/transition", TransitionMismatch),
            ("/schema_version", BadSchemaVersion),
            ("/source/committed_at", BadTimestamp),
            ("/source/goal_id", BadOpaqueRef),
            ("/source/step_kind", NotAllowedValue),
            ("/source/todo_id", MissingField),
            ("/task_text", UnknownField),
        ],
    );
}
