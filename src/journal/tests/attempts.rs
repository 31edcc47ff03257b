//! Lifetime attempts (contract-v0 §1): a checkpoint counts its invocation,
//! a deferred checkpoint counts none, and schema v3's migration.

use rusqlite::Connection;

use super::super::sqlite::open::upgrade;
use super::super::sqlite::schema::MIGRATIONS;
use super::*;

both!(
    an_invocation_whose_checkpoint_reached_the_journal_counts_as_an_attempt,
    a_hook_that_did_not_get_its_turn_is_journaled_as_owed_with_no_attempt_used,
    a_final_record_whose_checkpoint_the_journal_lost_writes_it_again_with_its_attempt,
    a_counted_attempt_is_committed_where_another_handle_sees_it_when_it_answers
);

// The attempt ledger file is a file journal's; a PostgreSQL journal's server counts attempts.
#[test]
fn attempts_an_ended_process_noted_are_counted_by_the_next_opener_sqlite() {
    attempts_an_ended_process_noted_are_counted_by_the_next_opener(&Backend::sqlite("ended-noted"));
}

#[test]
fn a_live_process_s_ledger_is_not_folded_and_a_recorded_attempt_leaves_none_sqlite() {
    a_live_process_s_ledger_is_not_folded_and_a_recorded_attempt_leaves_none(&Backend::sqlite("live-ledger"));
}

#[test]
fn a_postgres_journal_counts_attempts_on_its_server_and_keeps_no_ledger_file() {
    let b = Backend::postgres("server-counts");
    let j = b.open();
    assert!(j.counts_attempts_on_server());
    assert!(j.ledger.as_ref().is_some_and(|l| l.orphans().orphans.is_empty()));
    let sqlite = Backend::sqlite("file-counts");
    assert!(!sqlite.open().counts_attempts_on_server());
    let options = JournalOptions { attempt_ledger: false, ..JournalOptions::default() };
    assert!(!b.open_with(options).unwrap().counts_attempts_on_server());
}

/// The server knows when the process that counted an attempt ended: its
/// writer connection's lock goes with it (a closed journal, a killed
/// process), so that attempt is not presumed still running elsewhere.
#[test]
fn another_host_sees_that_the_process_that_counted_an_attempt_ended() {
    let b = Backend::postgres("holder-ended");
    let (j, other) = (b.open(), b.open());
    j.count_attempt(at("a", 1)).wait().unwrap();
    let row = |j: &Journal| j.get_dispatch(&dispatch_id("a")).unwrap().unwrap();
    assert!(!row(&other).holder_ended, "its process is alive");
    j.close();
    assert!(row(&other).holder_ended, "its process closed the journal");
    // Counted again by a live process: alive again. No failure is recorded
    // for the ended attempt: a cut connection looks the same as an ended
    // process, and that attempt may still finish.
    other.count_attempt(at("a", 2)).wait().unwrap();
    assert!(!row(&b.open()).holder_ended);
    assert_eq!(failures(&other, "a"), vec![]);
    let sqlite = Backend::sqlite("holder-sqlite");
    let s = sqlite.open();
    s.count_attempt(at("a", 1)).wait().unwrap();
    s.close();
    assert!(!row(&sqlite.open()).holder_ended, "SQLite folds ended processes' ledgers instead");
}

/// `count_attempt` answers once the checkpoint committed: another handle (a
/// process on another host) then sees the attempt, and an attempt counted
/// again is counted once.
fn a_counted_attempt_is_committed_where_another_handle_sees_it_when_it_answers(b: &Backend) {
    let (j, other) = (b.open(), b.open());
    assert_eq!(j.count_attempt(at("a", 1)).wait(), Ok(CheckpointState::Fresh));
    assert_eq!(attempts(&other, "a"), (DispatchState::Checkpointed, 1));
    assert_eq!(other.count_attempt(at("a", 2)).wait(), Ok(CheckpointState::Pending { attempts_used: 1 }));
    assert_eq!(attempts(&j, "a"), (DispatchState::Checkpointed, 2));
    // What was noted rewrites a checkpoint the server lost (see the test above).
    assert!(j.ledger.as_ref().unwrap().noted(&dispatch_id("a")).is_some());
    j.close();
    assert_eq!(j.count_attempt(at("b", 1)).wait(), Err(JournalError::Closed));
}

fn at(seed: &str, attempt: u32) -> Checkpoint {
    Checkpoint { attempt, ..checkpoint(seed) }
}

fn attempts(j: &Journal, seed: &str) -> (DispatchState, u32) {
    let row = j.get_dispatch(&dispatch_id(seed)).unwrap().unwrap();
    (row.state, row.attempts)
}

fn record(j: &Journal, records: Vec<RecordCommand>) -> Vec<Result<RecordAnswer>> {
    let (tx, rx) = std::sync::mpsc::channel();
    j.record_many(records, Box::new(move |r| tx.send(r).unwrap())).unwrap();
    rx.recv().unwrap().unwrap()
}

