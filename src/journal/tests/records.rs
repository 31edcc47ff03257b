//! Checkpoint, final record and failed attempts.

use super::*;

both!(
    checkpoint_is_fresh_then_pending_then_final,
    checkpoint_works_from_async_code,
    a_second_final_record_is_already_final_with_the_first_digest,
    failures_count_attempts_until_final,
    records_need_a_checkpoint,
    arguments_are_checked_before_queueing,
    a_duplicate_intent_id_is_reported_and_nothing_is_written,
    exhausted_at_a_failed_attempt_keeps_that_attempts_row,
    record_many_isolates_each_record_and_answers_after_the_commit,
    a_keyed_record_yields_to_an_earlier_identity_another_writer_finished_under_its_key
);

fn checkpoint_is_fresh_then_pending_then_final(b: &Backend) {
    let j = b.open();
    assert_eq!(j.checkpoint(checkpoint("a")).wait().unwrap(), CheckpointState::Fresh);
    assert_eq!(j.checkpoint(checkpoint("a")).wait().unwrap(), CheckpointState::Pending { attempts_used: 1 });
    let rec = proposed("a", 1, "result-1", &["a1"]);
    assert_eq!(j.record_final(rec.clone()).wait().unwrap(), RecordOutcome::Recorded);
    let row = j.get_dispatch(&rec.dispatch_id).unwrap().unwrap();
    assert_eq!(j.checkpoint(checkpoint("a")).wait().unwrap(), CheckpointState::Final { row: Box::new(row.clone()) });
    assert_eq!(row.state, DispatchState::Proposed);
    assert_eq!(row.attempts, 1);
    assert_eq!(row.result_digest, rec.result_digest);
    assert_eq!(row.intent_ids, vec![intent_id("a1")]);
    // No receipt is stored: the dispatch layer builds it from the columns.
    assert_eq!(row.receipt_json, None);
    assert_eq!(
        crate::dialect::with_receipt(row.clone()).receipt_json,
        Some(proposed_receipt("a", 1, "result-1", &["a1"]))
    );
    // The request serves only recover(): a final identity drops it.
    assert_eq!(row.request_json, None);
}

fn checkpoint_works_from_async_code(b: &Backend) {
    let j = b.open();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let (a, b) = rt.block_on(async { tokio::join!(j.checkpoint(checkpoint("a")), j.checkpoint(checkpoint("b"))) });
    assert_eq!((a.unwrap(), b.unwrap()), (CheckpointState::Fresh, CheckpointState::Fresh));
}

fn a_second_final_record_is_already_final_with_the_first_digest(b: &Backend) {
    let j = b.open();
    j.checkpoint(checkpoint("a")).wait().unwrap();
    let first = proposed("a", 1, "result-1", &["a1"]);
    let second = proposed("a", 1, "result-2", &["a2"]);
    assert_eq!(j.record_final(first.clone()).wait().unwrap(), RecordOutcome::Recorded);
    let row = j.get_dispatch(&first.dispatch_id).unwrap().unwrap();
    assert_eq!(row.result_digest, first.result_digest);
    assert_eq!(j.record_final(second).wait().unwrap(), RecordOutcome::AlreadyFinal { row: Box::new(row) });
    let intents = j.list_intents(&IntentFilter::default()).unwrap().items;
    assert_eq!(intents.len(), 1, "the second record wrote nothing");
    assert_eq!(intents[0].intent_id, intent_id("a1"));
}

