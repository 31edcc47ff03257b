//! The result envelope: status, intent count, duplicates and size. The
//! checks inside one intent are in `intent.rs`.

use serde_json::{json, Value};

use crate::canonical::canonical_len;
use crate::contract::{PostWritebackHookResult, ResultStatus};
use crate::identity;
use crate::validate::fixtures::*;
use crate::validate::Rule::*;
use crate::validate::{validate_hook_result, ResultContext, Verdict};

/// Checks `doc` against a registration document (assumed valid).
fn check_with(doc: &Value, registration: &Value) -> Verdict<PostWritebackHookResult> {
    let (registration, kinds, id) = (typed(registration), kinds(), dispatch_id());
    validate_hook_result(doc, &ResultContext { registration: &registration, dispatch_id: &id, kinds: &kinds })
}

fn check(doc: Value) -> Verdict<PostWritebackHookResult> {
    check_with(&doc, &registration())
}

fn budget(field: &str, n: u64) -> Value {
    with(registration(), &format!("/budget/{field}"), json!(n))
}

/// The RFC intent for another segment: a distinct, correctly sealed intent.
fn nth_intent(i: usize) -> Value {
    sealed(with(intent(), "/payload/segment_ref", json!(format!("segment_{i}"))))
}

fn proposed(n: usize) -> Value {
    result_of((0..n).map(nth_intent).collect())
}

#[test]
fn rfc_result_with_real_ids_is_accepted() {
    let typed = check(result()).expect("RFC result");
    assert_eq!(typed.status, ResultStatus::Proposed);
    let intent = &typed.intents[0];
    assert_eq!(intent.source_dispatch_id, dispatch_id());
    assert_eq!(intent.intent_id, identity::intent_id(&dispatch_id(), INTENT_KIND, POLICY_VERSION, &intent.payload));
    assert!(intent.intent_id.starts_with("pwi_") && intent.intent_id.len() == 68);
}

#[test]
fn not_applicable_is_accepted() {
    let typed = check(not_applicable()).expect("not_applicable");
    assert!(typed.intents.is_empty());
}

#[test]
fn not_an_object() {
    for doc in [json!([]), json!(null), json!("proposed")] {
        assert_one(&check(doc), "", WrongType);
    }
}

#[test]
fn exact_fields() {
    assert_one(&check(with(result(), "/reason", json!("x"))), "/reason", UnknownField);
    for field in ["schema_version", "status", "intents"] {
        let path = format!("/{field}");
        assert_one(&check(without(result(), &path)), &path, MissingField);
    }
    assert_one(&check(with(result(), "/intents", json!({}))), "/intents", WrongType);
    assert_one(
        &check(with(result(), "/schema_version", json!("loopx_post_writeback_intent_v0"))),
        "/schema_version",
        BadSchemaVersion,
    );
}

#[test]
fn status() {
    assert_one(&check(with(result(), "/status", json!("accepted"))), "/status", NotAllowedValue);
    assert_one(&check(with(result(), "/status", json!(1))), "/status", WrongType);
    assert_one(&check(with(result(), "/status", json!("not_applicable"))), "/intents", TooManyItems);
    assert_one(&check(with(not_applicable(), "/status", json!("proposed"))), "/intents", TooFewItems);
}

#[test]
fn intent_budget() {
    // The RFC registration admits one intent per dispatch.
    assert_one(&check(proposed(2)), "/intents", IntentBudgetExceeded);
    assert!(check_with(&proposed(2), &budget("max_intents_per_dispatch", 2)).is_ok());
    assert_one(&check_with(&proposed(3), &budget("max_intents_per_dispatch", 2)), "/intents", IntentBudgetExceeded);
    assert!(check_with(&proposed(16), &budget("max_intents_per_dispatch", 16)).is_ok());
    assert_one(&check_with(&proposed(17), &budget("max_intents_per_dispatch", 16)), "/intents", IntentBudgetExceeded);
    // An unknown status still holds the count to the budget.
    assert_violations(
        &check(with(proposed(2), "/status", json!("maybe"))),
        &[("/intents", IntentBudgetExceeded), ("/status", NotAllowedValue)],
    );
}

