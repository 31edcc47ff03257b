//! RFC sections 6 and 7, contract-v0 section 1: `requested_read_scope` is
//! applied. `settlement_identity` grants the source's goal, agent, Todo and
//! Turn ids and state revision; `bounded_event_projection` the fact_refs.
//! The hook-input validator holds an input against its registration both
//! ways: a member without its scope is `not_allowed_value`, a granted member
//! missing is `missing_field`.

use serde_json::{json, Value};

use crate::contract::PostWritebackHookRegistration;
use crate::identity::{self, DispatchIdentity};
use crate::validate::fixtures::*;
use crate::validate::input::SETTLEMENT_FIELDS;
use crate::validate::validate_hook_input;
use crate::validate::Rule::{self, *};

/// The example registration asking only for `scopes`, and its digest.
fn scoped(scopes: &[&str]) -> (PostWritebackHookRegistration, String) {
    let doc = with(registration(), "/requested_read_scope", json!(scopes));
    (typed(&doc), identity::registration_digest(&doc))
}

/// The example input re-addressed to the scoped registration's dispatch id.
fn input_for(digest: &str) -> Value {
    let id = identity::dispatch_id(&DispatchIdentity {
        receipt_id: "receipt_opaque",
        effect_id: "effect_opaque",
        hook_id: HOOK_ID,
        capability_id: CAPABILITY_ID,
        registration_digest: digest,
        registration_schema_version: REGISTRATION_SCHEMA,
        event_kind: "todo_completed",
    });
    with(input(), "/dispatch_id", json!(id))
}

fn without_settlement(mut doc: Value) -> Value {
    for field in SETTLEMENT_FIELDS {
        doc = without(doc, &format!("/source/{field}"));
    }
    doc
}

fn violations(doc: &Value, scopes: &[&str]) -> Vec<(String, Rule)> {
    let (registration, digest) = scoped(scopes);
    match validate_hook_input(doc, &registration, &digest) {
        Ok(_) => Vec::new(),
        Err(found) => found.into_iter().map(|v| (v.path, v.rule)).collect(),
    }
}

#[test]
fn settlement_identity_alone_grants_the_source_ids_and_not_the_fact_refs() {
    let scopes = ["settlement_identity"];
    let digest = scoped(&scopes).1;
    let granted = with(input_for(&digest), "/projection/fact_refs", json!([]));
    assert_eq!(violations(&granted, &scopes), []);
    // A fact ref it did not ask for is not its to see.
    assert_eq!(violations(&input_for(&digest), &scopes), [("/projection/fact_refs".to_owned(), NotAllowedValue)]);
    // Each granted member missing is missing_field.
    for field in SETTLEMENT_FIELDS {
        let doc = without(granted.clone(), &format!("/source/{field}"));
        assert_eq!(violations(&doc, &scopes), [(format!("/source/{field}"), MissingField)], "{field}");
    }
}

#[test]
fn bounded_event_projection_alone_grants_the_fact_refs_and_not_the_source_ids() {
    let scopes = ["bounded_event_projection"];
    let digest = scoped(&scopes).1;
    let granted = without_settlement(input_for(&digest));
    assert_eq!(violations(&granted, &scopes), []);
    // Every settlement member present without its scope is not_allowed_value, where it stands.
    let expected: Vec<_> = SETTLEMENT_FIELDS.iter().map(|f| (format!("/source/{f}"), NotAllowedValue)).collect();
    let mut got = violations(&input_for(&digest), &scopes);
    got.sort_by(|a, b| a.0.cmp(&b.0));
    let mut want = expected;
    want.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(got, want);
    // Whatever its value: an ungranted member is refused, not judged.
    let doc = with(granted.clone(), "/source/goal_id", json!("/home/user/goal"));
    assert_eq!(violations(&doc, &scopes), [("/source/goal_id".to_owned(), NotAllowedValue)]);
    // What identity and applicability need is there whatever the scopes.
    for field in ["receipt_id", "effect_id", "step_kind", "event_kind", "committed_at"] {
        let doc = without(granted.clone(), &format!("/source/{field}"));
        assert!(violations(&doc, &scopes).contains(&(format!("/source/{field}"), MissingField)), "{field}");
    }
    // An empty fact list is fine under the scope too.
    assert_eq!(violations(&with(granted, "/projection/fact_refs", json!([])), &scopes), []);
}

#[test]
fn both_scopes_grant_every_member() {
    let scopes = ["settlement_identity", "bounded_event_projection"];
    let digest = scoped(&scopes).1;
    assert_eq!(violations(&input_for(&digest), &scopes), []);
    assert_eq!(
        violations(&without_settlement(input_for(&digest)), &scopes),
        SETTLEMENT_FIELDS.iter().map(|f| (format!("/source/{f}"), MissingField)).collect::<Vec<_>>()
    );
}