fn an_invocation_whose_checkpoint_reached_the_journal_counts_as_an_attempt(b: &Backend) {
    let j = b.open();
    assert_eq!(j.checkpoint(at("a", 1)).wait().unwrap(), CheckpointState::Fresh);
    // No result was recorded (the process died): the invocation still counts.
    assert_eq!(attempts(&j, "a"), (DispatchState::Checkpointed, 1));
    assert_eq!(j.checkpoint(at("a", 2)).wait().unwrap(), CheckpointState::Pending { attempts_used: 1 });
    assert_eq!(attempts(&j, "a"), (DispatchState::Checkpointed, 2));
    // A late or repeated checkpoint never lowers the count.
    assert_eq!(j.checkpoint(at("a", 1)).wait().unwrap(), CheckpointState::Pending { attempts_used: 2 });
    assert_eq!(attempts(&j, "a"), (DispatchState::Checkpointed, 2));
    // A failure recorded for the attempt keeps the count.
    j.record_failure(FailureRecord {
        dispatch_id: dispatch_id("a"),
        attempt: 2,
        code: "producer_failed".into(),
        rule: None,
        pointer: None,
    })
    .wait()
    .unwrap();
    assert_eq!(attempts(&j, "a"), (DispatchState::Failed, 2));
    assert_eq!(j.checkpoint(at("a", 3)).wait().unwrap(), CheckpointState::Pending { attempts_used: 2 });
    assert_eq!(attempts(&j, "a"), (DispatchState::Failed, 3));
}

fn a_hook_that_did_not_get_its_turn_is_journaled_as_owed_with_no_attempt_used(b: &Backend) {
    let j = b.open();
    let answers = record(&j, vec![RecordCommand::Defer(at("b", 0))]);
    assert_eq!(answers, vec![Ok(RecordAnswer::Deferred(CheckpointState::Fresh))]);
    assert_eq!(attempts(&j, "b"), (DispatchState::Checkpointed, 0));
    let owed = j.unfinished().unwrap();
    assert_eq!(owed.iter().map(|r| r.dispatch_id.clone()).collect::<Vec<_>>(), vec![dispatch_id("b")]);
    assert!(owed[0].request_json.is_some(), "recover() needs the request");
    // Deferring an identity that has attempts leaves them as they are.
    j.checkpoint(at("c", 1)).wait().unwrap();
    let answers = record(&j, vec![RecordCommand::Defer(at("c", 0))]);
    assert_eq!(answers, vec![Ok(RecordAnswer::Deferred(CheckpointState::Pending { attempts_used: 1 }))]);
    assert_eq!(attempts(&j, "c"), (DispatchState::Checkpointed, 1));
    // A deferral is attempt 0 by definition.
    let err = j.record_many(vec![RecordCommand::Defer(at("d", 1))], Box::new(|_| ())).unwrap_err();
    assert_eq!(err, JournalError::InvalidArgument { what: "attempt" });
}

// SQLite only: migrates SQLite's own earlier schema.
#[test]
fn a_version_2_checkpoint_without_attempts_migrates_as_one_invocation_cut_short() {
    let dir = TempDir::new("migrate-v3");
    let path = dir.file("j.sqlite");
    let c = Connection::open(&path).unwrap();
    c.execute_batch("PRAGMA journal_mode=WAL").unwrap();
    upgrade(&c, &MIGRATIONS[..2]).unwrap();
    let insert = |seed: &str, state: &str, attempts: u32| {
        c.execute(
            "INSERT INTO dispatches (dispatch_id, state, attempts, hook_id, capability_id, receipt_id, effect_id, \
             event_kind, registration_digest, created_at, updated_at) \
             VALUES (?1, ?2, ?3, 'periodic_report.runtime_trigger', 'periodic_report', 'receipt_a', 'effect_a', \
             'todo_completed', ?4, 1, 1)",
            rusqlite::params![dispatch_id(seed), state, attempts, hex("registration")],
        )
        .unwrap();
    };
    insert("crashed", "checkpointed", 0);
    insert("failed", "failed", 2);
    drop(c);
    let j = open(&path);
    assert_eq!(attempts(&j, "crashed"), (DispatchState::Checkpointed, 1));
    assert_eq!(attempts(&j, "failed"), (DispatchState::Failed, 2));
    assert!(j.integrity_check().unwrap());
}

/// A process that noted `attempts` in its ledger and ended before any of
/// their checkpoints committed (its file handle, and so its lock, is gone).
fn ended_process_noted(b: &Backend, attempts: &[Checkpoint]) {
    let ledger = super::super::ledger::Ledger::create(&b.ledger_dir()).unwrap();
    for c in attempts {
        ledger.note(c).unwrap();
    }
}

fn failures(j: &Journal, seed: &str) -> Vec<(u32, String)> {
    j.list_failures(&dispatch_id(seed)).unwrap().into_iter().map(|f| (f.attempt, f.code)).collect()
}

