//! Inline commits (`JournalOptions::inline_commit`, SQLite only): within
//! `Journal::inline`, an idle writer lets the submitting thread commit;
//! outside it commands are queued as always; and a thread's commands still
//! commit in the order it submitted them when some are queued.

use std::sync::{Arc, Barrier, Mutex};
use std::thread::ThreadId;

use super::*;

const INLINE: JournalOptions =
    JournalOptions { synchronous_full: true, busy_timeout_ms: 5_000, attempt_ledger: true, inline_commit: true };

type Seen<T> = Arc<Mutex<Vec<(ThreadId, Result<T>)>>>;

fn noting<T: Send + 'static>(seen: &Seen<T>) -> Answer<T> {
    let seen = Arc::clone(seen);
    Box::new(move |r| seen.lock().unwrap().push((std::thread::current().id(), r)))
}

#[test]
fn an_idle_writer_lets_the_submitting_thread_commit() {
    let dir = TempDir::new("inline");
    let j = open_file(dir.file("j.sqlite"), INLINE).unwrap();
    assert!(j.commits_inline());
    let checkpoints: Seen<CheckpointState> = Arc::default();
    j.inline(|| j.checkpoint_then(checkpoint("a"), noting(&checkpoints))).unwrap();
    let here = std::thread::current().id();
    assert_eq!(*checkpoints.lock().unwrap(), vec![(here, Ok(CheckpointState::Fresh))], "answered before it returned");
    let records: Seen<Vec<Result<RecordAnswer>>> = Arc::default();
    j.inline(|| j.record_many(vec![RecordCommand::Final(proposed("a", 1, "r", &["a"]))], noting(&records))).unwrap();
    let answered = records.lock().unwrap();
    assert_eq!(answered.len(), 1);
    assert_eq!(answered[0].0, here);
    assert!(matches!(answered[0].1.as_deref(), Ok([Ok(RecordAnswer::Final(RecordOutcome::Recorded))])));
    let stats = j.writer_stats();
    assert_eq!((stats.commits, stats.durable_commits, stats.queue_depth), (2, 1, 0), "{stats:?}");
    assert_eq!(j.stats().unwrap().proposed, 1);
}

#[test]
fn outside_its_scope_a_command_is_queued_for_the_writer_thread() {
    let dir = TempDir::new("inline-outside");
    let j = open_file(dir.file("j.sqlite"), INLINE).unwrap();
    let checkpoints: Seen<CheckpointState> = Arc::default();
    j.checkpoint_then(checkpoint("a"), noting(&checkpoints)).unwrap();
    j.close();
    let answered = checkpoints.lock().unwrap();
    assert_eq!(answered.len(), 1);
    assert_ne!(answered[0].0, std::thread::current().id(), "answered on the writer thread");
}

#[test]
fn each_threads_commands_commit_in_its_order_whether_inline_or_queued() {
    // Every thread queues a checkpoint and at once its record: a record that
    // committed before its own checkpoint would be refused `UnknownDispatch`.
    const THREADS: usize = 8;
    const EACH: usize = 100;
    let dir = TempDir::new("inline-order");
    let j = Arc::new(open_file(dir.file("j.sqlite"), INLINE).unwrap());
    let barrier = Arc::new(Barrier::new(THREADS));
    let records: Seen<Vec<Result<RecordAnswer>>> = Arc::default();
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let (j, barrier, records) = (Arc::clone(&j), Arc::clone(&barrier), Arc::clone(&records));
            std::thread::spawn(move || {
                barrier.wait();
                for n in 0..EACH {
                    let seed = format!("t{t}n{n}");
                    let record = RecordCommand::Final(proposed(&seed, 1, &seed, &[&seed]));
                    j.inline(|| {
                        j.checkpoint_then(checkpoint(&seed), Box::new(|_| ())).unwrap();
                        j.record_many(vec![record], noting(&records)).unwrap();
                    });
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    j.close();
    let answered = records.lock().unwrap();
    assert_eq!(answered.len(), THREADS * EACH);
    let threads: std::collections::HashSet<_> = answered.iter().map(|(id, _)| *id).collect();
    for (_, r) in answered.iter() {
        assert!(matches!(r.as_deref(), Ok([Ok(RecordAnswer::Final(RecordOutcome::Recorded))])), "{r:?}");
    }
    let stats = j.writer_stats();
    eprintln!("inline under contention: records answered on {} threads; {stats:?}", threads.len());
    assert_eq!(stats.commands as usize, 2 * THREADS * EACH);
    assert_eq!(stats.queue_depth, 0);
}

#[test]
fn a_postgres_journal_refuses_inline_commits() {
    let target = PgTarget {
        connection_string: "postgres://nobody@127.0.0.1:1/none".into(),
        schema: "inline".into(),
        ca_file: None,
        limits: PgLimits::default(),
    };
    let err = Journal::open(&target, INLINE, OpenMode::ReadWrite).unwrap_err();
    assert_eq!(err, JournalError::InvalidArgument { what: "inline_commit" });
}
