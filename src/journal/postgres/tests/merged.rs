//! Merged commands on PostgreSQL (`merged.rs`, `../merge.rs`) against a real
//! server. Each test holds the writer in a batch of its own (its record waits
//! for a row lock another connection holds) while it queues its commands, so
//! they all land in the next batch together and run merged. The reference
//! for every answer is the SQLite journal, which runs the same commands one
//! by one, each in its own savepoint.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use super::{url, Schema};
use crate::journal::tests::{checkpoint, dispatch_id, failure, intent_id, open, proposed, TempDir};
use crate::journal::*;

mod generated;

/// The writers of `journals` held in a batch each until [`Held::release`].
struct Held {
    release: mpsc::Sender<()>,
    thread: JoinHandle<()>,
}

fn hold(s: &Schema, journals: &[&Journal]) -> Held {
    let gates: Vec<String> = (0..journals.len()).map(|n| format!("gate{n}")).collect();
    for (j, gate) in journals.iter().zip(&gates) {
        j.checkpoint(checkpoint(gate)).wait().unwrap();
    }
    let ids: Vec<String> = gates.iter().map(|g| dispatch_id(g)).collect();
    let setup = format!("SET search_path TO \"{}\"", s.target.schema);
    let (ready_tx, ready) = mpsc::channel();
    let (release, release_rx) = mpsc::channel::<()>();
    let thread = std::thread::spawn(move || {
        let mut c = ::postgres::Client::connect(&url(), ::postgres::NoTls).unwrap();
        c.batch_execute(&setup).unwrap();
        let mut tx = c.transaction().unwrap();
        tx.query("SELECT 1 FROM dispatches WHERE dispatch_id = ANY($1) FOR UPDATE", &[&ids]).unwrap();
        ready_tx.send(()).unwrap();
        let _ = release_rx.recv();
        tx.commit().unwrap();
    });
    ready.recv().unwrap();
    for (j, gate) in journals.iter().zip(&gates) {
        // Answered after the release; nobody waits for it.
        drop(j.record_final(proposed(gate, 1, gate, &[])));
    }
    // Long enough for each writer to be inside that batch, waiting for the lock.
    std::thread::sleep(Duration::from_millis(300));
    Held { release, thread }
}

impl Held {
    fn release(self) {
        let _ = self.release.send(());
        self.thread.join().unwrap();
    }
}

/// Sizes of the batches `j` commits from now on.
fn batch_sizes(j: &Journal) -> Arc<Mutex<Vec<u64>>> {
    let sizes = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&sizes);
    j.after_batch(Arc::new(move |b: &BatchInfo| seen.lock().unwrap().push(b.size)));
    sizes
}

enum Cmd {
    Cp(Checkpoint),
    Final(FinalRecord),
    Many(Vec<RecordCommand>),
}

type Pending = Box<dyn FnOnce() -> String>;

fn row(r: &DispatchRow) -> String {
    format!("{:?} attempts={} digest={:?}", r.state, r.attempts, r.result_digest)
}

fn outcome(o: RecordOutcome) -> String {
    match o {
        RecordOutcome::AlreadyFinal { row: r } => format!("already final: {}", row(&r)),
        o => format!("{o:?}"),
    }
}

