//! A checkpoint handed to its attempt's final record (`RecordCommand::Begun`):
//! the journal ends as if the checkpoint then the record had been queued.

use super::*;

both!(
    a_begun_record_leaves_the_row_a_checkpoint_then_its_record_would,
    a_begun_record_of_an_identity_with_a_row_runs_as_its_checkpoint_then_its_record,
    a_begun_record_that_fails_still_counts_its_attempt
);

fn at(seed: &str, attempt: u32) -> Checkpoint {
    Checkpoint { attempt, ..checkpoint(seed) }
}

fn begun(seed: &str, attempt: u32, intents: &[&str]) -> RecordCommand {
    RecordCommand::Begun(Box::new(Begun {
        checkpoint: at(seed, attempt),
        record: proposed(seed, attempt, seed, intents),
    }))
}

fn record(j: &Journal, records: Vec<RecordCommand>) -> Vec<Result<RecordAnswer>> {
    let (tx, rx) = std::sync::mpsc::channel();
    j.record_many(records, Box::new(move |r| tx.send(r).unwrap())).unwrap();
    rx.recv().unwrap().unwrap()
}

/// The row as both ways write it: its times are the commit's own.
fn row(j: &Journal, seed: &str) -> DispatchRow {
    let row = j.get_dispatch(&dispatch_id(seed)).unwrap().unwrap();
    DispatchRow { seq: 0, created_at: 0, updated_at: 0, ..row }
}

fn a_begun_record_leaves_the_row_a_checkpoint_then_its_record_would(b: &Backend) {
    // A second journal on the same kind of backend, written the other way.
    let other = match b {
        Backend::Sqlite { .. } => Backend::sqlite("begun-pair"),
        Backend::Postgres(_) => Backend::postgres("begun_pair"),
    };
    let (one, two) = (b.open(), other.open());
    assert_eq!(
        record(&one, vec![begun("a", 1, &["a1", "a2"])]),
        vec![Ok(RecordAnswer::Final(RecordOutcome::Recorded))]
    );
    assert_eq!(two.checkpoint(at("a", 1)).wait().unwrap(), CheckpointState::Fresh);
    assert_eq!(two.record_final(proposed("a", 1, "a", &["a1", "a2"])).wait().unwrap(), RecordOutcome::Recorded);
    assert_eq!(row(&one, "a"), row(&two, "a"));
    let written = one.get_dispatch(&dispatch_id("a")).unwrap().unwrap();
    assert_eq!(written.created_at, written.updated_at);
    assert_eq!(written.request_json, None, "a final identity keeps no request");
    assert!(one.unfinished().unwrap().is_empty());
    assert_eq!(one.stats().unwrap().intents, 2);
}

fn a_begun_record_of_an_identity_with_a_row_runs_as_its_checkpoint_then_its_record(b: &Backend) {
    let j = b.open();
    // Another process counted attempt 1 and did not finish.
    j.checkpoint(at("a", 1)).wait().unwrap();
    assert_eq!(record(&j, vec![begun("a", 2, &["a1"])]), vec![Ok(RecordAnswer::Final(RecordOutcome::Recorded))]);
    let r = row(&j, "a");
    assert_eq!((r.state, r.attempts, r.request_json), (DispatchState::Proposed, 2, None));
    // Final already: the row that stands is the answer, unchanged.
    let again = record(&j, vec![begun("a", 3, &["a9"])]);
    let standing = j.get_dispatch(&dispatch_id("a")).unwrap().unwrap();
    assert_eq!(again, vec![Ok(RecordAnswer::Final(RecordOutcome::AlreadyFinal { row: Box::new(standing.clone()) }))]);
    assert_eq!((standing.attempts, standing.intent_ids.len()), (2, 1));
}

fn a_begun_record_that_fails_still_counts_its_attempt(b: &Backend) {
    let j = b.open();
    record(&j, vec![begun("a", 1, &["taken"])]);
    // Its intent id is taken: the record is refused, the attempt stays counted and owed.
    let answers = record(&j, vec![begun("b", 1, &["taken"]), begun("c", 1, &["c1"])]);
    assert_eq!(answers[0], Err(JournalError::DuplicateIntent));
    assert_eq!(answers[1], Ok(RecordAnswer::Final(RecordOutcome::Recorded)));
    let r = row(&j, "b");
    assert_eq!((r.state, r.attempts, r.intent_ids.len()), (DispatchState::Checkpointed, 1, 0));
    let owed = j.unfinished().unwrap();
    assert_eq!(owed.iter().map(|r| r.dispatch_id.clone()).collect::<Vec<_>>(), vec![dispatch_id("b")]);
    assert!(owed[0].request_json.is_some(), "recover() needs the request");
    // Checked like the two it stands for, and they must be one attempt's.
    let mut mismatched = Begun { checkpoint: at("d", 1), record: proposed("d", 2, "d", &[]) };
    let err = j.record_many(vec![RecordCommand::Begun(Box::new(mismatched.clone()))], Box::new(|_| ())).unwrap_err();
    assert_eq!(err, JournalError::InvalidArgument { what: "checkpoint" });
    mismatched.checkpoint.dispatch_id = "not an id".into();
    let err = j.record_many(vec![RecordCommand::Begun(Box::new(mismatched))], Box::new(|_| ())).unwrap_err();
    assert_eq!(err, JournalError::InvalidArgument { what: "dispatch_id" });
}
