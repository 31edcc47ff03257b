//! The journal's busy timeout bounds lock waits on PostgreSQL as it does on
//! SQLite: a lock another session holds past it answers `Busy`.

use std::sync::mpsc;
use std::time::Duration;

use super::{url, Schema};
use crate::journal::tests::{checkpoint, intent_id, proposed};
use crate::journal::*;

#[test]
fn a_row_lock_held_past_the_busy_timeout_answers_busy_and_the_journal_goes_on() {
    let s = Schema::new("lock_timeout");
    let options = JournalOptions { busy_timeout_ms: 50, ..JournalOptions::default() };
    let j = Journal::open(&s.target, options, OpenMode::ReadWrite).unwrap();
    assert_eq!(j.checkpoint(checkpoint("a")).wait(), Ok(CheckpointState::Fresh));
    assert_eq!(j.record_final(proposed("a", 1, "a", &["a1"])).wait(), Ok(RecordOutcome::Recorded));

    // Another session locks the intent's row and keeps it until told (or 30 s).
    let (locked_tx, locked_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let setup = format!("SET search_path TO \"{}\"; BEGIN; SELECT 1 FROM intents FOR UPDATE", s.target.schema);
    let holder = std::thread::spawn(move || {
        let mut c = ::postgres::Client::connect(&url(), ::postgres::NoTls).unwrap();
        c.batch_execute(&setup).unwrap();
        locked_tx.send(()).unwrap();
        let _ = release_rx.recv_timeout(Duration::from_secs(30));
        c.batch_execute("ROLLBACK").unwrap();
    });
    locked_rx.recv().unwrap();
    let blocked = j.decide(&intent_id("a1"), "exec", Decision::Admit, "ok").wait();
    release_tx.send(()).unwrap();
    holder.join().unwrap();
    assert_eq!(blocked, Err(JournalError::Busy));

    assert_eq!(j.decide(&intent_id("a1"), "exec", Decision::Admit, "ok").wait(), Ok(DecideOutcome::Decided));
}
