//! Kernel tests with Rust providers: request validation first, stable order,
//! duplicate identities once, isolation, timeouts, receipt acceptance, the
//! required-read projection and the lane decision.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

use crate::contract::FailureCode;
use crate::turn_start::*;
use crate::validate::Rule;

/// What a test provider answers.
#[derive(Clone)]
enum Answer {
    /// This receipt (the hook_id is filled in from the input unless set).
    Receipt(Value),
    Text(String),
    Throw,
    NotJson,
    Hang,
}

struct TestProvider {
    answer: Mutex<Answer>,
    /// Every input, in invocation order, shared across providers of a test.
    log: Arc<Mutex<Vec<TurnStartHookInput>>>,
}

impl TurnStartProvider for TestProvider {
    fn invoke(&self, input_json: String) -> ReplyFuture {
        let input: TurnStartHookInput = serde_json::from_str(&input_json).expect("input is a TurnStartHookInput");
        let answer = self.answer.lock().unwrap().clone();
        self.log.lock().unwrap().push(input.clone());
        Box::pin(async move {
            match answer {
                Answer::Receipt(mut doc) => {
                    if doc.get("hook_id").is_none() {
                        doc["hook_id"] = json!(input.hook_id);
                    }
                    ProviderReply::Json(doc.to_string())
                }
                Answer::Text(text) => ProviderReply::Json(text),
                Answer::Throw => ProviderReply::Threw,
                Answer::NotJson => ProviderReply::NotJson,
                Answer::Hang => {
                    tokio::time::sleep(Duration::from_secs(3600)).await;
                    ProviderReply::Threw
                }
            }
        })
    }
}

/// A receipt without hook_id (the provider fills in its own).
fn receipt(status: &str, counts: &[(&str, u32)]) -> Value {
    let mut doc = json!({
        "schema_version": "loopx_turn_start_hook_receipt_v0",
        "status": status,
        "error_code": null,
        "agent_read_required": false,
        "observations_new": 0, "pending": 0, "direct_questions": 0, "verified_replies": 0,
        "routes_ok": 1, "routes_failed": 0, "reactions_added": 0, "external_writes_performed": 0
    });
    for (field, n) in counts {
        doc[*field] = json!(n);
    }
    doc
}

fn fresh(n: u32) -> Value {
    let mut doc = receipt("ok", &[("observations_new", n), ("pending", n)]);
    doc["agent_read_required"] = json!(true);
    doc
}

fn empty() -> Value {
    receipt("empty", &[])
}

fn registration(capability: &str, command: &str) -> Value {
    json!({
        "schema_version": "loopx_turn_start_capability_hook_registration_v0",
        "hook_id": format!("{capability}.turn_start_read"),
        "capability_id": capability,
        "phase": "turn_start",
        "required_read": { "command": command },
        "write_scopes": ["owner_private_inbox", "owner_private_cursor", "provider_message_reaction"],
        "budget": { "timeout_ms": 200, "max_attempts_per_dispatch": 4, "max_routes": 2 },
        "failure_policy": "isolate"
    })
}

fn request() -> Value {
    json!({
        "turn": { "goal_id": "goal_opaque", "agent_id": "agent_opaque", "turn_instance_id": "turn_opaque" },
        "quota": { "max_units": 3 }
    })
}

struct Fixture {
    kernel: TurnStartKernel,
    log: Arc<Mutex<Vec<TurnStartHookInput>>>,
}

impl Fixture {
    fn new() -> Self {
        Fixture::with_profile(TurnStartProfile { enabled: true, allowlist: None })
    }

    fn with_profile(profile: TurnStartProfile) -> Self {
        Fixture { kernel: TurnStartKernel::new(profile), log: Arc::new(Mutex::new(Vec::new())) }
    }

    fn provider(&self, answer: Answer) -> Arc<TestProvider> {
        Arc::new(TestProvider { answer: Mutex::new(answer), log: self.log.clone() })
    }

    fn add(&self, capability: &str, command: &str, answer: Answer) -> Registered {
        self.kernel.register(&registration(capability, command), self.provider(answer)).expect("valid registration")
    }

    fn invoked(&self) -> Vec<String> {
        self.log.lock().unwrap().iter().map(|i| i.hook_id.clone()).collect()
    }

    async fn dispatch(&self) -> TurnStartOutcome {
        self.kernel.dispatch(&request()).await
    }
}