#[test]
fn sixteen_is_a_hard_cap() {
    // A registration that was never validated cannot lift the cap.
    let mut registration = typed(&registration());
    registration.budget.max_intents_per_dispatch = 40;
    registration.budget.max_result_bytes = 1 << 20;
    let (kinds, id) = (kinds(), dispatch_id());
    let ctx = ResultContext { registration: &registration, dispatch_id: &id, kinds: &kinds };
    assert!(validate_hook_result(&proposed(16), &ctx).is_ok());
    assert_one(&validate_hook_result(&proposed(17), &ctx), "/intents", IntentBudgetExceeded);
}

#[test]
fn duplicate_intent_ids() {
    let two = budget("max_intents_per_dispatch", 4);
    assert_one(&check_with(&result_of(vec![intent(), intent()]), &two), "/intents/1/intent_id", DuplicateItem);
    // operation is not part of intent_id: differing only in it is a duplicate.
    let other_op = with(intent(), "/operation", json!("record_trigger_evaluation"));
    assert_one(&check_with(&result_of(vec![intent(), other_op]), &two), "/intents/1/intent_id", DuplicateItem);
    // Each repeat is reported at the repeat, not at the first.
    let doc = result_of(vec![nth_intent(0), intent(), nth_intent(1), intent()]);
    assert_one(&check_with(&doc, &two), "/intents/3/intent_id", DuplicateItem);
}

#[test]
fn result_size_is_held_to_the_budget() {
    let len = canonical_len(&result()) as u64;
    assert!(len > 256, "the RFC result is {len} bytes");
    assert!(check_with(&result(), &budget("max_result_bytes", len)).is_ok());
    assert_one(&check_with(&result(), &budget("max_result_bytes", len - 1)), "", ResultTooLarge);
    assert_one(&check_with(&result(), &budget("max_result_bytes", 256)), "", ResultTooLarge);
    // not_applicable is far below the smallest budget.
    assert!(check_with(&not_applicable(), &budget("max_result_bytes", 256)).is_ok());
}

#[test]
fn result_of_exactly_256_and_257_bytes() {
    // No valid result is 256 bytes long (an intent alone is longer), so pad
    // not_applicable with an unknown member to exactly 256 and 257 bytes.
    let padded = |len: usize| {
        let base = canonical_len(&with(not_applicable(), "/pad", json!("")));
        with(not_applicable(), "/pad", json!("x".repeat(len - base)))
    };
    let small = budget("max_result_bytes", 256);
    assert_eq!(canonical_len(&padded(256)), 256);
    assert_one(&check_with(&padded(256), &small), "/pad", UnknownField);
    assert_violations(&check_with(&padded(257), &small), &[("", ResultTooLarge), ("/pad", UnknownField)]);
}

#[test]
fn size_is_reported_alongside_other_faults() {
    let small = budget("max_result_bytes", 256);
    let doc = with(with(result(), "/status", json!("done")), "/extra", json!(1));
    assert_violations(
        &check_with(&doc, &small),
        &[("", ResultTooLarge), ("/extra", UnknownField), ("/status", NotAllowedValue)],
    );
    let padded = with(not_applicable(), "/intents", json!("x".repeat(300)));
    assert_violations(&check_with(&padded, &small), &[("", ResultTooLarge), ("/intents", WrongType)]);
    // A document that is not an object is only that.
    assert_one(&check_with(&json!(["x".repeat(300)]), &small), "", WrongType);
}

#[test]
fn several_faults_are_all_reported() {
    let mut bad = with(intent(), "/hook_id", json!("periodic_report.other"));
    bad = with(bad, "/grants_new_action_authority", json!(true));
    bad = with(bad, "/budget/max_attempts", json!(0));
    let foreign = sealed(with(intent(), "/intent_kind", json!("other_cap.do_thing")));
    let doc = with(result_of(vec![intent(), bad, foreign, intent()]), "/schema_version", json!("v0"));
    assert_violations(
        &check(doc),
        &[
            ("/intents", IntentBudgetExceeded),
            ("/intents/1/budget/max_attempts", OutOfRange),
            ("/intents/1/grants_new_action_authority", AuthorityClaimed),
            ("/intents/1/hook_id", HookMismatch),
            ("/intents/1/intent_id", DuplicateItem),
            ("/intents/2/intent_kind", UnknownIntentKind),
            ("/intents/3/intent_id", DuplicateItem),
            ("/schema_version", BadSchemaVersion),
        ],
    );
}
