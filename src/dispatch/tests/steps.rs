//! The synchronous steps as a caller on one thread drives them (the JS
//! binding's path): what is answered in `prepare`, what `begin` queues, what
//! `complete` records, and how finished dispatches are handed on.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::*;
use crate::contract::FailureCode;
use crate::journal::{DispatchState, JournalError, JournalOptions};
use crate::validate::Rule;

/// Every batch the deliver callback received.
type Batches = Arc<Mutex<Vec<Vec<Finished>>>>;

fn collect(d: &Dispatcher) -> Batches {
    let batches: Batches = Arc::default();
    let sink = batches.clone();
    d.set_deliver(Box::new(move |batch, _, _| sink.lock().unwrap().push(batch)));
    batches
}

/// Waits (bounded) until `n` dispatches were delivered.
fn delivered(batches: &Batches, n: usize) -> Vec<Finished> {
    let until = Instant::now() + Duration::from_secs(10);
    while batches.lock().unwrap().iter().map(Vec::len).sum::<usize>() < n {
        assert!(Instant::now() < until, "dispatches were not delivered");
        std::thread::sleep(Duration::from_millis(2));
    }
    batches.lock().unwrap().iter_mut().flat_map(std::mem::take).collect()
}

fn run(p: &Prepared) -> &Plan {
    match p {
        Prepared::Run(plan) => plan,
        _ => panic!("expected a plan"),
    }
}

/// Calls each planned provider as the JS layer does, with `b`'s answer.
fn answers(d: &Dispatcher, plan: &Plan, b: &Behaviour) -> Vec<CallResult> {
    answers_via(d, plan, b, Dispatcher::begin)
}

/// Like [`answers`], each call started by `begin` (`Dispatcher::begin_deferred` is the JS layer's own).
fn answers_via(d: &Dispatcher, plan: &Plan, b: &Behaviour, begin: Begin) -> Vec<CallResult> {
    plan.calls
        .iter()
        .map(|c| match begin(d, plan.ticket, c.slot).unwrap() {
            Some(_) => CallResult::Reply(result_for(&c.input_json, b)),
            None => CallResult::NotStarted,
        })
        .collect()
}

type Begin = fn(&Dispatcher, u64, usize) -> Result<Option<Limit>, JournalError>;

fn install(d: &Dispatcher, hook: &str) {
    d.register_external(&registration(hook, 2, 1000)).unwrap();
}

#[test]
fn many_dispatches_finish_through_one_callback_per_group_commit() {
    let f = fixture(enabled());
    let d = &f.dispatcher;
    install(d, "a");
    let batches = collect(d);
    let n = 64;
    for i in 0..n {
        let p = d.prepare(request(&format!("r{i}"))).unwrap();
        let plan = run(&p);
        let results = answers(d, plan, &Behaviour::Propose("s"));
        assert!(matches!(d.complete(plan.ticket, results).unwrap(), Completion::Pending));
    }
    let done = delivered(&batches, n);
    assert_eq!(done.len(), n);
    assert!(done.iter().all(|f| f.outcome.as_ref().unwrap().hooks[0].outcome == HookOutcomeKind::Recorded));
    // One delivery per commit at most: many dispatches share a wake-up.
    assert!(batches.lock().unwrap().len() as u64 <= d.journal().writer_stats().commits);
    assert_eq!(d.journal().stats().unwrap().proposed, n as u64);
}

#[test]
fn a_return_mode_replay_is_answered_by_prepare_without_the_writer() {
    let f = fixture(enabled());
    let d = &f.dispatcher;
    install(d, "a");
    let batches = collect(d);
    let p = d.prepare(request("r1")).unwrap();
    let plan = run(&p);
    let results = answers(d, plan, &Behaviour::Propose("s"));
    d.complete(plan.ticket, results).unwrap();
    let recorded = delivered(&batches, 1).remove(0).outcome.unwrap();
    let commands = d.journal().writer_stats().commands;
    match d.prepare(request("r1")).unwrap() {
        Prepared::Done(out) => {
            assert_eq!(out.hooks[0].outcome, HookOutcomeKind::Replayed);
            assert_eq!(out.hooks[0].receipt, recorded.hooks[0].receipt);
            assert!(out.is_final_replay());
        }
        _ => panic!("a final identity replays in prepare"),
    }
    assert_eq!(d.journal().writer_stats().commands, commands);
    // What a caller may keep for the request: only every hook replayed from its final receipt.
    assert!(!recorded.is_final_replay());
    let mut mixed = recorded.clone();
    mixed.hooks.push(HookOutcome { outcome: HookOutcomeKind::Replayed, ..recorded.hooks[0].clone() });
    assert!(!mixed.is_final_replay());
    mixed.hooks[0].outcome = HookOutcomeKind::Replayed;
    assert!(mixed.is_final_replay());
    assert!(!DispatchOutcome { admitted: true, refusal: None, hooks: Vec::new() }.is_final_replay());
}

