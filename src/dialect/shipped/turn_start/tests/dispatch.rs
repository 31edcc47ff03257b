//! The shipped dispatch: order, isolation with each failure code, required
//! reads deduplicated by command, and the dispatch document's own validator.

use serde_json::{json, Value};

use super::{registration, result, LARK_COMMAND};
use crate::dialect::shipped::turn_start::*;
use crate::provider_reply::ProviderReply;
use crate::turn_start::TurnStartCallResult;
use crate::validate::{Rule, Violation};

fn hook(hook_id: &str, command: &str) -> Value {
    let mut doc = registration();
    doc["hook_id"] = json!(hook_id);
    doc["required_read"]["command"] = json!(command);
    doc
}

fn answer_for(hook_id: &str, status: &str) -> TurnStartCallResult {
    let mut doc = result(status);
    doc["hook_id"] = json!(hook_id);
    TurnStartCallResult::Reply(ProviderReply::Json(doc.to_string()))
}

fn run(registrations: &[Value], answer: impl Fn(&str) -> TurnStartCallResult) -> ShippedTurnStartDispatch {
    dispatch_v1(registrations, |_, r| answer(r.hook_id()))
}

fn failure(hook_id: &str, code: ShippedTurnStartFailureCode) -> ShippedTurnStartFailure {
    ShippedTurnStartFailure { hook_id: hook_id.into(), capability_id: "lark-inbox".into(), error_code: code }
}

#[test]
fn hooks_run_in_hook_id_order_and_reads_dedupe_by_command() {
    let regs = [
        hook("lark_inbox.zeta", LARK_COMMAND),
        hook("lark_inbox.alpha", LARK_COMMAND),
        hook("lark_inbox.mid", "loopx other-read"),
    ];
    let mut order = Vec::new();
    let dispatch = dispatch_v1(&regs, |index, r| {
        order.push(index);
        answer_for(r.hook_id(), "observed")
    });
    assert_eq!(order, [1, 2, 0]);
    let ids: Vec<_> = dispatch.results.iter().map(|r| r.hook_id.as_str()).collect();
    assert_eq!(ids, ["lark_inbox.alpha", "lark_inbox.mid", "lark_inbox.zeta"]);
    let reads: Vec<_> = dispatch.required_reads.iter().map(|r| (r.hook_id.as_str(), r.command.as_str())).collect();
    assert_eq!(reads, [("lark_inbox.alpha", LARK_COMMAND), ("lark_inbox.mid", "loopx other-read")]);
    assert_eq!(dispatch.required_reads[0].source, ShippedRequiredReadSource::V0);
    assert_eq!((dispatch.registered_count, dispatch.invoked_count), (3, 3));
    let doc = serde_json::to_value(&dispatch).unwrap();
    assert_eq!(validate_dispatch(&doc), Ok(dispatch));
}

#[test]
fn reads_are_projected_only_for_results_that_require_them() {
    let regs = [hook("lark_inbox.alpha", LARK_COMMAND), hook("lark_inbox.beta", "loopx b")];
    let dispatch = run(&regs, |h| answer_for(h, if h.ends_with("alpha") { "unavailable" } else { "observed" }));
    let reads: Vec<_> = dispatch.required_reads.iter().map(|r| r.hook_id.as_str()).collect();
    assert_eq!(reads, ["lark_inbox.beta"]);
}

#[test]
fn each_status_becomes_a_result() {
    for status in ["not_applicable", "observed", "empty", "partial", "unavailable", "failed"] {
        let dispatch = run(&[registration()], |h| {
            let mut doc = result(status);
            doc["hook_id"] = json!(h);
            if status == "not_applicable" || status == "empty" {
                doc["local_private_state_mutated"] = json!(false);
            }
            TurnStartCallResult::Reply(ProviderReply::Json(doc.to_string()))
        });
        assert_eq!(dispatch.results.len(), 1, "{status}: {:?}", dispatch.failures);
        assert_eq!(dispatch.required_reads.len(), usize::from(matches!(status, "observed" | "partial")), "{status}");
    }
}

#[test]
fn duplicates_and_rejected_registrations_are_isolated_uncalled() {
    let mut bad = hook("lark_inbox.bad", "loopx x");
    bad["budget"]["max_result_bytes"] = json!(10);
    let mut secret = hook("ghp_secret", "loopx y");
    secret["capability_id"] = json!(7);
    let regs = [hook("lark_inbox.dup", "loopx a"), bad, hook("lark_inbox.dup", "loopx b"), secret];
    let mut called = Vec::new();
    let dispatch = dispatch_v1(&regs, |i, r| {
        called.push(i);
        answer_for(r.hook_id(), "observed")
    });
    assert_eq!(called, [0]);
    use ShippedTurnStartFailureCode::*;
    assert_eq!(
        dispatch.failures,
        [
            ShippedTurnStartFailure {
                hook_id: String::new(),
                capability_id: String::new(),
                error_code: RegistrationRejected
            },
            failure("lark_inbox.bad", RegistrationRejected),
            failure("lark_inbox.dup", DuplicateHookId),
        ]
    );
    assert_eq!((dispatch.registered_count, dispatch.invoked_count), (4, 1));
    assert!(validate_dispatch(&serde_json::to_value(&dispatch).unwrap()).is_ok());
}

