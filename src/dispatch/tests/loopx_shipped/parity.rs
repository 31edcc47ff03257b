//! The engine in `loopx-shipped-v0` held to LoopX's own transaction
//! (`loopx/control_plane/post_writeback_hook_transaction.ts`, whose tests
//! are `tests/control_plane_ts/post_writeback_hook_transaction.test.ts`):
//! intent keys reduced in hook_id order over fresh and replayed hooks alike,
//! `retried_hooks`, ids blank to JavaScript's trim, and LoopX's transport
//! envelope as the admission of a batch. Each test names the LoopX test it
//! follows.

use std::future::Future;
use std::pin::Pin;

use super::*;
use crate::dialect::shipped::{engine, MAX_ATTEMPT_COUNT};
use crate::journal::{FailureRecord, FinalRecord, FinalStatus};

type Before = Box<dyn Fn() -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// A producer of one hook: an intent with `key` (its payload padded with
/// `pad` bytes), or not_applicable; `before` runs before it answers.
struct Hook {
    hook_id: String,
    key: Mutex<Option<String>>,
    pad: usize,
    before: Option<Before>,
    calls: AtomicU32,
}

impl Hook {
    fn new(hook_id: &str, key: Option<&str>) -> Arc<Self> {
        Self::padded(hook_id, key, 0)
    }
    fn padded(hook_id: &str, key: Option<&str>, pad: usize) -> Arc<Self> {
        Arc::new(Hook {
            hook_id: hook_id.to_owned(),
            key: Mutex::new(key.map(str::to_owned)),
            pad,
            before: None,
            calls: AtomicU32::new(0),
        })
    }
    fn calls(&self) -> u32 {
        self.calls.load(Ordering::SeqCst)
    }
}

impl Provider for Hook {
    fn invoke(&self, input_json: String) -> ReplyFuture {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let input: Value = serde_json::from_str(&input_json).unwrap();
        let key = self.key.lock().unwrap().clone();
        let mut doc = result(&self.hook_id, &input, key.as_deref().map(|k| (k, "m")));
        if key.is_some() {
            doc["intent"]["payload"] = json!({ "evidence": "x".repeat(self.pad) });
        }
        let reply = ProviderReply::Json(doc.to_string());
        let before = self.before.as_ref().map(|b| b());
        Box::pin(async move {
            if let Some(before) = before {
                before.await;
            }
            reply
        })
    }
}

/// `registration(hook_id)` with `max_result_bytes` (and room for its input).
fn sized(hook_id: &str, max_result_bytes: u32) -> Value {
    let mut r = registration(hook_id);
    r["budget"]["max_result_bytes"] = json!(max_result_bytes);
    r
}

fn src() -> Source {
    parsed(&source("refresh_state", Some("todo-1"), "2026-09-02T12:00:00Z"))
}

fn id_of(d: &Dispatcher, hook_id: &str) -> String {
    let hook = d.snapshot().registry.find(hook_id, &registration_digest_of(hook_id)).unwrap().clone();
    src().dispatch_id(&hook)
}

fn failures(r: &doc::DispatchResult) -> Vec<(String, FailureCode)> {
    r.failures.iter().map(|f| (f.hook_id.clone(), f.error_code)).collect()
}

fn keys(r: &doc::DispatchResult) -> Vec<String> {
    r.intents.iter().map(|i| i.idempotency_key.clone()).collect()
}

fn owned(ids: &[&str]) -> Vec<String> {
    ids.iter().map(|s| (*s).to_owned()).collect()
}

/// A shipped runtime's defaults, as `HookRuntime.open` gives them.
fn shipped_host(host: &Host) -> Dispatcher {
    let journal = Journal::open(host.dir.join("j.sqlite"), JournalOptions::default(), OpenMode::ReadWrite).unwrap();
    let profile = Profile { enabled: true, ..Profile::defaults_for(Dialect::LoopxShippedV0) };
    Dispatcher::in_dialect(Arc::new(journal), profile, Dialect::LoopxShippedV0)
}

