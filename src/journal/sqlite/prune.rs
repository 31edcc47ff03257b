//! SQLite's retention SQL (the rule is `../prune.rs`): one batch per
//! `BEGIN IMMEDIATE` transaction on a connection of its own, which waits for
//! the writer's lock like another process would (the busy timeout), and the
//! incremental vacuum in bounded steps.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rusqlite::{params, Connection, OpenFlags};

use super::super::prune::{BatchArgs, BatchCounts, PrunedBatch};
use super::super::read::{failure_cols, INTENT_COLS};
use super::super::{JournalError, JournalOptions, Result};
use super::open::connect;
use super::read::{dispatch_row, failure_row, intent_row, DISPATCH_COLS};

/// A count or size SQLite answers as an integer.
fn count(c: &Connection, sql: &str) -> Result<u64> {
    let n: i64 = c.query_row(sql, [], |r| r.get(0))?;
    Ok(u64::try_from(n).unwrap_or(0))
}

/// Pages one incremental-vacuum step moves: a few hundred KiB, a few ms.
const VACUUM_STEP_PAGES: u32 = 64;

/// The dispatches of one batch: final, of the default dialect, not pruned,
/// old enough, with no open or leased intent.
const CANDIDATES: &str = "SELECT d.seq, d.dispatch_id FROM dispatches d \
     WHERE d.seq > ?1 AND d.seq <= ?2 AND d.state IN ('proposed','not_applicable','exhausted') \
     AND d.pruned_at IS NULL AND d.dialect IS NULL AND d.updated_at < ?3 \
     AND NOT EXISTS (SELECT 1 FROM intents i WHERE i.dispatch_id = d.dispatch_id \
     AND ((i.done_at IS NULL AND i.decision IS NOT 'rejected') OR i.lease_owner IS NOT NULL)) \
     ORDER BY d.seq LIMIT ?4";

const TOMBSTONE: &str = "UPDATE dispatches SET pruned_at = ?2, pruned_intents = CASE WHEN state = 'proposed' \
     THEN (SELECT group_concat(i.intent_id, ',' ORDER BY i.seq) FROM intents i \
     WHERE i.dispatch_id = dispatches.dispatch_id) END WHERE seq = ?1";

const ARCHIVE: &str = "INSERT INTO intents_archive (seq, intent_id, dispatch_id, capability_id, intent_kind, \
     decision, executor_id, reason_code, decided_at, done_at, doc, archived_at) \
     SELECT seq, intent_id, dispatch_id, capability_id, intent_kind, decision, executor_id, reason_code, \
     decided_at, done_at, doc, ?2 FROM intents WHERE dispatch_id = ?1";

/// The prune connection of a writable journal, opened on first use.
pub(crate) struct Pruner {
    path: PathBuf,
    busy_timeout_ms: u32,
    conn: Mutex<Option<Connection>>,
}

impl Pruner {
    pub(crate) fn new(path: &Path, options: &JournalOptions) -> Self {
        Pruner { path: path.to_owned(), busy_timeout_ms: options.busy_timeout_ms, conn: Mutex::new(None) }
    }

    pub(crate) fn close(&self) {
        self.conn.lock().unwrap_or_else(|p| p.into_inner()).take();
    }