#[test]
fn a_second_run_of_an_identity_waits_for_the_first_then_replays() {
    let f = fixture(enabled());
    let d = &f.dispatcher;
    install(d, "a");
    let batches = collect(d);
    let first = d.prepare(request("r1")).unwrap();
    let plan = run(&first);
    match d.prepare(request("r1")).unwrap() {
        Prepared::Wait(ticket) => assert_eq!(ticket, plan.ticket),
        _ => panic!("the identity is in flight"),
    }
    // Another identity is not held up.
    assert!(matches!(d.prepare(request("r2")).unwrap(), Prepared::Run(_)));
    let results = answers(d, plan, &Behaviour::Propose("s"));
    d.complete(plan.ticket, results).unwrap();
    delivered(&batches, 1);
    assert!(
        matches!(d.prepare(request("r1")).unwrap(), Prepared::Done(o) if o.hooks[0].outcome == HookOutcomeKind::Replayed)
    );
}

#[test]
fn cancel_releases_the_identity_and_records_nothing() {
    let f = fixture(enabled());
    let d = &f.dispatcher;
    install(d, "a");
    let p = d.prepare(request("r1")).unwrap();
    d.cancel(run(&p).ticket);
    assert!(matches!(d.prepare(request("r1")).unwrap(), Prepared::Run(_)));
    // `begin` never ran, so not even a checkpoint was queued.
    assert_eq!(d.journal().writer_stats().commands, 0);
}

#[test]
fn begin_queues_the_checkpoint_and_a_spent_wall_starts_nothing() {
    let f = fixture(Profile { max_dispatch_wall_ms: 30, ..enabled() });
    let d = &f.dispatcher;
    install(d, "a");
    install(d, "b");
    let p = d.prepare(request("r1")).unwrap();
    let plan = run(&p);
    let limit = d.begin(plan.ticket, plan.calls[0].slot).unwrap().unwrap();
    assert!(limit.wall && limit.ms <= 31, "the 30 ms wall is tighter than the 1000 ms timeout: {limit:?}");
    std::thread::sleep(Duration::from_millis(40));
    assert_eq!(d.begin(plan.ticket, plan.calls[1].slot).unwrap(), None);
    let a = CallResult::Reply(result_for(&plan.calls[0].input_json, &Behaviour::NotApplicable));
    let collected = collect(d);
    d.complete(plan.ticket, vec![a, CallResult::NotStarted]).unwrap();
    let out = delivered(&collected, 1).remove(0).outcome.unwrap();
    assert_eq!(out.hooks[0].outcome, HookOutcomeKind::NotApplicable);
    assert_eq!((out.hooks[1].failure_code, out.hooks[1].attempt), (Some(FailureCode::DispatchBudgetExhausted), 0));
    // b was never started: journaled as deferred (owed, no attempt used) for recover().
    let b = d.journal().get_dispatch(&out.hooks[1].dispatch_id).unwrap().unwrap();
    assert_eq!((b.state, b.attempts), (DispatchState::Checkpointed, 0));
    assert!(d.journal().get_dispatch(&out.hooks[0].dispatch_id).unwrap().unwrap().state.is_final());
}

#[test]
fn call_results_map_to_their_failure_codes() {
    let f = fixture(enabled());
    let d = &f.dispatcher;
    install(d, "a");
    let batches = collect(d);
    let cases = [
        (CallResult::TimedOut, FailureCode::ProducerTimedOut, None),
        (CallResult::WallExceeded, FailureCode::DispatchBudgetExhausted, None),
        (CallResult::TooLarge, FailureCode::ResultContractRejected, Some(Rule::ResultTooLarge)),
        (CallResult::Reply(ProviderReply::Threw), FailureCode::ProducerFailed, None),
        (CallResult::Reply(ProviderReply::NotJson), FailureCode::ResultContractRejected, Some(Rule::NotJsonValue)),
    ];
    for (i, (result, code, rule)) in cases.into_iter().enumerate() {
        let p = d.prepare(request(&format!("r{i}"))).unwrap();
        let plan = run(&p);
        d.begin(plan.ticket, plan.calls[0].slot).unwrap().unwrap();
        d.complete(plan.ticket, vec![result]).unwrap();
        let out = delivered(&batches, 1).remove(0).outcome.unwrap();
        let h = &out.hooks[0];
        assert_eq!(
            (h.outcome, h.failure_code, h.failure_rule, h.attempt),
            (HookOutcomeKind::Failed, Some(code), rule, 1)
        );
        let failures = d.journal().list_failures(&h.dispatch_id).unwrap();
        assert_eq!(failures.len(), 1, "the failed attempt is recorded");
    }
}

