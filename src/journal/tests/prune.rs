//! Retention: what a prune removes, what it keeps as the tombstone, and
//! what it never touches.

use super::*;
use crate::dispatch::receipt_from_row;

both!(
    prune_keeps_a_tombstone_and_never_touches_open_work,
    prune_respects_its_window_and_its_arguments,
    prune_archives_and_exports_before_removing,
    an_exporter_that_fails_rolls_its_batch_back,
    a_shipped_dialect_tombstone_keeps_the_intent_its_receipt_embeds
);

const EXECUTOR: &str = "executor.report";

/// `a`: proposed, one intent done and one rejected (prunable); `b`:
/// proposed with an open intent; `c`: checkpointed (owed); `d`: exhausted
/// after a failed attempt (prunable).
fn journal_with_history(b: &Backend) -> Journal {
    let j = b.open();
    for seed in ["a", "b", "c", "d"] {
        j.checkpoint(checkpoint(seed)).wait().unwrap();
    }
    j.record_final(proposed("a", 1, "ra", &["a1", "a2"])).wait().unwrap();
    j.record_final(proposed("b", 1, "rb", &["b1"])).wait().unwrap();
    j.record_failure(failure("d", 1)).wait().unwrap();
    let exhausted = FinalRecord {
        dispatch_id: dispatch_id("d"),
        attempt: 1,
        status: FinalStatus::Exhausted,
        result_digest: None,
        intents: Vec::new(),
        failure: Some(("dispatch_budget_exhausted".into(), None)),
    };
    j.record_final(exhausted).wait().unwrap();
    j.decide(&intent_id("a1"), EXECUTOR, Decision::Admit, "policy_ok").wait().unwrap();
    j.mark_done(&intent_id("a1"), EXECUTOR).wait().unwrap();
    j.decide(&intent_id("a2"), EXECUTOR, Decision::Reject, "not_due").wait().unwrap();
    j
}

fn all(older_than_ms: u64) -> PruneOptions {
    PruneOptions { older_than_ms, batch_size: 1, ..PruneOptions::default() }
}

fn intents_of(j: &Journal, seed: &str) -> Vec<String> {
    let f = IntentFilter { dispatch_id: Some(dispatch_id(seed)), ..Default::default() };
    j.list_intents(&f).unwrap().items.into_iter().map(|i| i.intent_id).collect()
}

fn prune_keeps_a_tombstone_and_never_touches_open_work(b: &Backend) {
    let j = journal_with_history(b);
    let before = j.get_dispatch(&dispatch_id("a")).unwrap().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(5));
    let report = j.prune(&all(0), None).unwrap();
    assert_eq!((report.dispatches, report.intents, report.failures, report.archived), (2, 2, 1, 0), "{report:?}");
    assert_eq!(report.batches, 2, "one dispatch per batch");
    assert!(report.p99_batch_ms > 0.0 && report.p99_batch_ms <= report.longest_batch_ms, "{report:?}");

    let a = j.get_dispatch(&dispatch_id("a")).unwrap().unwrap();
    assert!(a.pruned_at.is_some());
    assert_eq!(a.intent_ids, [intent_id("a1"), intent_id("a2")], "the receipt's ids live in the tombstone");
    assert_eq!(receipt_from_row(&a), receipt_from_row(&before), "the receipt is unchanged");
    assert_eq!(a.result_digest.as_deref(), Some(hex("ra").as_str()));
    assert!(intents_of(&j, "a").is_empty());
    assert!(j.list_failures(&dispatch_id("d")).unwrap().is_empty());
    assert_eq!(j.get_dispatch(&dispatch_id("d")).unwrap().unwrap().state, DispatchState::Exhausted);

    // An open intent keeps its dispatch whole; an owed hook stays owed.
    assert_eq!(j.get_dispatch(&dispatch_id("b")).unwrap().unwrap().pruned_at, None);
    assert_eq!(intents_of(&j, "b"), [intent_id("b1")]);
    let owed: Vec<String> = j.unfinished().unwrap().into_iter().map(|r| r.dispatch_id).collect();
    assert_eq!(owed, [dispatch_id("c")]);
    assert!(j.get_dispatch(&dispatch_id("c")).unwrap().unwrap().request_json.is_some());

    // Recording the identity again answers the tombstone's receipt.
    let again = j.record_final(proposed("a", 1, "ra", &["a1", "a2"])).wait().unwrap();
    assert!(matches!(again, RecordOutcome::AlreadyFinal { .. }), "{again:?}");
    assert!(j.integrity_check().unwrap());
    // The journal's own figures, read without I/O: what it pruned and its size afterwards.
    let r = j.retention();
    assert_eq!((r.prunes, r.dispatches, r.intents, r.failures, r.archived), (1, 2, 2, 1, 0), "{r:?}");
    assert_eq!(r.storage.map(|s| s.pruned), Some(2));
    assert!(r.storage.unwrap().bytes > 0 && r.storage_at >= r.last_prune_at && r.last_prune_at.is_some());
    assert_eq!(j.storage().unwrap().pruned, 2);

    // Once b's intent closes, b goes too; nothing is pruned twice.
    j.decide(&intent_id("b1"), EXECUTOR, Decision::Reject, "not_due").wait().unwrap();
    let second = j.prune(&all(0), None).unwrap();
    assert_eq!((second.dispatches, second.intents), (1, 1));
    assert_eq!(j.prune(&all(0), None).unwrap().dispatches, 0);
    assert!(j.integrity_check().unwrap());
}

