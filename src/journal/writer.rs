//! The writer: one thread owns the write connection and group-commits.
//!
//! It blocks for the first command, drains whatever else is already queued (up
//! to [`MAX_BATCH`]) and runs them all in one transaction (SQLite: `BEGIN
//! IMMEDIATE`), one `SAVEPOINT` per command: a command that fails is rolled back alone and
//! answered with its own error while the others commit. Every command is
//! answered only after COMMIT returned. Many dispatches in flight therefore
//! share one transaction and, when durable, one fsync. A backend that can
//! (PostgreSQL, see [`BatchConn::merges`]) runs a batch's commands of one
//! kind as one operation instead (`merge.rs`, `job.rs`).
//!
//! A batch holding only checkpoints lingers up to [`CHECKPOINT_LINGER`] for
//! more commands first: a checkpoint is never awaited, and the record of a
//! provider that answered at once then shares its transaction.
//!
//! Durability per batch: a batch of checkpoints only commits with
//! `synchronous=NORMAL`, which in WAL mode writes the frames without an fsync;
//! any batch holding a record or outbox command commits with FULL (when the
//! journal was opened with `synchronous_full`), which also makes every earlier
//! NORMAL frame durable. See [`super::Journal::checkpoint`] for why losing a
//! checkpoint to a power cut is safe.
//!
//! A batch that fails transiently (SQLITE_BUSY past the busy timeout; on
//! PostgreSQL a deadlock, a lost connection or a restarting server) is retried
//! whole as the backend's [`BatchConn::retry_after`] says, then every command
//! in it is answered the error ([`JournalError::Busy`], [`JournalError::Unavailable`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::commit::{now_ms, CommitSignal};
// A command's answer type is the jobs' (`job.rs`); commands may name it through the writer.
pub(crate) use super::job::Answer;
use super::job::{Job, Op, Step, Task};
use super::ledger::{self, Ledger};
use super::merge::{plan, Merge, Mergeable};
use super::{JournalError, JournalOptions, Result};

/// Commands per transaction, at most.
pub(crate) const MAX_BATCH: usize = 256;
/// How long a batch holding only checkpoints waits for a record to join it.
const CHECKPOINT_LINGER: Duration = Duration::from_millis(1);

/// What the writer needs of a backend's write connection: one transaction per
/// batch and one savepoint per command. SQLite and PostgreSQL differ only here
/// and in the commands' SQL (`sqlite/`, `postgres/`).
pub(crate) trait BatchConn: Send + 'static {
    /// Opens the batch's transaction; `durable` when it holds a record or decision.
    fn begin(&mut self, durable: bool) -> Result<()>;
    fn savepoint(&mut self) -> Result<()>;
    fn release(&mut self) -> Result<()>;
    fn rollback_to(&mut self) -> Result<()>;
    /// Commits; `wakes` when the batch held a record or decision (PostgreSQL
    /// notifies other hosts' consumers in the same transaction).
    fn commit(&mut self, wakes: bool) -> Result<()>;
    /// Rolls back whatever is open; errors are moot (the batch already failed).
    fn rollback(&mut self);
    /// How long to wait before retrying a whole batch that failed with `e`
    /// after `tries` retries, or `None` to answer every command with `e`.
    fn retry_after(&self, e: &JournalError, tries: u32) -> Option<Duration>;
    /// Gets ready for a retry (PostgreSQL reconnects). `unknown_commit`: the
    /// COMMIT itself failed, so the batch may have committed; commands then
    /// read their identities back instead of assuming they wrote nothing.
    fn prepare_retry(&mut self, unknown_commit: bool) -> Result<()>;
    /// Whether commands with a [`Merge`] run merged now (see `merge.rs`):
    /// only when a command that fails on its own has written nothing.
    fn merges(&self) -> bool {
        false
    }
    /// How long to wait for the next command before [`BatchConn::idle`], when
    /// something is held open between batches (PostgreSQL opens the next
    /// transaction in COMMIT's round trip).
    fn idle_after(&self) -> Option<Duration> {
        None
    }
    /// No command came for [`BatchConn::idle_after`]: close what is held open.
    fn idle(&mut self) {}
    /// A batch of checkpoints is about to linger for a record: PostgreSQL
    /// opens its transaction meanwhile, so that round trip costs no wait.
    fn open_early(&mut self) {}
}