    fn with<T>(&self, f: impl FnOnce(&mut Connection) -> Result<T>) -> Result<T> {
        let mut slot = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            // The file is a journal already: the writer recognised it.
            let conn = connect(&self.path, OpenFlags::SQLITE_OPEN_READ_WRITE, self.busy_timeout_ms)?;
            conn.pragma_update(None, "foreign_keys", true)?;
            *slot = Some(conn);
        }
        let conn = slot.as_mut().ok_or(JournalError::Internal { what: "no prune connection" })?;
        f(conn)
    }

    pub(crate) fn last_seq(&self) -> Result<i64> {
        self.with(|c| Ok(c.query_row("SELECT coalesce(max(seq), 0) FROM dispatches", [], |r| r.get(0))?))
    }

    pub(crate) fn batch(
        &self,
        a: &BatchArgs,
        export: Option<&mut dyn FnMut(&PrunedBatch) -> Result<()>>,
    ) -> Result<BatchCounts> {
        self.with(|c| {
            let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let counts = run_batch(&tx, a, export)?;
            tx.commit()?;
            Ok(counts)
        })
    }

    /// A file created with incremental vacuum gives its free pages back; one
    /// created before keeps reusing them (shrinking it takes an offline
    /// `VACUUM`, see docs/durability.md).
    pub(crate) fn reclaim(&self) -> Result<u64> {
        self.with(|c| {
            let page_size = count(c, "PRAGMA page_size")?;
            let before = count(c, "PRAGMA page_count")?;
            let mode: i64 = c.query_row("PRAGMA auto_vacuum", [], |r| r.get(0))?;
            if mode == 2 {
                loop {
                    let free = count(c, "PRAGMA freelist_count")?;
                    if free == 0 {
                        break;
                    }
                    // Each step is its own short write transaction.
                    c.query_row(&format!("PRAGMA incremental_vacuum({VACUUM_STEP_PAGES})"), [], |_| Ok(())).ok();
                    let left = count(c, "PRAGMA freelist_count")?;
                    if left >= free {
                        break;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
            }
            Ok(before.saturating_sub(count(c, "PRAGMA page_count")?) * page_size)
        })
    }
}

/// One batch inside the caller's write transaction.
pub(crate) fn run_batch(
    c: &Connection,
    a: &BatchArgs,
    export: Option<&mut dyn FnMut(&PrunedBatch) -> Result<()>>,
) -> Result<BatchCounts> {
    let found: Vec<(i64, String)> = c
        .prepare_cached(CANDIDATES)?
        .query_map(params![a.after, a.up_to, a.cutoff, a.limit], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let full = found.len() as u64 == u64::from(a.limit);
    let mut counts = BatchCounts {
        scanned_to: if full { found.last().map_or(a.up_to, |f| f.0) } else { a.up_to },
        ..BatchCounts::default()
    };
    if let Some(export) = export {
        if !found.is_empty() {
            export(&rows_of(c, &found)?)?;
        }
    }
    for (seq, id) in &found {
        c.prepare_cached(TOMBSTONE)?.execute(params![seq, a.now])?;
        if a.archive {
            counts.archived += c.prepare_cached(ARCHIVE)?.execute(params![id, a.now])? as u64;
        }
        counts.intents += c.prepare_cached("DELETE FROM intents WHERE dispatch_id = ?1")?.execute([id])? as u64;
        counts.failures += c.prepare_cached("DELETE FROM failures WHERE dispatch_id = ?1")?.execute([id])? as u64;
        c.prepare_cached("DELETE FROM requests WHERE seq = ?1")?.execute([seq])?;
        counts.dispatches += 1;
    }
    Ok(counts)
}

/// The rows a batch is about to prune, as the readers read them.
fn rows_of(c: &Connection, found: &[(i64, String)]) -> Result<PrunedBatch> {
    let mut batch = PrunedBatch::default();
    let dispatch = format!("SELECT {DISPATCH_COLS} FROM dispatches WHERE seq = ?1");
    let intents = format!("SELECT {INTENT_COLS} FROM intents i WHERE i.dispatch_id = ?1 ORDER BY i.seq");
    let failures = concat!("SELECT ", failure_cols!(), " FROM failures WHERE dispatch_id = ?1 ORDER BY attempt");
    for (seq, id) in found {
        batch.dispatches.push(c.prepare_cached(&dispatch)?.query_row([seq], dispatch_row)?);
        let mut stmt = c.prepare_cached(&intents)?;
        batch.intents.extend(stmt.query_map([id], intent_row)?.collect::<rusqlite::Result<Vec<_>>>()?);
        let mut stmt = c.prepare_cached(failures)?;
        batch.failures.extend(stmt.query_map([id], failure_row)?.collect::<rusqlite::Result<Vec<_>>>()?);
    }
    Ok(batch)
}
