//! Leases: consumers that share the outbox, and schema v2's migration.

use std::time::{Duration, Instant};

use rusqlite::Connection;

use super::super::sqlite::open::upgrade;
use super::super::sqlite::schema::MIGRATIONS;
use super::*;

both!(
    claims_share_the_open_intents_oldest_first_and_an_empty_claim_writes_nothing,
    decide_and_done_need_the_live_lease,
    a_successor_finishes_what_a_dead_holder_admitted,
    a_commit_wakes_waiters_on_the_same_journal_in_this_process,
    executors_on_two_journals_claim_disjoint_intents_and_decide_under_their_lease
);

fn journal_with_intents(b: &Backend, seeds: &[&str]) -> Journal {
    let j = b.open();
    j.checkpoint(checkpoint("a")).wait().unwrap();
    j.record_final(proposed("a", 1, "r", seeds)).wait().unwrap();
    j
}

fn claim(j: &Journal, executor: &str, lease_ms: u32, batch: u32) -> Vec<String> {
    let r = ClaimRequest { executor_id: executor.into(), lease_ms, batch, capability_id: None, intent_kind: None };
    j.claim(r).wait().unwrap().into_iter().map(|i| i.intent_id).collect()
}

fn claims_share_the_open_intents_oldest_first_and_an_empty_claim_writes_nothing(b: &Backend) {
    let j = journal_with_intents(b, &["i1", "i2", "i3"]);
    assert_eq!(claim(&j, "exec.a", 60_000, 2), vec![intent_id("i1"), intent_id("i2")]);
    assert_eq!(claim(&j, "exec.b", 60_000, 5), vec![intent_id("i3")]);
    let (commits, before) = (j.commit_count(), b.fingerprint());
    assert!(claim(&j, "exec.c", 60_000, 5).is_empty());
    assert_eq!(b.fingerprint(), before, "nothing claimable: nothing written");
    let transactions = match b {
        // Answered from a read: no write transaction at all.
        Backend::Sqlite { .. } => 0,
        // One writer transaction (the claim locks what it takes) that changes no row.
        Backend::Postgres(_) => 1,
    };
    assert_eq!(j.commit_count(), commits + transactions);
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

fn decide_and_done_need_the_live_lease(b: &Backend) {
    let j = journal_with_intents(b, &["i1", "i2"]);
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

fn a_successor_finishes_what_a_dead_holder_admitted(b: &Backend) {
    let j = journal_with_intents(b, &["i1"]);
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

fn a_commit_wakes_waiters_on_the_same_journal_in_this_process(b: &Backend) {
    let writer = b.open();
    let consumer = b.open();
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

/// Two journals on one target claim at once: each intent goes to one of them,
/// and only the holder of its lease decides.
fn executors_on_two_journals_claim_disjoint_intents_and_decide_under_their_lease(b: &Backend) {
    let seeds: Vec<String> = (0..10).map(|n| format!("i{n}")).collect();
    let refs: Vec<&str> = seeds.iter().map(String::as_str).collect();
    let (x, y) = (journal_with_intents(b, &refs), b.open());
    let (rx, ry) = std::thread::scope(|t| {
        let rx = t.spawn(|| claim(&x, "exec.x", 60_000, 6));
        let ry = t.spawn(|| claim(&y, "exec.y", 60_000, 6));
        (rx.join().unwrap(), ry.join().unwrap())
    });
    let mut all: Vec<String> = rx.iter().chain(ry.iter()).cloned().collect();
    all.sort();
    all.dedup();
    assert_eq!(all.len(), 10, "every intent claimed once: {rx:?} {ry:?}");
    let order = |ids: &[String]| ids.iter().map(|i| seeds.iter().position(|s| intent_id(s) == *i)).collect::<Vec<_>>();
    assert!(order(&rx).windows(2).all(|w| w[0] < w[1]), "oldest first");
    let mine = &rx[0];
    assert_eq!(y.decide(mine, "exec.y", Decision::Admit, "ok").wait(), Err(JournalError::LeaseNotHeld));
    assert_eq!(x.decide(mine, "exec.x", Decision::Admit, "ok").wait(), Ok(DecideOutcome::Decided));
    assert_eq!(x.decide(mine, "exec.x", Decision::Admit, "ok").wait(), Ok(DecideOutcome::SameDecision));
    assert_eq!(x.mark_done(mine, "exec.x").wait(), Ok(DoneOutcome::Done));
    assert_eq!(x.mark_done(mine, "exec.x").wait(), Ok(DoneOutcome::AlreadyDone));
    assert_eq!(x.stats().unwrap().intents_open, 9);
    assert!(claim(&y, "exec.z", 60_000, 20).is_empty(), "everything else is leased");
}

// SQLite only: migrates SQLite's own earlier schema.
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
    assert_eq!(SCHEMA_VERSION, 7);
    // A row written before dialects existed reads as the default dialect.
    let row = j.get_dispatch(&d).unwrap().unwrap();
    assert_eq!((row.dialect, row.recorded_at), (crate::contract::Dialect::ContractV0, None));
    assert_eq!(claim(&j, "exec.a", 60_000, 5), vec![intent_id("i1")]);
    assert_eq!(j.decide(&intent_id("i1"), "exec.a", Decision::Admit, "ok").wait(), Ok(DecideOutcome::Decided));
}