fn statuses(outcome: &TurnStartOutcome) -> Vec<(String, TurnStartStatus)> {
    outcome.hooks.iter().map(|h| (h.hook_id.clone(), h.receipt.status)).collect()
}

fn failure(outcome: &TurnStartOutcome, i: usize) -> Option<(FailureCode, Option<Rule>)> {
    outcome.hooks[i].kernel_failure.map(|f| (f.code, f.rule))
}

// ------------------------------------------------------------- request first

#[tokio::test]
async fn invalid_request_reads_nothing() {
    let f = Fixture::new();
    f.add("alpha", "loopx inbox read", Answer::Receipt(fresh(1)));
    for (doc, expected) in [
        (json!({"turn": request()["turn"], "quota": {"max_units": 0}}), vec![("/quota/max_units", Rule::OutOfRange)]),
        (json!({"turn": request()["turn"], "quota": {"max_units": 65}}), vec![("/quota/max_units", Rule::OutOfRange)]),
        (json!({"turn": request()["turn"], "quota": {"max_units": 1.5}}), vec![("/quota/max_units", Rule::WrongType)]),
        (json!({"turn": request()["turn"]}), vec![("/quota", Rule::MissingField)]),
        (
            json!({"turn": {"goal_id": "/home/me", "agent_id": "a@b", "turn_instance_id": "t"}, "quota": {"max_units": 1}, "x": 1}),
            vec![
                ("/x", Rule::UnknownField),
                ("/turn/goal_id", Rule::BadOpaqueRef),
                ("/turn/agent_id", Rule::BadOpaqueRef),
            ],
        ),
        (json!("not a request"), vec![("", Rule::WrongType)]),
    ] {
        let outcome = f.kernel.dispatch(&doc).await;
        assert!(!outcome.admitted);
        let got: Vec<_> = outcome.violations.iter().map(|v| (v.path.as_str(), v.rule)).collect();
        assert_eq!(got, expected, "{doc}");
        assert!(outcome.hooks.is_empty() && outcome.required_reads.is_empty());
        assert_eq!(
            outcome.lane,
            TurnStartLane { decision: TurnStartLaneDecision::KeepSelected, reason: TurnStartLaneReason::NothingToRead }
        );
    }
    assert!(f.invoked().is_empty(), "an invalid request invokes no provider");
    // The edges of the quota are valid.
    for units in [1, 64] {
        let doc = json!({"turn": request()["turn"], "quota": {"max_units": units}});
        assert!(f.kernel.dispatch(&doc).await.admitted);
    }
    assert_eq!(f.invoked().len(), 2);
}

#[tokio::test]
async fn disabled_phase_runs_nothing() {
    let f = Fixture::with_profile(TurnStartProfile::default());
    f.add("alpha", "loopx inbox read", Answer::Receipt(fresh(1)));
    let outcome = f.dispatch().await;
    assert!(outcome.admitted && !outcome.phase_enabled);
    assert!(outcome.hooks.is_empty() && f.invoked().is_empty());
    // An invalid request is refused even so, and says the phase is off.
    let refused = f.kernel.dispatch(&json!({})).await;
    assert!(!refused.admitted && !refused.phase_enabled);
}

// ------------------------------------------------------------- order and identity

#[tokio::test]
async fn hooks_run_once_each_in_hook_id_order() {
    let f = Fixture::new();
    for cap in ["gamma", "alpha", "beta"] {
        assert_eq!(f.add(cap, "loopx inbox read", Answer::Receipt(empty())), Registered::Installed);
    }
    // The same identity again: installed once, runs once.
    assert_eq!(f.add("alpha", "loopx inbox read", Answer::Throw), Registered::AlreadyInstalled);
    // Another registration under an installed hook_id is refused.
    let other = registration("alpha", "loopx other read");
    let refused = f.kernel.register(&other, f.provider(Answer::Throw)).unwrap_err();
    assert_eq!(refused, vec![crate::validate::Violation { path: "/hook_id".into(), rule: Rule::DuplicateItem }]);
    let outcome = f.dispatch().await;
    let order = ["alpha.turn_start_read", "beta.turn_start_read", "gamma.turn_start_read"];
    assert_eq!(f.invoked(), order);
    assert_eq!(outcome.hooks.iter().map(|h| h.hook_id.as_str()).collect::<Vec<_>>(), order);
    // The first provider of alpha answered (the duplicate's Throw never ran).
    assert!(outcome.hooks.iter().all(|h| h.receipt.status == TurnStartStatus::Empty && h.kernel_failure.is_none()));
}

