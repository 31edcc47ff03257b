//! The one seam between the journal's API and the database that holds it.
//!
//! [`super::Journal`] checks every argument's grammar, then hands the command
//! or query to its [`Store`]: the embedded SQLite file (`sqlite/`) or a
//! PostgreSQL schema (`postgres/`). Writes are queued to the store's writer,
//! which group-commits them and calls each `then` after the commit that holds
//! it; reads answer synchronously from a snapshot. The dispatcher only ever
//! sees `Journal`, so it does not know which database it writes.

use super::lease::ClaimRequest;
use super::outbox::{DecideArgs, DoneArgs};
use super::prune::{BatchArgs, BatchCounts, Exporter, StorageStats};
use super::{
    AfterBatch, Answer, Checkpoint, CheckpointState, DecideOutcome, DispatchFilter, DispatchRow, DoneOutcome,
    FailureOutcome, FailureRecord, FailureRow, FinalRecord, IntegrityVerdict, IntentFilter, JournalStats, RecordAnswer,
    RecordCommand, RecordOutcome, Result, StoredIntent, WriterStats,
};

pub(crate) trait Store: Send + Sync {
    // Writes: queued; `then` hears the answer after its commit. An `Err`
    // return means nothing was queued (closed, read-only) and `then` is dropped.
    // `awaited`: its caller waits for the answer (see `Job::awaited`).
    fn checkpoint(&self, c: Checkpoint, awaited: bool, then: Answer<CheckpointState>) -> Result<()>;
    fn record_many(&self, records: Vec<RecordCommand>, then: Answer<Vec<Result<RecordAnswer>>>) -> Result<()>;
    fn record_final(&self, r: FinalRecord, then: Answer<RecordOutcome>) -> Result<()>;
    fn record_failure(&self, r: FailureRecord, then: Answer<FailureOutcome>) -> Result<()>;
    fn decide(&self, a: DecideArgs, then: Answer<DecideOutcome>) -> Result<()>;
    fn mark_done(&self, a: DoneArgs, then: Answer<DoneOutcome>) -> Result<()>;
    /// Claims leases; may answer an empty claim without a write.
    fn claim(&self, r: ClaimRequest, now: i64, then: Answer<Vec<StoredIntent>>) -> Result<()>;

    // Reads: arguments already checked and limits clamped by the caller.
    fn get_dispatch(&self, dispatch_id: &str) -> Result<Option<DispatchRow>>;
    /// The rows of many identities, in `ids` order; a backend whose reads
    /// cost a round trip reads them in one.
    fn get_dispatches(&self, ids: &[String]) -> Result<Vec<Option<DispatchRow>>> {
        ids.iter().map(|id| self.get_dispatch(id)).collect()
    }
    fn list_dispatches(&self, f: &DispatchFilter, limit: u32) -> Result<Vec<DispatchRow>>;
    fn list_failures(&self, dispatch_id: &str) -> Result<Vec<FailureRow>>;
    fn list_intents(&self, f: &IntentFilter, limit: u32) -> Result<Vec<StoredIntent>>;
    fn unfinished(&self) -> Result<Vec<DispatchRow>>;
    fn stats(&self) -> Result<JournalStats>;
    fn integrity(&self) -> Result<IntegrityVerdict>;
    /// A read waits on a network round trip (so an event loop must not make
    /// it on its own thread); false for a local file.
    fn reads_are_remote(&self) -> bool {
        false
    }

    // Retention (`prune.rs`): each batch is one short write transaction on
    // a connection of its own, beside the writer.
    /// The highest `seq` of `dispatches` (0 when empty).
    fn last_seq(&self) -> Result<i64>;
    fn prune_batch(&self, a: &BatchArgs, export: Option<Exporter<'_>>) -> Result<BatchCounts>;
    /// Gives freed space back in bounded steps; answers the bytes returned.
    fn reclaim(&self) -> Result<u64>;
    fn storage(&self) -> Result<StorageStats>;

    fn after_batch(&self, f: AfterBatch);
    /// Hands the writer the journal's attempt ledger (see `Writer::attach_ledger`).
    fn attach_ledger(&self, ledger: std::sync::Arc<super::ledger::Ledger>);
    fn writer_stats(&self) -> WriterStats;
    /// Commits and answers everything queued, then releases every connection.
    fn close(&self);
}