#[test]
fn verify_mode_agreement_needs_no_writer() {
    let f = fixture(Profile { replay: ReplayMode::Verify, ..enabled() });
    let d = &f.dispatcher;
    install(d, "a");
    let batches = collect(d);
    let p = d.prepare(request("r1")).unwrap();
    let plan = run(&p);
    let results = answers(d, plan, &Behaviour::Propose("s"));
    d.complete(plan.ticket, results).unwrap();
    delivered(&batches, 1);
    let commands = d.journal().writer_stats().commands;
    for (b, kind) in
        [(Behaviour::Propose("s"), HookOutcomeKind::Replayed), (Behaviour::Propose("t"), HookOutcomeKind::Conflict)]
    {
        let p = d.prepare(request("r1")).unwrap();
        let plan = run(&p);
        let results = answers(d, plan, &b);
        match d.complete(plan.ticket, results).unwrap() {
            Completion::Done(out) => assert_eq!(out.hooks[0].outcome, kind),
            Completion::Pending => panic!("verification records nothing"),
        }
    }
    assert_eq!(d.journal().writer_stats().commands, commands);
}

#[test]
fn complete_refuses_a_wrong_number_of_results_and_releases_the_identity() {
    let f = fixture(enabled());
    let d = &f.dispatcher;
    install(d, "a");
    let p = d.prepare(request("r1")).unwrap();
    let e = d.complete(run(&p).ticket, vec![]).err().unwrap();
    assert_eq!(e, JournalError::InvalidArgument { what: "results" });
    assert!(matches!(d.prepare(request("r1")).unwrap(), Prepared::Run(_)));
    assert_eq!(d.begin(12345, 0).unwrap_err(), JournalError::InvalidArgument { what: "ticket" });
}

#[test]
fn prepare_many_answers_each_request_as_prepare_would_in_order() {
    let f = fixture(enabled());
    let d = &f.dispatcher;
    install(d, "a");
    install(d, "b");
    let batches = collect(d);
    let hook_id = |h: &str| registration(h, 2, 1000)["hook_id"].as_str().unwrap().to_owned();
    // r1 is final before the batch: both its hooks replay in prepare.
    let first = d.prepare(request("r1")).unwrap();
    let plan = run(&first);
    let results = answers(d, plan, &Behaviour::Propose("s"));
    d.complete(plan.ticket, results).unwrap();
    let recorded = delivered(&batches, 1).remove(0).outcome.unwrap();
    let mut refused = request("r3");
    refused.receipt.status = "aborted".into();
    let many = d
        .prepare_many(vec![
            (request("r1").into(), None),
            (request("r2").into(), None),
            (refused.into(), None),
            (request("r2").into(), None),
            (request("r4").into(), Some(hook_id("b").as_str())),
        ])
        .unwrap();
    assert_eq!(many.len(), 5);
    match &many[0] {
        Prepared::Done(out) => {
            assert!(out.hooks.iter().all(|h| h.outcome == HookOutcomeKind::Replayed));
            let receipts = |o: &DispatchOutcome| o.hooks.iter().map(|h| h.receipt.clone()).collect::<Vec<_>>();
            assert_eq!(receipts(out), receipts(&recorded));
        }
        _ => panic!("r1 is final: replayed"),
    }
    let r2 = run(&many[1]);
    let called = |p: &Plan| p.calls.iter().map(|c| c.hook.hook_id.clone()).collect::<Vec<_>>();
    assert_eq!(called(r2), [hook_id("a"), hook_id("b")]);
    assert!(matches!(&many[2], Prepared::Done(out) if !out.admitted));
    // The same identity twice: the second waits for the first's ticket.
    assert!(matches!(&many[3], Prepared::Wait(t) if *t == r2.ticket));
    // An only hook plans that hook alone.
    let r4 = run(&many[4]);
    assert_eq!(called(r4), [hook_id("b")]);
    for p in [r2, r4] {
        let results = answers(d, p, &Behaviour::Propose("s"));
        d.complete(p.ticket, results).unwrap();
    }
    delivered(&batches, 2);
    assert_eq!(d.journal().stats().unwrap().proposed, 5);
}