#[tokio::test]
async fn allowlist_selects_hooks() {
    let f =
        Fixture::with_profile(TurnStartProfile { enabled: true, allowlist: Some(vec!["beta.turn_start_read".into()]) });
    f.add("alpha", "loopx inbox read", Answer::Receipt(empty()));
    f.add("beta", "loopx inbox read", Answer::Receipt(empty()));
    f.dispatch().await;
    assert_eq!(f.invoked(), ["beta.turn_start_read"]);
}

#[tokio::test]
async fn provider_input_is_identity_turn_budget_and_scopes() {
    let f = Fixture::new();
    f.add("alpha", "loopx inbox read", Answer::Receipt(empty()));
    f.dispatch().await;
    let input = serde_json::to_value(&f.log.lock().unwrap()[0]).unwrap();
    assert_eq!(
        input,
        json!({
            "hook_id": "alpha.turn_start_read",
            "capability_id": "alpha",
            "turn": request()["turn"],
            "budget": { "timeout_ms": 200, "max_attempts_per_dispatch": 4, "max_routes": 2 },
            "write_scopes": ["owner_private_inbox", "owner_private_cursor", "provider_message_reaction"]
        })
    );
}

// ------------------------------------------------------------- failures are isolated receipts

#[tokio::test]
async fn failures_become_typed_receipts_and_stay_isolated() {
    let f = Fixture::new();
    let huge = format!("{{\"pad\":\"{}\"}}", "x".repeat(MAX_RECEIPT_BYTES));
    let cases: Vec<(&str, Answer, TurnStartStatus, FailureCode, Option<Rule>)> = vec![
        ("a1", Answer::Hang, TurnStartStatus::TimedOut, FailureCode::ProducerTimedOut, None),
        ("a2", Answer::Throw, TurnStartStatus::ProviderContractError, FailureCode::ProducerFailed, None),
        (
            "a3",
            Answer::NotJson,
            TurnStartStatus::ProviderContractError,
            FailureCode::ResultContractRejected,
            Some(Rule::NotJsonValue),
        ),
        (
            "a4",
            Answer::Text("{not json".into()),
            TurnStartStatus::ProviderContractError,
            FailureCode::ResultContractRejected,
            Some(Rule::NotJsonValue),
        ),
        (
            "a5",
            Answer::Text(huge),
            TurnStartStatus::ProviderContractError,
            FailureCode::ResultContractRejected,
            Some(Rule::ResultTooLarge),
        ),
        (
            "a6",
            Answer::Receipt(json!({"status": "ok"})),
            TurnStartStatus::ProviderContractError,
            FailureCode::ResultContractRejected,
            Some(Rule::MissingField),
        ),
    ];
    for (cap, answer, ..) in &cases {
        f.add(cap, "loopx inbox read", answer.clone());
    }
    f.add("z_last", "loopx inbox read", Answer::Receipt(fresh(1)));
    let outcome = f.dispatch().await;
    for (i, (cap, _, status, code, rule)) in cases.iter().enumerate() {
        let hook = &outcome.hooks[i];
        assert_eq!((hook.receipt.status, failure(&outcome, i)), (*status, Some((*code, *rule))), "{cap}");
        assert_eq!(hook.receipt.error_code.map(|c| c.as_str()), Some(status.as_str()));
        assert!(!hook.receipt.agent_read_required);
        // Core's own receipts are valid receipts.
        validate_turn_start_receipt(&serde_json::to_value(&hook.receipt).unwrap()).expect("kernel receipt is valid");
    }
    // The healthy hook after them ran and its read is projected.
    let last = outcome.hooks.last().unwrap();
    assert_eq!((last.receipt.status, last.kernel_failure), (TurnStartStatus::Ok, None));
    assert_eq!(outcome.required_reads.len(), 2);
}

#[tokio::test]
async fn new_observations_without_read_obligation_are_a_contract_error_never_empty() {
    let f = Fixture::new();
    let mut unread = fresh(2);
    unread["agent_read_required"] = json!(false);
    f.add("alpha", "loopx inbox read", Answer::Receipt(unread));
    let outcome = f.dispatch().await;
    assert_eq!(statuses(&outcome), [("alpha.turn_start_read".into(), TurnStartStatus::ProviderContractError)]);
    assert_eq!(failure(&outcome, 0), Some((FailureCode::ResultContractRejected, Some(Rule::NotAllowedValue))));
    // Core's stand-in receipt requires no read, but with no inbox store the
    // standing is unknown, so the read is still projected (fail closed).
    assert!(!outcome.hooks[0].receipt.agent_read_required);
    assert_eq!(outcome.hooks[0].pending_standing, PendingStanding::Unknown);
    assert_eq!(outcome.required_reads.len(), 2);
}

