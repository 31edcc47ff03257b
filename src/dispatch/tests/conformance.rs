//! The engine's scenarios, run alike over every dialect: a replay returns
//! the recorded receipt without invoking, a different result in verify
//! mode is a conflict that keeps the original, an identity whose attempts
//! are spent is not invoked again, a failing hook is isolated from the
//! others, and an identity a crash left checkpointed is finished by
//! `recover` under the same identity. A dialect only supplies its
//! documents ([`Speaks`]); the expectations are the engine's, the same for both.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::*;
use crate::journal::{FailureRecord, JournalOptions, OpenMode};

/// What a scripted provider answers.
#[derive(Clone, Copy)]
enum Act {
    /// One intent whose payload carries this marker.
    Propose(&'static str),
    Throw,
}

/// A dialect's documents, as the scenarios need them.
trait Speaks: Sync {
    fn dialect(&self) -> Dialect;
    /// Defines what its registrations need (intent kinds).
    fn prepare(&self, d: &Dispatcher);
    /// A registration of hook `name` (`a`, `b`, ...) that allows a retry.
    fn registration(&self, name: &str) -> Value;
    /// The `n`th distinct source.
    fn source(&self, n: u32) -> Source;
    /// What hook `hook_id` answers to `input_json`.
    fn reply(&self, hook_id: &str, input_json: &str, act: Act) -> ProviderReply;
}

struct ContractV0;

impl Speaks for ContractV0 {
    fn dialect(&self) -> Dialect {
        Dialect::ContractV0
    }
    fn prepare(&self, d: &Dispatcher) {
        d.define_intent_kind(&crate::validate::fixtures::kind_definition()).unwrap();
    }
    fn registration(&self, name: &str) -> Value {
        super::registration(name, 2, 5_000)
    }
    fn source(&self, n: u32) -> Source {
        super::request(&format!("receipt-{n}")).into()
    }
    fn reply(&self, _: &str, input_json: &str, act: Act) -> ProviderReply {
        match act {
            Act::Propose(marker) => super::result_for(input_json, &super::Behaviour::Propose(marker)),
            Act::Throw => ProviderReply::Threw,
        }
    }
}

struct LoopxShippedV0;

impl Speaks for LoopxShippedV0 {
    fn dialect(&self) -> Dialect {
        Dialect::LoopxShippedV0
    }
    fn prepare(&self, _: &Dispatcher) {}
    fn registration(&self, name: &str) -> Value {
        super::loopx_shipped::registration(&format!("periodic_report.{name}"))
    }
    fn source(&self, n: u32) -> Source {
        let at = format!("2026-09-02T12:00:{n:02}Z");
        super::loopx_shipped::parsed(&super::loopx_shipped::source("refresh_state", None, &at))
    }
    fn reply(&self, hook_id: &str, input_json: &str, act: Act) -> ProviderReply {
        // A shipped input does not name its hook: the producer knows its own.
        let input: Value = serde_json::from_str(input_json).unwrap();
        match act {
            Act::Propose(marker) => {
                let key = "periodic-report:stage-1";
                let doc = super::loopx_shipped::result(hook_id, &input, Some((key, marker)));
                ProviderReply::Json(doc.to_string())
            }
            Act::Throw => ProviderReply::Threw,
        }
    }
}

struct Scripted {
    speaker: &'static dyn Speaks,
    hook_id: String,
    act: Mutex<Act>,
    calls: AtomicU32,
}

impl Scripted {
    fn set(&self, act: Act) {
        *self.act.lock().unwrap() = act;
    }
    fn calls(&self) -> u32 {
        self.calls.load(Ordering::SeqCst)
    }
}

impl Provider for Scripted {
    fn invoke(&self, input_json: String) -> ReplyFuture {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let reply = self.speaker.reply(&self.hook_id, &input_json, *self.act.lock().unwrap());
        Box::pin(async move { reply })
    }
}

/// A dispatcher of `s`'s dialect over a fresh journal file.
struct Bench {
    dir: std::path::PathBuf,
    d: Dispatcher,
    s: &'static dyn Speaks,
}

impl Drop for Bench {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Bench {
    fn new(s: &'static dyn Speaks, replay: ReplayMode) -> Self {
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::SeqCst);
        let dir = std::env::temp_dir().join(format!("loopx-conformance-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let journal = Journal::open(dir.join("j.sqlite"), JournalOptions::default(), OpenMode::ReadWrite).unwrap();
        let profile = Profile { enabled: true, replay, ..Profile::default() };
        let d = Dispatcher::in_dialect(Arc::new(journal), profile, s.dialect());
        s.prepare(&d);
        Bench { dir, d, s }
    }

    fn install(&self, name: &str, act: Act) -> Arc<Scripted> {
        let registration = self.s.registration(name);
        let hook_id = registration["hook_id"].as_str().unwrap().to_owned();
        let p = Arc::new(Scripted { speaker: self.s, hook_id, act: Mutex::new(act), calls: AtomicU32::new(0) });
        self.d.register(&registration, p.clone()).unwrap();
        p
    }

    async fn dispatch(&self, n: u32) -> DispatchOutcome {
        self.d.dispatch(self.s.source(n)).await.unwrap()
    }

    fn receipt(&self, dispatch_id: &str) -> Option<String> {
        with_receipt(self.d.journal().get_dispatch(dispatch_id).unwrap().unwrap()).receipt_json
    }

    fn hook(&self, name: &str) -> Arc<RegisteredHook> {
        let snapshot = self.d.snapshot();
        let event_kind = self.s.source(1).event_kind().to_owned();
        let mut subscribed = snapshot.registry.subscribed(&event_kind);
        subscribed.find(|h| h.hook_id.ends_with(&format!(".{name}"))).unwrap().clone()
    }
}

async fn a_replay_returns_the_recorded_receipt_without_invoking(s: &'static dyn Speaks) {
    let b = Bench::new(s, ReplayMode::Return);
    let p = b.install("a", Act::Propose("first"));
    let first = b.dispatch(1).await;
    assert_eq!(first.hooks[0].outcome, HookOutcomeKind::Recorded);
    let id = first.hooks[0].dispatch_id.clone();
    let recorded = b.receipt(&id).expect("a final receipt");
    let again = b.dispatch(1).await;
    assert_eq!((again.hooks[0].outcome, again.hooks[0].dispatch_id.as_str()), (HookOutcomeKind::Replayed, id.as_str()));
    assert_eq!(b.receipt(&id), Some(recorded));
    assert_eq!(p.calls(), 1);
    // Another source is another identity.
    assert_ne!(b.dispatch(2).await.hooks[0].dispatch_id, id);
}

async fn a_different_result_in_verify_mode_is_a_conflict_that_keeps_the_original(s: &'static dyn Speaks) {
    let b = Bench::new(s, ReplayMode::Verify);
    let p = b.install("a", Act::Propose("first"));
    let id = b.dispatch(1).await.hooks[0].dispatch_id.clone();
    let recorded = b.receipt(&id);
    assert_eq!(b.dispatch(1).await.hooks[0].outcome, HookOutcomeKind::Replayed);
    p.set(Act::Propose("second"));
    let changed = b.dispatch(1).await;
    assert_eq!(changed.hooks[0].outcome, HookOutcomeKind::Conflict);
    assert_eq!(b.receipt(&id), recorded);
    assert_eq!(b.d.journal().stats().unwrap().intents, 1);
    assert_eq!(p.calls(), 3);
}

async fn an_identity_whose_attempts_are_spent_is_not_invoked_again(s: &'static dyn Speaks) {
    let b = Bench::new(s, ReplayMode::Return);
    let p = b.install("a", Act::Propose("first"));
    let hook = b.hook("a");
    let source = s.source(1);
    let id = source.dispatch_id(&hook);
    let spent = hook.max_attempts;
    b.d.journal().checkpoint(source.checkpoint(&hook, &id, spent)).await.unwrap();
    let failure = FailureRecord {
        dispatch_id: id.clone(),
        attempt: spent,
        code: "producer_failed".into(),
        rule: None,
        pointer: None,
    };
    b.d.journal().record_failure(failure).await.unwrap();
    let out = b.d.dispatch(source).await.unwrap();
    assert_eq!(p.calls(), 0);
    assert!(!matches!(out.hooks[0].outcome, HookOutcomeKind::Recorded | HookOutcomeKind::NotApplicable));
    assert_eq!(b.d.journal().stats().unwrap().intents, 0);
}

async fn a_failing_hook_is_isolated_from_the_others(s: &'static dyn Speaks) {
    let b = Bench::new(s, ReplayMode::Return);
    // Registered out of hook_id order on purpose.
    let good = b.install("b", Act::Propose("first"));
    let bad = b.install("a", Act::Throw);
    let out = b.dispatch(1).await;
    let seen: Vec<(&str, HookOutcomeKind)> =
        out.hooks.iter().map(|h| (&h.hook_id[h.hook_id.len() - 1..], h.outcome)).collect();
    assert_eq!(seen, [("a", HookOutcomeKind::Failed), ("b", HookOutcomeKind::Recorded)]);
    assert_eq!((bad.calls(), good.calls()), (1, 1));
    assert_eq!(b.d.journal().stats().unwrap().intents, 1);
    assert_eq!(b.d.journal().list_failures(&out.hooks[0].dispatch_id).unwrap().len(), 1);
}

async fn recover_finishes_what_a_crash_left_checkpointed_under_the_same_identity(s: &'static dyn Speaks) {
    let b = Bench::new(s, ReplayMode::Return);
    let p = b.install("a", Act::Propose("first"));
    let hook = b.hook("a");
    let source = s.source(1);
    let id = source.dispatch_id(&hook);
    // A process that checkpointed attempt 1 and died before its provider
    // began (no attempt ledger saw it begin, so the attempt is not spent).
    b.d.journal().checkpoint(source.checkpoint(&hook, &id, 1)).await.unwrap();
    let report = b.d.recover().await.unwrap();
    assert_eq!(report.outcomes.len(), 1);
    assert_eq!(report.outcomes[0].dispatch_id, id);
    assert_eq!(report.outcomes[0].outcome, HookOutcomeKind::Recorded);
    assert_eq!(report.outcomes[0].attempt, 1);
    assert_eq!(p.calls(), 1);
    assert!(b.d.journal().unfinished().unwrap().is_empty());
    assert_eq!(b.dispatch(1).await.hooks[0].outcome, HookOutcomeKind::Replayed);
}

macro_rules! over_every_dialect {
    ($($scenario:ident),* $(,)?) => {
        mod contract_v0 {
            $(#[tokio::test] async fn $scenario() { super::$scenario(&super::ContractV0).await })*
        }
        mod loopx_shipped_v0 {
            $(#[tokio::test] async fn $scenario() { super::$scenario(&super::LoopxShippedV0).await })*
        }
    };
}

over_every_dialect!(
    a_replay_returns_the_recorded_receipt_without_invoking,
    a_different_result_in_verify_mode_is_a_conflict_that_keeps_the_original,
    an_identity_whose_attempts_are_spent_is_not_invoked_again,
    a_failing_hook_is_isolated_from_the_others,
    recover_finishes_what_a_crash_left_checkpointed_under_the_same_identity,
);
