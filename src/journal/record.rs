//! Dispatch records: checkpoint, final record, failed attempt. The `Journal`
//! methods check arguments and queue them to the store; the `run_*` functions
//! are the SQLite commands, run on the writer inside the group-commit
//! transaction and a savepoint (`postgres/records.rs` holds PostgreSQL's).

use rusqlite::{params, Connection, OptionalExtension};

use super::read::{dispatch_row, DISPATCH_COLS};
use super::types::{
    Checkpoint, CheckpointState, DispatchState, FailureOutcome, FailureRecord, FinalRecord, FinalStatus, RecordOutcome,
};
use super::writer::Answer;
use super::{arg, DispatchRow, Journal, JournalError, Reply, Result};

/// One record of a dispatch's final command (see [`Journal::record_many`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RecordCommand {
    Final(FinalRecord),
    Failure(FailureRecord),
    /// A hook that did not get its turn: its checkpoint (attempt 0) is
    /// written if the identity has no row, so it stays owed.
    Defer(Checkpoint),
}

/// The answer to one [`RecordCommand`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RecordAnswer {
    Final(RecordOutcome),
    Failure(FailureOutcome),
    Deferred(CheckpointState),
}

impl Journal {
    /// Inserts the checkpoint row of a dispatch identity, or reads where it stands.
    ///
    /// A batch of checkpoints commits with `synchronous=NORMAL`: in WAL mode the
    /// frames reach the OS but are not fsynced, so a checkpoint costs no fsync
    /// of its own; the next FULL commit (any record) makes it durable. This is
    /// safe because a checkpoint is reconstructible: the dispatch identity and
    /// request derive from the committed primary receipt the orchestrator holds,
    /// so a checkpoint lost to a power cut is re-created when the orchestrator
    /// recovers and dispatches again. It cannot lose a final receipt: records
    /// commit with FULL and only after their checkpoint row exists, and a
    /// durable record syncs every frame written before it.
    pub fn checkpoint(&self, c: Checkpoint) -> Reply<CheckpointState> {
        match check_checkpoint(&c) {
            Ok(()) => self.queue(|then| self.store.checkpoint(c, then)),
            Err(e) => Reply::ready(Err(e)),
        }
    }

    /// Queues a checkpoint without waiting for it: the writer's queue runs it
    /// before any record queued later, and `then` hears its answer on the
    /// writer thread. Argument errors are returned at once and queue nothing.
    ///
    /// The attempt is first written to this process's attempt ledger
    /// (`ledger.rs`), so it stays counted if the process ends before the
    /// commit: the next opener (or `fold_ended_attempts`) records it.
    pub fn checkpoint_then(&self, c: Checkpoint, then: Answer<CheckpointState>) -> Result<()> {
        check_checkpoint(&c)?;
        let noted = match (&self.ledger, c.attempt >= 1) {
            (Some(ledger), true) => {
                ledger.note(&c)?;
                Some((ledger, c.dispatch_id.clone()))
            }
            _ => None,
        };
        let queued = self.store.checkpoint(c, then);
        // Nothing was queued (closed, read-only), so the provider is not
        // called either: no attempt to count.
        if let (Err(_), Some((ledger, id))) = (&queued, noted) {
            ledger.clear(&id);
        }
        queued
    }

