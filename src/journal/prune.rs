//! Retention: pruning final dispatches older than a window, in bounded
//! batches, without losing an identity.
//!
//! A prunable dispatch is final (`proposed`, `not_applicable`, `exhausted`),
//! last written before the cutoff, not pruned yet, and none of its intents
//! is open or leased. Pruning it deletes its
//! request (a final row has none left; deleted again for safety), its failed
//! attempts and its intents (copied first into `intents_archive` when the
//! caller asks to archive), and keeps its row as the identity's tombstone:
//! the dispatch id, the final state, the attempt, the result digest and the
//! ids the receipt names (`pruned_intents`). So a replay of a pruned identity
//! is still a replay: the receipt is rebuilt from the row as before, a
//! `verify` replay compares the stored digest, and the outcome carries the
//! row's `pruned_at`. Unfinished dispatches (owed hooks, checkpoints
//! `recover()` re-runs), open intents and leases are never touched. A row of
//! `loopx-shipped-v0`, whose receipt embeds its intent's document, keeps
//! that intent in its tombstone (`pruned_extra`), so its replay returns the
//! same receipt; its intent rows, failures and request go as the default
//! dialect's do.
//!
//! Each batch covers at most [`PruneOptions::batch_size`] dispatches found
//! in a bounded range of `seq` and is one short write: on SQLite a command
//! of the journal's own writer (so it never contends for the file's lock
//! and holds the writer for its statements only), on PostgreSQL a short
//! transaction of its own whose candidates are locked `SKIP LOCKED`. The
//! batches run on the caller's thread, which must not be an event loop's.
//! Space comes back afterwards (`Store::reclaim`): SQLite's incremental
//! vacuum in bounded steps, PostgreSQL's autovacuum.

use serde::Serialize;
use ts_rs::TS;

use super::rows::{DispatchRow, FailureRow, StoredIntent};
use super::{Journal, JournalError, Result};

/// The largest batch a prune commits at once.
pub const MAX_PRUNE_BATCH: u32 = 2_000;

/// The batch size when the caller names none.
pub const DEFAULT_PRUNE_BATCH: u32 = 100;

/// What to prune.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PruneOptions {
    /// Only dispatches last written more than this many ms ago.
    pub older_than_ms: u64,
    /// Dispatches per write transaction, 1..=[`MAX_PRUNE_BATCH`].
    pub batch_size: u32,
    /// Copy each pruned intent into `intents_archive` before deleting it.
    pub archive: bool,
}

impl Default for PruneOptions {
    fn default() -> Self {
        PruneOptions { older_than_ms: 0, batch_size: DEFAULT_PRUNE_BATCH, archive: false }
    }
}

/// What a prune removed (`HookJournal.prune`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, TS)]
#[ts(export)]
#[serde(rename_all = "camelCase")]
pub struct PruneReport {
    /// Dispatches pruned to their tombstone.
    #[ts(type = "number")]
    pub dispatches: u64,
    /// Intents deleted (archived ones included).
    #[ts(type = "number")]
    pub intents: u64,
    /// Of those, intents copied into the archive first.
    #[ts(type = "number")]
    pub archived: u64,
    /// Failed-attempt rows deleted.
    #[ts(type = "number")]
    pub failures: u64,
    /// Write transactions committed.
    pub batches: u32,
    /// The longest of them, in ms (reading its candidates included): at
    /// most how long the writer waited for one.
    pub longest_batch_ms: f64,
    /// The 99th percentile of the batches' times, in ms, measured as
    /// `longest_batch_ms` (nearest rank; 0 without a batch).
    pub p99_batch_ms: f64,
    /// Bytes the file gave back (SQLite's incremental vacuum); 0 on
    /// PostgreSQL, whose autovacuum reclaims them later.
    #[ts(type = "number")]
    pub reclaimed_bytes: u64,
}