#[test]
fn failing_and_invalid_answers_are_isolated_with_their_codes() {
    use ShippedTurnStartFailureCode::*;
    let cases = [
        (TurnStartCallResult::Reply(ProviderReply::Threw), ProducerFailed),
        (TurnStartCallResult::Reply(ProviderReply::NotJson), ProducerFailed),
        (TurnStartCallResult::TimedOut, ProducerFailed),
        (TurnStartCallResult::TooLarge, ContractRejected),
        (TurnStartCallResult::Reply(ProviderReply::Json("{".into())), ContractRejected),
        (TurnStartCallResult::Reply(ProviderReply::Json("[]".into())), ContractRejected),
        (TurnStartCallResult::Reply(ProviderReply::Json(format!("{:1100}", "{}"))), ContractRejected),
    ];
    for (answer, code) in cases {
        let dispatch = run(&[registration()], |_| answer.clone());
        assert_eq!(dispatch.failures, [failure("lark_inbox.turn_start", code)], "{answer:?}");
        assert!(dispatch.results.is_empty() && dispatch.required_reads.is_empty());
    }
    let wrong_hook = run(&[registration()], |_| answer_for("other.hook", "observed"));
    assert_eq!(wrong_hook.failures, [failure("lark_inbox.turn_start", ContractRejected)]);
    let plan = plan(&[registration()]);
    assert_eq!(plan.complete(Vec::new()).failures, [failure("lark_inbox.turn_start", ProducerFailed)]);
}

fn dispatch_doc() -> Value {
    let regs = [hook("lark_inbox.alpha", LARK_COMMAND), hook("lark_inbox.beta", "loopx b")];
    serde_json::to_value(run(&regs, |h| answer_for(h, "observed"))).unwrap()
}

fn doc_rules(doc: &Value) -> Vec<Violation> {
    validate_dispatch(doc).expect_err("rejected").into_vec()
}

fn one(path: &str, rule: Rule) -> Vec<Violation> {
    vec![Violation { path: path.into(), rule }]
}

#[test]
fn dispatch_document_rules() {
    let mut doc = dispatch_doc();
    doc["invoked_count"] = json!(1);
    assert_eq!(doc_rules(&doc), one("/invoked_count", Rule::OutOfRange));
    let mut doc = dispatch_doc();
    doc["registered_count"] = json!(3);
    assert_eq!(doc_rules(&doc), one("/registered_count", Rule::OutOfRange));
    let mut doc = dispatch_doc();
    doc["required_reads"][1]["command"] = json!(LARK_COMMAND);
    assert_eq!(doc_rules(&doc), one("/required_reads/1/command", Rule::DuplicateItem));
    let mut doc = dispatch_doc();
    doc["results"][1]["status"] = json!("empty");
    assert!(
        doc_rules(&doc).contains(&Violation { path: "/results/1/observation_count".into(), rule: Rule::OutOfRange })
    );
    let mut doc = dispatch_doc();
    doc["results"][1]["agent_read_required"] = json!(false);
    doc["results"][1]["status"] = json!("partial");
    doc["results"][1]["observation_count"] = json!(0);
    doc["results"][1]["error_code"] = json!("provider_unavailable");
    assert_eq!(doc_rules(&doc), one("/required_reads/1/hook_id", Rule::HookMismatch));
    let mut doc = dispatch_doc();
    doc["required_reads"][0]["source"] = json!("elsewhere");
    assert_eq!(doc_rules(&doc), one("/required_reads/0/source", Rule::NotAllowedValue));
    let mut doc = dispatch_doc();
    doc["required_reads"][0]["reason"] = json!(" padded ");
    assert_eq!(doc_rules(&doc), one("/required_reads/0/reason", Rule::NotAllowedValue));
    let mut doc = dispatch_doc();
    doc["required_reads"][0]["command"] = json!("loopx --key=AKIAIOSFODNN7EXAMPLE");
    assert_eq!(doc_rules(&doc), one("/required_reads/0/command", Rule::CredentialLikeValue));
    let mut doc = dispatch_doc();
    doc["failures"] = json!([{"hook_id": "", "capability_id": "lark-inbox", "error_code": "producer_failed"}]);
    doc["registered_count"] = json!(3);
    assert_eq!(doc_rules(&doc), one("/failures/0/hook_id", Rule::BadToken));
    doc["failures"][0]["error_code"] = json!("registration_rejected");
    assert!(validate_dispatch(&doc).is_ok());
    doc["failures"][0]["error_code"] = json!("timed_out");
    let rules = doc_rules(&doc);
    assert_eq!(rules[0], one("/failures/0/error_code", Rule::NotAllowedValue)[0]);
}
