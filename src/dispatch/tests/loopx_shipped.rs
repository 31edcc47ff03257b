//! The engine in the `loopx-shipped-v0` dialect, driven as a LoopX host
//! drives it: the periodic-report hook registered with the shipped
//! registration, `refresh_state` and `todo_complete` sources, over a real
//! journal file that a second dispatcher reopens (a restart).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use super::*;
use crate::dialect::shipped::{self as doc, FailureCode, SidecarStatus};
use crate::journal::{JournalOptions, OpenMode};

mod parity;

#[derive(Clone)]
enum Does {
    /// One intent with this idempotency key and payload marker.
    Intent(&'static str, &'static str),
    NotApplicable,
    Throw,
}

/// A producer of one hook (a shipped input does not name its hook).
struct Producer {
    hook_id: &'static str,
    does: Mutex<Does>,
    calls: AtomicU32,
}

const STAGE: &str = "periodic_report.stage_completion";
const TRIGGER: &str = "periodic_report.runtime_trigger";

impl Producer {
    fn new(d: Does) -> Arc<Self> {
        Self::of(STAGE, d)
    }
    fn of(hook_id: &'static str, d: Does) -> Arc<Self> {
        Arc::new(Producer { hook_id, does: Mutex::new(d), calls: AtomicU32::new(0) })
    }
    fn set(&self, d: Does) {
        *self.does.lock().unwrap() = d;
    }
    fn calls(&self) -> u32 {
        self.calls.load(Ordering::SeqCst)
    }
}

impl Provider for Producer {
    fn invoke(&self, input_json: String) -> ReplyFuture {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let input: Value = serde_json::from_str(&input_json).unwrap();
        let does = self.does.lock().unwrap().clone();
        let reply = match does {
            Does::Throw => ProviderReply::Threw,
            Does::NotApplicable => ProviderReply::Json(result(self.hook_id, &input, None).to_string()),
            Does::Intent(key, marker) => {
                ProviderReply::Json(result(self.hook_id, &input, Some((key, marker))).to_string())
            }
        };
        Box::pin(async move { reply })
    }
}

/// The result of hook `hook_id` for `input`.
pub(super) fn result(hook_id: &str, input: &Value, intent: Option<(&str, &str)>) -> Value {
    json!({
        "schema_version": "loopx_post_writeback_capability_hook_result_v0",
        "hook_id": hook_id,
        "capability_id": "periodic-report",
        "phase": "post_writeback",
        "status": if intent.is_some() { "intent" } else { "not_applicable" },
        "intent": intent.map(|(key, marker)| json!({
            "schema_version": "loopx_capability_intent_v0",
            "intent_kind": "periodic_report.deliver",
            "idempotency_key": key,
            "source_receipt_id": input["receipt"]["event_id"],
            "payload": { "stage": input["projection"]["stage_completion"], "marker": marker },
            "requested_write_scope": [],
        })),
    })
}

pub(super) fn registration(hook_id: &str) -> Value {
    json!({
        "schema_version": "loopx_post_writeback_capability_hook_registration_v0",
        "hook_id": hook_id,
        "capability_id": "periodic-report",
        "policy_version": "v0",
        "phase": "post_writeback",
        "event_kinds": ["refresh_state", "todo_complete"],
        "intent_kinds": ["periodic_report.deliver"],
        "budget": { "max_invocations_per_dispatch": 1, "max_input_bytes": 16384, "max_result_bytes": 8192 },
        "failure_policy": "isolate",
        "requested_read_scope": ["stage_completion"],
        "requested_write_scope": [],
    })
}

/// A source; `unread_note` sits under a key no hook reads.
pub(super) fn source(event_kind: &str, todo_id: Option<&str>, committed_at: &str) -> Value {
    json!({
        "schema_version": "loopx_post_writeback_hook_source_v0",
        "event_kind": event_kind,
        "status": "committed",
        "durable": true,
        "identity": {
            "goal_id": "goal-1", "agent_id": "agent-😀", "todo_id": todo_id,
            "turn_instance_id": "turn-1", "effect_id": "effect-1",
        },
        "state_version": "state-v1",
        "receipt_id": null,
        "committed_at": committed_at,
        "projection": { "stage_completion": "stage-1", "unread_note": "kept-out-of-every-file" },
    })
}

pub(super) fn parsed(doc: &Value) -> Source {
    Source::from_json(Dialect::LoopxShippedV0, &doc.to_string()).unwrap()
}