/// Called on the writer thread once every command of a batch was answered, so
/// that answers gathered by [`Answer`]s can be handed on in one go.
pub type AfterBatch = Arc<dyn Fn(&BatchInfo) + Send + Sync>;

/// What one group commit was, for observers (diagnostics channels, metrics).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BatchInfo {
    /// Commands in the transaction.
    pub size: u64,
    /// From BEGIN to the end of COMMIT (retries included), in microseconds.
    pub micros: u64,
    /// Committed with `synchronous=FULL`.
    pub durable: bool,
    /// Whole-batch retries after BUSY.
    pub busy_retries: u64,
    /// The transaction committed (false: every command was answered an error).
    pub committed: bool,
}

/// Upper bounds of the batch-size histogram (commands); one more bucket counts the rest.
pub const BATCH_SIZE_BOUNDS: [u64; 8] = [1, 2, 4, 8, 16, 32, 64, 128];
/// Upper bounds of the commit-latency histogram (microseconds); one more bucket counts the rest.
pub const COMMIT_MICROS_BOUNDS: [u64; 8] = [100, 250, 500, 1_000, 2_500, 5_000, 10_000, 50_000];

fn bucket(bounds: &[u64; 8], value: u64) -> usize {
    bounds.iter().position(|b| value <= *b).unwrap_or(bounds.len())
}

/// Group-commit counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WriterStats {
    /// Transactions committed.
    pub commits: u64,
    /// Commands answered after a commit (including ones that failed alone).
    pub commands: u64,
    /// Commits that ran with `synchronous=FULL`.
    pub durable_commits: u64,
    /// Whole-batch retries after BUSY.
    pub busy_retries: u64,
    /// The largest batch so far.
    pub max_batch: u64,
    /// Commands queued whose batch has not finished yet, now.
    pub queue_depth: u64,
    /// Microseconds spent in transactions (BEGIN to end of COMMIT), summed over batches.
    pub commit_micros: u64,
    /// Batches per size bucket (see [`BATCH_SIZE_BOUNDS`]; the last bucket is the rest).
    pub batch_size_buckets: [u64; 9],
    /// Batches per latency bucket (see [`COMMIT_MICROS_BOUNDS`]; the last bucket is the rest).
    pub commit_micros_buckets: [u64; 9],
}

#[derive(Default)]
struct Counters {
    commits: AtomicU64,
    commands: AtomicU64,
    durable_commits: AtomicU64,
    busy_retries: AtomicU64,
    max_batch: AtomicU64,
    queued: AtomicU64,
    commit_micros: AtomicU64,
    batch_size_buckets: [AtomicU64; 9],
    commit_micros_buckets: [AtomicU64; 9],
}

pub(crate) struct Writer<C> {
    tx: RwLock<Option<mpsc::Sender<Box<dyn Job<C>>>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
    counters: Arc<Counters>,
    /// The answer once there is no queue: Closed, or ReadOnly for a reader-only journal.
    refusal: JournalError,
    after_batch: Arc<RwLock<Vec<AfterBatch>>>,
    /// The journal's attempt ledger, once it has one (see [`Writer::attach_ledger`]).
    ledger: Arc<OnceLock<Arc<Ledger>>>,
}

