//! The writer's figures for observers: queue depth, batch-size and latency
//! histograms, and the per-batch info handed to `after_batch` callbacks.

use std::sync::{Arc, Mutex};

use rusqlite::Connection;

use super::*;
use crate::journal::{BatchInfo, BATCH_SIZE_BOUNDS};

both!(
    histograms_count_every_batch_and_the_queue_drains_to_zero,
    queue_depth_counts_commands_held_behind_another_connections_lock,
    wakes_count_the_writers_sleeps_not_its_commands,
    a_command_right_after_a_commit_finds_an_sqlite_writer_awake
);

/// One command at a time on an idle writer wakes it once each; commands that
/// queue while it is held up share its wake-ups.
fn wakes_count_the_writers_sleeps_not_its_commands(b: &Backend) {
    let j = b.open();
    // Past PostgreSQL's idle close (20 ms), so the writer is asleep when the next one comes.
    let pause = || std::thread::sleep(std::time::Duration::from_millis(60));
    // The first command may be queued before the new thread first waits.
    j.checkpoint(checkpoint("w")).wait().unwrap();
    pause();
    let before = j.writer_stats().wakes;
    for i in 0..5 {
        j.checkpoint(checkpoint(&format!("w{i}"))).wait().unwrap();
        // Long enough for the writer to go back to sleep before the next one.
        pause();
    }
    let one_by_one = j.writer_stats().wakes - before;
    assert_eq!(one_by_one, 5);
    let one_by_one = j.writer_stats().wakes;
    let lock = b.write_lock();
    let held = j.checkpoint(checkpoint("m"));
    // Past a checkpoint's linger: the writer now waits for the lock, not for commands.
    std::thread::sleep(std::time::Duration::from_millis(20));
    let queued: Vec<_> = (0..50).map(|i| j.checkpoint(checkpoint(&format!("m{i}")))).collect();
    std::thread::sleep(std::time::Duration::from_millis(50));
    drop(lock);
    assert!(held.wait().is_ok());
    queued.into_iter().for_each(|r| assert!(r.wait().is_ok()));
    let together = j.writer_stats().wakes - one_by_one;
    // Counted per command it would be 51.
    assert!(together < 25, "{together} wakes for 51 commands queued together");
}

/// After a batch an SQLite writer stays awake a moment: a caller that sends
/// its next command as soon as the last one is answered (one dispatch in
/// flight) does not have to wake it. A PostgreSQL writer sleeps at once.
fn a_command_right_after_a_commit_finds_an_sqlite_writer_awake(b: &Backend) {
    let j = b.open();
    let sqlite = matches!(b, Backend::Sqlite { .. });
    j.checkpoint(checkpoint("a")).wait().unwrap();
    let before = j.writer_stats().wakes;
    for i in 0..20 {
        j.checkpoint(checkpoint(&format!("a{i}"))).wait().unwrap();
        // Past the writer's own work after answering, as a JS caller's turn is.
        std::thread::sleep(std::time::Duration::from_micros(150));
    }
    let woken = j.writer_stats().wakes - before;
    if sqlite {
        // Woken for each, it would be 20; a scheduler that runs this thread
        // late after an answer may still cost a few.
        assert!(woken < 10, "{woken} wakes for 20 commands sent back to back");
    } else {
        assert!(woken > 10, "{woken} wakes for 20 commands sent back to back");
    }
}