    /// Wraps `then` so that, once the records committed, the attempt ledger
    /// forgets the identities they finished or failed.
    fn clearing<T: Send + 'static>(&self, ids: Vec<String>, then: Answer<T>) -> Answer<T> {
        match &self.ledger {
            Some(ledger) if !ids.is_empty() => {
                let ledger = ledger.clone();
                Box::new(move |r: Result<T>| {
                    if r.is_ok() {
                        for id in &ids {
                            ledger.clear(id);
                        }
                    }
                    then(r)
                })
            }
            _ => then,
        }
    }

    /// Folds the attempt ledgers of processes that ended into the journal:
    /// each attempt they noted becomes the identity's checkpoint and, unless
    /// the identity went on without it, a failed attempt (`producer_failed`:
    /// it ended without an outcome), so it counts against the lifetime
    /// budget and is never presumed still running. A ledger is removed once
    /// all its attempts are recorded; one the journal refused stays for the
    /// next try. Blocks until done: call it off an async worker thread.
    /// Returns how many attempts were folded.
    pub fn fold_ended_attempts(&self) -> u32 {
        let Some(ledger) = &self.ledger else { return 0 };
        let mut folded = 0;
        for orphan in ledger.orphans() {
            let mut whole = true;
            for c in &orphan.entries {
                match self.fold_one(c) {
                    Ok(true) => folded += 1,
                    // Already recorded, or refused by the grammar (a tampered
                    // file): it can never fold, so it does not hold the file.
                    Ok(false) | Err(JournalError::InvalidArgument { .. } | JournalError::CredentialLike { .. }) => {}
                    Err(_) => {
                        whole = false;
                        break;
                    }
                }
            }
            if whole {
                orphan.remove();
            }
        }
        folded
    }

    fn fold_one(&self, c: &Checkpoint) -> Result<bool> {
        check_checkpoint(c)?;
        let (tx, rx) = std::sync::mpsc::channel();
        self.store.checkpoint(c.clone(), Box::new(move |r| drop(tx.send(r))))?;
        let used = match rx.recv().unwrap_or(Err(JournalError::Closed))? {
            CheckpointState::Fresh => 0,
            CheckpointState::Pending { attempts_used } => attempts_used,
            CheckpointState::Final { .. } => return Ok(false),
        };
        if used > c.attempt {
            return Ok(false);
        }
        let failure = FailureRecord {
            dispatch_id: c.dispatch_id.clone(),
            attempt: c.attempt,
            code: crate::contract::FailureCode::ProducerFailed.as_str().to_owned(),
            rule: None,
        };
        let (tx, rx) = std::sync::mpsc::channel();
        self.store.record_failure(failure, Box::new(move |r| drop(tx.send(r))))?;
        rx.recv().unwrap_or(Err(JournalError::Closed))?;
        Ok(true)
    }

    /// Records several final records and failed attempts (one dispatch's) as
    /// one command in one group commit. Each runs in its own savepoint: one
    /// that fails (say [`JournalError::DuplicateIntent`]) is rolled back alone
    /// and answered with its error while the others commit. `then` hears the
    /// answers, in order, on the writer thread after the commit.
    pub fn record_many(&self, records: Vec<RecordCommand>, then: Answer<Vec<Result<RecordAnswer>>>) -> Result<()> {
        let mut ids = Vec::new();
        for r in &records {
            match r {
                RecordCommand::Final(f) => check_final(f).map(|()| ids.push(f.dispatch_id.clone()))?,
                RecordCommand::Failure(f) => check_failure(f).map(|()| ids.push(f.dispatch_id.clone()))?,
                RecordCommand::Defer(c) => check_deferred(c)?,
            }
        }
        let then = self.clearing(ids, then);
        self.store.record_many(records, then)
    }

    /// Records the final receipt (and intents, and for exhausted the failure)
    /// of a checkpointed, not yet final identity. [`JournalError::UnknownDispatch`]
    /// without a checkpoint; [`JournalError::DuplicateIntent`] (nothing written)
    /// when an intent_id is already in the journal.
    pub fn record_final(&self, r: FinalRecord) -> Reply<RecordOutcome> {
        match check_final(&r) {
            Ok(()) => self.queue(|then| {
                let then = self.clearing(vec![r.dispatch_id.clone()], then);
                self.store.record_final(r, then)
            }),
            Err(e) => Reply::ready(Err(e)),
        }
    }

    /// Records a failed attempt: state `failed`, attempts = max(used, attempt).
    /// Recording the same attempt twice keeps the first row (idempotent).
    pub fn record_failure(&self, r: FailureRecord) -> Reply<FailureOutcome> {
        match check_failure(&r) {
            Ok(()) => self.queue(|then| {
                let then = self.clearing(vec![r.dispatch_id.clone()], then);
                self.store.record_failure(r, then)
            }),
            Err(e) => Reply::ready(Err(e)),
        }
    }
}

fn attempt(n: u32) -> Result<()> {
    if n >= 1 {
        Ok(())
    } else {
        Err(JournalError::InvalidArgument { what: "attempt" })
    }
}

