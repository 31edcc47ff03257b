//! Leases: consumers that share the outbox, and schema v2's migration.

use std::time::{Duration, Instant};

use rusqlite::Connection;

use super::super::sqlite::open::upgrade;
use super::super::sqlite::schema::MIGRATIONS;
use super::*;

fn journal_with_intents(dir: &TempDir, seeds: &[&str]) -> Journal {
    let j = open(&dir.file("j.sqlite"));
    j.checkpoint(checkpoint("a")).wait().unwrap();
    j.record_final(proposed("a", 1, "r", seeds)).wait().unwrap();
    j
}

fn claim(j: &Journal, executor: &str, lease_ms: u32, batch: u32) -> Vec<String> {
    let r = ClaimRequest { executor_id: executor.into(), lease_ms, batch, capability_id: None, intent_kind: None };
    j.claim(r).wait().unwrap().into_iter().map(|i| i.intent_id).collect()
}

#[test]
fn claims_share_the_open_intents_oldest_first_and_an_empty_claim_writes_nothing() {
    let dir = TempDir::new("claim");
    let j = journal_with_intents(&dir, &["i1", "i2", "i3"]);
    assert_eq!(claim(&j, "exec.a", 60_000, 2), vec![intent_id("i1"), intent_id("i2")]);
    assert_eq!(claim(&j, "exec.b", 60_000, 5), vec![intent_id("i3")]);
    let commits = j.commit_count();
    assert!(claim(&j, "exec.c", 60_000, 5).is_empty());
    assert_eq!(j.commit_count(), commits, "nothing claimable: no transaction");
    let other_kind = ClaimRequest {
        executor_id: "exec.c".into(),
        lease_ms: 1,
        batch: 1,
        capability_id: Some("periodic_report".into()),
        intent_kind: Some("periodic_report.other".into()),
    };
    assert!(j.claim(other_kind).wait().unwrap().is_empty());
    let bad =
        ClaimRequest { executor_id: "exec.c".into(), lease_ms: 0, batch: 1, capability_id: None, intent_kind: None };
    assert_eq!(j.claim(bad).wait(), Err(JournalError::InvalidArgument { what: "leaseMs" }));
}

#[test]
fn decide_and_done_need_the_live_lease() {
    let dir = TempDir::new("lease-rules");
    let j = journal_with_intents(&dir, &["i1", "i2"]);
    let (i1, i2) = (intent_id("i1"), intent_id("i2"));
    assert_eq!(claim(&j, "exec.a", 60_000, 1), vec![i1.clone()]);
    assert_eq!(j.decide(&i1, "exec.b", Decision::Admit, "ok").wait(), Err(JournalError::LeaseNotHeld));
    assert_eq!(j.decide(&i1, "exec.a", Decision::Admit, "ok").wait(), Ok(DecideOutcome::Decided));
    assert_eq!(j.mark_done(&i1, "exec.b").wait(), Err(JournalError::LeaseNotHeld));
    assert_eq!(j.mark_done(&i1, "exec.a").wait(), Ok(DoneOutcome::Done));
    assert_eq!(j.mark_done(&i1, "exec.a").wait(), Ok(DoneOutcome::AlreadyDone));

    // An expired lease: its holder is refused; the intent is claimable again.
    assert_eq!(claim(&j, "exec.a", 1, 1), vec![i2.clone()]);
    std::thread::sleep(Duration::from_millis(5));
    assert_eq!(j.decide(&i2, "exec.a", Decision::Admit, "ok").wait(), Err(JournalError::LeaseExpired));
    assert_eq!(claim(&j, "exec.b", 60_000, 5), vec![i2.clone()]);
    assert_eq!(j.decide(&i2, "exec.b", Decision::Reject, "over_budget").wait(), Ok(DecideOutcome::Decided));
    // A rejection closes the intent and its lease.
    assert!(claim(&j, "exec.c", 60_000, 5).is_empty());
    let row = j.list_intents(&IntentFilter::default()).unwrap().items;
    assert_eq!(row[1].decision, Some(Decision::Reject));
}