/// Queues `cmd` on `j`; the returned closure waits for its answer, in a form
/// both backends share (no seq or timestamps).
fn queue(j: &Journal, cmd: &Cmd) -> Pending {
    match cmd {
        Cmd::Cp(c) => {
            let reply = j.checkpoint(c.clone());
            Box::new(move || match reply.wait() {
                Ok(CheckpointState::Final { row: r }) => format!("final: {}", row(&r)),
                other => format!("{other:?}"),
            })
        }
        Cmd::Final(f) => {
            let reply = j.record_final(f.clone());
            Box::new(move || format!("{:?}", reply.wait().map(outcome)))
        }
        Cmd::Many(records) => {
            let (tx, rx) = mpsc::channel();
            j.record_many(records.clone(), Box::new(move |r| drop(tx.send(r)))).unwrap();
            Box::new(move || {
                let answers = rx.recv().unwrap().unwrap();
                let one = |a: Result<RecordAnswer>| match a {
                    Ok(RecordAnswer::Final(o)) => outcome(o),
                    Ok(RecordAnswer::Failure(FailureOutcome::AlreadyFinal { row: r })) => {
                        format!("failure on final: {}", row(&r))
                    }
                    Ok(RecordAnswer::Deferred(CheckpointState::Final { row: r })) => {
                        format!("deferred on final: {}", row(&r))
                    }
                    other => format!("{other:?}"),
                };
                answers.into_iter().map(one).collect::<Vec<_>>().join(" | ")
            })
        }
    }
}

/// What a journal holds for `seeds`, in a form both backends share.
fn contents(j: &Journal, seeds: &[&str]) -> Vec<String> {
    let mut out: Vec<String> = seeds
        .iter()
        .map(|s| {
            let id = dispatch_id(s);
            let r = j.get_dispatch(&id).unwrap().map(|r| row(&r));
            let f: Vec<_> = j.list_failures(&id).unwrap().into_iter().map(|f| (f.attempt, f.code)).collect();
            format!("{s}: {r:?} failures={f:?}")
        })
        .collect();
    let intents = j.list_intents(&IntentFilter::default()).unwrap().items;
    out.push(format!("intents in order: {:?}", intents.iter().map(|i| &i.intent_id).collect::<Vec<_>>()));
    out
}

fn at(seed: &str, attempt: u32) -> Checkpoint {
    Checkpoint { attempt, ..checkpoint(seed) }
}

fn exhausted(seed: &str) -> FinalRecord {
    FinalRecord {
        dispatch_id: dispatch_id(seed),
        attempt: 1,
        status: FinalStatus::Exhausted,
        result_digest: None,
        intents: vec![],
        failure: Some(("producer_failed".into(), None)),
    }
}

/// Sets up `j`, then queues `batch` at once (held in one batch on PostgreSQL)
/// and returns the answers and what the journal then holds.
fn run(j: &Journal, held: Option<&Schema>, batch: &[Cmd], seeds: &[&str]) -> (Vec<String>, Vec<String>) {
    j.checkpoint(checkpoint("done")).wait().unwrap();
    j.record_final(proposed("done", 1, "done", &["done-i"])).wait().unwrap();
    for s in ["pend", "a", "b", "c", "x", "y"] {
        j.checkpoint(checkpoint(s)).wait().unwrap();
    }
    let gate = held.map(|s| hold(s, &[j]));
    let pending: Vec<Pending> = batch.iter().map(|c| queue(j, c)).collect();
    if let Some(g) = gate {
        g.release();
    }
    let answers = pending.into_iter().map(|p| p()).collect();
    (answers, contents(j, seeds))
}

const SEEDS: [&str; 11] = ["done", "pend", "a", "b", "c", "x", "y", "new1", "new2", "ghost", "gate0"];