fn check_failure(r: &FailureRecord) -> Result<()> {
    arg::digest_id(&r.dispatch_id, "pwh_", "dispatch_id")?;
    attempt(r.attempt)?;
    arg::token(&r.code, "code")?;
    arg::opt_token(r.rule.as_deref(), "rule")
}

fn check_deferred(c: &Checkpoint) -> Result<()> {
    if c.attempt != 0 {
        return Err(JournalError::InvalidArgument { what: "attempt" });
    }
    check_checkpoint(c)
}

fn check_checkpoint(c: &Checkpoint) -> Result<()> {
    arg::digest_id(&c.dispatch_id, "pwh_", "dispatch_id")?;
    arg::token(&c.hook_id, "hook_id")?;
    arg::token(&c.capability_id, "capability_id")?;
    arg::opaque_ref(&c.receipt_id, "receipt_id")?;
    arg::opaque_ref(&c.effect_id, "effect_id")?;
    arg::token(&c.event_kind, "event_kind")?;
    arg::sha256_hex(&c.registration_digest, "registration_digest")?;
    arg::public_json(&c.request_json, "request")
}

fn check_final(r: &FinalRecord) -> Result<()> {
    arg::digest_id(&r.dispatch_id, "pwh_", "dispatch_id")?;
    attempt(r.attempt)?;
    if let Some(d) = &r.result_digest {
        arg::sha256_hex(d, "result_digest")?;
    }
    if r.status != FinalStatus::Proposed && !r.intents.is_empty() {
        return Err(JournalError::InvalidArgument { what: "intents" });
    }
    if (r.status == FinalStatus::Exhausted) != r.failure.is_some() {
        return Err(JournalError::InvalidArgument { what: "failure" });
    }
    // The receipt's result_digest is the column: present exactly when there
    // is an accepted result.
    if (r.status == FinalStatus::Exhausted) == r.result_digest.is_some() {
        return Err(JournalError::InvalidArgument { what: "result_digest" });
    }
    if let Some((code, rule)) = &r.failure {
        arg::token(code, "failure.code")?;
        arg::opt_token(rule.as_deref(), "failure.rule")?;
    }
    for i in &r.intents {
        arg::digest_id(&i.intent_id, "pwi_", "intent_id")?;
        arg::token(&i.capability_id, "intent.capability_id")?;
        arg::token(&i.intent_kind, "intent.intent_kind")?;
    }
    Ok(())
}

/// The row's current standing, read inside the transaction.
fn standing(conn: &Connection, dispatch_id: &str) -> Result<Option<DispatchRow>> {
    let sql = format!("SELECT {DISPATCH_COLS} FROM dispatches WHERE dispatch_id = ?1");
    Ok(conn.prepare_cached(&sql)?.query_row([dispatch_id], dispatch_row).optional()?)
}

pub(super) fn run_checkpoint(conn: &mut Connection, c: &Checkpoint, now: i64) -> Result<CheckpointState> {
    let inserted = conn
        .prepare_cached(
            "INSERT INTO dispatches (dispatch_id, state, attempts, hook_id, capability_id, receipt_id, effect_id,
               event_kind, registration_digest, created_at, updated_at)
             VALUES (?1, 'checkpointed', ?9, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8)
             ON CONFLICT (dispatch_id) DO NOTHING",
        )?
        .execute(params![
            c.dispatch_id,
            c.hook_id,
            c.capability_id,
            c.receipt_id,
            c.effect_id,
            c.event_kind,
            c.registration_digest,
            now,
            c.attempt
        ])?;
    if inserted == 1 {
        conn.prepare_cached("INSERT INTO requests (seq, request) VALUES (?1, ?2)")?
            .execute(params![conn.last_insert_rowid(), c.request_json])?;
        return Ok(CheckpointState::Fresh);
    }
    let s = standing(conn, &c.dispatch_id)?.ok_or(JournalError::UnknownDispatch)?;
    if s.state.is_final() {
        return Ok(CheckpointState::Final { row: Box::new(s) });
    }
    if c.attempt > s.attempts {
        conn.prepare_cached("UPDATE dispatches SET attempts = ?2, updated_at = ?3 WHERE dispatch_id = ?1")?
            .execute(params![c.dispatch_id, c.attempt, now])?;
    }
    Ok(CheckpointState::Pending { attempts_used: s.attempts })
}

