//! Dispatch records: checkpoint, final record, failed attempt. The `Journal`
//! methods check arguments and queue them to the store; the rules the
//! writer then runs, inside the group-commit transaction and a savepoint,
//! are in `record/rule.rs`, over each backend's statements.

use super::states::FinalStatus;
use super::types::{Checkpoint, CheckpointState, FailureOutcome, FailureRecord, FinalRecord, RecordOutcome};
use super::writer::Answer;
use super::{arg, DispatchRow, Journal, JournalError, Reply, Result};
use crate::contract::Dialect;

mod rule;
pub(crate) use rule::{
    checkpoint_existing, final_unchanged, run_checkpoint, run_failure, run_final, run_many, FailureCols, RecordSql,
};

/// What [`Journal::fold_ended_attempts`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FoldedAttempts {
    /// Attempts of ended processes recorded as failed attempts.
    pub folded: u32,
    /// Entries of the ledger folder that are not a regular file of this
    /// user's (a symlink, a FIFO, a folder, another user's file): not read.
    pub skipped_files: u32,
}

/// One record of a dispatch's final command (see [`Journal::record_many`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RecordCommand {
    Final(FinalRecord),
    Failure(FailureRecord),
    /// A hook that did not get its turn: its checkpoint (attempt 0) is
    /// written if the identity has no row, so it stays owed.
    Defer(Checkpoint),
    /// A final record whose intent holds a key no earlier record of the list
    /// may have lost to another writer (see [`Keyed`]).
    Keyed(Keyed),
    /// A final record together with the checkpoint of the attempt that
    /// produced it, never queued on its own (see [`Begun`]).
    Begun(Box<Begun>),
}

/// The checkpoint of an attempt the attempt ledger counted while its
/// provider ran, and that attempt's final record, in one record: an
/// identity without a row gets its final row at once, with none of the
/// checkpoint's rows written and rewritten in the same transaction. Where
/// the identity has a row, it runs as the checkpoint then the record would.
/// When the record fails, the checkpoint is still written, so the attempt
/// stays counted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Begun {
    pub checkpoint: Checkpoint,
    pub record: FinalRecord,
}

/// A final record holding an intent under `key`, a key one dispatch hands
/// out once. When an earlier record of the same list found its identity
/// final already (another writer recorded it first) under a receipt whose
/// intent holds `key` (`key_of` reads a row's), that writer took the key:
/// `instead`, a failed attempt, is recorded. Only the writer sees the rows
/// another host wrote just before, inside the batch's transaction.
#[derive(Clone, Debug)]
pub struct Keyed {
    pub record: FinalRecord,
    pub key: String,
    pub key_of: KeyOf,
    pub instead: FailureRecord,
}

// Two readers of a dialect's key are the same reader: function addresses
// are not a reliable identity, so they are left out.
impl PartialEq for Keyed {
    fn eq(&self, other: &Self) -> bool {
        (&self.record, &self.key, &self.instead) == (&other.record, &other.key, &other.instead)
    }
}

impl Eq for Keyed {}