impl<C: BatchConn> Writer<C> {
    /// `commits` is bumped after every commit that held a durable command (a
    /// record or a decision): consumers waiting for intents wake on it.
    pub(crate) fn spawn(conn: C, options: JournalOptions, commits: CommitSignal) -> Result<Writer<C>> {
        let (tx, rx) = mpsc::channel::<Box<dyn Job<C>>>();
        let counters = Arc::new(Counters::default());
        let thread_counters = Arc::clone(&counters);
        let after_batch: Arc<RwLock<Vec<AfterBatch>>> = Arc::default();
        let thread_after = Arc::clone(&after_batch);
        let ledger: Arc<OnceLock<Arc<Ledger>>> = Arc::default();
        let thread_ledger = Arc::clone(&ledger);
        let thread = std::thread::Builder::new().name("loopx-journal-writer".into()).spawn(move || {
            let shared = Shared { counters: &thread_counters, commits: &commits, after_batch: &thread_after };
            run(conn, rx, options.synchronous_full, &shared, &thread_ledger);
        })?;
        Ok(Writer {
            tx: RwLock::new(Some(tx)),
            thread: Mutex::new(Some(thread)),
            counters,
            refusal: JournalError::Closed,
            after_batch,
            ledger,
        })
    }

    /// No thread and no connection: every command is refused as read-only.
    pub(crate) fn read_only() -> Writer<C> {
        Writer {
            tx: RwLock::new(None),
            thread: Mutex::new(None),
            counters: Arc::default(),
            refusal: JournalError::ReadOnly,
            after_batch: Arc::default(),
            ledger: Arc::default(),
        }
    }

    /// Queues a command whose answer is handed to `then` on the writer thread
    /// after its commit (no waiter to wake per command). When the writer is
    /// closed, `then` is dropped uncalled and the error returned.
    pub(crate) fn submit_then<A, T>(&self, durable: bool, args: A, op: Op<C, A, T>, then: Answer<T>) -> Result<()>
    where
        A: Send + 'static,
        T: Send + 'static,
    {
        self.submit(Box::new(Task { args, op, merge: None, durable, out: None, reply: then }))
    }

    /// [`Writer::submit_then`] for a command that may run merged with others of its kind.
    pub(crate) fn submit_merged<A, T>(
        &self,
        durable: bool,
        args: A,
        (op, merge): (Op<C, A, T>, Merge<C, A, T>),
        then: Answer<T>,
    ) -> Result<()>
    where
        A: Send + 'static,
        T: Send + 'static,
    {
        self.submit(Box::new(Task { args, op, merge: Some(merge), durable, out: None, reply: then }))
    }

    fn submit(&self, job: Box<dyn Job<C>>) -> Result<()> {
        let guard = self.tx.read().unwrap_or_else(|p| p.into_inner());
        // Counted before sending so the writer's decrement never comes first.
        self.counters.queued.fetch_add(1, Ordering::Relaxed);
        match guard.as_ref().map(|tx| tx.send(job)) {
            Some(Ok(())) => Ok(()),
            Some(Err(_)) => {
                self.counters.queued.fetch_sub(1, Ordering::Relaxed);
                Err(JournalError::Closed)
            }
            None => {
                self.counters.queued.fetch_sub(1, Ordering::Relaxed);
                Err(self.refusal.clone())
            }
        }
    }

    /// Adds a callback run after each batch's answers.
    pub(crate) fn after_batch(&self, f: AfterBatch) {
        self.after_batch.write().unwrap_or_else(|p| p.into_inner()).push(f);
    }

    /// Lets the record rules find the checkpoints this process noted (a final
    /// record whose checkpoint the server lost writes it again, `record/rule.rs`).
    pub(crate) fn attach_ledger(&self, ledger: Arc<Ledger>) {
        let _ = self.ledger.set(ledger);
    }

    /// Drops the sender (the thread drains the queue, then exits) and joins.
    pub(crate) fn close(&self) {
        self.tx.write().unwrap_or_else(|p| p.into_inner()).take();
        let thread = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(thread) = thread {
            // A panicked writer already dropped its commands (answered Closed).
            let _ = thread.join();
        }
    }

