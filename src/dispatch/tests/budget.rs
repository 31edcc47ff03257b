//! RFC §10 "no hook is silently lost" and contract-v0 §1 lifetime attempt
//! budgets: hooks past a per-dispatch ceiling stay owed, and every invocation
//! whose checkpoint reached the journal counts, crashes included.

use std::time::Duration;

use super::*;
use crate::contract::FailureCode;
use crate::journal::DispatchState;

fn standing(f: &tests::Fixture, dispatch_id: &str) -> Option<(DispatchState, u32)> {
    f.dispatcher.journal().get_dispatch(dispatch_id).unwrap().map(|r| (r.state, r.attempts))
}

#[tokio::test]
async fn a_hook_past_the_hook_count_ceiling_is_not_lost_recover_runs_it() {
    let f = fixture(Profile { max_hooks_per_dispatch: 1, ..enabled() });
    let a = install(&f, "a", 1, Behaviour::Propose("s"));
    let b = install(&f, "b", 1, Behaviour::Propose("s"));
    let out = f.dispatcher.dispatch(&request("r1")).await.unwrap();
    assert_eq!(out.hooks[1].failure_code, Some(FailureCode::DispatchBudgetExhausted));
    assert_eq!(out.hooks[1].attempt, 0);
    assert_eq!((a.calls(), b.calls()), (1, 0));
    let owed = out.hooks[1].dispatch_id.clone();
    assert_eq!(standing(&f, &owed), Some((DispatchState::Checkpointed, 0)), "journaled as deferred");
    let report = f.dispatcher.recover().await.unwrap();
    assert_eq!(report.outcomes.len(), 1);
    assert_eq!((report.outcomes[0].outcome, report.outcomes[0].attempt), (HookOutcomeKind::Recorded, 1));
    assert_eq!((a.calls(), b.calls()), (1, 1), "b runs once, on its own untouched budget");
    assert_eq!(standing(&f, &owed), Some((DispatchState::Proposed, 1)));
}

#[tokio::test]
async fn a_later_dispatch_of_the_same_receipt_runs_the_deferred_hook() {
    let f = fixture(Profile { max_hooks_per_dispatch: 1, ..enabled() });
    let a = install(&f, "a", 1, Behaviour::Propose("s"));
    let b = install(&f, "b", 1, Behaviour::Propose("s"));
    f.dispatcher.dispatch(&request("r1")).await.unwrap();
    // a replays (no invocation, so it does not count against the ceiling).
    let again = f.dispatcher.dispatch(&request("r1")).await.unwrap();
    assert_eq!(again.hooks[0].outcome, HookOutcomeKind::Replayed);
    assert_eq!(again.hooks[1].outcome, HookOutcomeKind::Recorded);
    assert_eq!((a.calls(), b.calls()), (1, 1));
}

#[tokio::test]
async fn a_hook_the_wall_ceiling_left_without_its_turn_stays_owed() {
    let f = fixture(Profile { max_dispatch_wall_ms: 30, ..enabled() });
    let a = TestProvider::new(Behaviour::Hang);
    f.dispatcher.register(&registration("a", 1, 5_000), a.clone()).unwrap();
    let b = install(&f, "b", 1, Behaviour::Propose("s"));
    let out = f.dispatcher.dispatch(&request("r1")).await.unwrap();
    assert_eq!((a.calls(), b.calls()), (1, 0));
    assert_eq!(out.hooks[1].attempt, 0);
    assert_eq!(standing(&f, &out.hooks[1].dispatch_id), Some((DispatchState::Checkpointed, 0)));
    let report = f.dispatcher.recover().await.unwrap();
    let b_out = report.outcomes.iter().find(|o| o.hook_id == out.hooks[1].hook_id).unwrap();
    assert_eq!((b_out.outcome, b_out.attempt), (HookOutcomeKind::Recorded, 1));
    assert_eq!(b.calls(), 1);
}

/// A process that dies inside its provider: `begin` queued the checkpoint,
/// the provider was called, and nothing else happened (the flight is dropped).
fn invoke_and_die(f: &tests::Fixture, only_hook: Option<&str>) -> bool {
    let prepared = f.dispatcher.prepare_for(request("r1"), only_hook).unwrap();
    let crate::dispatch::steps::Prepared::Run(plan) = prepared else { return false };
    f.dispatcher.begin(plan.ticket, plan.calls[0].slot).unwrap().unwrap();
    f.dispatcher.cancel(plan.ticket);
    true
}

#[tokio::test]
async fn max_invocations_bounds_an_identity_s_whole_life_crashes_included() {
    let f = fixture(enabled());
    let p = install(&f, "a", 3, Behaviour::Propose("s"));
    assert!(invoke_and_die(&f, None));
    // The checkpoint is queued, not awaited; it reaches the journal with the next commit.
    wait_for(|| !f.dispatcher.journal().unfinished().unwrap().is_empty());
    let row = f.dispatcher.journal().unfinished().unwrap().remove(0);
    let (id, hook) = (row.dispatch_id, row.hook_id);
    wait_for(|| standing(&f, &id) == Some((DispatchState::Checkpointed, 1)));
    // Each recovery comes once the crashed attempt can no longer be live.
    let presumed_lost = Duration::from_millis(50 + crate::dispatch::steps::LIVE_GRACE_MS as u64 + 50);
    // Within that window another process may still be running it: a run then shares the attempt.
    assert!(invoke_and_die(&f, Some(&hook)));
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(standing(&f, &id), Some((DispatchState::Checkpointed, 1)));
    std::thread::sleep(presumed_lost);
    assert!(invoke_and_die(&f, Some(&hook)));
    wait_for(|| standing(&f, &id) == Some((DispatchState::Checkpointed, 2)));
    std::thread::sleep(presumed_lost);
    assert!(invoke_and_die(&f, Some(&hook)));
    wait_for(|| standing(&f, &id) == Some((DispatchState::Checkpointed, 3)));
    // At the budget, and no longer possibly live: exhausted without a call.
    std::thread::sleep(presumed_lost);
    let report = f.dispatcher.recover().await.unwrap();
    assert_eq!(report.outcomes[0].outcome, HookOutcomeKind::Exhausted);
    assert_eq!(report.outcomes[0].attempt, 3);
    assert_eq!(p.calls(), 0, "the provider is not called again");
    assert_eq!(standing(&f, &id), Some((DispatchState::Exhausted, 3)));
}

