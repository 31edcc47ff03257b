//! Hostile documents: a million faults are capped at MAX_REPORTED
//! with a count of the rest, credential-like member names never appear in a
//! path, and the three clarifications of contract-v0 section 2.

use serde_json::{json, Value};

use crate::validate::fixtures::*;
use crate::validate::Rule::*;
use crate::validate::{validate_hook_input, validate_registration, MAX_REPORTED, REDACTED};

#[test]
fn a_million_event_kinds_are_capped_and_counted() {
    let kinds: Vec<Value> = (0..1_000_000).map(|i| json!(format!("k{i}"))).collect();
    let doc = with(registration(), "/event_kinds", Value::Array(kinds));
    let v = validate_registration(&doc, &self::kinds()).unwrap_err();
    assert_eq!(v.len(), MAX_REPORTED);
    // too_many_items at the array, then unknown_event_kind per item.
    assert_eq!((v[0].path.as_str(), v[0].rule), ("/event_kinds", TooManyItems));
    assert_eq!((v[1].path.as_str(), v[1].rule), ("/event_kinds/0", UnknownEventKind));
    assert_eq!(v.len() + v.more(), 1_000_001);
}

#[test]
fn a_million_unknown_members_are_capped_and_counted() {
    let Value::Object(mut map) = registration() else { unreachable!() };
    map.extend((0..1_000_000).map(|i| (format!("x{i}"), Value::Null)));
    let v = validate_registration(&Value::Object(map), &kinds()).unwrap_err();
    assert_eq!(v.len(), MAX_REPORTED);
    assert!(v.iter().all(|x| x.rule == UnknownField));
    assert_eq!(v.more(), 1_000_000 - MAX_REPORTED);
}

#[test]
fn credential_like_member_names_are_redacted() {
    let token = "ghp_0123456789abcdef";
    let doc = with(with(registration(), &format!("/{token}"), json!(1)), "/budget/sk_live_x", json!(2));
    assert_violations(
        &validate_registration(&doc, &kinds()),
        &[(&format!("/{REDACTED}"), CredentialLikeValue), (&format!("/budget/{REDACTED}"), CredentialLikeValue)],
    );
    let v = validate_registration(&doc, &kinds()).unwrap_err();
    assert!(!format!("{v:?}").contains("ghp_") && !format!("{v:?}").contains("sk_live"));
}

#[test]
fn contract_clarifications() {
    // An event kind outside the registration in context: unknown_event_kind.
    let only_replan = with(registration(), "/event_kinds", json!(["replan_recorded"]));
    let digest = crate::identity::registration_digest(&only_replan);
    let verdict = validate_hook_input(&input(), &typed(&only_replan), &digest);
    assert!(violations(&verdict).contains(&("/source/event_kind".into(), UnknownEventKind)));
    // Over the byte bound of a pattern: too_long, even when the grammar fails too.
    let verdict = validate_hook_input(
        &with(input(), "/source/goal_id", json!("/".repeat(129))),
        &typed(&registration()),
        &registration_digest(),
    );
    assert_one(&verdict, "/source/goal_id", TooLong);
    // A dispatch_id of any other shape cannot equal the digest.
    let verdict = validate_hook_input(
        &with(input(), "/dispatch_id", json!("x".repeat(1000))),
        &typed(&registration()),
        &registration_digest(),
    );
    assert_one(&verdict, "/dispatch_id", DispatchIdMismatch);
}

#[test]
fn the_check_entry_points_give_the_validators_verdicts() {
    use crate::validate::{
        check_hook_input, check_hook_result, check_registration, validate_hook_result, ResultContext,
    };
    let reg = typed(&registration());
    let digest = registration_digest();
    let k = kinds();
    let ctx = ResultContext { registration: &reg, dispatch_id: &dispatch_id(), kinds: &k };
    for (doc, bad) in [(registration(), json!({"phase": 1})), (input(), json!([1])), (result(), json!({}))] {
        let broken = with(doc.clone(), "/x", bad);
        for d in [&doc, &broken] {
            assert_eq!(check_registration(d, &k).err(), validate_registration(d, &k).err());
            assert_eq!(check_hook_input(d, &reg, &digest).err(), validate_hook_input(d, &reg, &digest).err());
            assert_eq!(check_hook_result(d, &ctx).err(), validate_hook_result(d, &ctx).err());
        }
    }
    assert!(check_hook_result(&result(), &ctx).is_ok());
}