// The writer's operation signature takes its arguments by reference to their own type.
#[allow(clippy::ptr_arg)]
pub(super) fn run_many(
    conn: &mut Connection,
    records: &Vec<RecordCommand>,
    now: i64,
) -> Result<Vec<Result<RecordAnswer>>> {
    let mut answers = Vec::with_capacity(records.len());
    for r in records {
        conn.execute_batch("SAVEPOINT rec")?;
        let answer = match r {
            RecordCommand::Final(f) => run_final(conn, f, now).map(RecordAnswer::Final),
            RecordCommand::Failure(f) => run_failure(conn, f, now).map(RecordAnswer::Failure),
            RecordCommand::Defer(c) => run_checkpoint(conn, c, now).map(RecordAnswer::Deferred),
        };
        match answer {
            // The batch cannot go on: the writer rolls it back and may retry.
            Err(JournalError::Busy) => return Err(JournalError::Busy),
            Err(e) => {
                conn.execute_batch("ROLLBACK TO rec; RELEASE rec")?;
                answers.push(Err(e));
            }
            Ok(a) => {
                conn.execute_batch("RELEASE rec")?;
                answers.push(Ok(a));
            }
        }
    }
    Ok(answers)
}

pub(super) fn run_final(conn: &mut Connection, r: &FinalRecord, now: i64) -> Result<RecordOutcome> {
    let s = standing(conn, &r.dispatch_id)?.ok_or(JournalError::UnknownDispatch)?;
    if s.state.is_final() {
        return Ok(RecordOutcome::AlreadyFinal { row: Box::new(s) });
    }
    conn.prepare_cached(
        // `attempts` becomes the attempt that produced the final
        // record: it is the receipt's `attempt` (failed attempts keep their
        // own rows in `failures`).
        "UPDATE dispatches SET state = ?2, attempts = ?3, result_digest = ?4, updated_at = ?5
         WHERE dispatch_id = ?1",
    )?
    .execute(params![r.dispatch_id, DispatchState::from(r.status).as_str(), r.attempt, r.result_digest, now])?;
    // The request only serves recover(); a final identity never needs it again.
    conn.prepare_cached("DELETE FROM requests WHERE seq = ?1")?.execute([s.seq])?;
    if let Some((code, rule)) = &r.failure {
        insert_failure(conn, &r.dispatch_id, r.attempt, code, rule.as_deref(), now)?;
    }
    let mut insert = conn.prepare_cached(
        "INSERT INTO intents (intent_id, dispatch_id, capability_id, intent_kind, doc) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    for i in &r.intents {
        insert.execute(params![i.intent_id, r.dispatch_id, i.capability_id, i.intent_kind, i.stored_json]).map_err(
            |e| match &e {
                rusqlite::Error::SqliteFailure(f, _) if f.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE => {
                    JournalError::DuplicateIntent
                }
                _ => e.into(),
            },
        )?;
    }
    Ok(RecordOutcome::Recorded)
}

pub(super) fn run_failure(conn: &mut Connection, r: &FailureRecord, now: i64) -> Result<FailureOutcome> {
    let s = standing(conn, &r.dispatch_id)?.ok_or(JournalError::UnknownDispatch)?;
    if s.state.is_final() {
        return Ok(FailureOutcome::AlreadyFinal { row: Box::new(s) });
    }
    insert_failure(conn, &r.dispatch_id, r.attempt, &r.code, r.rule.as_deref(), now)?;
    conn.prepare_cached(
        "UPDATE dispatches SET state = 'failed', attempts = max(attempts, ?2), updated_at = ?3 WHERE dispatch_id = ?1",
    )?
    .execute(params![r.dispatch_id, r.attempt, now])?;
    Ok(FailureOutcome::Recorded { attempts_used: s.attempts.max(r.attempt) })
}

fn insert_failure(conn: &Connection, id: &str, attempt: u32, code: &str, rule: Option<&str>, now: i64) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO failures (dispatch_id, attempt, code, rule, at) VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (dispatch_id, attempt) DO NOTHING",
    )?
    .execute(params![id, attempt, code, rule, now])?;
    Ok(())
}