/// The journal's size and how much of it is tombstones (`HookJournal.storage`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
#[serde(rename_all = "camelCase")]
pub struct StorageStats {
    /// Bytes the journal occupies: the file's pages, or the schema's relations.
    #[ts(type = "number")]
    pub bytes: u64,
    /// Of those, bytes free for reuse (SQLite's free pages; 0 on PostgreSQL).
    #[ts(type = "number")]
    pub free_bytes: u64,
    /// Dispatches pruned to their tombstone.
    #[ts(type = "number")]
    pub pruned: u64,
}

/// What this journal's prunes removed since it opened, and its size as its
/// last prune or [`Journal::storage`] found it (`HookJournal.retention`,
/// `runtime.metrics().journal`). Kept in memory: reading it costs no I/O.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, TS)]
#[ts(export)]
#[serde(rename_all = "camelCase")]
pub struct RetentionStats {
    /// Prunes run (a failed one included: its committed batches count).
    pub prunes: u32,
    /// Dispatches pruned to their tombstone, summed over batches that committed.
    #[ts(type = "number")]
    pub dispatches: u64,
    /// Intents deleted (archived ones included).
    #[ts(type = "number")]
    pub intents: u64,
    /// Of those, intents copied into the archive first.
    #[ts(type = "number")]
    pub archived: u64,
    /// Failed-attempt rows deleted.
    #[ts(type = "number")]
    pub failures: u64,
    /// When the last prune ended (epoch ms); null before the first.
    #[ts(type = "number | null")]
    pub last_prune_at: Option<i64>,
    /// The size last read; null until a prune or a storage read.
    pub storage: Option<StorageStats>,
    /// When `storage` was read (epoch ms).
    #[ts(type = "number | null")]
    pub storage_at: Option<i64>,
}

/// The rows one batch is about to remove, handed to an exporter before the
/// batch commits (readers' values; receipts and documents not yet filled).
#[derive(Debug, Default)]
pub struct PrunedBatch {
    pub dispatches: Vec<DispatchRow>,
    pub intents: Vec<StoredIntent>,
    pub failures: Vec<FailureRow>,
}

/// Called with each batch before it commits; an error rolls the batch back
/// and ends the prune.
pub type Exporter<'a> = &'a mut dyn FnMut(&PrunedBatch) -> Result<()>;

/// One batch's bounds, as a backend runs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BatchArgs {
    /// Rows with `seq` in `(after, up_to]`.
    pub after: i64,
    pub up_to: i64,
    /// Only rows last written before this (Unix ms).
    pub cutoff: i64,
    pub limit: u32,
    pub archive: bool,
    /// The tombstones' `pruned_at`.
    pub now: i64,
}

/// What one batch removed, and where the next one starts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct BatchCounts {
    pub dispatches: u64,
    pub intents: u64,
    pub archived: u64,
    pub failures: u64,
    /// The last `seq` this batch considered: the next batch starts after it.
    pub scanned_to: i64,
}

/// How many rows of `seq` one batch looks at for `limit` candidates: a
/// journal whose recent rows are not prunable costs bounded scans.
pub(crate) fn scan_window(limit: u32) -> i64 {
    i64::from(limit) * 4
}

/// The 99th percentile of `times` by nearest rank (sorts them).
fn p99(times: &mut [f64]) -> f64 {
    times.sort_by(f64::total_cmp);
    let rank = (times.len() * 99).div_ceil(100);
    times.get(rank.saturating_sub(1)).copied().unwrap_or(0.0)
}

