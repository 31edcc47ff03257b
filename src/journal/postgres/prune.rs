//! PostgreSQL's retention SQL (the rule is `../prune.rs`): one batch per
//! short transaction on a connection of its own. Candidates are locked
//! `FOR UPDATE SKIP LOCKED`, so a row another host's writer holds is left
//! for the next prune instead of waited for; the deletes are ordinary, and
//! the space they free is autovacuum's to reclaim.

use std::sync::Mutex;

use tokio_postgres::Config;
use tokio_postgres_rustls::MakeRustlsConnect;

use super::super::prune::{BatchArgs, BatchCounts, Exporter, PrunedBatch, StorageStats};
use super::super::read::{dispatch_cols, failure_cols, failure_from, intent_cols};
use super::super::{JournalError, Result};
use super::conn::{Bounds, Link};
use super::read::{dispatch_row, intent_row};

const CANDIDATES: &str = "SELECT d.seq, d.dispatch_id FROM dispatches d \
     WHERE d.seq > $1 AND d.seq <= $2 AND d.state IN ('proposed','not_applicable','exhausted') \
     AND d.pruned_at IS NULL AND d.updated_at < $3 \
     AND NOT EXISTS (SELECT 1 FROM intents i WHERE i.dispatch_id = d.dispatch_id \
     AND ((i.done_at IS NULL AND i.decision IS DISTINCT FROM 'rejected') OR i.lease_owner IS NOT NULL)) \
     ORDER BY d.seq LIMIT $4 FOR UPDATE SKIP LOCKED";

const TOMBSTONES: &str = "UPDATE dispatches d SET pruned_at = $2, pruned_intents = CASE WHEN d.state = 'proposed' \
     THEN (SELECT string_agg(i.intent_id, ',' ORDER BY i.seq) FROM intents i \
     WHERE i.dispatch_id = d.dispatch_id) END, pruned_extra = CASE WHEN d.dialect IS NOT NULL \
     AND d.state = 'proposed' THEN (SELECT i.intent_kind || ' ' || i.doc FROM intents i \
     WHERE i.dispatch_id = d.dispatch_id ORDER BY i.seq LIMIT 1) END WHERE d.seq = ANY($1)";

const ARCHIVE: &str = "INSERT INTO intents_archive (seq, intent_id, dispatch_id, capability_id, intent_kind, \
     decision, executor_id, reason_code, decided_at, done_at, doc, archived_at) \
     SELECT seq, intent_id, dispatch_id, capability_id, intent_kind, decision, executor_id, reason_code, \
     decided_at, done_at, doc, $2 FROM intents WHERE dispatch_id = ANY($1)";

const DELETE_INTENTS: &str = "DELETE FROM intents WHERE dispatch_id = ANY($1)";
const DELETE_FAILURES: &str = "DELETE FROM failures WHERE dispatch_id = ANY($1)";
const DELETE_REQUESTS: &str = "DELETE FROM requests WHERE seq = ANY($1)";

const EXPORT_DISPATCHES: &str =
    concat!("SELECT ", dispatch_cols!("string_agg", "0::bigint"), " FROM dispatches WHERE seq = ANY($1) ORDER BY seq");
const EXPORT_INTENTS: &str =
    concat!("SELECT ", intent_cols!(), " FROM intents i WHERE i.dispatch_id = ANY($1) ORDER BY i.seq");
const EXPORT_FAILURES: &str =
    concat!("SELECT ", failure_cols!(), " FROM failures WHERE dispatch_id = ANY($1) ORDER BY dispatch_id, attempt");

/// What a prune's connection is opened with; it is opened on first use.
pub(super) struct Pruner {
    config: Config,
    tls: Option<MakeRustlsConnect>,
    schema: String,
    bounds: Bounds,
    busy_timeout_ms: u32,
    /// None once closed.
    link: Mutex<Option<Option<Link>>>,
}

impl Pruner {
    pub(super) fn new(
        config: &Config,
        tls: &Option<MakeRustlsConnect>,
        schema: &str,
        bounds: Bounds,
        busy_timeout_ms: u32,
    ) -> Self {
        Pruner {
            config: config.clone(),
            tls: tls.clone(),
            schema: schema.to_owned(),
            bounds,
            busy_timeout_ms,
            link: Mutex::new(Some(None)),
        }
    }

    pub(super) fn close(&self) {
        let link = self.link.lock().unwrap_or_else(|p| p.into_inner()).take().flatten();
        // The driver blocks on a runtime of its own when dropped: a plain thread.
        std::thread::scope(|s| {
            s.spawn(move || drop(link));
        });
    }