fn failures_count_attempts_until_final(b: &Backend) {
    let j = b.open();
    j.checkpoint(checkpoint("a")).wait().unwrap();
    assert_eq!(j.record_failure(failure("a", 1)).wait().unwrap(), FailureOutcome::Recorded { attempts_used: 1 });
    assert_eq!(j.checkpoint(checkpoint("a")).wait().unwrap(), CheckpointState::Pending { attempts_used: 1 });
    let mut second = failure("a", 2);
    second.code = "result_contract_rejected".into();
    second.rule = Some("wrong_type".into());
    second.pointer = Some("/intents/0/payload/~0redacted~0/2".into());
    assert_eq!(j.record_failure(second).wait().unwrap(), FailureOutcome::Recorded { attempts_used: 2 });
    // The same attempt again keeps the first row.
    assert_eq!(j.record_failure(failure("a", 2)).wait().unwrap(), FailureOutcome::Recorded { attempts_used: 2 });
    assert_eq!(j.get_dispatch(&dispatch_id("a")).unwrap().unwrap().state, DispatchState::Failed);

    let exhausted = FinalRecord {
        dispatch_id: dispatch_id("a"),
        attempt: 3,
        status: FinalStatus::Exhausted,
        result_digest: None,
        intents: vec![],
        failure: Some(("dispatch_budget_exhausted".into(), None)),
    };
    assert_eq!(j.record_final(exhausted).wait().unwrap(), RecordOutcome::Recorded);
    let failures = j.list_failures(&dispatch_id("a")).unwrap();
    let summary: Vec<_> =
        failures.iter().map(|f| (f.attempt, f.code.as_str(), f.rule.as_deref(), f.pointer.as_deref())).collect();
    assert_eq!(
        summary,
        [
            (1, "producer_failed", None, None),
            (2, "result_contract_rejected", Some("wrong_type"), Some("/intents/0/payload/~0redacted~0/2")),
            (3, "dispatch_budget_exhausted", None, None)
        ]
    );
    let row = j.get_dispatch(&dispatch_id("a")).unwrap().unwrap();
    assert_eq!((row.state, row.attempts), (DispatchState::Exhausted, 3));
    assert!(matches!(j.record_failure(failure("a", 4)).wait().unwrap(), FailureOutcome::AlreadyFinal { .. }));
    assert_eq!(j.list_failures(&dispatch_id("a")).unwrap().len(), 3);
}

fn records_need_a_checkpoint(b: &Backend) {
    let j = b.open();
    let e = j.record_final(proposed("a", 1, "r", &["a1"])).wait().unwrap_err();
    assert_eq!(e.code(), "unknown_dispatch");
    assert_eq!(j.record_failure(failure("a", 1)).wait().unwrap_err(), JournalError::UnknownDispatch);
    assert!(j.list_intents(&IntentFilter::default()).unwrap().items.is_empty());
}

fn arguments_are_checked_before_queueing(b: &Backend) {
    let j = b.open();
    let invalid = |e: JournalError| match e {
        JournalError::InvalidArgument { what } => what,
        other => panic!("{other:?}"),
    };
    let mut c = checkpoint("a");
    c.dispatch_id = "pwh_not-hex".into();
    assert_eq!(invalid(j.checkpoint(c).wait().unwrap_err()), "dispatch_id");
    let mut c = checkpoint("a");
    c.hook_id = "Periodic Report".into();
    assert_eq!(invalid(j.checkpoint(c).wait().unwrap_err()), "hook_id");
    let mut c = checkpoint("a");
    c.receipt_id = "/home/user/receipt".into();
    assert_eq!(invalid(j.checkpoint(c).wait().unwrap_err()), "receipt_id");

    let mut r = proposed("a", 1, "r", &["a1"]);
    r.status = FinalStatus::NotApplicable;
    assert_eq!(invalid(j.record_final(r).wait().unwrap_err()), "intents");
    let mut r = proposed("a", 1, "r", &[]);
    r.status = FinalStatus::Exhausted;
    assert_eq!(invalid(j.record_final(r).wait().unwrap_err()), "failure");
    let mut r = proposed("a", 1, "r", &[]);
    r.status = FinalStatus::NotApplicable;
    r.result_digest = None;
    assert_eq!(invalid(j.record_final(r).wait().unwrap_err()), "result_digest");
    let mut r = proposed("a", 0, "r", &[]);
    r.status = FinalStatus::NotApplicable;
    assert_eq!(invalid(j.record_final(r).wait().unwrap_err()), "attempt");
    let mut f = failure("a", 1);
    f.code = "Error: provider exploded at /tmp/x".into();
    assert_eq!(invalid(j.record_failure(f).wait().unwrap_err()), "code");
    // A pointer is stored only as validate::public_pointer leaves it.
    let mut f = failure("a", 1);
    f.pointer = Some("/payload/sk_live_0123456789".into());
    assert_eq!(invalid(j.record_failure(f).wait().unwrap_err()), "pointer");
    assert_eq!(j.commit_count(), 0, "nothing reached the writer");
}