/// LoopX: "an earlier fresh hook keeps a duplicate intent key ahead of
/// terminal replay". Hook b recorded `shared-key` alone; then a (earlier in
/// hook_id order) returns the same key: a's intent is recorded and b's
/// replay is `intent_key_conflict`, neither replayed nor reported.
#[tokio::test]
async fn an_earlier_fresh_hook_keeps_its_key_ahead_of_a_terminal_replay() {
    let host = Host::new();
    let d = host.start(ReplayMode::Return);
    d.register(&registration("periodic_report.b"), Hook::new("periodic_report.b", Some("shared-key"))).unwrap();
    let first = result_of(&d, &d.dispatch(src()).await.unwrap());
    assert_eq!(keys(&first), ["shared-key"]);
    let b_id = id_of(&d, "periodic_report.b");
    let kept = stored_receipt(&d, &b_id);
    d.register(&registration("periodic_report.a"), Hook::new("periodic_report.a", Some("shared-key"))).unwrap();
    let r = result_of(&d, &d.dispatch(src()).await.unwrap());
    assert_eq!(r.intents.len(), 1);
    assert_eq!(r.intents[0].payload["evidence"], json!(""));
    assert_eq!(failures(&r), [("periodic_report.b".to_owned(), FailureCode::IntentKeyConflict)]);
    assert_eq!(r.failures[0].durable_receipt_ref, None, "this dispatch recorded nothing for b");
    assert!(r.replayed_hooks.is_empty());
    assert_eq!(stored_receipt(&d, &b_id), kept, "b's receipt stays as it was");
    let a = stored_receipt(&d, &id_of(&d, "periodic_report.a"));
    assert_eq!(a.status, SidecarStatus::IntentRecorded);
}

/// The same reduction when every hook replays (no provider runs): two
/// terminal receipts holding one key replay the earlier hook's only.
#[tokio::test]
async fn two_terminal_receipts_with_one_key_replay_the_earlier_hook_only() {
    let host = Host::new();
    for hook in ["periodic_report.a", "periodic_report.b"] {
        let d = host.start(ReplayMode::Return);
        d.register(&registration(hook), Hook::new(hook, Some("shared-key"))).unwrap();
        assert_eq!(result_of(&d, &d.dispatch(src()).await.unwrap()).intent_count, 1, "{hook}");
        d.close().await;
    }
    let d = host.start(ReplayMode::Return);
    let (a, b) = (Hook::new("periodic_report.a", None), Hook::new("periodic_report.b", None));
    d.register(&registration("periodic_report.a"), a.clone()).unwrap();
    d.register(&registration("periodic_report.b"), b.clone()).unwrap();
    let r = result_of(&d, &d.dispatch(src()).await.unwrap());
    assert_eq!((a.calls(), b.calls()), (0, 0));
    assert_eq!(r.replayed_hooks, ["periodic_report.a"]);
    assert_eq!(keys(&r), ["shared-key"]);
    assert_eq!(failures(&r), [("periodic_report.b".to_owned(), FailureCode::IntentKeyConflict)]);
}

/// Which identity another host finishes first, once the dispatcher knows it.
type Target = Arc<Mutex<Option<(Arc<RegisteredHook>, String)>>>;

/// Another host finishing the target identity first: its checkpoint, then
/// its final record, whose intent holds `key`.
fn other_host_records(journal: Arc<Journal>, target: Target, key: &'static str) -> Before {
    Box::new(move || {
        let journal = journal.clone();
        let (hook, id) = target.lock().unwrap().clone().unwrap();
        Box::pin(async move {
            journal.checkpoint(src().checkpoint(&hook, &id, 1)).await.unwrap();
            let intent = doc::Intent {
                schema_version: Default::default(),
                intent_kind: "periodic_report.deliver".into(),
                idempotency_key: key.into(),
                source_receipt_id: engine::event_id(&doc::validate_source(&source_doc()).unwrap()),
                payload: Default::default(),
                requested_write_scope: Vec::new(),
            };
            let record = FinalRecord {
                dispatch_id: id.clone(),
                attempt: 1,
                status: FinalStatus::Proposed,
                result_digest: Some("f".repeat(64)),
                intents: vec![engine::stored_intent(&id, "periodic-report", &intent)],
                failure: None,
            };
            journal.record_final(record).await.unwrap();
        })
    })
}