#[test]
fn a_successor_finishes_what_a_dead_holder_admitted() {
    let dir = TempDir::new("lease-successor");
    let j = journal_with_intents(&dir, &["i1"]);
    let i1 = intent_id("i1");
    assert_eq!(claim(&j, "exec.dead", 500, 1), vec![i1.clone()]);
    assert_eq!(j.decide(&i1, "exec.dead", Decision::Admit, "ok").wait(), Ok(DecideOutcome::Decided));
    std::thread::sleep(Duration::from_millis(600));
    let r = ClaimRequest {
        executor_id: "exec.next".into(),
        lease_ms: 60_000,
        batch: 5,
        capability_id: None,
        intent_kind: None,
    };
    let claimed = j.claim(r).wait().unwrap();
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0].decision, Some(Decision::Admit), "the successor sees the decision on record");
    assert!(matches!(j.decide(&i1, "exec.next", Decision::Admit, "ok").wait(), Ok(DecideOutcome::Conflict { .. })));
    assert_eq!(j.mark_done(&i1, "exec.next").wait(), Ok(DoneOutcome::Done));
    let f = IntentFilter { pending_only: true, ..Default::default() };
    assert!(j.list_intents(&f).unwrap().items.is_empty());
}

#[test]
fn a_commit_wakes_waiters_on_the_same_file_in_this_process() {
    let dir = TempDir::new("lease-wake");
    let writer = open(&dir.file("j.sqlite"));
    let consumer = open(&dir.file("j.sqlite"));
    let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
    let generation = consumer.commit_generation();
    assert!(!rt.block_on(consumer.wait_for_commit(generation, Duration::from_millis(30))));
    let started = Instant::now();
    let recorder = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        writer.checkpoint(checkpoint("a")).wait().unwrap();
        writer.record_final(proposed("a", 1, "r", &["i1"])).wait().unwrap();
        writer
    });
    assert!(rt.block_on(consumer.wait_for_commit(generation, Duration::from_secs(20))));
    assert!(started.elapsed() < Duration::from_secs(10));
    recorder.join().unwrap().close();
    assert!(consumer.commit_generation() > generation);
}

#[test]
fn a_version_1_journal_migrates_to_leases_keeping_its_rows() {
    let dir = TempDir::new("lease-migrate");
    let path = dir.file("j.sqlite");
    let c = Connection::open(&path).unwrap();
    c.execute_batch("PRAGMA journal_mode=WAL").unwrap();
    upgrade(&c, &MIGRATIONS[..1]).unwrap();
    let v1: i32 = c.pragma_query_value(None, "user_version", |r| r.get(0)).unwrap();
    assert_eq!(v1, 1);
    let d = dispatch_id("a");
    c.execute(
        "INSERT INTO dispatches (dispatch_id, state, attempts, hook_id, capability_id, receipt_id, effect_id, \
         event_kind, registration_digest, result_digest, created_at, updated_at) \
         VALUES (?1, 'proposed', 1, 'periodic_report.runtime_trigger', 'periodic_report', 'receipt_a', 'effect_a', \
         'todo_completed', ?2, ?3, 1, 1)",
        rusqlite::params![d, hex("registration"), hex("r")],
    )
    .unwrap();
    let i = intent("i1", &d);
    c.execute(
        "INSERT INTO intents (intent_id, dispatch_id, capability_id, intent_kind, doc) VALUES (?1, ?2, ?3, ?4, ?5)",
        rusqlite::params![i.intent_id, d, i.capability_id, i.intent_kind, i.stored_json],
    )
    .unwrap();
    drop(c);
    let j = open(&path);
    let v: i32 = Connection::open(&path).unwrap().pragma_query_value(None, "user_version", |r| r.get(0)).unwrap();
    assert_eq!(v, SCHEMA_VERSION);
    assert_eq!(SCHEMA_VERSION, 3);
    assert_eq!(claim(&j, "exec.a", 60_000, 5), vec![intent_id("i1")]);
    assert_eq!(j.decide(&intent_id("i1"), "exec.a", Decision::Admit, "ok").wait(), Ok(DecideOutcome::Decided));
}