fn a_duplicate_intent_id_is_reported_and_nothing_is_written(b: &Backend) {
    let j = b.open();
    j.checkpoint(checkpoint("a")).wait().unwrap();
    j.checkpoint(checkpoint("b")).wait().unwrap();
    j.record_final(proposed("a", 1, "ra", &["shared"])).wait().unwrap();
    // A (buggy) record for b reusing a's intent_id.
    let mut b = proposed("b", 1, "rb", &["b1"]);
    b.intents.push(intent("shared", &dispatch_id("a")));
    let e = j.record_final(b).wait().unwrap_err();
    assert_eq!((e.clone(), e.code()), (JournalError::DuplicateIntent, "duplicate_intent"));
    let row = j.get_dispatch(&dispatch_id("b")).unwrap().unwrap();
    assert_eq!((row.state, row.intent_ids), (DispatchState::Checkpointed, vec![]));
    let page = j.list_intents(&IntentFilter { dispatch_id: Some(dispatch_id("b")), ..Default::default() }).unwrap();
    assert!(page.items.is_empty(), "b1 was rolled back with the rest of the command");
}

/// The dispatcher finalises `exhausted` at the last failed attempt: that
/// attempt's own failure row stays, the receipt carries the exhausted code.
fn exhausted_at_a_failed_attempt_keeps_that_attempts_row(b: &Backend) {
    let j = b.open();
    j.checkpoint(checkpoint("a")).wait().unwrap();
    j.record_failure(failure("a", 1)).wait().unwrap();
    let exhausted = FinalRecord {
        dispatch_id: dispatch_id("a"),
        attempt: 1,
        status: FinalStatus::Exhausted,
        result_digest: None,
        intents: vec![],
        failure: Some(("dispatch_budget_exhausted".into(), None)),
    };
    assert_eq!(j.record_final(exhausted).wait().unwrap(), RecordOutcome::Recorded);
    let failures = j.list_failures(&dispatch_id("a")).unwrap();
    assert_eq!(failures.len(), 1);
    assert_eq!(failures[0].code, "producer_failed");
    let row = j.get_dispatch(&dispatch_id("a")).unwrap().unwrap();
    assert_eq!((row.state, row.attempts), (DispatchState::Exhausted, 1));
    assert_eq!(j.unfinished().unwrap(), vec![]);
}