    /// Runs `f` on the prune connection, on a plain thread (the driver
    /// blocks on a runtime of its own, which an async runtime's thread may
    /// not do).
    fn with<T: Send>(&self, f: impl FnOnce(&mut Link) -> Result<T> + Send) -> Result<T> {
        std::thread::scope(|s| {
            s.spawn(|| {
                let mut slot = self.link.lock().unwrap_or_else(|p| p.into_inner());
                let Some(slot) = slot.as_mut() else { return Err(JournalError::Closed) };
                let link = slot.get_or_insert_with(|| {
                    Link::new(self.config.clone(), self.tls.clone(), &self.schema, false, self.bounds)
                        .lock_timeout(self.busy_timeout_ms)
                });
                f(link)
            })
            .join()
        })
        .unwrap_or(Err(JournalError::Internal { what: "the prune thread panicked" }))
    }

    pub(super) fn last_seq(&self) -> Result<i64> {
        self.with(|l| {
            let rows = l.query("SELECT coalesce(max(seq), 0)::bigint FROM dispatches", &[])?;
            Ok(rows.first().map_or(0, |r| r.get(0)))
        })
    }

    pub(super) fn batch(&self, a: &BatchArgs, export: Option<Exporter<'_>>) -> Result<BatchCounts> {
        // The exporter is the caller's (not `Send`): the batch's rows come
        // back here first, and only then is the batch committed.
        let a = *a;
        let exporting = export.is_some();
        let staged = self.with(move |l| {
            l.batch("BEGIN")?;
            match stage(l, &a, exporting) {
                Ok(staged) => Ok(staged),
                Err(e) => {
                    let _ = l.batch("ROLLBACK");
                    Err(e)
                }
            }
        })?;
        let (counts, rows) = staged;
        let exported = match (export, rows) {
            (Some(export), Some(rows)) => export(&rows),
            _ => Ok(()),
        };
        self.with(move |l| match exported {
            Ok(()) => l.batch("COMMIT"),
            Err(e) => {
                let _ = l.batch("ROLLBACK");
                Err(e)
            }
        })?;
        Ok(counts)
    }

    pub(super) fn storage(&self) -> Result<StorageStats> {
        self.with(storage_here)
    }
}

/// The schema's relations' size and its tombstones.
pub(super) fn storage_here(l: &mut Link) -> Result<StorageStats> {
    let rows = l.query(
        "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint, \
         (SELECT count(*) FROM dispatches WHERE pruned_at IS NOT NULL) \
         FROM pg_class c WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'",
        &[],
    )?;
    let row = rows.first().ok_or(JournalError::Internal { what: "no storage row" })?;
    let (bytes, pruned): (i64, i64) = (row.get(0), row.get(1));
    Ok(StorageStats {
        bytes: u64::try_from(bytes).unwrap_or(0),
        free_bytes: 0,
        pruned: u64::try_from(pruned).unwrap_or(0),
    })
}

/// One batch's statements inside an open transaction; the rows it removes
/// when they are to be exported.
fn stage(l: &mut Link, a: &BatchArgs, exporting: bool) -> Result<(BatchCounts, Option<PrunedBatch>)> {
    let found = l.query(CANDIDATES, &[&a.after, &a.up_to, &a.cutoff, &i64::from(a.limit)])?;
    let seqs: Vec<i64> = found.iter().map(|r| r.get(0)).collect();
    let ids: Vec<String> = found.iter().map(|r| r.get(1)).collect();
    let full = seqs.len() as u64 == u64::from(a.limit);
    let mut counts = BatchCounts {
        scanned_to: if full { seqs.last().copied().unwrap_or(a.up_to) } else { a.up_to },
        ..BatchCounts::default()
    };
    if seqs.is_empty() {
        return Ok((counts, None));
    }
    let rows = if exporting {
        Some(PrunedBatch {
            dispatches: l.query(EXPORT_DISPATCHES, &[&seqs])?.iter().map(dispatch_row).collect::<Result<_>>()?,
            intents: l.query(EXPORT_INTENTS, &[&ids])?.iter().map(intent_row).collect::<Result<_>>()?,
            failures: l.query(EXPORT_FAILURES, &[&ids])?.iter().map(failure_from).collect::<Result<_>>()?,
        })
    } else {
        None
    };
    l.execute(TOMBSTONES, &[&seqs, &a.now])?;
    if a.archive {
        counts.archived = l.execute(ARCHIVE, &[&ids, &a.now])?;
    }
    counts.intents = l.execute(DELETE_INTENTS, &[&ids])?;
    counts.failures = l.execute(DELETE_FAILURES, &[&ids])?;
    l.execute(DELETE_REQUESTS, &[&seqs])?;
    counts.dispatches = seqs.len() as u64;
    Ok((counts, rows))
}