/// A hook answering not_applicable after another host recorded the target.
fn blocker(d: &Dispatcher, target: &Target, key: &'static str) -> Arc<Hook> {
    let mut h = Arc::try_unwrap(Hook::new("periodic_report.b_blocker", None)).ok().unwrap();
    h.before = Some(other_host_records(d.journal().clone(), target.clone(), key));
    Arc::new(h)
}

fn aim(d: &Dispatcher, target: &Target, hook_id: &str) {
    let hook = d.snapshot().registry.find(hook_id, &registration_digest_of(hook_id)).unwrap().clone();
    *target.lock().unwrap() = Some((hook, id_of(d, hook_id)));
}

/// LoopX: "a divergent CAS winner reserves its intent key for later hooks".
/// While b runs, another host records c's identity first with `shared-winner-key`;
/// c's own result then loses (`receipt_conflict`) and d, later, returning the
/// winner's key is `intent_key_conflict`, stored as a retryable failure.
#[tokio::test]
async fn a_divergent_winner_reserves_its_key_for_later_hooks() {
    let host = Host::new();
    let d = host.start(ReplayMode::Return);
    let target = Target::default();
    d.register(&registration("periodic_report.a_marker"), Hook::new("periodic_report.a_marker", None)).unwrap();
    d.register(&registration("periodic_report.b_blocker"), blocker(&d, &target, "shared-winner-key")).unwrap();
    let race = Hook::new("periodic_report.c_race", Some("divergent-key"));
    d.register(&registration("periodic_report.c_race"), race.clone()).unwrap();
    let dup = Hook::new("periodic_report.d_duplicate", Some("shared-winner-key"));
    d.register(&registration("periodic_report.d_duplicate"), dup.clone()).unwrap();
    aim(&d, &target, "periodic_report.c_race");

    let r = result_of(&d, &d.dispatch(src()).await.unwrap());
    assert_eq!((race.calls(), dup.calls()), (1, 1));
    assert_eq!(r.invoked_count, 4, "c_race's provider ran, though its result lost");
    assert_eq!(r.intent_count, 0);
    assert!(r.replayed_hooks.is_empty());
    assert_eq!(
        failures(&r),
        [
            ("periodic_report.c_race".to_owned(), FailureCode::ReceiptConflict),
            ("periodic_report.d_duplicate".to_owned(), FailureCode::IntentKeyConflict),
        ]
    );
    let c = stored_receipt(&d, &id_of(&d, "periodic_report.c_race"));
    assert_eq!(c.intent.map(|i| i.idempotency_key).as_deref(), Some("shared-winner-key"));
    let dup_receipt = stored_receipt(&d, &id_of(&d, "periodic_report.d_duplicate"));
    assert_eq!(
        (dup_receipt.status, dup_receipt.error_code),
        (SidecarStatus::RetryableFailure, Some(FailureCode::IntentKeyConflict))
    );
}

/// The winner's key is also taken from a later hook's replay, which was
/// judged before the winner was known.
#[tokio::test]
async fn a_divergent_winner_takes_its_key_from_a_later_replay() {
    let host = Host::new();
    {
        let d = host.start(ReplayMode::Return);
        let e = Hook::new("periodic_report.e_terminal", Some("w"));
        d.register(&registration("periodic_report.e_terminal"), e).unwrap();
        d.dispatch(src()).await.unwrap();
        d.close().await;
    }
    let d = host.start(ReplayMode::Return);
    let target = Target::default();
    d.register(&registration("periodic_report.b_blocker"), blocker(&d, &target, "w")).unwrap();
    d.register(&registration("periodic_report.c_race"), Hook::new("periodic_report.c_race", Some("mine"))).unwrap();
    d.register(&registration("periodic_report.e_terminal"), Hook::new("periodic_report.e_terminal", None)).unwrap();
    aim(&d, &target, "periodic_report.c_race");
    let r = result_of(&d, &d.dispatch(src()).await.unwrap());
    assert!(r.replayed_hooks.is_empty(), "{r:?}");
    assert_eq!(
        failures(&r),
        [
            ("periodic_report.c_race".to_owned(), FailureCode::ReceiptConflict),
            ("periodic_report.e_terminal".to_owned(), FailureCode::IntentKeyConflict),
        ]
    );
    assert_eq!(r.intent_count, 0);
}

