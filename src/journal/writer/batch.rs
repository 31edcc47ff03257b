//! One batch on the write connection: its transaction with retries
//! (`commit_batch`), and what follows a batch wherever it ran (`settle`):
//! the counters, the commit signal, every command's answer, then the
//! after-batch callbacks. The writer thread runs batches it drained from the
//! queue; a caller with an inline commit runs a batch of its one command.

use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::time::Instant;

use super::super::commit::now_ms;
use super::super::job::{Job, Step};
use super::super::merge::{plan, Mergeable};
use super::super::Result;
use super::{bucket, BatchConn, BatchInfo, Counters, Shared, BATCH_SIZE_BOUNDS, COMMIT_MICROS_BOUNDS, MAX_BATCH};

/// Adds whatever is already queued, up to [`MAX_BATCH`].
pub(super) fn drain<C>(rx: &mpsc::Receiver<Box<dyn Job<C>>>, batch: &mut Vec<Box<dyn Job<C>>>) {
    while batch.len() < MAX_BATCH {
        match rx.try_recv() {
            Ok(job) => batch.push(job),
            Err(_) => break,
        }
    }
}

/// Runs `batch` in one transaction (with its retries), then counts it,
/// signals its commit, answers every command and runs the after-batch
/// callbacks. `queued`: its commands came through the queue (an inline
/// command never counted as queued).
pub(super) fn run_and_settle<C: BatchConn>(
    conn: &mut C,
    mut batch: Vec<Box<dyn Job<C>>>,
    (durable, wakes): (bool, bool),
    shared: &Shared,
    queued: bool,
) {
    let counters = &shared.counters;
    let started = Instant::now();
    let (result, busy_retries) = commit_batch(conn, &mut batch, durable, wakes, counters);
    let micros = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
    let size = batch.len() as u64;
    let info = BatchInfo { size, micros, durable, busy_retries, committed: result.is_ok() };
    if result.is_ok() && wakes {
        shared.commits.send_modify(|g| *g = g.wrapping_add(1));
    }
    if result.is_ok() {
        counters.commits.fetch_add(1, Ordering::Relaxed);
        if durable {
            counters.durable_commits.fetch_add(1, Ordering::Relaxed);
        }
    }
    counters.commands.fetch_add(size, Ordering::Relaxed);
    counters.max_batch.fetch_max(size, Ordering::Relaxed);
    counters.commit_micros.fetch_add(micros, Ordering::Relaxed);
    counters.batch_size_buckets[bucket(&BATCH_SIZE_BOUNDS, size)].fetch_add(1, Ordering::Relaxed);
    counters.commit_micros_buckets[bucket(&COMMIT_MICROS_BOUNDS, micros)].fetch_add(1, Ordering::Relaxed);
    // Before the answers, so a caller that saw its answer never sees its command still queued.
    if queued {
        counters.queued.fetch_sub(size, Ordering::SeqCst);
    }
    for job in batch {
        job.answer(&result);
    }
    for f in shared.after_batch.read().unwrap_or_else(|p| p.into_inner()).iter() {
        f(&info);
    }
}

fn commit_batch<C: BatchConn>(
    conn: &mut C,
    batch: &mut [Box<dyn Job<C>>],
    durable: bool,
    wakes: bool,
    counters: &Counters,
) -> (Result<()>, u64) {
    let mut tries = 0;
    loop {
        let (result, at_commit) = try_batch(conn, batch, durable, wakes, now_ms());
        let Err(e) = result else { return (Ok(()), u64::from(tries)) };
        let Some(delay) = conn.retry_after(&e, tries) else { return (Err(e), u64::from(tries)) };
        tries += 1;
        counters.busy_retries.fetch_add(1, Ordering::Relaxed);
        std::thread::sleep(delay);
        // A failed reconnect is one more failed try: the next round answers it.
        let _ = conn.prepare_retry(at_commit);
    }
}

fn run_one<C: BatchConn>(conn: &mut C, job: &mut Box<dyn Job<C>>, now: i64) -> Result<()> {
    conn.savepoint()?;
    match job.run(conn, now) {
        Step::Ok => conn.release(),
        Step::Failed => conn.rollback_to(),
        Step::Abort(e) => Err(e),
    }
}

/// Runs the commands of `group` (indexes into `batch`, ascending) as one, in
/// one savepoint: merging backends need no undo for a command's own failure.
fn run_group<C: BatchConn>(conn: &mut C, batch: &mut [Box<dyn Job<C>>], group: &[usize], now: i64) -> Result<()> {
    if let [one] = group {
        return run_one(conn, &mut batch[*one], now);
    }
    let mut jobs: Vec<&mut Box<dyn Job<C>>> =
        batch.iter_mut().enumerate().filter(|(i, _)| group.binary_search(i).is_ok()).map(|(_, j)| j).collect();
    let Some((first, rest)) = jobs.split_first_mut() else { return Ok(()) };
    conn.savepoint()?;
    let failed = first.run_merged(rest, conn, now)?;
    if failed.contains(&true) {
        conn.rollback_to()
    } else {
        conn.release()
    }
}

/// Runs the batch in one transaction; the flag tells whether it was COMMIT
/// that failed (the outcome is then unknown).
fn try_batch<C: BatchConn>(
    conn: &mut C,
    batch: &mut [Box<dyn Job<C>>],
    durable: bool,
    wakes: bool,
    now: i64,
) -> (Result<()>, bool) {
    let body = (|| {
        conn.begin(durable)?;
        if conn.merges() {
            let kinds: Vec<Mergeable<'_>> = batch.iter().map(|j| j.mergeable()).collect();
            let groups = plan(&kinds);
            drop(kinds);
            for group in groups {
                run_group(conn, batch, &group, now)?;
            }
            return Ok(());
        }
        for job in batch.iter_mut() {
            run_one(conn, job, now)?;
        }
        Ok(())
    })();
    match body {
        Ok(()) => match conn.commit(wakes) {
            Ok(()) => (Ok(()), false),
            Err(e) => {
                conn.rollback();
                (Err(e), true)
            }
        },
        Err(e) => {
            conn.rollback();
            (Err(e), false)
        }
    }
}
