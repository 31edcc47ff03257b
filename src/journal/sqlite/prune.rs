//! SQLite's retention SQL (the rule is `../prune.rs`). A batch's candidates
//! (and, for an export, their rows) are read on a reader, then the batch is
//! one command of the journal's own writer, so it never contends with the
//! writer for the file's lock: it holds the writer for its statements only.
//! The command checks each candidate again, so a row another process pruned
//! meanwhile is left alone. The incremental vacuum runs the same way, a
//! bounded step per command.

use rusqlite::{params, Connection};

use super::super::prune::{BatchArgs, BatchCounts, PrunedBatch};
use super::super::read::{failure_cols, INTENT_COLS};
use super::super::Result;
use super::read::{dispatch_row, failure_row, intent_row, DISPATCH_COLS};

/// Pages one incremental-vacuum step gives back: a few hundred KiB, a few ms.
pub(crate) const VACUUM_STEP_PAGES: u32 = 64;

/// What makes a dispatch prunable: final, not pruned, old enough, with no
/// open or leased intent.
macro_rules! prunable {
    ($cutoff:literal) => {
        concat!(
            "d.state IN ('proposed','not_applicable','exhausted') AND d.pruned_at IS NULL ",
            "AND d.updated_at < ",
            $cutoff,
            " AND NOT EXISTS (SELECT 1 FROM intents i WHERE i.dispatch_id = d.dispatch_id ",
            "AND ((i.done_at IS NULL AND i.decision IS NOT 'rejected') OR i.lease_owner IS NOT NULL))"
        )
    };
}

const CANDIDATES: &str = concat!(
    "SELECT d.seq, d.dispatch_id FROM dispatches d WHERE d.seq > ?1 AND d.seq <= ?2 AND ",
    prunable!("?3"),
    " ORDER BY d.seq LIMIT ?4"
);

const TOMBSTONE: &str = concat!(
    "UPDATE dispatches AS d SET pruned_at = ?2, pruned_intents = CASE WHEN d.state = 'proposed' ",
    "THEN (SELECT group_concat(i.intent_id, ',' ORDER BY i.seq) FROM intents i ",
    "WHERE i.dispatch_id = d.dispatch_id) END, pruned_extra = CASE WHEN d.dialect IS NOT NULL ",
    "AND d.state = 'proposed' THEN (SELECT i.intent_kind || ' ' || i.doc FROM intents i ",
    "WHERE i.dispatch_id = d.dispatch_id ORDER BY i.seq LIMIT 1) END WHERE d.seq = ?1 AND ",
    prunable!("?3")
);

const ARCHIVE: &str = "INSERT INTO intents_archive (seq, intent_id, dispatch_id, capability_id, intent_kind, \
     decision, executor_id, reason_code, decided_at, done_at, doc, archived_at) \
     SELECT seq, intent_id, dispatch_id, capability_id, intent_kind, decision, executor_id, reason_code, \
     decided_at, done_at, doc, ?2 FROM intents WHERE dispatch_id = ?1";

/// One batch as a writer command: the candidates a reader found.
pub(crate) struct PruneCommand {
    pub found: Vec<(i64, String)>,
    pub args: BatchArgs,
}

/// The candidates of one batch, from a reader, and the last `seq` it covers.
pub(crate) fn candidates(c: &Connection, a: &BatchArgs) -> Result<(Vec<(i64, String)>, i64)> {
    let found: Vec<(i64, String)> = c
        .prepare_cached(CANDIDATES)?
        .query_map(params![a.after, a.up_to, a.cutoff, a.limit], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let full = found.len() as u64 == u64::from(a.limit);
    let scanned_to = if full { found.last().map_or(a.up_to, |f| f.0) } else { a.up_to };
    Ok((found, scanned_to))
}

/// The batch, on the writer's connection inside its transaction.
pub(crate) fn run_batch(c: &mut Connection, cmd: &PruneCommand, _now: i64) -> Result<BatchCounts> {
    let a = &cmd.args;
    let mut counts = BatchCounts::default();
    for (seq, id) in &cmd.found {
        // Still prunable, and pruned here: its row is now the tombstone.
        if c.prepare_cached(TOMBSTONE)?.execute(params![seq, a.now, a.cutoff])? == 0 {
            continue;
        }
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

/// One step of the incremental vacuum as a writer command; answers the
/// free pages left.
pub(crate) fn run_vacuum_step(c: &mut Connection, _: &(), _now: i64) -> Result<u64> {
    c.execute_batch(&format!("PRAGMA incremental_vacuum({VACUUM_STEP_PAGES})"))?;
    count(c, "PRAGMA freelist_count")
}

/// A count or size SQLite answers as an integer.
pub(crate) fn count(c: &Connection, sql: &str) -> Result<u64> {
    let n: i64 = c.query_row(sql, [], |r| r.get(0))?;
    Ok(u64::try_from(n).unwrap_or(0))
}

/// The rows a batch is about to prune, as the readers read them.
pub(crate) fn rows_of(c: &Connection, found: &[(i64, String)]) -> Result<PrunedBatch> {
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