/// LoopX: "an exhausted retry receipt isolates its hook before provider
/// execution": the isolated hook is `journal_write_failed`, not called, and
/// listed in `retried_hooks` (its receipt was a retryable failure).
#[tokio::test]
async fn retried_hooks_lists_a_hook_isolated_at_ten_thousand_attempts() {
    let host = Host::new();
    let d = host.start(ReplayMode::Return);
    let exhausted = Hook::new("periodic_report.a_exhausted", Some("a-key"));
    d.register(&registration("periodic_report.a_exhausted"), exhausted.clone()).unwrap();
    d.register(&registration("periodic_report.b_fresh"), Hook::new("periodic_report.b_fresh", Some("fresh-key")))
        .unwrap();
    let id = id_of(&d, "periodic_report.a_exhausted");
    let hook = d
        .snapshot()
        .registry
        .find("periodic_report.a_exhausted", &registration_digest_of("periodic_report.a_exhausted"))
        .unwrap()
        .clone();
    d.journal().checkpoint(src().checkpoint(&hook, &id, MAX_ATTEMPT_COUNT)).await.unwrap();
    let failure = FailureRecord {
        dispatch_id: id.clone(),
        attempt: MAX_ATTEMPT_COUNT,
        code: "producer_failed".into(),
        rule: None,
        pointer: None,
    };
    d.journal().record_failure(failure).await.unwrap();
    let r = result_of(&d, &d.dispatch(src()).await.unwrap());
    assert_eq!(exhausted.calls(), 0);
    assert_eq!(r.invoked_count, 1);
    assert_eq!(r.retried_hooks, owned(&["periodic_report.a_exhausted"]));
    assert_eq!(failures(&r), [("periodic_report.a_exhausted".to_owned(), FailureCode::JournalWriteFailed)]);
    assert_eq!(r.failures[0].durable_receipt_ref, None, "nothing was stored for it now, as LoopX reports it");
    assert_eq!(keys(&r), ["fresh-key"]);
}

/// LoopX: "source and dispatch identities replay the retired Python
/// canonical bytes" (its byte-order-mark source): an id that Python's strip
/// keeps but JavaScript's trim empties is refused for each hook before any
/// provider runs, as `registration_or_input_rejected`, and nothing is written.
#[tokio::test]
async fn an_id_blank_to_javascripts_trim_is_rejected_before_any_provider_runs() {
    let host = Host::new();
    let d = host.start(ReplayMode::Return);
    let (a, b) = (Hook::new("periodic_report.a", Some("k")), Hook::new("periodic_report.b", None));
    d.register(&registration("periodic_report.a"), a.clone()).unwrap();
    d.register(&registration("periodic_report.b"), b.clone()).unwrap();
    for (field, pointer) in [("agent_id", "/identity/agent_id"), ("state_version", "/state_version")] {
        let mut bom = source_doc();
        *bom.pointer_mut(pointer).unwrap() = json!("\u{FEFF}");
        let r = result_of(&d, &d.dispatch(parsed(&bom)).await.unwrap());
        assert_eq!(r.runtime_failure, None, "{field}: not a source refusal");
        assert_eq!(r.invoked_count, 0);
        assert_eq!(
            failures(&r),
            [
                ("periodic_report.a".to_owned(), FailureCode::RegistrationOrInputRejected),
                ("periodic_report.b".to_owned(), FailureCode::RegistrationOrInputRejected),
            ],
            "{field}"
        );
        assert!(r.failures.iter().all(|f| f.durable_receipt_ref.is_none()));
    }
    assert_eq!((a.calls(), b.calls()), (0, 0));
    assert_eq!(d.journal().stats().unwrap(), Default::default());
}