#[tokio::test]
async fn typed_provider_failures_pass_through() {
    let f = Fixture::new();
    for (cap, status) in [
        ("a1", "provider_permission_denied"),
        ("a2", "provider_unavailable"),
        ("a3", "provider_contract_error"),
        ("a4", "timed_out"),
    ] {
        let mut doc = receipt(status, &[("routes_ok", 0), ("routes_failed", 2)]);
        doc["error_code"] = json!(status);
        f.add(cap, "loopx inbox read", Answer::Receipt(doc));
    }
    let outcome = f.dispatch().await;
    assert!(outcome
        .hooks
        .iter()
        .all(|h| h.kernel_failure.is_none()
            && h.receipt.error_code.map(|c| c.as_str()) == Some(h.receipt.status.as_str())));
    assert_eq!(outcome.hooks.len(), 4);
}

#[tokio::test]
async fn receipts_are_held_against_their_registration() {
    let f = Fixture::new();
    // Another hook's receipt.
    let mut foreign = empty();
    foreign["hook_id"] = json!("beta.turn_start_read");
    f.add("a1", "loopx inbox read", Answer::Receipt(foreign));
    // Routes over max_routes (2).
    f.add("a2", "loopx inbox read", Answer::Receipt(receipt("empty", &[("routes_ok", 3)])));
    // External writes over the aggregate attempt budget (4).
    f.add(
        "a3",
        "loopx inbox read",
        Answer::Receipt(receipt("empty", &[("reactions_added", 5), ("external_writes_performed", 5)])),
    );
    // External writes without the reaction scope: refused, and the writes stay visible.
    let mut no_reaction = registration("a4", "loopx inbox read");
    no_reaction["write_scopes"] = json!(["owner_private_inbox", "owner_private_cursor"]);
    let writes = receipt("empty", &[("reactions_added", 1), ("external_writes_performed", 2)]);
    f.kernel.register(&no_reaction, f.provider(Answer::Receipt(writes.clone()))).unwrap();
    // Within budget and scope: accepted.
    f.add(
        "a5",
        "loopx inbox read",
        Answer::Receipt(receipt(
            "empty",
            &[("routes_ok", 2), ("reactions_added", 4), ("external_writes_performed", 4)],
        )),
    );
    let outcome = f.dispatch().await;
    let rules: Vec<_> = (0..5).map(|i| failure(&outcome, i).and_then(|f| f.1)).collect();
    assert_eq!(
        rules,
        [Some(Rule::HookMismatch), Some(Rule::OutOfRange), Some(Rule::OutOfRange), Some(Rule::AuthorityClaimed), None]
    );
    let a4 = &outcome.hooks[3].receipt;
    assert_eq!(
        (a4.status, a4.reactions_added, a4.external_writes_performed),
        (TurnStartStatus::ProviderContractError, 1, 2)
    );
    validate_turn_start_receipt(&serde_json::to_value(a4).unwrap()).expect("valid");
    assert_eq!(outcome.hooks[4].receipt.status, TurnStartStatus::Empty);
}

// ------------------------------------------------------------- required reads

#[tokio::test]
async fn required_reads_are_deduplicated_by_command_and_projected_before_work() {
    let f = Fixture::new();
    f.add("alpha", "loopx inbox read --pending", Answer::Receipt(fresh(1)));
    f.add("beta", "loopx mail read", Answer::Receipt(empty()));
    f.add("gamma", "loopx inbox read --pending", Answer::Receipt(fresh(2)));
    f.add("delta", "loopx chat read", Answer::Receipt(fresh(1)));
    let outcome = f.dispatch().await;
    let reads: Vec<_> = outcome.required_reads.iter().map(|r| (r.channel, r.command.as_str(), r.ordering)).collect();
    use InteractionChannel::*;
    let before = ReadOrdering::BeforeWork;
    // Hook order: alpha, beta, delta, gamma; beta reads nothing, gamma's command is alpha's.
    assert_eq!(
        reads,
        [
            (Agent, "loopx inbox read --pending", before),
            (Cli, "loopx inbox read --pending", before),
            (Agent, "loopx chat read", before),
            (Cli, "loopx chat read", before)
        ]
    );
    let json = serde_json::to_value(&outcome.required_reads[0]).unwrap();
    assert_eq!(json, json!({"channel": "agent", "command": "loopx inbox read --pending", "ordering": "before_work"}));
}

