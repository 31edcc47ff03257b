//! Group commit, isolation of a failing command, several journals on one
//! target, BUSY, and closing.

use std::sync::{Arc, Barrier};
use std::time::Duration;

use super::*;

both!(
    concurrent_checkpoints_share_commits,
    concurrent_records_share_durable_commits,
    a_failing_command_leaves_its_batch_committed,
    two_journals_race_to_record_one_dispatch,
    close_finishes_queued_work_then_refuses
);

fn concurrent_checkpoints_share_commits(b: &Backend) {
    let j = Arc::new(b.open());
    let barrier = Arc::new(Barrier::new(64));
    let threads: Vec<_> = (0..64)
        .map(|i| {
            let (j, barrier) = (Arc::clone(&j), Arc::clone(&barrier));
            std::thread::spawn(move || {
                barrier.wait();
                j.checkpoint(checkpoint(&format!("g{i}"))).wait().unwrap()
            })
        })
        .collect();
    for t in threads {
        assert_eq!(t.join().unwrap(), CheckpointState::Fresh);
    }
    let stats = j.writer_stats();
    eprintln!("64 concurrent checkpoints: {stats:?}");
    assert_eq!(stats.commands, 64);
    assert!(stats.commits <= 16, "{stats:?}");
    assert_eq!(stats.durable_commits, 0, "checkpoints alone never fsync");
    assert_eq!(j.stats().unwrap().checkpointed, 64);
}

fn concurrent_records_share_durable_commits(b: &Backend) {
    let j = Arc::new(b.open());
    let replies: Vec<_> = (0..64).map(|i| j.checkpoint(checkpoint(&format!("g{i}")))).collect();
    replies.into_iter().for_each(|r| assert_eq!(r.wait().unwrap(), CheckpointState::Fresh));
    let before = j.writer_stats();
    let barrier = Arc::new(Barrier::new(64));
    let threads: Vec<_> = (0..64)
        .map(|i| {
            let (j, barrier) = (Arc::clone(&j), Arc::clone(&barrier));
            std::thread::spawn(move || {
                barrier.wait();
                let seed = format!("g{i}");
                j.record_final(proposed(&seed, 1, &seed, &[&seed])).wait().unwrap()
            })
        })
        .collect();
    for t in threads {
        assert_eq!(t.join().unwrap(), RecordOutcome::Recorded);
    }
    let after = j.writer_stats();
    eprintln!("64 concurrent records: {} durable commits", after.durable_commits - before.durable_commits);
    assert!(after.durable_commits - before.durable_commits <= 16, "{after:?}");
}

fn a_failing_command_leaves_its_batch_committed(b: &Backend) {
    let j = b.open();
    j.checkpoint(checkpoint("x")).wait().unwrap();
    let lock = b.write_lock();
    // The writer takes this one alone and waits for the lock ...
    let first = j.checkpoint(checkpoint("first"));
    std::thread::sleep(Duration::from_millis(200));
    // ... while these queue up and become one batch.
    let before: Vec<_> = (0..10).map(|i| j.checkpoint(checkpoint(&format!("b{i}")))).collect();
    let mut bad = proposed("x", 1, "r", &["x1"]);
    bad.intents.push(intent("x1", &dispatch_id("x")));
    let bad = j.record_final(bad);
    let after: Vec<_> = (10..20).map(|i| j.checkpoint(checkpoint(&format!("b{i}")))).collect();
    std::thread::sleep(Duration::from_millis(100));
    drop(lock);

    assert_eq!(first.wait().unwrap(), CheckpointState::Fresh);
    assert_eq!(bad.wait().unwrap_err(), JournalError::DuplicateIntent);
    for r in before.into_iter().chain(after) {
        assert_eq!(r.wait().unwrap(), CheckpointState::Fresh);
    }
    assert!(j.writer_stats().max_batch >= 21, "{:?}", j.writer_stats());
    assert_eq!(j.stats().unwrap().checkpointed, 22);
    let x = j.get_dispatch(&dispatch_id("x")).unwrap().unwrap();
    assert_eq!(x.state, DispatchState::Checkpointed, "the failed command was rolled back alone");
    assert!(j.list_intents(&IntentFilter::default()).unwrap().items.is_empty());
}

fn two_journals_race_to_record_one_dispatch(on: &Backend) {
    let a = Arc::new(on.open());
    let b = Arc::new(on.open());
    for round in 0..20 {
        let seed = format!("r{round}");
        let states = [a.checkpoint(checkpoint(&seed)).wait().unwrap(), b.checkpoint(checkpoint(&seed)).wait().unwrap()];
        assert_eq!(states[0], CheckpointState::Fresh);
        assert_eq!(states[1], CheckpointState::Pending { attempts_used: 1 });
        let barrier = Arc::new(Barrier::new(2));
        let threads: Vec<_> = [(Arc::clone(&a), "from-a"), (Arc::clone(&b), "from-b")]
            .into_iter()
            .map(|(j, digest)| {
                let (barrier, seed) = (Arc::clone(&barrier), seed.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    j.record_final(proposed(&seed, 1, digest, &[&format!("{seed}.{digest}")])).wait().unwrap()
                })
            })
            .collect();
        let outcomes: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        let recorded = outcomes.iter().filter(|o| **o == RecordOutcome::Recorded).count();
        assert_eq!(recorded, 1, "{outcomes:?}");
        let stored = a.get_dispatch(&dispatch_id(&seed)).unwrap().unwrap().result_digest;
        for o in &outcomes {
            if let RecordOutcome::AlreadyFinal { row } = o {
                assert_eq!(row.result_digest, stored, "the loser sees the winner's digest");
            }
        }
        let intents = a.list_intents(&IntentFilter { dispatch_id: Some(dispatch_id(&seed)), ..Default::default() });
        assert_eq!(intents.unwrap().items.len(), 1);
    }
    assert!(a.integrity_check().unwrap());
}

// SQLite only: `busy_timeout_ms` bounds waits for SQLite's lock.
#[test]
fn a_lock_held_too_long_answers_busy_then_recovers() {
    let b = Backend::sqlite("busy");
    let j = b.open_with(JournalOptions { busy_timeout_ms: 20, ..Default::default() }).unwrap();
    let lock = b.write_lock();
    let e = j.checkpoint(checkpoint("a")).wait().unwrap_err();
    assert_eq!((e.clone(), e.code()), (JournalError::Busy, "busy"));
    assert!(j.writer_stats().busy_retries >= 1);
    drop(lock);
    assert_eq!(j.checkpoint(checkpoint("a")).wait().unwrap(), CheckpointState::Fresh);
}

fn close_finishes_queued_work_then_refuses(b: &Backend) {
    let j = b.open();
    let queued: Vec<_> = (0..50).map(|i| j.checkpoint(checkpoint(&format!("c{i}")))).collect();
    j.close();
    for r in queued {
        assert_eq!(r.wait().unwrap(), CheckpointState::Fresh);
    }
    let e = j.checkpoint(checkpoint("late")).wait().unwrap_err();
    assert_eq!((e.clone(), e.code()), (JournalError::Closed, "journal_closed"));
    assert_eq!(j.decide(&intent_id("a"), "exec", Decision::Admit, "ok").wait().unwrap_err(), JournalError::Closed);
    assert_eq!(j.stats().unwrap_err(), JournalError::Closed);
    j.close();
    assert_eq!(b.open().stats().unwrap().checkpointed, 50);
}