    pub(crate) fn stats(&self) -> WriterStats {
        let c = &self.counters;
        WriterStats {
            commits: c.commits.load(Ordering::Relaxed),
            commands: c.commands.load(Ordering::Relaxed),
            durable_commits: c.durable_commits.load(Ordering::Relaxed),
            busy_retries: c.busy_retries.load(Ordering::Relaxed),
            max_batch: c.max_batch.load(Ordering::Relaxed),
            queue_depth: c.queued.load(Ordering::Relaxed),
            commit_micros: c.commit_micros.load(Ordering::Relaxed),
            batch_size_buckets: std::array::from_fn(|i| c.batch_size_buckets[i].load(Ordering::Relaxed)),
            commit_micros_buckets: std::array::from_fn(|i| c.commit_micros_buckets[i].load(Ordering::Relaxed)),
        }
    }
}

/// What the writer thread shares with its [`Writer`].
struct Shared<'a> {
    counters: &'a Counters,
    commits: &'a CommitSignal,
    after_batch: &'a RwLock<Vec<AfterBatch>>,
}

fn run<C: BatchConn>(
    mut conn: C,
    rx: mpsc::Receiver<Box<dyn Job<C>>>,
    synchronous_full: bool,
    shared: &Shared<'_>,
    ledger_slot: &OnceLock<Arc<Ledger>>,
) {
    let Shared { counters, commits, after_batch } = *shared;
    let mut adopted = false;
    loop {
        let next = match conn.idle_after() {
            Some(wait) => rx.recv_timeout(wait).map_err(|e| e == mpsc::RecvTimeoutError::Timeout),
            None => rx.recv().map_err(|_| false),
        };
        let first = match next {
            Ok(job) => job,
            Err(true) => {
                conn.idle();
                continue;
            }
            Err(false) => break,
        };
        // Attached after this thread started, before the journal's first command.
        if !adopted {
            if let Some(l) = ledger_slot.get() {
                ledger::adopt(Arc::clone(l));
                adopted = true;
            }
        }
        // Let submitters that are already runnable queue their commands too:
        // no fixed delay, and nothing to wait for when the process is idle.
        std::thread::yield_now();
        let mut batch = vec![first];
        drain(&rx, &mut batch);
        // A batch of checkpoints only is nobody's wait: linger briefly so the
        // record that usually follows (a provider that answers at once) joins
        // it in one transaction, one commit per dispatch instead of two.
        let until = Instant::now() + CHECKPOINT_LINGER;
        if !batch.iter().any(|j| j.durable()) {
            conn.open_early();
        }
        while batch.len() < MAX_BATCH && !batch.iter().any(|j| j.durable()) {
            let left = until.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(job) => {
                    batch.push(job);
                    drain(&rx, &mut batch);
                }
                Err(_) => break,
            }
        }
        let wakes = batch.iter().any(|j| j.durable());
        let durable = synchronous_full && wakes;
        let started = Instant::now();
        let (result, busy_retries) = commit_batch(&mut conn, &mut batch, durable, wakes, counters);
        let micros = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
        let size = batch.len() as u64;
        let info = BatchInfo { size, micros, durable, busy_retries, committed: result.is_ok() };
        if result.is_ok() && wakes {
            commits.send_modify(|g| *g = g.wrapping_add(1));
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
        counters.queued.fetch_sub(size, Ordering::Relaxed);
        for job in batch {
            job.answer(&result);
        }
        for f in after_batch.read().unwrap_or_else(|p| p.into_inner()).iter() {
            f(&info);
        }
    }
    // The sender is gone and the queue is empty: dropping `conn` closes it
    // (for SQLite, checkpointing the WAL when this is the file's last connection).
}

/// Adds whatever is already queued, up to [`MAX_BATCH`].
fn drain<C>(rx: &mpsc::Receiver<Box<dyn Job<C>>>, batch: &mut Vec<Box<dyn Job<C>>>) {
    while batch.len() < MAX_BATCH {
        match rx.try_recv() {
            Ok(job) => batch.push(job),
            Err(_) => break,
        }
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