#[tokio::test]
async fn partial_success_keeps_the_read_and_a_compact_code() {
    let f = Fixture::new();
    let mut partial = fresh(1);
    partial["status"] = json!("partial");
    partial["error_code"] = json!("provider_unavailable");
    partial["routes_failed"] = json!(1);
    f.add("alpha", "loopx inbox read", Answer::Receipt(partial));
    let outcome = f.dispatch().await;
    let r = &outcome.hooks[0].receipt;
    assert_eq!(
        (r.status, r.error_code, r.agent_read_required),
        (TurnStartStatus::Partial, Some(TurnStartErrorCode::ProviderUnavailable), true)
    );
    assert_eq!(outcome.required_reads.len(), 2);
    assert_eq!(outcome.lane.decision, TurnStartLaneDecision::NotifyKeepSelected);
}

// ------------------------------------------------------------- lane decision

#[tokio::test]
async fn lane_decisions() {
    let with = |doc: Value, pairs: &[(&str, Value)]| {
        let mut doc = doc;
        for (k, v) in pairs {
            doc[*k] = v.clone();
        }
        doc
    };
    let carried = with(empty(), &[("pending", json!(2)), ("agent_read_required", json!(true))]);
    let question = with(fresh(2), &[("direct_questions", json!(1))]);
    let reply = with(fresh(1), &[("verified_replies", json!(1))]);
    let cases: Vec<(Vec<Value>, TurnStartLaneDecision, TurnStartLaneReason)> = vec![
        (vec![], TurnStartLaneDecision::KeepSelected, TurnStartLaneReason::NothingToRead),
        (vec![empty()], TurnStartLaneDecision::KeepSelected, TurnStartLaneReason::NothingToRead),
        (vec![fresh(3)], TurnStartLaneDecision::NotifyKeepSelected, TurnStartLaneReason::FreshOrdinaryRead),
        (
            vec![carried.clone()],
            TurnStartLaneDecision::PreemptMaterialReview,
            TurnStartLaneReason::MaterialStillPending,
        ),
        (
            vec![fresh(1), carried.clone()],
            TurnStartLaneDecision::PreemptMaterialReview,
            TurnStartLaneReason::MaterialStillPending,
        ),
        (vec![question.clone()], TurnStartLaneDecision::PreemptMaterialReview, TurnStartLaneReason::DirectQuestion),
        (vec![reply.clone()], TurnStartLaneDecision::PreemptMaterialReview, TurnStartLaneReason::VerifiedReply),
        (
            vec![reply, carried, question, empty()],
            TurnStartLaneDecision::PreemptMaterialReview,
            TurnStartLaneReason::DirectQuestion,
        ),
    ];
    for (receipts, decision, reason) in cases {
        let f = Fixture::new();
        for (i, doc) in receipts.iter().enumerate() {
            f.add(&format!("h{i}"), "loopx inbox read", Answer::Receipt(doc.clone()));
        }
        let outcome = f.dispatch().await;
        assert!(outcome.hooks.iter().all(|h| h.kernel_failure.is_none()), "{receipts:?}");
        assert_eq!(outcome.lane, TurnStartLane { decision, reason }, "{receipts:?}");
    }
    // The second turn of the same fresh material: still pending, now preempting.
    let f = Fixture::new();
    let provider = f.provider(Answer::Receipt(fresh(2)));
    f.kernel.register(&registration("alpha", "loopx inbox read"), provider.clone()).unwrap();
    assert_eq!(f.dispatch().await.lane.decision, TurnStartLaneDecision::NotifyKeepSelected);
    *provider.answer.lock().unwrap() =
        Answer::Receipt(with(empty(), &[("pending", json!(2)), ("agent_read_required", json!(true))]));
    let second = f.dispatch().await;
    assert_eq!(
        second.lane,
        TurnStartLane {
            decision: TurnStartLaneDecision::PreemptMaterialReview,
            reason: TurnStartLaneReason::MaterialStillPending
        }
    );
    assert_eq!(second.required_reads.len(), 2);
}

// An outage does not drop the read obligation.
mod outage;

// Budgets and scopes enforced by core, not self-reported.
mod session;