fn prune_respects_its_window_and_its_arguments(b: &Backend) {
    let j = journal_with_history(b);
    let report = j.prune(&all(3_600_000), None).unwrap();
    assert_eq!(report.dispatches, 0, "nothing is an hour old");
    assert_eq!((report.batches, report.longest_batch_ms, report.p99_batch_ms), (0, 0.0, 0.0));
    for size in [0, MAX_PRUNE_BATCH + 1] {
        let o = PruneOptions { batch_size: size, ..all(0) };
        assert_eq!(j.prune(&o, None), Err(JournalError::InvalidArgument { what: "batchSize" }));
    }
    let o = PruneOptions { older_than_ms: u64::MAX, ..all(0) };
    assert_eq!(j.prune(&o, None), Err(JournalError::InvalidArgument { what: "olderThanMs" }));
    let reader = b.open_read_only().unwrap();
    assert_eq!(reader.prune(&all(0), None), Err(JournalError::ReadOnly));
    assert_eq!(reader.storage().unwrap().pruned, 0);
    j.close();
    assert_eq!(j.prune(&all(0), None).map(|r| r.dispatches), Err(JournalError::Closed));
}

fn prune_archives_and_exports_before_removing(b: &Backend) {
    let j = journal_with_history(b);
    std::thread::sleep(std::time::Duration::from_millis(5));
    let mut seen = PrunedBatch::default();
    let mut export = |batch: &PrunedBatch| {
        // The rows are still there when the exporter runs.
        seen.dispatches.extend(batch.dispatches.iter().cloned());
        seen.intents.extend(batch.intents.iter().cloned());
        seen.failures.extend(batch.failures.iter().cloned());
        Ok(())
    };
    let o = PruneOptions { archive: true, batch_size: 10, ..all(0) };
    let report = j.prune(&o, Some(&mut export)).unwrap();
    assert_eq!((report.dispatches, report.intents, report.archived), (2, 2, 2));
    let ids: Vec<&str> = seen.dispatches.iter().map(|d| d.dispatch_id.as_str()).collect();
    assert_eq!(ids, [dispatch_id("a"), dispatch_id("d")]);
    assert!(seen.dispatches.iter().all(|d| d.pruned_at.is_none()), "exported as they were");
    let intents: Vec<&str> = seen.intents.iter().map(|i| i.intent_id.as_str()).collect();
    assert_eq!(intents, [intent_id("a1"), intent_id("a2")]);
    assert!(seen.intents.iter().all(|i| !i.stored_json.is_empty()));
    assert_eq!(seen.failures.len(), 1);
    assert!(j.integrity_check().unwrap());
}

fn an_exporter_that_fails_rolls_its_batch_back(b: &Backend) {
    let j = journal_with_history(b);
    std::thread::sleep(std::time::Duration::from_millis(5));
    let mut export = |_: &PrunedBatch| Err(JournalError::Io { kind: std::io::ErrorKind::StorageFull });
    let failed = j.prune(&all(0), Some(&mut export));
    assert_eq!(failed, Err(JournalError::Io { kind: std::io::ErrorKind::StorageFull }));
    assert_eq!(j.get_dispatch(&dispatch_id("a")).unwrap().unwrap().pruned_at, None);
    assert_eq!(intents_of(&j, "a").len(), 2, "nothing was removed");
    let r = j.retention();
    assert_eq!((r.prunes, r.dispatches, r.storage), (1, 0, None), "a failed prune counts, its rows do not");
    assert_eq!(j.prune(&all(0), None).unwrap().dispatches, 2, "a later prune still can");
}

