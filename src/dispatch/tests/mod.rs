//! Dispatcher tests with Rust providers over a real journal file: the
//! engine's own here, then one file per subject (`budget`, `steps`, the
//! shipped dialect driven as LoopX drives it, and `conformance`: the same
//! scenarios over every dialect).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::*;
use crate::builder::{build_intent, IntentOrigin, IntentSpec};
use crate::contract::{FailureCode, PostWritebackHookInput};
pub(super) use crate::dialect::{with_intent_doc, with_receipt};
use crate::journal::{JournalError, JournalOptions, OpenMode};
use crate::validate::fixtures;

mod budget;
mod conformance;
mod loopx_shipped;
mod steps;

/// What a test provider does when invoked.
#[derive(Clone)]
pub(super) enum Behaviour {
    /// One intent whose payload carries this segment ref.
    Propose(&'static str),
    NotApplicable,
    Throw,
    NotJson,
    Hang,
    /// Valid JSON that breaks the result contract.
    Malformed,
}

pub(super) struct TestProvider {
    behaviour: std::sync::Mutex<Behaviour>,
    calls: AtomicU32,
    /// The last JSON result it returned.
    last: std::sync::Mutex<Option<String>>,
}

impl TestProvider {
    pub(super) fn new(b: Behaviour) -> Arc<Self> {
        Arc::new(TestProvider {
            behaviour: std::sync::Mutex::new(b),
            calls: AtomicU32::new(0),
            last: Default::default(),
        })
    }
    fn last_result(&self) -> Value {
        serde_json::from_str(self.last.lock().unwrap().as_deref().unwrap()).unwrap()
    }
    pub(super) fn set(&self, b: Behaviour) {
        *self.behaviour.lock().unwrap() = b;
    }
    pub(super) fn calls(&self) -> u32 {
        self.calls.load(Ordering::SeqCst)
    }
}

pub(super) fn result_for(input_json: &str, b: &Behaviour) -> ProviderReply {
    let input: PostWritebackHookInput = serde_json::from_str(input_json).unwrap();
    match b {
        Behaviour::Propose(segment) => {
            let origin = IntentOrigin {
                dispatch_id: &input.dispatch_id,
                hook_id: &input.hook_id,
                capability_id: &input.capability_id,
            };
            let intent = build_intent(
                &origin,
                IntentSpec {
                    intent_kind: fixtures::INTENT_KIND.into(),
                    operation: fixtures::OPERATION.into(),
                    policy_version: fixtures::POLICY_VERSION.into(),
                    payload: json!({"segment_ref": segment, "source_event_refs": input.projection.fact_refs}),
                    budget: None,
                    requested_write_scope: vec![],
                },
            );
            let result = json!({"schema_version": "loopx_post_writeback_hook_result_v0", "status": "proposed", "intents": [intent]});
            ProviderReply::Json(result.to_string())
        }
        Behaviour::NotApplicable => ProviderReply::Json(
            json!({"schema_version": "loopx_post_writeback_hook_result_v0", "status": "not_applicable", "intents": []})
                .to_string(),
        ),
        Behaviour::Throw => ProviderReply::Threw,
        Behaviour::NotJson => ProviderReply::NotJson,
        Behaviour::Malformed => ProviderReply::Json(json!({"status": "proposed"}).to_string()),
        Behaviour::Hang => unreachable!(),
    }
}

impl Provider for TestProvider {
    fn invoke(&self, input_json: String) -> ReplyFuture {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let b = self.behaviour.lock().unwrap().clone();
        if !matches!(b, Behaviour::Hang) {
            if let ProviderReply::Json(text) = result_for(&input_json, &b) {
                *self.last.lock().unwrap() = Some(text);
            }
        }
        Box::pin(async move {
            if let Behaviour::Hang = b {
                std::future::pending::<()>().await;
            }
            result_for(&input_json, &b)
        })
    }
}

pub(crate) struct Fixture {
    pub(super) dir: std::path::PathBuf,
    pub(crate) dispatcher: Dispatcher,
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

pub(crate) fn fixture(profile: Profile) -> Fixture {
    fixture_with(profile, JournalOptions::default())
}

pub(super) fn fixture_with(profile: Profile, options: JournalOptions) -> Fixture {
    static N: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "loopx-dispatch-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let journal = Journal::open(dir.join("j.sqlite"), options, OpenMode::ReadWrite).unwrap();
    let dispatcher = Dispatcher::new(Arc::new(journal), profile);
    dispatcher.define_intent_kind(&fixtures::kind_definition()).unwrap();
    Fixture { dir, dispatcher }
}

pub(crate) fn enabled() -> Profile {
    Profile { enabled: true, ..Profile::default() }
}

pub(crate) fn registration(hook: &str, invocations: u32, timeout_ms: u32) -> Value {
    let mut r = fixtures::registration();
    r["hook_id"] = json!(format!("periodic_report.{hook}"));
    r["budget"]["max_invocations_per_dispatch"] = json!(invocations);
    r["budget"]["timeout_ms"] = json!(timeout_ms);
    r
}

pub(super) fn install(f: &Fixture, hook: &str, invocations: u32, b: Behaviour) -> Arc<TestProvider> {
    let p = TestProvider::new(b);
    f.dispatcher.register(&registration(hook, invocations, 50), p.clone()).unwrap();
    p
}

pub(crate) fn request(receipt_id: &str) -> DispatchRequest {
    let mut r = request::tests::request();
    r.receipt.receipt_id = receipt_id.into();
    r
}

fn kinds(outcome: &DispatchOutcome) -> Vec<(String, HookOutcomeKind, Option<FailureCode>)> {
    outcome.hooks.iter().map(|h| (h.hook_id.clone(), h.outcome, h.failure_code)).collect()
}

#[tokio::test]
async fn disabled_phase_invokes_and_records_nothing() {
    let f = fixture(Profile::default());
    let p = install(&f, "a", 1, Behaviour::Propose("s"));
    let out = f.dispatcher.dispatch(&request("r1")).await.unwrap();
    assert_eq!(out, DispatchOutcome::refused(AdmissionRefusal::PhaseDisabled));
    assert_eq!(p.calls(), 0);
    assert_eq!(f.dispatcher.journal().stats().unwrap(), Default::default());
}

#[tokio::test]
async fn records_then_replays_without_invoking() {
    let f = fixture(enabled());
    let p = install(&f, "a", 1, Behaviour::Propose("s"));
    let first = f.dispatcher.dispatch(&request("r1")).await.unwrap();
    assert_eq!(first.hooks[0].outcome, HookOutcomeKind::Recorded);
    let receipt = first.hooks[0].receipt.clone().unwrap();
    assert_eq!(receipt.intent_ids.len(), 1);
    let again = f.dispatcher.dispatch(&request("r1")).await.unwrap();
    assert_eq!(again.hooks[0].outcome, HookOutcomeKind::Replayed);
    assert_eq!(again.hooks[0].receipt.as_ref(), Some(&receipt));
    assert_eq!(p.calls(), 1);
    let stats = f.dispatcher.journal().stats().unwrap();
    assert_eq!((stats.proposed, stats.intents), (1, 1));
    // The receipt the dispatcher records satisfies the receipt contract.
    let doc = serde_json::to_value(&receipt).unwrap();
    crate::validate::validate_dispatch_receipt(&doc).unwrap();
}

/// No receipt is stored: the one a replay returns (and readers show) is built
/// from the row, and must be the one returned when it was recorded, byte for
/// byte, for every final status and at attempts past the first.
#[tokio::test]
async fn replayed_receipts_are_the_recorded_ones_byte_for_byte() {
    use crate::contract::DispatchStatus;
    // (behaviour of each dispatch until the final one, invocations allowed, final status)
    let cases: [(&[Behaviour], u32, DispatchStatus); 5] = [
        (&[Behaviour::Propose("s")], 1, DispatchStatus::Proposed),
        (&[Behaviour::Throw, Behaviour::Propose("s")], 2, DispatchStatus::Proposed),
        (&[Behaviour::NotApplicable], 1, DispatchStatus::NotApplicable),
        (&[Behaviour::Throw, Behaviour::NotJson, Behaviour::NotApplicable], 3, DispatchStatus::NotApplicable),
        (&[Behaviour::Throw, Behaviour::Throw, Behaviour::Throw], 2, DispatchStatus::Exhausted),
    ];
    for replay in [ReplayMode::Return, ReplayMode::Verify] {
        for (steps, invocations, status) in &cases {
            let f = fixture(Profile { replay, ..enabled() });
            let p = install(&f, "a", *invocations, steps[0].clone());
            let mut last = None;
            for b in steps.iter() {
                p.set(b.clone());
                last = Some(f.dispatcher.dispatch(&request("r1")).await.unwrap());
            }
            let recorded = last.unwrap().hooks[0].receipt.clone().expect("a final receipt");
            assert_eq!(recorded.status, *status);
            let recorded_json = serde_json::to_string(&recorded).unwrap();
            // A replay (reader path in return mode, checkpoint path in verify mode).
            let again = f.dispatcher.dispatch(&request("r1")).await.unwrap();
            assert_eq!(again.hooks[0].outcome, HookOutcomeKind::Replayed, "{status:?} {replay:?}");
            assert_eq!(again.hooks[0].attempt, recorded.attempt);
            let replayed = again.hooks[0].receipt.clone().unwrap();
            assert_eq!(serde_json::to_string(&replayed).unwrap(), recorded_json, "{status:?} {replay:?}");
            // What the readers show.
            let row = f.dispatcher.journal().get_dispatch(&recorded.dispatch_id).unwrap().unwrap();
            assert_eq!(with_receipt(row).receipt_json.as_deref(), Some(recorded_json.as_str()));
            // The receipt the dispatcher records satisfies the receipt contract.
            crate::validate::validate_dispatch_receipt(&serde_json::to_value(&recorded).unwrap()).unwrap();
        }
    }
}

/// Intents are stored without what their dispatch determines; the document
/// the readers rebuild is the one the provider returned (validated).
#[tokio::test]
async fn read_back_intents_are_the_provider_s_documents() {
    let f = fixture(enabled());
    let p = install(&f, "a", 1, Behaviour::Propose("s"));
    let out = f.dispatcher.dispatch(&request("r1")).await.unwrap();
    assert_eq!(out.hooks[0].outcome, HookOutcomeKind::Recorded);
    let returned = p.last_result()["intents"].clone();
    let page = f.dispatcher.journal().list_intents(&crate::journal::IntentFilter::default()).unwrap();
    assert_eq!(page.items.len(), 1);
    let read: Vec<Value> =
        page.items.into_iter().map(|i| serde_json::from_str(&with_intent_doc(i).doc_json.unwrap()).unwrap()).collect();
    assert_eq!(Value::Array(read), returned);
}

#[tokio::test]
async fn verify_mode_detects_a_different_result_and_keeps_the_original() {
    let f = fixture(Profile { replay: ReplayMode::Verify, ..enabled() });
    let p = install(&f, "a", 1, Behaviour::Propose("s1"));
    let first = f.dispatcher.dispatch(&request("r1")).await.unwrap();
    let same = f.dispatcher.dispatch(&request("r1")).await.unwrap();
    assert_eq!(same.hooks[0].outcome, HookOutcomeKind::Replayed);
    p.set(Behaviour::Propose("s2"));
    let changed = f.dispatcher.dispatch(&request("r1")).await.unwrap();
    assert_eq!(changed.hooks[0].outcome, HookOutcomeKind::Conflict);
    assert_eq!(changed.hooks[0].failure_code, Some(FailureCode::IntentConflict));
    assert_eq!(changed.hooks[0].receipt, first.hooks[0].receipt);
    assert_eq!(p.calls(), 3);
    assert_eq!(f.dispatcher.journal().stats().unwrap().intents, 1);
}

#[tokio::test]
async fn failures_are_isolated_and_ordered_by_hook_id() {
    let f = fixture(enabled());
    // Registered out of order on purpose.
    install(&f, "e_hang", 1, Behaviour::Hang);
    install(&f, "b_throw", 1, Behaviour::Throw);
    install(&f, "d_malformed", 1, Behaviour::Malformed);
    install(&f, "a_good", 1, Behaviour::Propose("s"));
    install(&f, "c_not_json", 1, Behaviour::NotJson);
    install(&f, "f_none", 1, Behaviour::NotApplicable);
    let out = f.dispatcher.dispatch(&request("r1")).await.unwrap();
    use HookOutcomeKind::*;
    let hook = |s: &str| format!("periodic_report.{s}");
    assert_eq!(
        kinds(&out),
        vec![
            (hook("a_good"), Recorded, None),
            (hook("b_throw"), Failed, Some(FailureCode::ProducerFailed)),
            (hook("c_not_json"), Failed, Some(FailureCode::ResultContractRejected)),
            (hook("d_malformed"), Failed, Some(FailureCode::ResultContractRejected)),
            (hook("e_hang"), Failed, Some(FailureCode::ProducerTimedOut)),
            (hook("f_none"), NotApplicable, None),
        ]
    );
    assert_eq!(out.hooks[2].failure_rule, Some(Rule::NotJsonValue));
    let failures = f.dispatcher.journal().list_failures(&out.hooks[1].dispatch_id).unwrap();
    assert_eq!((failures.len(), failures[0].code.as_str()), (1, "producer_failed"));
}

#[tokio::test]
async fn failed_attempts_retry_then_exhaust() {
    let f = fixture(enabled());
    let p = install(&f, "a", 2, Behaviour::Throw);
    for attempt in 1..=2 {
        let out = f.dispatcher.dispatch(&request("r1")).await.unwrap();
        assert_eq!((out.hooks[0].outcome, out.hooks[0].attempt), (HookOutcomeKind::Failed, attempt));
    }
    let out = f.dispatcher.dispatch(&request("r1")).await.unwrap();
    assert_eq!(out.hooks[0].outcome, HookOutcomeKind::Exhausted);
    assert_eq!(out.hooks[0].receipt.as_ref().unwrap().status, crate::contract::DispatchStatus::Exhausted);
    let again = f.dispatcher.dispatch(&request("r1")).await.unwrap();
    assert_eq!(again.hooks[0].outcome, HookOutcomeKind::Replayed);
    assert_eq!(p.calls(), 2);
}

#[tokio::test]
async fn a_retry_that_succeeds_is_recorded() {
    let f = fixture(enabled());
    let p = install(&f, "a", 2, Behaviour::Throw);
    f.dispatcher.dispatch(&request("r1")).await.unwrap();
    p.set(Behaviour::Propose("s"));
    let out = f.dispatcher.dispatch(&request("r1")).await.unwrap();
    assert_eq!((out.hooks[0].outcome, out.hooks[0].attempt), (HookOutcomeKind::Recorded, 2));
}

#[tokio::test]
async fn unsafe_input_is_not_invoked_nor_journaled() {
    let f = fixture(enabled());
    let p = install(&f, "a", 1, Behaviour::Propose("s"));
    let mut r = request("r1");
    r.settlement.goal_id = "https://example.com/goal".into();
    let out = f.dispatcher.dispatch(&r).await.unwrap();
    assert_eq!(out.hooks[0].failure_code, Some(FailureCode::InputBoundaryRejected));
    assert_eq!(out.hooks[0].failure_rule, Some(Rule::BadOpaqueRef));
    assert_eq!(p.calls(), 0);
    assert_eq!(f.dispatcher.journal().stats().unwrap(), Default::default());
}

#[tokio::test]
async fn ceilings_and_allowlist() {
    let f = fixture(Profile {
        max_hooks_per_dispatch: 1,
        allowlist: Some(vec!["periodic_report.a".into(), "periodic_report.b".into()]),
        ..enabled()
    });
    let a = install(&f, "a", 1, Behaviour::Propose("s"));
    let b = install(&f, "b", 1, Behaviour::Propose("s"));
    let c = install(&f, "c", 1, Behaviour::Propose("s"));
    let out = f.dispatcher.dispatch(&request("r1")).await.unwrap();
    assert_eq!(out.hooks.len(), 2, "c is outside the allowlist");
    assert_eq!(out.hooks[1].failure_code, Some(FailureCode::DispatchBudgetExhausted));
    assert_eq!(out.hooks[1].attempt, 0);
    assert_eq!((a.calls(), b.calls(), c.calls()), (1, 0, 0));
}

#[tokio::test]
async fn wall_budget_cuts_a_slow_provider() {
    let f = fixture(Profile { max_dispatch_wall_ms: 20, ..enabled() });
    let p = TestProvider::new(Behaviour::Hang);
    f.dispatcher.register(&registration("a", 1, 5_000), p.clone()).unwrap();
    let started = std::time::Instant::now();
    let out = f.dispatcher.dispatch(&request("r1")).await.unwrap();
    assert!(started.elapsed() < Duration::from_millis(2_000));
    assert_eq!(out.hooks[0].failure_code, Some(FailureCode::DispatchBudgetExhausted));
    assert_eq!(out.hooks[0].attempt, 1);
}

#[tokio::test]
async fn malformed_registration_is_rejected_before_anything_runs() {
    let f = fixture(enabled());
    let p = TestProvider::new(Behaviour::Propose("s"));
    let mut r = registration("a", 1, 50);
    r["budget"]["max_invocations_per_dispatch"] = json!(5);
    let violations = f.dispatcher.register(&r, p.clone()).unwrap_err();
    assert_eq!(violations[0].rule, Rule::OutOfRange);
    let out = f.dispatcher.dispatch(&request("r1")).await.unwrap();
    assert!(out.hooks.is_empty());
    assert_eq!(p.calls(), 0);
    // A second registration of one hook_id is refused too.
    install(&f, "b", 1, Behaviour::NotApplicable);
    assert_eq!(f.dispatcher.register(&registration("b", 1, 50), p).unwrap_err()[0].rule, Rule::DuplicateItem);
}

#[test]
fn an_intent_kind_defined_again_alike_is_a_no_op_and_differently_a_duplicate() {
    let f = fixture(enabled());
    // The fixture defined it once already.
    f.dispatcher.define_intent_kind(&fixtures::kind_definition()).unwrap();
    let mut other = fixtures::kind_definition();
    other["operations"] = json!([fixtures::OPERATION]);
    let violations = f.dispatcher.define_intent_kind(&other).unwrap_err();
    assert_eq!((violations[0].path.as_str(), violations[0].rule), ("/intent_kind", Rule::DuplicateItem));
}

#[tokio::test]
async fn recover_completes_checkpointed_dispatches_with_the_same_identity() {
    let f = fixture(enabled());
    let p = install(&f, "a", 2, Behaviour::Throw);
    let failed = f.dispatcher.dispatch(&request("r1")).await.unwrap();
    p.set(Behaviour::Propose("s"));
    let report = f.dispatcher.recover().await.unwrap();
    assert_eq!(report.skipped, 0);
    assert_eq!(report.outcomes.len(), 1);
    assert_eq!(report.outcomes[0].dispatch_id, failed.hooks[0].dispatch_id);
    assert_eq!(report.outcomes[0].outcome, HookOutcomeKind::Recorded);
    assert!(f.dispatcher.journal().unfinished().unwrap().is_empty());
    let again = f.dispatcher.recover().await.unwrap();
    assert!(again.outcomes.is_empty());
}

#[tokio::test]
async fn concurrent_runs_of_one_identity_invoke_once() {
    let f = fixture(enabled());
    let p = install(&f, "a", 1, Behaviour::Propose("s"));
    let r = request("r1");
    let (a, b, c) = tokio::join!(f.dispatcher.dispatch(&r), f.dispatcher.dispatch(&r), f.dispatcher.dispatch(&r));
    let mut outcomes: Vec<_> = [a, b, c].into_iter().map(|o| o.unwrap().hooks[0].outcome).collect();
    outcomes.sort_by_key(|o| format!("{o:?}"));
    assert_eq!(outcomes, vec![HookOutcomeKind::Recorded, HookOutcomeKind::Replayed, HookOutcomeKind::Replayed]);
    assert_eq!(p.calls(), 1);

    // A failing identity under a budget of one: one call, then exhaustion.
    let q = install(&f, "b", 1, Behaviour::Throw);
    let r2 = request("r2");
    let (a, b) = tokio::join!(f.dispatcher.dispatch(&r2), f.dispatcher.dispatch(&r2));
    let mut outcomes: Vec<_> = [a, b].into_iter().map(|o| o.unwrap().hooks[1].outcome).collect();
    outcomes.sort_by_key(|o| format!("{o:?}"));
    assert_eq!(outcomes, vec![HookOutcomeKind::Exhausted, HookOutcomeKind::Failed]);
    assert_eq!(q.calls(), 1);
}

#[tokio::test]
async fn verify_replay_of_an_exhausted_identity_does_not_invoke() {
    let f = fixture(Profile { replay: ReplayMode::Verify, ..enabled() });
    let p = install(&f, "a", 1, Behaviour::Throw);
    f.dispatcher.dispatch(&request("r1")).await.unwrap();
    let exhausted = f.dispatcher.dispatch(&request("r1")).await.unwrap();
    assert_eq!(exhausted.hooks[0].outcome, HookOutcomeKind::Exhausted);
    p.set(Behaviour::Propose("s"));
    let replay = f.dispatcher.dispatch(&request("r1")).await.unwrap();
    assert_eq!(replay.hooks[0].outcome, HookOutcomeKind::Replayed);
    assert_eq!(replay.hooks[0].receipt, exhausted.hooks[0].receipt);
    assert_eq!(p.calls(), 1);
}

#[tokio::test]
async fn close_waits_for_dispatches_in_flight_then_refuses_new_ones() {
    let f = fixture(enabled());
    let p = TestProvider::new(Behaviour::Hang);
    f.dispatcher.register(&registration("a", 1, 100), p).unwrap();
    let r = request("r1");
    let (out, ()) = tokio::join!(f.dispatcher.dispatch(&r), async {
        tokio::time::sleep(Duration::from_millis(10)).await;
        f.dispatcher.close().await;
    });
    assert_eq!(out.unwrap().hooks[0].failure_code, Some(FailureCode::ProducerTimedOut));
    assert_eq!(f.dispatcher.dispatch(&r).await.unwrap_err(), JournalError::Closed);
}