fn source_doc() -> Value {
    source("refresh_state", Some("todo-1"), "2026-09-02T12:00:00Z")
}

fn envelope_hook(i: usize) -> String {
    format!("periodic_report.envelope_{i:02}")
}

/// LoopX: "result envelope admission happens before providers and durable
/// writes", with a shipped runtime's default profile: 27 hooks of 64 KiB are
/// refused before any provider runs or anything is written; chunks of 8
/// returning 60,000-byte payloads record all 8; the 27 then replay in one
/// dispatch, and 5 fresh hooks more are refused again.
#[tokio::test]
async fn loopxs_envelope_admits_a_batch_before_any_provider_runs() {
    let host = Host::new();
    let hooks: Vec<Arc<Hook>> = (0..27)
        .map(|i| {
            Hook::padded(&envelope_hook(i), Some(&format!("{}-key", envelope_hook(i))), if i < 24 { 60_000 } else { 0 })
        })
        .collect();
    let install = |d: &Dispatcher, range: std::ops::Range<usize>| {
        for i in range {
            d.register(&sized(&envelope_hook(i), 65_536), hooks[i].clone()).unwrap();
        }
    };
    {
        let d = shipped_host(&host);
        install(&d, 0..27);
        let r = result_of(&d, &d.dispatch(src()).await.unwrap());
        let failure = r.runtime_failure.clone().expect("a preflight failure");
        assert_eq!(failure.phase, doc::RuntimeFailurePhase::Preflight);
        assert_eq!(
            (failure.error_kind.as_str(), failure.diagnostic_code.as_str()),
            ("request_rejected", "post_writeback_transaction_envelope")
        );
        assert_eq!(r.invoked_count, 0);
        assert_eq!(r.failures.len(), 27);
        assert!(r.failures.iter().all(|f| f.error_code == FailureCode::RuntimeResultInvalid));
        assert!(hooks.iter().all(|h| h.calls() == 0));
        assert_eq!(d.journal().stats().unwrap(), Default::default(), "nothing is written");
        d.close().await;
    }
    for start in (0..27).step_by(8) {
        let d = shipped_host(&host);
        let end = (start + 8).min(27);
        install(&d, start..end);
        let r = result_of(&d, &d.dispatch(src()).await.unwrap());
        assert_eq!(
            (r.intent_count as usize, r.failures.len()),
            (end - start, 0),
            "chunk at {start}: {:?}",
            failures(&r)
        );
        d.close().await;
    }
    let d = shipped_host(&host);
    install(&d, 0..27);
    let r = result_of(&d, &d.dispatch(src()).await.unwrap());
    assert_eq!((r.intent_count, r.replayed_hooks.len(), r.runtime_failure.is_none()), (27, 27, true));
    for i in 0..5 {
        let id = format!("periodic_report.mixed_fresh_{i:02}");
        d.register(&sized(&id, 65_536), Hook::new(&id, Some("k"))).unwrap();
    }
    let r = result_of(&d, &d.dispatch(src()).await.unwrap());
    assert!(r.runtime_failure.is_some());
    assert_eq!((r.invoked_count, r.intent_count, r.failures.len()), (0, 0, 32));
    assert_eq!(d.journal().stats().unwrap().proposed, 27);
}

/// A contract-v0 runtime keeps its own defaults: LoopX's envelope and the
/// shipped defaults are the shipped dialect's only.
#[test]
fn contract_v0_keeps_its_defaults() {
    assert_eq!(Profile::defaults_for(Dialect::ContractV0), Profile::default());
    let shipped = Profile::defaults_for(Dialect::LoopxShippedV0);
    assert_eq!(
        (shipped.max_hooks_per_dispatch, shipped.max_intents_per_dispatch, shipped.max_result_bytes_per_dispatch),
        (u32::MAX, u32::MAX, u32::MAX)
    );
    assert_eq!((shipped.enabled, shipped.max_dispatch_wall_ms), (false, Profile::default().max_dispatch_wall_ms));
}