/// A `loopx-shipped-v0` dispatch, proposed with one intent the executor closed.
fn shipped(j: &Journal, seed: &str) -> String {
    use crate::dialect::shipped::{engine, Intent};
    let c = Checkpoint {
        dialect: crate::contract::Dialect::LoopxShippedV0,
        recorded_at: Some("2026-09-02T12:00:00Z".into()),
        ..checkpoint(seed)
    };
    let intent: Intent = serde_json::from_value(serde_json::json!({
        "schema_version": "loopx_capability_intent_v0",
        "intent_kind": "periodic_report.deliver",
        "idempotency_key": format!("periodic-report:{seed}"),
        "source_receipt_id": format!("pwr_{seed}"),
        "payload": { "stage": seed, "nested": { "n": [1, 2] } },
        "requested_write_scope": [],
    }))
    .unwrap();
    let row = engine::stored_intent(&c.dispatch_id, &c.capability_id, &intent);
    let intent_id = row.intent_id.clone();
    j.checkpoint(c.clone()).wait().unwrap();
    j.record_failure(failure(seed, 1)).wait().unwrap();
    let record = FinalRecord {
        dispatch_id: c.dispatch_id.clone(),
        attempt: 2,
        status: FinalStatus::Proposed,
        result_digest: Some(hex("shipped")),
        intents: vec![row],
        failure: None,
    };
    j.record_final(record).wait().unwrap();
    j.decide(&intent_id, EXECUTOR, Decision::Admit, "policy_ok").wait().unwrap();
    j.mark_done(&intent_id, EXECUTOR).wait().unwrap();
    c.dispatch_id
}

fn a_shipped_dialect_tombstone_keeps_the_intent_its_receipt_embeds(b: &Backend) {
    use crate::dialect::shipped::engine;
    let j = b.open();
    let id = shipped(&j, "s");
    let before = j.get_dispatch(&id).unwrap().unwrap();
    let receipt = engine::receipt_from_row(&before).expect("a proposed shipped row has a receipt");
    assert!(receipt.intent.is_some());
    std::thread::sleep(std::time::Duration::from_millis(5));
    let report = j.prune(&all(0), None).unwrap();
    assert_eq!((report.dispatches, report.intents, report.failures), (1, 1, 1), "{report:?}");

    let after = j.get_dispatch(&id).unwrap().unwrap();
    assert!(after.pruned_at.is_some());
    assert!(j.list_failures(&id).unwrap().is_empty());
    let f = IntentFilter { dispatch_id: Some(id.clone()), ..Default::default() };
    assert!(j.list_intents(&f).unwrap().items.is_empty(), "the intent row is gone");
    assert_eq!(engine::receipt_from_row(&after), Some(receipt), "the receipt, intent and all, is unchanged");
    assert_eq!(engine::intent_key(&after).as_deref(), Some("periodic-report:s"));
    assert!(j.integrity_check().unwrap());

    // A replay's record finds the tombstone's receipt; a second prune finds nothing.
    let again = FinalRecord {
        dispatch_id: id.clone(),
        attempt: 2,
        status: FinalStatus::Proposed,
        result_digest: Some(hex("shipped")),
        intents: Vec::new(),
        failure: None,
    };
    match j.record_final(again).wait().unwrap() {
        RecordOutcome::AlreadyFinal { row } => {
            assert_eq!(engine::receipt_from_row(&row), engine::receipt_from_row(&after))
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(j.prune(&all(0), None).unwrap().dispatches, 0);
}

/// A file switched to incremental vacuum offline, as durability.md says,
/// gives freed pages back to the file system in steps; the open itself never
/// sets the mode (a power cut while a file is created must leave a journal).
#[test]
fn a_sqlite_journal_switched_to_incremental_vacuum_gives_space_back() {
    let b = Backend::sqlite("prune_space");
    let j = b.open();
    for n in 0..400 {
        let seed = format!("s{n}");
        j.checkpoint(checkpoint(&seed)).wait().unwrap();
        j.record_final(proposed(&seed, 1, "r", &[&format!("{seed}i")])).wait().unwrap();
        j.decide(&intent_id(&format!("{seed}i")), EXECUTOR, Decision::Reject, "not_due").wait().unwrap();
    }
    j.close();
    drop(j);
    {
        let conn = rusqlite::Connection::open(b.path()).unwrap();
        let mode: i64 = conn.query_row("PRAGMA auto_vacuum", [], |r| r.get(0)).unwrap();
        assert_eq!(mode, 0, "a new journal keeps SQLite's default");
        conn.execute_batch("PRAGMA auto_vacuum = INCREMENTAL; VACUUM").unwrap();
    }
    let j = b.open();
    let before = j.storage().unwrap().bytes;
    std::thread::sleep(std::time::Duration::from_millis(5));
    let report = j.prune(&PruneOptions { batch_size: 100, ..all(0) }, None).unwrap();
    assert_eq!(report.dispatches, 400);
    assert!(report.reclaimed_bytes > 0, "{report:?}");
    let after = j.storage().unwrap();
    assert!(after.bytes < before, "{before} -> {after:?}");
    assert_eq!(after.pruned, 400);
    assert!(j.integrity_check().unwrap());
}