impl Journal {
    /// The batches of [`Journal::prune`]; `committed` holds what the
    /// batches committed so far, for [`RetentionStats`].
    fn prune_batches(
        &self,
        o: &PruneOptions,
        mut export: Option<Exporter<'_>>,
        committed: &mut PruneReport,
    ) -> Result<PruneReport> {
        if !(1..=MAX_PRUNE_BATCH).contains(&o.batch_size) {
            return Err(JournalError::InvalidArgument { what: "batchSize" });
        }
        let older =
            i64::try_from(o.older_than_ms).map_err(|_| JournalError::InvalidArgument { what: "olderThanMs" })?;
        let now = super::commit::now_ms();
        let cutoff = now.saturating_sub(older);
        let last = self.store.last_seq()?;
        let mut report = PruneReport::default();
        let mut times: Vec<f64> = Vec::new();
        let mut after = 0;
        while after < last {
            let args = BatchArgs {
                after,
                up_to: after.saturating_add(scan_window(o.batch_size)).min(last),
                cutoff,
                limit: o.batch_size,
                archive: o.archive,
                now,
            };
            let started = std::time::Instant::now();
            let exporting = export.is_some();
            let mut forward = |b: &PrunedBatch| export.as_mut().map_or(Ok(()), |f| f(b));
            let forward: Option<Exporter<'_>> = if exporting { Some(&mut forward) } else { None };
            let counts = self.store.prune_batch(&args, forward)?;
            if counts.dispatches > 0 {
                report.batches += 1;
                let ms = started.elapsed().as_secs_f64() * 1e3;
                report.longest_batch_ms = report.longest_batch_ms.max(ms);
                times.push(ms);
                // Lets the writer (and other processes) take the lock between batches.
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            report.dispatches += counts.dispatches;
            report.intents += counts.intents;
            report.archived += counts.archived;
            report.failures += counts.failures;
            *committed = report;
            after = counts.scanned_to.max(after + 1);
        }
        report.p99_batch_ms = p99(&mut times);
        report.reclaimed_bytes = self.store.reclaim()?;
        Ok(report)
    }

    /// Prunes every prunable dispatch last written more than
    /// `older_than_ms` ago, batch by batch, then gives space back. Blocks
    /// the calling thread for the whole run (each batch holds the writer
    /// for one short transaction): call it off any event loop. `export`
    /// sees each batch's rows before it commits. [`Journal::retention`]
    /// counts what committed, even when a later batch fails, and the size
    /// read afterwards.
    pub fn prune(&self, o: &PruneOptions, export: Option<Exporter<'_>>) -> Result<PruneReport> {
        let mut committed = PruneReport::default();
        let result = self.prune_batches(o, export, &mut committed);
        if !matches!(result, Err(JournalError::InvalidArgument { .. } | JournalError::ReadOnly | JournalError::Closed))
        {
            let mut r = self.retention_lock();
            r.prunes += 1;
            r.dispatches += committed.dispatches;
            r.intents += committed.intents;
            r.archived += committed.archived;
            r.failures += committed.failures;
            r.last_prune_at = Some(super::commit::now_ms());
        }
        if result.is_ok() {
            // Only the figures: a prune that removed rows did its work even if this read fails.
            let _ = self.storage();
        }
        result
    }

    /// The journal's size and how many tombstones it holds.
    pub fn storage(&self) -> Result<StorageStats> {
        let stats = self.store.storage()?;
        let mut r = self.retention_lock();
        r.storage = Some(stats);
        r.storage_at = Some(super::commit::now_ms());
        Ok(stats)
    }

    /// What this journal's prunes removed since it opened, and its last size.
    pub fn retention(&self) -> RetentionStats {
        *self.retention_lock()
    }

    fn retention_lock(&self) -> std::sync::MutexGuard<'_, RetentionStats> {
        self.retention.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn p99_is_the_nearest_rank() {
        let mut hundred: Vec<f64> = (1..=100).rev().map(f64::from).collect();
        assert_eq!(super::p99(&mut hundred), 99.0);
        let mut thousand: Vec<f64> = (1..=1000).map(f64::from).collect();
        assert_eq!(super::p99(&mut thousand), 990.0);
        assert_eq!(super::p99(&mut [7.0]), 7.0);
        assert_eq!(super::p99(&mut []), 0.0);
    }
}