#[test]
fn a_merged_batch_of_fresh_replayed_and_conflicting_identities_answers_each_as_alone() {
    use Cmd::{Cp, Final, Many};
    let batch = vec![
        Cp(checkpoint("new1")),
        Final(proposed("a", 1, "a", &["a-i"])),
        Cp(checkpoint("done")),
        Cp(at("pend", 2)),
        // A replay (the recorded digest) and a conflict (another digest).
        Final(proposed("done", 1, "done", &["done-i"])),
        Final(proposed("done", 1, "other", &["other-i"])),
        Cp(at("new1", 2)),
        Final(proposed("b", 1, "b", &[])),
        Final(proposed("new1", 2, "n", &["n-i", "n-j"])),
        Final(proposed("ghost", 1, "g", &[])),
        Many(vec![RecordCommand::Final(proposed("x", 1, "x", &["x-i"])), RecordCommand::Final(exhausted("y"))]),
        // The same identity twice in one group, then a checkpoint after its record.
        Final(proposed("a", 1, "a2", &["a2-i"])),
        Cp(checkpoint("a")),
        // A failed attempt cannot merge: it ends the segment.
        Many(vec![RecordCommand::Failure(failure("pend", 2))]),
        Cp(checkpoint("new2")),
        Final(exhausted("c")),
        Final(proposed("new2", 1, "n2", &["n2-i"])),
    ];
    let dir = TempDir::new("merged-ref");
    let reference = run(&open(&dir.file("j.db")), None, &batch, &SEEDS[..10]);

    let s = Schema::new("merged");
    let j = s.open();
    let sizes = batch_sizes(&j);
    let (answers, mut held) = run(&j, Some(&s), &batch, &SEEDS);
    assert_eq!(answers, reference.0);
    // The gate's own identity is the one row the reference has not.
    assert!(held.remove(10).starts_with("gate0: Some(\"Proposed"));
    assert_eq!(held, reference.1);
    assert!(sizes.lock().unwrap().contains(&(batch.len() as u64)), "one batch: {:?}", sizes.lock().unwrap());
    // No statement was refused: the batch ran merged, never the careful retry.
    assert_eq!(j.writer_stats().busy_retries, 0);
    assert!(j.integrity().unwrap().ok);
}

#[test]
fn a_duplicate_intent_in_a_merged_batch_fails_only_its_record() {
    use Cmd::{Cp, Final};
    let batch = vec![
        Cp(checkpoint("new1")),
        Final(proposed("a", 1, "a", &["a-i"])),
        // The intent id `a-i` again, in the same statement.
        Final(proposed("b", 1, "b", &["a-i"])),
        Final(proposed("x", 1, "x", &["x-i"])),
        // An intent id already in the journal.
        Final(proposed("c", 1, "c", &["done-i"])),
        Final(proposed("new1", 1, "n", &["n-i"])),
        Final(proposed("y", 1, "y", &["y-i", "x-i"])),
    ];
    let dir = TempDir::new("merged-dup-ref");
    let reference = run(&open(&dir.file("j.db")), None, &batch, &SEEDS[..10]);
    assert_eq!(reference.0.iter().filter(|a| a.contains("DuplicateIntent")).count(), 3);

    let s = Schema::new("merged_dup");
    let j = s.open();
    let (answers, mut held) = run(&j, Some(&s), &batch, &SEEDS);
    assert_eq!(answers, reference.0);
    held.remove(10);
    assert_eq!(held, reference.1);
    // The merged statement was refused once; the batch then ran carefully.
    assert_eq!(j.writer_stats().busy_retries, 1);
    assert!(j.integrity().unwrap().ok);
}