fn wait_for(cond: impl Fn() -> bool) {
    let until = std::time::Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(std::time::Instant::now() < until, "condition not reached");
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[tokio::test]
async fn per_dispatch_intent_ceiling_defers_what_exceeds_it() {
    let f = fixture(Profile { max_intents_per_dispatch: 1, ..enabled() });
    let a = install(&f, "a", 2, Behaviour::Propose("s"));
    let b = install(&f, "b", 2, Behaviour::Propose("s"));
    let out = f.dispatcher.dispatch(&request("r1")).await.unwrap();
    assert_eq!(out.hooks[0].outcome, HookOutcomeKind::Recorded);
    assert_eq!(out.hooks[1].outcome, HookOutcomeKind::Failed);
    assert_eq!((out.hooks[1].failure_code, out.hooks[1].attempt), (Some(FailureCode::DispatchBudgetExhausted), 1));
    assert_eq!(standing(&f, &out.hooks[1].dispatch_id), Some((DispatchState::Failed, 1)), "owed, not lost");
    let report = f.dispatcher.recover().await.unwrap();
    assert_eq!((report.outcomes[0].outcome, report.outcomes[0].attempt), (HookOutcomeKind::Recorded, 2));
    assert_eq!((a.calls(), b.calls()), (1, 2));
    assert_eq!(f.dispatcher.journal().stats().unwrap().intents, 2);
}

#[tokio::test]
async fn per_dispatch_result_byte_ceiling_defers_what_exceeds_it() {
    // One proposed result is a few hundred bytes; two do not fit in 1000.
    let f = fixture(Profile { max_result_bytes_per_dispatch: 1_000, ..enabled() });
    install(&f, "a", 2, Behaviour::Propose("s"));
    install(&f, "b", 2, Behaviour::NotApplicable);
    install(&f, "c", 2, Behaviour::Propose("s"));
    let out = f.dispatcher.dispatch(&request("r1")).await.unwrap();
    let kinds: Vec<_> = out.hooks.iter().map(|h| (h.outcome, h.failure_code)).collect();
    assert_eq!(
        kinds,
        vec![
            (HookOutcomeKind::Recorded, None),
            (HookOutcomeKind::NotApplicable, None),
            (HookOutcomeKind::Failed, Some(FailureCode::DispatchBudgetExhausted)),
        ]
    );
    let report = f.dispatcher.recover().await.unwrap();
    assert_eq!(report.outcomes[0].outcome, HookOutcomeKind::Recorded);
}

#[tokio::test]
async fn several_processes_invoking_one_fresh_identity_at_once_share_its_first_attempt() {
    use crate::journal::{Journal, JournalOptions, OpenMode};
    let f = fixture(enabled());
    let p = TestProvider::new(Behaviour::Propose("s"));
    f.dispatcher.register(&registration("a", 1, 5_000), p.clone()).unwrap();
    // Another process: its own dispatcher on the same journal file.
    let journal = Journal::open(f.dir.join("j.sqlite"), JournalOptions::default(), OpenMode::ReadWrite).unwrap();
    let other = Dispatcher::new(std::sync::Arc::new(journal), enabled());
    other.define_intent_kind(&crate::validate::fixtures::kind_definition()).unwrap();
    let q = TestProvider::new(Behaviour::Propose("s"));
    other.register(&registration("a", 1, 5_000), q.clone()).unwrap();
    // The other process has begun attempt 1 (its checkpoint committed) and is still calling.
    let crate::dispatch::steps::Prepared::Run(plan) = other.prepare(request("r1")).unwrap() else {
        panic!("expected a plan")
    };
    other.begin(plan.ticket, plan.calls[0].slot).unwrap().unwrap();
    wait_for(|| !f.dispatcher.journal().unfinished().unwrap().is_empty());
    // This process does not exhaust the identity under that live call: it shares attempt 1.
    let out = f.dispatcher.dispatch(&request("r1")).await.unwrap();
    assert_eq!((out.hooks[0].outcome, out.hooks[0].attempt), (HookOutcomeKind::Recorded, 1));
    let reply = super::run::CallResult::Reply(result_for(&plan.calls[0].input_json, &Behaviour::Propose("s")));
    let finished = other.shared.wait_for(plan.ticket);
    assert!(matches!(other.complete(plan.ticket, vec![reply]).unwrap(), crate::dispatch::steps::Completion::Pending));
    let theirs = finished.await.unwrap().unwrap();
    assert_eq!(theirs.hooks[0].outcome, HookOutcomeKind::Replayed);
    assert_eq!(theirs.hooks[0].receipt, out.hooks[0].receipt);
    assert_eq!(p.calls(), 1);
}