struct Host {
    dir: std::path::PathBuf,
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Host {
    fn new() -> Self {
        static N: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "loopx-shipped-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        Host { dir }
    }

    /// A dispatcher over the host's journal, as a process (re)started.
    fn start(&self, replay: ReplayMode) -> Dispatcher {
        let path = self.dir.join("j.sqlite");
        let journal = Journal::open(path, JournalOptions::default(), OpenMode::ReadWrite).unwrap();
        let profile = Profile { enabled: true, replay, ..Profile::default() };
        Dispatcher::in_dialect(Arc::new(journal), profile, Dialect::LoopxShippedV0)
    }

    fn journal_bytes(&self) -> Vec<u8> {
        let mut all = Vec::new();
        for entry in std::fs::read_dir(&self.dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_file() {
                all.extend(std::fs::read(path).unwrap());
            }
        }
        all
    }
}

fn result_of(d: &Dispatcher, outcome: &DispatchOutcome) -> doc::DispatchResult {
    let r = crate::dialect::shipped::engine::dispatch_result(outcome, d.registered_count());
    doc::validate_dispatch_result(&serde_json::to_value(&r).unwrap()).expect("a valid shipped dispatch result");
    r
}

fn stored_receipt(d: &Dispatcher, dispatch_id: &str) -> doc::SidecarReceipt {
    let row = d.journal().get_dispatch(dispatch_id).unwrap().unwrap();
    let text = with_receipt(row).receipt_json.expect("a sidecar receipt");
    doc::validate_receipt(&serde_json::from_str(&text).unwrap()).expect("a valid sidecar receipt")
}

/// The design page's worked example, through the dispatcher: its event id
/// is the journal's source receipt and its dispatch id the identity.
#[tokio::test]
async fn the_worked_example_has_loopxs_ids() {
    let host = Host::new();
    let d = host.start(ReplayMode::Return);
    let p = Producer::new(Does::NotApplicable);
    d.register(&registration("periodic_report.stage_completion"), p.clone()).unwrap();
    let out = d.dispatch(parsed(&source("refresh_state", Some("todo-1"), "2026-09-02T12:00:00Z"))).await.unwrap();
    let id = &out.hooks[0].dispatch_id;
    assert_eq!(id, "pwh_bd119d54eba68a96ecd93c21ff3565283decd8c1e3746d2d9ab1bfc621098933");
    let receipt = stored_receipt(&d, id);
    assert_eq!(receipt.source_receipt_id, "pwr_1e21e6cc20ec36025f486859");
    assert_eq!((receipt.status, receipt.attempt_count), (SidecarStatus::NotApplicable, 1));
    assert_eq!(receipt.recorded_at, "2026-09-02T12:00:00Z");
}

/// Both event kinds dispatch; a replay returns the stored receipt's intent
/// without calling the producer; nothing a hook does not read reaches the file.
#[tokio::test]
async fn records_then_replays_the_stored_receipt_without_calling_the_producer() {
    let host = Host::new();
    let d = host.start(ReplayMode::Return);
    let p = Producer::new(Does::Intent("periodic-report:stage-1", "first"));
    d.register(&registration("periodic_report.stage_completion"), p.clone()).unwrap();
    for (kind, todo) in [("refresh_state", None), ("todo_complete", Some("todo-1"))] {
        let src = parsed(&source(kind, todo, "2026-09-02T12:00:00Z"));
        let calls = p.calls();
        let first = result_of(&d, &d.dispatch(src.clone()).await.unwrap());
        assert_eq!((first.invoked_count, first.intent_count, first.failures.len()), (1, 1, 0), "{kind}");
        let again = result_of(&d, &d.dispatch(src).await.unwrap());
        assert_eq!(p.calls(), calls + 1, "a replay never calls the producer");
        assert_eq!(again.replayed_hooks, ["periodic_report.stage_completion"]);
        assert_eq!((again.invoked_count, again.intents.clone()), (0, first.intents.clone()));
    }
    let bytes = host.journal_bytes();
    assert!(!bytes.windows(22).any(|w| w == b"kept-out-of-every-file"));
}

/// A producer that raises leaves a `retryable_failure`; after a restart the
/// next dispatch retries it as attempt 2.
#[tokio::test]
async fn a_retryable_failure_is_retried_with_attempt_count_2_after_a_restart() {
    let host = Host::new();
    let src = source("todo_complete", Some("todo-9"), "2026-09-03T08:00:00Z");
    let id = {
        let d = host.start(ReplayMode::Return);
        d.register(&registration("periodic_report.stage_completion"), Producer::new(Does::Throw)).unwrap();
        let out = d.dispatch(parsed(&src)).await.unwrap();
        let r = result_of(&d, &out);
        let id = out.hooks[0].dispatch_id.clone();
        assert_eq!(r.failures[0].error_code, FailureCode::ProducerFailed);
        assert_eq!(r.failures[0].durable_receipt_ref.as_deref(), Some(format!("post-writeback-hook:{id}").as_str()));
        let receipt = stored_receipt(&d, &id);
        assert_eq!(
            (receipt.status, receipt.error_code, receipt.attempt_count),
            (SidecarStatus::RetryableFailure, Some(FailureCode::ProducerFailed), 1)
        );
        d.close().await;
        id
    };
    let d = host.start(ReplayMode::Return);
    d.register(&registration("periodic_report.stage_completion"), Producer::new(Does::Intent("k", "m"))).unwrap();
    let r = result_of(&d, &d.dispatch(parsed(&src)).await.unwrap());
    assert_eq!((r.retried_hooks.clone(), r.intent_count), (vec!["periodic_report.stage_completion".to_owned()], 1));
    let receipt = stored_receipt(&d, &id);
    assert_eq!((receipt.status, receipt.attempt_count), (SidecarStatus::IntentRecorded, 2));
}

/// A later hook (in hook_id order) whose intent reuses an earlier hook's
/// idempotency_key gets `intent_key_conflict`, stored as a retryable failure.
#[tokio::test]
async fn a_reused_idempotency_key_is_an_intent_key_conflict() {
    let host = Host::new();
    let d = host.start(ReplayMode::Return);
    let same = Does::Intent("periodic-report:stage-1", "same");
    d.register(&registration(STAGE), Producer::of(STAGE, same.clone())).unwrap();
    d.register(&registration(TRIGGER), Producer::of(TRIGGER, same)).unwrap();
    let out = d.dispatch(parsed(&source("refresh_state", None, "2026-09-02T12:00:00Z"))).await.unwrap();
    let r = result_of(&d, &out);
    assert_eq!(r.registered_count, 2);
    assert_eq!(r.intent_count, 1);
    assert_eq!(r.failures.len(), 1);
    // runtime_trigger sorts first, so stage_completion is the later one.
    assert_eq!(r.failures[0].hook_id, "periodic_report.stage_completion");
    assert_eq!(r.failures[0].error_code, FailureCode::IntentKeyConflict);
    let later = out.hooks.iter().find(|h| h.hook_id == "periodic_report.stage_completion").unwrap();
    let receipt = stored_receipt(&d, &later.dispatch_id);
    assert_eq!(
        (receipt.status, receipt.error_code),
        (SidecarStatus::RetryableFailure, Some(FailureCode::IntentKeyConflict))
    );
}

/// In verify mode a different result for a terminal receipt is
/// `receipt_conflict`, and the stored receipt stays as it was.
#[tokio::test]
async fn a_different_result_for_a_terminal_receipt_is_a_receipt_conflict() {
    let host = Host::new();
    let d = host.start(ReplayMode::Verify);
    let p = Producer::new(Does::Intent("periodic-report:stage-1", "first"));
    d.register(&registration("periodic_report.stage_completion"), p.clone()).unwrap();
    let src = parsed(&source("refresh_state", None, "2026-09-02T12:00:00Z"));
    let first = d.dispatch(src.clone()).await.unwrap();
    let id = first.hooks[0].dispatch_id.clone();
    let kept = stored_receipt(&d, &id);
    p.set(Does::Intent("periodic-report:stage-1", "second"));
    let r = result_of(&d, &d.dispatch(src.clone()).await.unwrap());
    assert_eq!(r.failures[0].error_code, FailureCode::ReceiptConflict);
    assert_eq!(stored_receipt(&d, &id), kept);
    // The same result again agrees with the receipt.
    p.set(Does::Intent("periodic-report:stage-1", "first"));
    let r = result_of(&d, &d.dispatch(src).await.unwrap());
    assert!(r.failures.is_empty());
}

/// A source that breaks its contract, or a disabled phase, invokes and
/// records nothing; the dispatch result names why.
#[tokio::test]
async fn a_refused_source_runs_nothing() {
    let host = Host::new();
    let d = host.start(ReplayMode::Return);
    let p = Producer::new(Does::NotApplicable);
    d.register(&registration("periodic_report.stage_completion"), p.clone()).unwrap();
    let mut bad = source("refresh_state", None, "2026-09-02T12:00:00Z");
    bad["durable"] = json!(false);
    let mut blank = source("refresh_state", None, "2026-09-02T12:00:00Z");
    blank["identity"]["goal_id"] = json!(" \u{85} ");
    for (doc, code) in [(bad, "receipt_not_checkpointed"), (blank, "identity_incomplete")] {
        let r = result_of(&d, &d.dispatch(parsed(&doc)).await.unwrap());
        let failure = r.runtime_failure.expect("a preflight failure");
        assert_eq!(failure.diagnostic_code, code);
    }
    assert_eq!(p.calls(), 0);
    assert_eq!(d.journal().stats().unwrap(), Default::default());
    assert!(Source::from_json(Dialect::LoopxShippedV0, "[1]").is_err());
}

/// A contract-v0 request given to a shipped dispatcher is misuse, and a
/// shipped registration is refused by a contract-v0 one.
#[tokio::test]
async fn one_runtime_speaks_one_dialect() {
    let host = Host::new();
    let d = host.start(ReplayMode::Return);
    let err = d.prepare(crate::dispatch::request::tests::request()).map(|_| ()).unwrap_err();
    assert_eq!(err, crate::journal::JournalError::InvalidArgument { what: "dialect" });
    let journal = Journal::open(host.dir.join("v0.sqlite"), JournalOptions::default(), OpenMode::ReadWrite).unwrap();
    let v0 = Dispatcher::new(Arc::new(journal), Profile::default());
    assert!(v0.register_external(&registration("periodic_report.stage_completion")).is_err());
}

/// An identity whose `attempt_count` reached 10,000 is isolated before its
/// producer runs (`journal_write_failed`, as LoopX) and nothing is recorded.
#[tokio::test]
async fn past_ten_thousand_attempts_the_producer_is_not_called() {
    let host = Host::new();
    let d = host.start(ReplayMode::Return);
    let p = Producer::new(Does::NotApplicable);
    d.register(&registration(STAGE), p.clone()).unwrap();
    let src = parsed(&source("refresh_state", None, "2026-09-02T12:00:00Z"));
    let hook = d.snapshot().registry.find(STAGE, &registration_digest_of(STAGE)).unwrap().clone();
    let id = src.dispatch_id(&hook);
    let mut c = src.checkpoint(&hook, &id, crate::dialect::shipped::MAX_ATTEMPT_COUNT);
    c.attempt = crate::dialect::shipped::MAX_ATTEMPT_COUNT;
    d.journal().checkpoint(c).await.unwrap();
    let failure = crate::journal::FailureRecord {
        dispatch_id: id.clone(),
        attempt: crate::dialect::shipped::MAX_ATTEMPT_COUNT,
        code: "producer_failed".into(),
        rule: None,
        pointer: None,
    };
    d.journal().record_failure(failure).await.unwrap();
    let r = result_of(&d, &d.dispatch(src).await.unwrap());
    assert_eq!(p.calls(), 0);
    assert_eq!(r.failures[0].error_code, FailureCode::JournalWriteFailed);
    let receipt = stored_receipt(&d, &id);
    assert_eq!((receipt.status, receipt.attempt_count), (SidecarStatus::RetryableFailure, 10_000));
}

fn registration_digest_of(hook_id: &str) -> String {
    let r = crate::dialect::shipped::validate_registration(&registration(hook_id)).unwrap();
    crate::dialect::shipped::engine::registration_digest(&r)
}

/// A shipped input may be far larger than the attempt ledger's slot: the
/// dispatch still records, and its attempt is still counted.
#[tokio::test]
async fn a_large_projection_dispatches_and_records() {
    let host = Host::new();
    let d = host.start(ReplayMode::Return);
    let p = Producer::new(Does::NotApplicable);
    let mut reg = registration(STAGE);
    reg["budget"]["max_input_bytes"] = json!(131_072);
    d.register(&reg, p.clone()).unwrap();
    let mut src = source("refresh_state", None, "2026-09-02T12:00:00Z");
    src["projection"]["stage_completion"] = json!("s".repeat(60_000));
    let out = d.dispatch(parsed(&src)).await.unwrap();
    let r = result_of(&d, &out);
    assert_eq!((r.invoked_count, r.failures.len()), (1, 0), "{r:?}");
    let receipt = stored_receipt(&d, &out.hooks[0].dispatch_id);
    assert_eq!((receipt.status, receipt.attempt_count), (SidecarStatus::NotApplicable, 1));
}