#[test]
fn two_writers_racing_merged_batches_commit_exactly_one_final_receipt_per_identity() {
    let s = Schema::new("merged_race");
    let hosts = [s.open(), s.open()];
    let seeds: Vec<String> = (0..40).map(|n| format!("r{n}")).collect();
    for seed in &seeds {
        hosts[0].checkpoint(checkpoint(seed)).wait().unwrap();
    }
    let gate = hold(&s, &[&hosts[0], &hosts[1]]);
    // Opposite orders, so the two batches also meet each other's row locks.
    let replies: Vec<Vec<_>> = hosts
        .iter()
        .enumerate()
        .map(|(n, h)| {
            let mut order: Vec<&String> = seeds.iter().collect();
            if n == 1 {
                order.reverse();
            }
            let replies: Vec<_> = order
                .into_iter()
                .map(|seed| {
                    let mine = format!("{seed}-{n}");
                    (seed.clone(), mine.clone(), h.record_final(proposed(seed, 1, &mine, &[&mine])))
                })
                .collect();
            replies
        })
        .collect();
    gate.release();
    let mut recorded = std::collections::HashMap::new();
    let mut lost = Vec::new();
    for (seed, mine, reply) in replies.into_iter().flatten() {
        match reply.wait().unwrap() {
            RecordOutcome::Recorded => assert!(recorded.insert(seed, mine).is_none(), "two receipts"),
            RecordOutcome::AlreadyFinal { row } => lost.push((seed, row.result_digest)),
        }
    }
    assert_eq!(recorded.len(), seeds.len());
    for (seed, digest) in lost {
        // The loser reads the winner's receipt.
        assert_eq!(digest, Some(crate::journal::tests::hex(&recorded[&seed])), "{seed}");
    }
    let stats = hosts[0].stats().unwrap();
    assert_eq!((stats.proposed, stats.intents), (42, 40));
    for (seed, mine) in &recorded {
        let intents =
            hosts[1].list_intents(&IntentFilter { dispatch_id: Some(dispatch_id(seed)), ..Default::default() });
        let ids: Vec<String> = intents.unwrap().items.into_iter().map(|i| i.intent_id).collect();
        assert_eq!(ids, vec![intent_id(mine)]);
    }
    assert!(hosts[1].integrity().unwrap().ok);
}

#[test]
fn the_transaction_opened_with_commit_holds_the_next_batch_closes_when_idle_and_dies_with_its_connection() {
    use crate::journal::postgres::conn::{Bounds, Link};
    use crate::journal::postgres::writer::PgWriteConn;
    use crate::journal::writer::BatchConn;

    let s = Schema::new("preopen");
    drop(s.open());
    let schema = s.target.schema.as_str();
    let bounds = Bounds { connect: Duration::from_secs(5), statement: Duration::from_secs(5) };
    let link = Link::new(url().parse().unwrap(), None, schema, false, bounds);
    let mut w = PgWriteConn::new(link, schema, true, Duration::from_secs(15), None);
    // `SAVEPOINT` fails outside a transaction block: it tells whether one is open.
    let in_transaction = |w: &mut PgWriteConn| w.link.batch("SAVEPOINT probe");
    w.begin(true).unwrap();
    w.commit(true).unwrap();
    assert_eq!(in_transaction(&mut w), Ok(()), "COMMIT opened the next transaction");
    assert!(w.idle_after().is_some());
    w.begin(true).unwrap();
    w.rollback();
    assert!(in_transaction(&mut w).is_err(), "rolled back: no transaction is left open");
    assert_eq!(w.idle_after(), None);
    // Opened while a batch of checkpoints lingers: the batch runs in it.
    w.open_early();
    assert_eq!(in_transaction(&mut w), Ok(()));
    w.begin(false).unwrap();
    w.commit(false).unwrap();
    // No command for a while: the writer closes it.
    w.idle();
    assert!(in_transaction(&mut w).is_err());

    // Opened with COMMIT, then its connection is killed: the next batch
    // fails on it (no statement runs outside a transaction) and the retry
    // begins a new transaction on a new connection.
    w.begin(true).unwrap();
    w.commit(true).unwrap();
    s.sql(&format!(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'loopx-hooks:{schema}'"
    ));
    std::thread::sleep(Duration::from_millis(100));
    w.begin(true).unwrap();
    assert_eq!(in_transaction(&mut w), Err(JournalError::Unavailable));
    w.rollback();
    w.prepare_retry(false).unwrap();
    w.begin(true).unwrap();
    assert_eq!(in_transaction(&mut w), Ok(()));
    w.rollback();
    drop(w);

    // A journal's writer, once idle, leaves no transaction open.
    let j = s.open();
    j.checkpoint(checkpoint("idle")).wait().unwrap();
    j.record_final(proposed("idle", 1, "idle", &[])).wait().unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let open = s.sql(&format!(
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'loopx-hooks:{schema}' \
         AND state LIKE 'idle in transaction%'"
    ));
    assert_eq!(open[0].get::<_, i64>(0), 0);
}