fn histograms_count_every_batch_and_the_queue_drains_to_zero(b: &Backend) {
    let j = b.open();
    let seen: Arc<Mutex<Vec<BatchInfo>>> = Arc::default();
    let sink = Arc::clone(&seen);
    j.after_batch(Arc::new(move |info| sink.lock().unwrap().push(*info)));
    let replies: Vec<_> = (0..40).map(|i| j.checkpoint(checkpoint(&format!("o{i}")))).collect();
    replies.into_iter().for_each(|r| assert_eq!(r.wait().unwrap(), CheckpointState::Fresh));
    j.record_final(proposed("o0", 1, "o0", &["o0"])).wait().unwrap();
    let stats = j.writer_stats();
    assert_eq!(stats.queue_depth, 0, "{stats:?}");
    assert_eq!(stats.batch_size_buckets.iter().sum::<u64>(), stats.commits);
    assert_eq!(stats.commit_micros_buckets.iter().sum::<u64>(), stats.commits);
    assert!(stats.commit_micros > 0);
    // after_batch runs after the answers, so wait for the last callback.
    for _ in 0..200 {
        if seen.lock().unwrap().len() as u64 == stats.commits {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len() as u64, stats.commits);
    assert_eq!(seen.iter().map(|b| b.size).sum::<u64>(), 41);
    assert!(seen.iter().all(|b| b.committed && b.busy_retries == 0));
    assert_eq!(seen.iter().filter(|b| b.durable).count() as u64, stats.durable_commits);
    let largest = seen.iter().map(|b| b.size).max().unwrap();
    let at = BATCH_SIZE_BOUNDS.iter().position(|b| largest <= *b).unwrap_or(BATCH_SIZE_BOUNDS.len());
    assert!(stats.batch_size_buckets[at] >= 1);
}

/// Commands count as queued from their submission until their batch ended,
/// however long it waits for another connection's lock.
fn queue_depth_counts_commands_held_behind_another_connections_lock(b: &Backend) {
    let j = b.open();
    j.checkpoint(checkpoint("x")).wait().unwrap();
    let lock = b.write_lock();
    let waiting: Vec<_> = (0..5).map(|i| j.checkpoint(checkpoint(&format!("q{i}")))).collect();
    assert_eq!(j.writer_stats().queue_depth, 5);
    // Long enough for an unheld batch to commit several times over.
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert_eq!(j.writer_stats().queue_depth, 5, "still held");
    drop(lock);
    for r in waiting {
        assert_eq!(r.wait().unwrap(), CheckpointState::Fresh);
    }
    assert_eq!(j.writer_stats().queue_depth, 0);
    assert_eq!(j.stats().unwrap().checkpointed, 6);
}

// SQLite only: `busy_timeout_ms` bounds waits for SQLite's lock.
#[test]
fn queue_depth_counts_commands_waiting_behind_a_lock_and_busy_retries_reach_the_batch() {
    let dir = TempDir::new("observe-busy");
    let path = dir.file("j.sqlite");
    let j = open_file(&path, JournalOptions { busy_timeout_ms: 20, ..Default::default() }).unwrap();
    j.checkpoint(checkpoint("x")).wait().unwrap();
    let seen: Arc<Mutex<Vec<BatchInfo>>> = Arc::default();
    let sink = Arc::clone(&seen);
    j.after_batch(Arc::new(move |info| sink.lock().unwrap().push(*info)));
    let lock = Connection::open(&path).unwrap();
    lock.execute_batch("BEGIN IMMEDIATE").unwrap();
    let waiting: Vec<_> = (0..5).map(|i| j.checkpoint(checkpoint(&format!("q{i}")))).collect();
    assert!(j.writer_stats().queue_depth >= 1, "{:?}", j.writer_stats());
    for r in waiting {
        assert_eq!(r.wait().unwrap_err(), JournalError::Busy);
    }
    lock.execute_batch("ROLLBACK").unwrap();
    assert_eq!(j.writer_stats().queue_depth, 0);
    for _ in 0..200 {
        if seen.lock().unwrap().iter().any(|b| !b.committed) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let failed: Vec<_> = seen.lock().unwrap().iter().filter(|b| !b.committed).copied().collect();
    assert!(!failed.is_empty());
    assert!(failed.iter().all(|b| b.busy_retries == 3), "{failed:?}");
}

/// A batch's info is written straight from its struct, in the order of its
/// members' JSON names, the order a `Value` would print them in.
#[test]
fn a_batch_info_s_text_has_its_members_in_name_order() {
    let info = BatchInfo { busy_retries: 2, committed: true, durable: false, micros: 250, size: 7 };
    let text = serde_json::to_string(&info).unwrap();
    assert_eq!(text, serde_json::to_value(info).unwrap().to_string());
    assert_eq!(text, r#"{"busyRetries":2,"committed":true,"durable":false,"micros":250,"size":7}"#);
}