#[test]
fn prepare_many_on_a_closed_journal_prepares_none_and_holds_no_identity() {
    let f = fixture(enabled());
    let d = &f.dispatcher;
    install(d, "a");
    d.journal().close();
    let err = d.prepare_many(vec![(request("r1").into(), None), (request("r2").into(), None)]).map(|_| ()).unwrap_err();
    assert_eq!(err, JournalError::Closed);
    // Every claim was released and nothing counts as running: close() waits for none.
    assert!(d.shared.claims.lock().unwrap().is_empty());
    assert_eq!(*d.shared.running.borrow(), 0);
}

/// Waits (bounded) until the row of `dispatch_id` is in the journal.
fn row_of(d: &Dispatcher, dispatch_id: &str) -> crate::journal::DispatchRow {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(row) = d.journal().get_dispatch(dispatch_id).unwrap() {
            return row;
        }
        assert!(Instant::now() < until, "the checkpoint was not committed");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Hook `a` installed, request `r1` prepared and its one call begun with
/// `begin_deferred`: the ticket, and the call's dispatch id and input.
fn begun_deferred(d: &Dispatcher) -> (u64, String, String) {
    install(d, "a");
    let p = d.prepare(request("r1")).unwrap();
    let plan = run(&p);
    let call = &plan.calls[0];
    assert!(d.begin_deferred(plan.ticket, call.slot).unwrap().is_some());
    (plan.ticket, call.dispatch_id.clone(), call.input_json.clone())
}

#[test]
fn begin_deferred_holds_the_checkpoint_until_complete_queues_it_with_the_record() {
    let f = fixture(enabled());
    let d = &f.dispatcher;
    let batches = collect(d);
    let (ticket, id, input) = begun_deferred(d);
    // Noted in the attempt ledger only: nothing reached the writer.
    assert_eq!(d.journal().writer_stats().commands, 0);
    assert!(d.journal().get_dispatch(&id).unwrap().is_none());
    let reply = CallResult::Reply(result_for(&input, &Behaviour::Propose("s")));
    assert!(matches!(d.complete(ticket, vec![reply]).unwrap(), Completion::Pending));
    let out = delivered(&batches, 1).remove(0).outcome.unwrap();
    assert_eq!((out.hooks[0].outcome, out.hooks[0].attempt), (HookOutcomeKind::Recorded, 1));
    let row = d.journal().get_dispatch(&id).unwrap().unwrap();
    assert_eq!((row.state.is_final(), row.attempts), (true, 1));
    // The checkpoint went with its record: one command, one row written once.
    assert_eq!(d.journal().writer_stats().commands, 1);
    assert_eq!(row.request_json, None);
}

#[test]
fn flush_checkpoints_queues_what_a_running_provider_holds_back() {
    let f = fixture(enabled());
    let d = &f.dispatcher;
    let batches = collect(d);
    let (ticket, id, input) = begun_deferred(d);
    d.flush_checkpoints();
    let row = row_of(d, &id);
    assert_eq!((row.state, row.attempts), (DispatchState::Checkpointed, 1));
    // A second flush has nothing left to queue.
    d.flush_checkpoints();
    let reply = CallResult::Reply(result_for(&input, &Behaviour::NotApplicable));
    d.complete(ticket, vec![reply]).unwrap();
    let out = delivered(&batches, 1).remove(0).outcome.unwrap();
    assert_eq!((out.hooks[0].outcome, out.hooks[0].attempt), (HookOutcomeKind::NotApplicable, 1));
    assert_eq!(d.journal().writer_stats().commands, 2);
}

#[test]
fn a_cancelled_dispatch_keeps_the_attempts_begin_deferred_held_back() {
    let f = fixture(enabled());
    let d = &f.dispatcher;
    let (ticket, id, _) = begun_deferred(d);
    d.cancel(ticket);
    let row = row_of(d, &id);
    assert_eq!((row.state, row.attempts), (DispatchState::Checkpointed, 1));
}

#[test]
fn without_an_attempt_ledger_begin_deferred_queues_the_checkpoint_at_once() {
    let f = fixture_with(enabled(), JournalOptions { attempt_ledger: false, ..JournalOptions::default() });
    let d = &f.dispatcher;
    assert!(!d.journal().defers_checkpoints());
    let (ticket, id, _) = begun_deferred(d);
    let row = row_of(d, &id);
    assert_eq!((row.state, row.attempts), (DispatchState::Checkpointed, 1));
    d.cancel(ticket);
}

#[test]
fn a_verify_replay_of_the_recorded_document_is_not_validated_again() {
    let f = fixture(enabled());
    install(&f.dispatcher, "a");
    let batches = collect(&f.dispatcher);
    let p = f.dispatcher.prepare(request("r1")).unwrap();
    let plan = run(&p);
    let results = answers(&f.dispatcher, plan, &Behaviour::Propose("s"));
    f.dispatcher.complete(plan.ticket, results).unwrap();
    delivered(&batches, 1);
    // Another runtime over the same journal whose intent kind now requires
    // a payload member no answer here carries: validation would refuse any.
    let journal = Journal::open(f.dir.join("j.sqlite"), JournalOptions::default(), OpenMode::ReadWrite).unwrap();
    let d = Dispatcher::new(Arc::new(journal), Profile { replay: ReplayMode::Verify, ..enabled() });
    let mut stricter = fixtures::kind_definition();
    stricter["payload_schema"]["required"] = serde_json::json!(["segment_ref", "source_event_refs", "added"]);
    stricter["payload_schema"]["properties"]["added"] = serde_json::json!({"type": "string", "format": "opaque_ref"});
    d.define_intent_kind(&stricter).unwrap();
    install(&d, "a");
    let verified = |b: &Behaviour| {
        let p = d.prepare(request("r1")).unwrap();
        let plan = run(&p);
        let results = answers(&d, plan, b);
        match d.complete(plan.ticket, results).unwrap() {
            Completion::Done(out) => out.hooks[0].clone(),
            Completion::Pending => panic!("verification records nothing"),
        }
    };
    // The very document recorded: its stored receipt, checked when recorded.
    let same = verified(&Behaviour::Propose("s"));
    assert_eq!((same.outcome, same.failure_code), (HookOutcomeKind::Replayed, None));
    // Any other document is validated, against the kind as it is now.
    let other = verified(&Behaviour::Propose("t"));
    assert_eq!(
        (other.outcome, other.failure_code),
        (HookOutcomeKind::Failed, Some(FailureCode::ResultContractRejected))
    );
}

#[test]
fn an_inline_commit_is_one_transaction_and_waits_for_outcomes_on_their_way() {
    let inline = JournalOptions { inline_commit: true, ..JournalOptions::default() };
    let f = fixture_with(enabled(), inline);
    let d = &f.dispatcher;
    install(d, "a");
    // The delivery keeps its tokens: its outcomes stay on their way.
    let tokens: Arc<Mutex<Vec<OnTheWay>>> = Arc::default();
    let (sink, kept) = (Batches::default(), tokens.clone());
    let batches = sink.clone();
    d.set_deliver(Box::new(move |batch, _, on_the_way| {
        kept.lock().unwrap().push(on_the_way);
        sink.lock().unwrap().push(batch);
    }));
    let complete = |name: &str| {
        let p = d.prepare(request(name)).unwrap();
        let plan = run(&p);
        let results = answers_via(d, plan, &Behaviour::Propose("s"), Dispatcher::begin_deferred);
        d.complete(plan.ticket, results).unwrap()
    };
    // Alone in flight: its checkpoint and record commit here, together.
    assert!(matches!(complete("r1"), Completion::Done(_)));
    assert_eq!(d.journal().writer_stats().commits, 1);
    // Two in flight: the writer thread takes the first.
    let (p2, p3) = (d.prepare(request("r2")).unwrap(), d.prepare(request("r3")).unwrap());
    let (plan2, plan3) = (run(&p2), run(&p3));
    let results = answers_via(d, plan2, &Behaviour::Propose("s"), Dispatcher::begin_deferred);
    assert!(matches!(d.complete(plan2.ticket, results).unwrap(), Completion::Pending));
    delivered(&batches, 1);
    // The last one running is not alone while the first's outcome is on its way.
    let results = answers_via(d, plan3, &Behaviour::Propose("s"), Dispatcher::begin_deferred);
    assert!(matches!(d.complete(plan3.ticket, results).unwrap(), Completion::Pending));
    delivered(&batches, 1);
    // Received: alone again.
    tokens.lock().unwrap().clear();
    assert!(matches!(complete("r4"), Completion::Done(_)));
    assert_eq!(d.journal().stats().unwrap().proposed, 4);
}

#[test]
fn a_limit_crosses_as_its_milliseconds_negated_when_the_wall_is_the_bound() {
    assert_eq!(Limit { ms: 250, wall: false }.signed_ms(), 250);
    assert_eq!(Limit { ms: 0, wall: false }.signed_ms(), 0);
    assert_eq!(Limit { ms: 250, wall: true }.signed_ms(), -250);
    assert_eq!(Limit { ms: 0, wall: true }.signed_ms(), -1);
    assert_eq!(Limit { ms: u64::MAX, wall: false }.signed_ms(), i64::from(u32::MAX));
}