/// contract-v0 §1: max_invocations_per_dispatch bounds an identity's whole
/// life, crashes included. A provider that ends its process at its first
/// instruction does so before the queued checkpoint commits; its attempt
/// is still counted by whoever opens the journal next, and never presumed
/// to be still running.
fn attempts_an_ended_process_noted_are_counted_by_the_next_opener(b: &Backend) {
    let j = b.open();
    // c's checkpoint reached the journal before the end, d is already final, e went on to attempt 3.
    j.checkpoint(at("c", 1)).wait().unwrap();
    j.checkpoint(at("d", 1)).wait().unwrap();
    j.record_final(proposed("d", 1, "d", &[])).wait().unwrap();
    j.checkpoint(at("e", 3)).wait().unwrap();
    j.close();
    ended_process_noted(b, &[at("a", 1), at("b", 2), at("c", 1), at("d", 1), at("e", 2)]);

    let j = b.open();
    // a: never reached the journal; now checkpointed and failed at attempt 1.
    assert_eq!(attempts(&j, "a"), (DispatchState::Failed, 1));
    assert_eq!(failures(&j, "a"), vec![(1, "producer_failed".to_owned())]);
    assert!(j.get_dispatch(&dispatch_id("a")).unwrap().unwrap().request_json.is_some(), "recover() can run it");
    assert_eq!(attempts(&j, "b"), (DispatchState::Failed, 2));
    // c: its checkpoint was there; the attempt is now known to have ended.
    assert_eq!(attempts(&j, "c"), (DispatchState::Failed, 1));
    // d is final and e went on past the noted attempt: both untouched.
    assert_eq!(attempts(&j, "d").0, DispatchState::Proposed);
    assert_eq!(failures(&j, "d"), vec![]);
    assert_eq!(attempts(&j, "e"), (DispatchState::Checkpointed, 3));
    assert_eq!(failures(&j, "e"), vec![]);
    // The folded ledger is gone; only this opener's own file remains.
    let ledger_dir = b.ledger_dir();
    assert_eq!(std::fs::read_dir(&ledger_dir).unwrap().count(), 1);
    // Folding again changes nothing.
    assert_eq!(j.fold_ended_attempts().folded, 0);
    j.close();
    // A clean close removes the opener's own (empty) ledger, and its folder.
    assert!(!ledger_dir.exists());
}

/// The ledger of a process still running is never folded (its attempts may
/// still be running), and an attempt whose outcome committed leaves no entry.
fn a_live_process_s_ledger_is_not_folded_and_a_recorded_attempt_leaves_none(b: &Backend) {
    let live = b.open();
    let (tx, rx) = std::sync::mpsc::channel();
    live.checkpoint_then(at("a", 1), Box::new(move |r| tx.send(r).unwrap())).unwrap();
    rx.recv().unwrap().unwrap();
    let other = b.open();
    assert_eq!(other.fold_ended_attempts().folded, 0);
    assert_eq!(attempts(&other, "a"), (DispatchState::Checkpointed, 1));
    live.record_final(proposed("a", 1, "a", &[])).wait().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    live.checkpoint_then(at("b", 1), Box::new(move |r| tx.send(r).unwrap())).unwrap();
    rx.recv().unwrap().unwrap();
    // The live journal ends without closing: as a killed process would.
    std::mem::forget(live);
    assert_eq!(other.fold_ended_attempts().folded, 0, "its lock is still held by this process's handle");
    other.close();
}

/// A checkpoint queued the way the dispatcher queues it (noted in the attempt
/// ledger first), committed.
fn noted_checkpoint(j: &Journal, c: Checkpoint) {
    let (tx, rx) = std::sync::mpsc::channel();
    j.checkpoint_then(c, Box::new(move |r| tx.send(r).unwrap())).unwrap();
    rx.recv().unwrap().unwrap();
}

fn a_final_record_whose_checkpoint_the_journal_lost_writes_it_again_with_its_attempt(b: &Backend) {
    let j = b.open();
    for seed in ["a", "b", "c"] {
        noted_checkpoint(&j, at(seed, 2));
    }
    // What a server that crashed before flushing the checkpoints' WAL leaves.
    b.execute("DELETE FROM requests; DELETE FROM dispatches");
    assert_eq!(j.get_dispatch(&dispatch_id("a")).unwrap(), None);
    assert_eq!(j.record_final(proposed("a", 2, "r", &["a1"])).wait(), Ok(RecordOutcome::Recorded));
    // Two at once: on PostgreSQL they share one merged statement.
    let (b2, c2) = (j.record_final(proposed("b", 2, "r", &["b1"])), j.record_final(proposed("c", 2, "r", &[])));
    assert_eq!(b2.wait(), Ok(RecordOutcome::Recorded));
    assert_eq!(c2.wait(), Ok(RecordOutcome::Recorded));
    for seed in ["a", "b"] {
        assert_eq!(attempts(&j, seed), (DispatchState::Proposed, 2), "{seed}");
    }
    let intents = j.list_intents(&IntentFilter::default()).unwrap().items;
    assert_eq!(intents.len(), 2);
    // An identity this journal never checkpointed is still the caller's error.
    assert_eq!(j.record_final(proposed("d", 1, "r", &[])).wait(), Err(JournalError::UnknownDispatch));
}