/// One dispatch's records as one command: each in its own savepoint, answered
/// in order on the writer thread after the commit; the queued checkpoints
/// before it run first.
fn record_many_isolates_each_record_and_answers_after_the_commit(on: &Backend) {
    let j = on.open();
    let (tx, rx) = std::sync::mpsc::channel();
    let noted = tx.clone();
    j.checkpoint_then(checkpoint("a"), Box::new(move |r| noted.send(format!("{:?}", r.map(|_| ()))).unwrap())).unwrap();
    j.checkpoint_then(checkpoint("b"), Box::new(|_| ())).unwrap();
    let mut b = proposed("b", 1, "rb", &["b1"]);
    b.intents.push(intent("a1", &dispatch_id("a")));
    let records = vec![
        RecordCommand::Final(proposed("a", 1, "ra", &["a1"])),
        RecordCommand::Final(b),
        RecordCommand::Failure(FailureRecord {
            dispatch_id: dispatch_id("b"),
            attempt: 1,
            code: "producer_failed".into(),
            rule: None,
            pointer: None,
        }),
    ];
    j.record_many(records, Box::new(move |r| tx.send(format!("{r:?}")).unwrap())).unwrap();
    assert_eq!(rx.recv().unwrap(), "Ok(())", "the checkpoint is answered first");
    let answers = rx.recv().unwrap();
    assert_eq!(answers, "Ok([Ok(Final(Recorded)), Err(DuplicateIntent), Ok(Failure(Recorded { attempts_used: 1 }))])");
    let retries = match on {
        Backend::Sqlite { .. } => 0,
        // The two final records ran as one merged statement, which the
        // duplicate refused; the batch then ran again record by record.
        Backend::Postgres(_) => 1,
    };
    assert_eq!(j.writer_stats().busy_retries, retries);
    assert_eq!(j.get_dispatch(&dispatch_id("a")).unwrap().unwrap().state, DispatchState::Proposed);
    let b = j.get_dispatch(&dispatch_id("b")).unwrap().unwrap();
    assert_eq!((b.state, b.attempts), (DispatchState::Failed, 1), "b's final record was rolled back alone");
    // Argument errors are refused before anything is queued.
    let bad = RecordCommand::Failure(FailureRecord {
        dispatch_id: "x".into(),
        attempt: 1,
        code: "c".into(),
        rule: None,
        pointer: None,
    });
    assert_eq!(
        j.record_many(vec![bad], Box::new(|_| ())).unwrap_err(),
        JournalError::InvalidArgument { what: "dispatch_id" }
    );
}

/// A keyed record yields its key to a receipt an earlier record of its list
/// found recorded by another writer under that key (its failed attempt is
/// recorded instead); with its key free it is recorded as a final record.
fn a_keyed_record_yields_to_an_earlier_identity_another_writer_finished_under_its_key(on: &Backend) {
    let j = on.open();
    for seed in ["a", "b", "c"] {
        j.checkpoint(checkpoint(seed)).wait().unwrap();
    }
    // The other writer: `a` final first, its receipt under key `w`.
    j.record_final(proposed("a", 1, "w", &["a-theirs"])).wait().unwrap();
    // Here a row's key is its result digest.
    let key_of: KeyOf = |row| row.result_digest.clone();
    let keyed = |seed: &str, key: &str| {
        RecordCommand::Keyed(Keyed {
            record: proposed(seed, 1, &format!("r{seed}"), &[seed]),
            key: hex(key),
            key_of,
            instead: failure(seed, 1),
        })
    };
    let records =
        vec![RecordCommand::Final(proposed("a", 1, "mine", &["a-mine"])), keyed("b", "w"), keyed("c", "free")];
    let (tx, rx) = std::sync::mpsc::channel();
    j.record_many(records, Box::new(move |r| tx.send(r).unwrap())).unwrap();
    let answers: Vec<RecordAnswer> = rx.recv().unwrap().unwrap().into_iter().map(Result::unwrap).collect();
    let a = j.get_dispatch(&dispatch_id("a")).unwrap().unwrap();
    assert_eq!(a.result_digest, Some(hex("w")), "the other writer's receipt stays");
    assert_eq!(
        answers,
        [
            RecordAnswer::Final(RecordOutcome::AlreadyFinal { row: Box::new(a) }),
            RecordAnswer::Failure(FailureOutcome::Recorded { attempts_used: 1 }),
            RecordAnswer::Final(RecordOutcome::Recorded),
        ]
    );
    let b = j.get_dispatch(&dispatch_id("b")).unwrap().unwrap();
    assert_eq!((b.state, b.attempts, b.intent_ids), (DispatchState::Failed, 1, vec![]));
    let c = j.get_dispatch(&dispatch_id("c")).unwrap().unwrap();
    assert_eq!((c.state, c.intent_ids), (DispatchState::Proposed, vec![intent_id("c")]));
    // A record list with a keyed record runs record by record, never merged.
    assert_eq!(j.writer_stats().busy_retries, 0);
}
