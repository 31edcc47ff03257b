//! Executor decisions: once per intent, idempotent, tokens only.

use super::*;

both!(decide_is_once_and_idempotent, done_only_after_admission_by_the_same_executor, only_tokens_reach_the_outbox);

fn journal_with_intents(b: &Backend) -> Journal {
    let j = b.open();
    j.checkpoint(checkpoint("a")).wait().unwrap();
    j.record_final(proposed("a", 1, "r", &["i1", "i2", "i3"])).wait().unwrap();
    j
}

fn pending(j: &Journal) -> Vec<String> {
    let f = IntentFilter { pending_only: true, ..Default::default() };
    j.list_intents(&f).unwrap().items.into_iter().map(|i| i.intent_id).collect()
}

fn decide_is_once_and_idempotent(b: &Backend) {
    let j = journal_with_intents(b);
    let i1 = intent_id("i1");
    assert_eq!(j.decide(&i1, "executor.report", Decision::Admit, "policy_ok").wait().unwrap(), DecideOutcome::Decided);
    assert_eq!(
        j.decide(&i1, "executor.report", Decision::Admit, "policy_ok").wait().unwrap(),
        DecideOutcome::SameDecision
    );
    let conflict = j.decide(&i1, "executor.report", Decision::Reject, "over_budget").wait().unwrap();
    let DecideOutcome::Conflict { existing } = conflict else { panic!("{conflict:?}") };
    assert_eq!(
        (existing.decision, existing.executor_id.as_str(), existing.reason_code.as_str()),
        (Decision::Admit, "executor.report", "policy_ok")
    );
    assert!(matches!(
        j.decide(&i1, "executor.other", Decision::Admit, "policy_ok").wait().unwrap(),
        DecideOutcome::Conflict { .. }
    ));
    assert_eq!(
        j.decide(&intent_id("nope"), "executor.report", Decision::Admit, "policy_ok").wait().unwrap(),
        DecideOutcome::UnknownIntent
    );
    let stored = &j.list_intents(&IntentFilter::default()).unwrap().items[0];
    assert_eq!(stored.decision, Some(Decision::Admit));
    assert_eq!(stored.reason_code.as_deref(), Some("policy_ok"));
}

fn done_only_after_admission_by_the_same_executor(b: &Backend) {
    let j = journal_with_intents(b);
    let (i1, i2, i3) = (intent_id("i1"), intent_id("i2"), intent_id("i3"));
    assert_eq!(pending(&j), [i1.clone(), i2.clone(), i3.clone()]);
    assert_eq!(j.mark_done(&i1, "executor.report").wait().unwrap(), DoneOutcome::NotAdmitted);
    j.decide(&i1, "executor.report", Decision::Admit, "policy_ok").wait().unwrap();
    j.decide(&i2, "executor.report", Decision::Reject, "not_due").wait().unwrap();
    assert_eq!(pending(&j), [i1.clone(), i3.clone()], "admitted stays open until done; rejected closes");
    assert_eq!(j.mark_done(&i1, "executor.other").wait().unwrap(), DoneOutcome::NotAdmitted);
    assert_eq!(j.mark_done(&i1, "executor.report").wait().unwrap(), DoneOutcome::Done);
    assert_eq!(j.mark_done(&i1, "executor.report").wait().unwrap(), DoneOutcome::AlreadyDone);
    assert_eq!(j.mark_done(&i2, "executor.report").wait().unwrap(), DoneOutcome::NotAdmitted);
    assert_eq!(j.mark_done(&intent_id("nope"), "executor.report").wait().unwrap(), DoneOutcome::UnknownIntent);
    assert_eq!(pending(&j), [i3]);
    let s = j.stats().unwrap();
    assert_eq!((s.intents, s.intents_open), (3, 1));
}

fn only_tokens_reach_the_outbox(b: &Backend) {
    let j = journal_with_intents(b);
    let i1 = intent_id("i1");
    let long = format!("a{}", "b".repeat(128));
    for (executor, reason, what) in [
        ("Executor Report", "ok", "executorId"),
        ("", "ok", "executorId"),
        (long.as_str(), "ok", "executorId"),
        ("executor.report", "rejected: quota exceeded for user@example.com", "reasonCode"),
        ("executor.report", "trailing.", "reasonCode"),
    ] {
        let e = j.decide(&i1, executor, Decision::Admit, reason).wait().unwrap_err();
        assert_eq!(e, JournalError::InvalidArgument { what }, "{executor:?} {reason:?}");
        assert_eq!(e.code(), "invalid_argument");
    }
    assert_eq!(
        j.decide("../etc/passwd", "executor.report", Decision::Admit, "ok").wait().unwrap_err(),
        JournalError::InvalidArgument { what: "intentId" }
    );
    assert_eq!(j.mark_done(&i1, "Executor").wait().unwrap_err(), JournalError::InvalidArgument { what: "executorId" });
    let ok = "a".repeat(128);
    assert_eq!(j.decide(&i1, &ok, Decision::Admit, "ok").wait().unwrap(), DecideOutcome::Decided);
}