/// Reads the key of a final row's intent, in its dialect.
pub type KeyOf = fn(&DispatchRow) -> Option<String>;

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
            Ok(()) => self.queue(|then| self.store.checkpoint(c, false, then)),
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
        let noted = self.note_attempt(&c)?;
        let id = noted.then(|| c.dispatch_id.clone());
        let queued = self.store.checkpoint(c, false, then);
        // Nothing was queued (closed, read-only), so the provider is not
        // called either: no attempt to count.
        if let (Err(_), Some(ledger), Some(id)) = (&queued, &self.ledger, id) {
            ledger.clear(&id);
        }
        queued
    }

    /// Whether a checkpoint may wait to be queued until its record is (see
    /// [`Journal::note_attempt`]): the attempt ledger is a file of this
    /// process, so the attempt counts meanwhile even if the process dies.
    pub fn defers_checkpoints(&self) -> bool {
        self.ledger.is_some() && !self.attempts_on_server
    }

    /// Checks `c` and writes its attempt to the attempt ledger without
    /// queueing it: queue it later with [`Journal::checkpoint_noted`], just
    /// before the record, so that both take one hand-off to the writer and
    /// one transaction. True when the ledger noted it.
    pub fn note_attempt(&self, c: &Checkpoint) -> Result<bool> {
        check_checkpoint(c)?;
        match (&self.ledger, c.attempt >= 1) {
            (Some(ledger), true) => ledger.note(c).map(|()| true),
            _ => Ok(false),
        }
    }

    /// Queues a checkpoint [`Journal::note_attempt`] noted. Its provider has
    /// run or is running, so a refusal (a closed journal) leaves the attempt
    /// in the ledger, for the next opener to count.
    pub fn checkpoint_noted(&self, c: Checkpoint, then: Answer<CheckpointState>) -> Result<()> {
        self.store.checkpoint(c, false, then)
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
    /// next try. What is not a ledger of this user's is skipped and counted.
    /// Blocks until done: call it off an async worker thread.
    pub fn fold_ended_attempts(&self) -> FoldedAttempts {
        let Some(ledger) = &self.ledger else { return FoldedAttempts::default() };
        let scan = ledger.orphans();
        let mut report = FoldedAttempts { folded: 0, skipped_files: scan.skipped };
        for orphan in scan.orphans {
            let mut whole = true;
            for c in &orphan.entries {
                match self.fold_one(c) {
                    Ok(true) => report.folded += 1,
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
        report
    }

    /// Whether each attempt is committed on the journal's server before its
    /// provider is called ([`Journal::count_attempt`]), so every host sees
    /// it; otherwise this process's attempt ledger file counts it.
    pub fn counts_attempts_on_server(&self) -> bool {
        self.attempts_on_server
    }

    /// Commits the checkpoint of an attempt about to be made, without
    /// lingering for other commands: call the provider once this answered
    /// `Ok`. It is also noted in this process's memory first, so that a
    /// record whose checkpoint the server lost writes it again.
    pub fn count_attempt(&self, c: Checkpoint) -> Reply<CheckpointState> {
        if let Err(e) = check_checkpoint(&c) {
            return Reply::ready(Err(e));
        }
        let noted = match &self.ledger {
            Some(ledger) => match ledger.note(&c) {
                Ok(()) => Some((ledger.clone(), c.dispatch_id.clone())),
                Err(e) => return Reply::ready(Err(e)),
            },
            None => None,
        };
        let forget = move || {
            if let Some((ledger, id)) = &noted {
                ledger.clear(id);
            }
        };
        let (tx, rx) = tokio::sync::oneshot::channel();
        let forget_later = forget.clone();
        // Not counted, so its provider is not called: nothing to remember.
        let then: Answer<CheckpointState> = Box::new(move |r| {
            if r.is_err() {
                forget_later();
            }
            let _ = tx.send(r);
        });
        match self.store.checkpoint(c, true, then) {
            Ok(()) => Reply::waiting(rx),
            Err(e) => {
                forget();
                Reply::ready(Err(e))
            }
        }
    }

    fn fold_one(&self, c: &Checkpoint) -> Result<bool> {
        check_checkpoint(c)?;
        let (tx, rx) = std::sync::mpsc::channel();
        self.store.checkpoint(c.clone(), false, Box::new(move |r| drop(tx.send(r))))?;
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
            pointer: None,
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
                RecordCommand::Begun(b) => {
                    check_checkpoint(&b.checkpoint)?;
                    check_final(&b.record)?;
                    if (&b.checkpoint.dispatch_id, b.checkpoint.attempt) != (&b.record.dispatch_id, b.record.attempt) {
                        return Err(JournalError::InvalidArgument { what: "checkpoint" });
                    }
                    ids.push(b.record.dispatch_id.clone());
                }
                RecordCommand::Keyed(k) => {
                    check_final(&k.record)?;
                    check_failure(&k.instead)?;
                    ids.push(k.record.dispatch_id.clone());
                }
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
    arg::opt_token(r.rule.as_deref(), "rule")?;
    match &r.pointer {
        Some(p) if crate::validate::public_pointer(p) != *p => Err(JournalError::InvalidArgument { what: "pointer" }),
        _ => Ok(()),
    }
}

fn check_deferred(c: &Checkpoint) -> Result<()> {
    if c.attempt != 0 {
        return Err(JournalError::InvalidArgument { what: "attempt" });
    }
    check_checkpoint(c)
}

fn check_checkpoint(c: &Checkpoint) -> Result<()> {
    arg::digest_id(&c.dispatch_id, "pwh_", "dispatch_id")?;
    arg::dialect_token(&c.hook_id, "hook_id")?;
    arg::dialect_token(&c.capability_id, "capability_id")?;
    arg::opaque_ref(&c.receipt_id, "receipt_id")?;
    match c.dialect {
        Dialect::ContractV0 => {
            arg::opaque_ref(&c.effect_id, "effect_id")?;
            if c.recorded_at.is_some() {
                return Err(JournalError::InvalidArgument { what: "recorded_at" });
            }
        }
        Dialect::LoopxShippedV0 => {
            arg::free_id(&c.effect_id, "effect_id")?;
            arg::free_id(c.recorded_at.as_deref().unwrap_or_default(), "recorded_at")?;
        }
    }
    arg::dialect_token(&c.event_kind, "event_kind")?;
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
        arg::dialect_token(&i.capability_id, "intent.capability_id")?;
        arg::dialect_token(&i.intent_kind, "intent.intent_kind")?;
    }
    Ok(())
}
