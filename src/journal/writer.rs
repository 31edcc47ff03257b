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
//! more commands first: a queued checkpoint is not awaited, and the record
//! of a provider that answered at once then shares its transaction. A
//! checkpoint that counts an attempt on the server is awaited before its
//! provider runs, so a batch holding one does not linger.
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

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock, RwLock, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::commit::CommitSignal;
// A command's answer type is the jobs' (`job.rs`); commands may name it through the writer.
pub(crate) use super::job::Answer;
use super::job::{Job, Op, Task};
use super::ledger::{self, Ledger};
use super::merge::Merge;
use super::{JournalError, JournalOptions, Result};

mod batch;

/// Commands per transaction, at most.
pub(crate) const MAX_BATCH: usize = 256;
/// How long a batch holding only checkpoints waits for a record to join it.
const CHECKPOINT_LINGER: Duration = Duration::from_millis(1);
/// How long an SQLite writer stays awake after a batch (see
/// [`BatchConn::stay_awake_for`]). With one dispatch in flight the next
/// record comes one JS turn after the last commit settled; a writer still
/// awake then takes it with no wake-up, which would cost the JS thread a
/// futex wake and the record the scheduler's latency.
pub(crate) const AWAKE_FOR: Duration = Duration::from_micros(500);

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
    /// How long the writer stays awake after a batch, looking for the next
    /// command before it sleeps. Zero by default: where the database is a
    /// server that may share this host's cores, a writer kept awake takes
    /// CPU the server needs, and a round trip dwarfs a wake-up anyway.
    fn stay_awake_for(&self) -> Duration {
        Duration::ZERO
    }
    /// A batch of checkpoints is about to linger for a record: PostgreSQL
    /// opens its transaction meanwhile, so that round trip costs no wait.
    fn open_early(&mut self) {}
}

/// Called on the writer thread once every command of a batch was answered, so
/// that answers gathered by [`Answer`]s can be handed on in one go.
pub type AfterBatch = Arc<dyn Fn(&BatchInfo) + Send + Sync>;

/// What one group commit was, for observers (diagnostics channels, metrics).
/// Its members are declared in the order of their JSON names, so its text
/// has them in name order as the outcomes' own do, written with no `Value`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BatchInfo {
    /// Whole-batch retries after BUSY.
    pub busy_retries: u64,
    /// The transaction committed (false: every command was answered an error).
    pub committed: bool,
    /// Committed with `synchronous=FULL`.
    pub durable: bool,
    /// From BEGIN to the end of COMMIT (retries included), in microseconds.
    pub micros: u64,
    /// Commands in the transaction.
    pub size: u64,
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
    /// Times the writer thread slept until a command came: each costs a
    /// cross-thread wake-up, so per dispatch it is the hand-offs' price.
    pub wakes: u64,
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
    wakes: AtomicU64,
    max_batch: AtomicU64,
    queued: AtomicU64,
    commit_micros: AtomicU64,
    batch_size_buckets: [AtomicU64; 9],
    commit_micros_buckets: [AtomicU64; 9],
}

pub(crate) struct Writer<C> {
    tx: RwLock<Option<mpsc::Sender<Box<dyn Job<C>>>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
    /// The write connection: the writer thread holds it for each batch; an
    /// inline commit takes it when it is free and nothing is queued. The
    /// thread owns it, so it closes when the thread ends.
    conn: Weak<Mutex<C>>,
    shared: Arc<Shared>,
    /// Commit a command on the submitting thread when the writer is idle.
    inline: bool,
    synchronous_full: bool,
    /// The answer once there is no queue: Closed, or ReadOnly for a reader-only journal.
    refusal: JournalError,
}

thread_local! {
    /// This thread's commands may commit inline (see [`inline_here`]).
    static INLINE_HERE: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` with the commands this thread submits meanwhile allowed to
/// commit on it, where the journal was opened with inline commits: the
/// caller knows no other command of its own is on the way to batch with.
pub(crate) fn inline_here<R>(f: impl FnOnce() -> R) -> R {
    let before = INLINE_HERE.with(|h| h.replace(true));
    let out = f();
    INLINE_HERE.with(|h| h.set(before));
    out
}

/// What the writer thread shares with its [`Writer`] (and an inline commit).
struct Shared {
    counters: Counters,
    commits: CommitSignal,
    after_batch: RwLock<Vec<AfterBatch>>,
    /// The journal's attempt ledger, once it has one (see [`Writer::attach_ledger`]).
    ledger: OnceLock<Arc<Ledger>>,
}

impl<C: BatchConn> Writer<C> {
    /// `commits` is bumped after every commit that held a durable command (a
    /// record or a decision): consumers waiting for intents wake on it.
    pub(crate) fn spawn(conn: C, options: JournalOptions, commits: CommitSignal) -> Result<Writer<C>> {
        let (tx, rx) = mpsc::channel::<Box<dyn Job<C>>>();
        let shared = Arc::new(Shared {
            counters: Counters::default(),
            commits,
            after_batch: RwLock::default(),
            ledger: OnceLock::new(),
        });
        let thread_conn = Arc::new(Mutex::new(conn));
        let conn = Arc::downgrade(&thread_conn);
        let thread_shared = Arc::clone(&shared);
        let synchronous_full = options.synchronous_full;
        let thread = std::thread::Builder::new()
            .name("loopx-journal-writer".into())
            .spawn(move || run(&thread_conn, rx, synchronous_full, &thread_shared))?;
        Ok(Writer {
            tx: RwLock::new(Some(tx)),
            thread: Mutex::new(Some(thread)),
            conn,
            shared,
            inline: options.inline_commit,
            synchronous_full,
            refusal: JournalError::Closed,
        })
    }

    /// No thread and no connection: every command is refused as read-only.
    pub(crate) fn read_only() -> Writer<C> {
        Writer {
            tx: RwLock::new(None),
            thread: Mutex::new(None),
            conn: Weak::new(),
            shared: Arc::new(Shared {
                counters: Counters::default(),
                commits: Arc::new(tokio::sync::watch::channel(0).0),
                after_batch: RwLock::default(),
                ledger: OnceLock::new(),
            }),
            inline: false,
            synchronous_full: false,
            refusal: JournalError::ReadOnly,
        }
    }

    /// Queues a command whose answer is handed to `then` on the writer thread
    /// after its commit (no waiter to wake per command). When the writer is
    /// closed, `then` is dropped uncalled and the error returned. With inline
    /// commits and an idle writer, the command commits on this thread and
    /// `then` has run when this returns.
    pub(crate) fn submit_then<A, T>(&self, durable: bool, args: A, op: Op<C, A, T>, then: Answer<T>) -> Result<()>
    where
        A: Send + 'static,
        T: Send + 'static,
    {
        self.submit(Box::new(Task { args, op, merge: None, durable, awaited: false, out: None, reply: then }))
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
        self.submit(Box::new(Task { args, op, merge: Some(merge), durable, awaited: false, out: None, reply: then }))
    }

    /// Queues a command that is not durable but whose caller waits for its
    /// answer: its batch commits without lingering. `merge` as for
    /// [`Writer::submit_merged`].
    pub(crate) fn submit_awaited<A, T>(
        &self,
        args: A,
        op: Op<C, A, T>,
        merge: Option<Merge<C, A, T>>,
        then: Answer<T>,
    ) -> Result<()>
    where
        A: Send + 'static,
        T: Send + 'static,
    {
        self.submit(Box::new(Task { args, op, merge, durable: false, awaited: true, out: None, reply: then }))
    }

    fn submit(&self, job: Box<dyn Job<C>>) -> Result<()> {
        // Held while an inline commit runs, so `close` waits for it.
        let guard = self.tx.read().unwrap_or_else(|p| p.into_inner());
        let Some(tx) = guard.as_ref() else { return Err(self.refusal.clone()) };
        let job = if self.inline && INLINE_HERE.with(Cell::get) {
            match self.commit_here(job) {
                None => return Ok(()),
                Some(job) => job,
            }
        } else {
            job
        };
        let queued = &self.shared.counters.queued;
        // Counted before sending so the writer's decrement never comes first.
        queued.fetch_add(1, Ordering::SeqCst);
        tx.send(job).map_err(|_| {
            queued.fetch_sub(1, Ordering::SeqCst);
            JournalError::Closed
        })
    }

    /// Commits `job` on this thread when nothing is queued and the writer
    /// thread is between batches; hands it back otherwise. Commands queued
    /// earlier by this thread are still queued or being answered then, so
    /// its commands commit in the order it submitted them.
    fn commit_here(&self, job: Box<dyn Job<C>>) -> Option<Box<dyn Job<C>>> {
        let queued = &self.shared.counters.queued;
        if queued.load(Ordering::SeqCst) != 0 {
            return Some(job);
        }
        let Some(conn) = self.conn.upgrade() else { return Some(job) };
        let Ok(mut conn) = conn.try_lock() else { return Some(job) };
        if queued.load(Ordering::SeqCst) != 0 {
            return Some(job);
        }
        let shared = &*self.shared;
        let ledger = shared.ledger.get().cloned();
        ledger::while_adopted(ledger, || {
            let wakes = job.durable();
            batch::run_and_settle(&mut *conn, vec![job], (self.synchronous_full && wakes, wakes), shared, false);
        });
        None
    }

    /// Runs `read` on the write connection when the writer is between
    /// batches with nothing queued, without waiting for it; None otherwise.
    /// A WAL reader drops its page cache whenever another connection has
    /// committed, so right after this writer's commit its own connection
    /// reads from a current cache where a pooled reader fetches pages again.
    pub(crate) fn read_if_idle<T>(&self, read: impl FnOnce(&C) -> T) -> Option<T> {
        // Held while the read runs, so `close` waits for it.
        let guard = self.tx.read().unwrap_or_else(|p| p.into_inner());
        guard.as_ref()?;
        if self.shared.counters.queued.load(Ordering::SeqCst) != 0 {
            return None;
        }
        let conn = self.conn.upgrade()?;
        let conn = conn.try_lock().ok()?;
        Some(read(&conn))
    }

    /// Adds a callback run after each batch's answers.
    pub(crate) fn after_batch(&self, f: AfterBatch) {
        self.shared.after_batch.write().unwrap_or_else(|p| p.into_inner()).push(f);
    }

    /// Lets the record rules find the checkpoints this process noted (a final
    /// record whose checkpoint the server lost writes it again, `record/rule.rs`).
    pub(crate) fn attach_ledger(&self, ledger: Arc<Ledger>) {
        let _ = self.shared.ledger.set(ledger);
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
        let c = &self.shared.counters;
        WriterStats {
            commits: c.commits.load(Ordering::Relaxed),
            commands: c.commands.load(Ordering::Relaxed),
            durable_commits: c.durable_commits.load(Ordering::Relaxed),
            busy_retries: c.busy_retries.load(Ordering::Relaxed),
            wakes: c.wakes.load(Ordering::Relaxed),
            max_batch: c.max_batch.load(Ordering::Relaxed),
            queue_depth: c.queued.load(Ordering::Relaxed),
            commit_micros: c.commit_micros.load(Ordering::Relaxed),
            batch_size_buckets: std::array::from_fn(|i| c.batch_size_buckets[i].load(Ordering::Relaxed)),
            commit_micros_buckets: std::array::from_fn(|i| c.commit_micros_buckets[i].load(Ordering::Relaxed)),
        }
    }
}

/// The next command if one comes within `awake`, looked for without
/// sleeping (yielding the core to any other runnable thread meanwhile).
fn stay_awake<T>(rx: &mpsc::Receiver<T>, awake: Duration) -> Option<T> {
    if awake.is_zero() {
        return None;
    }
    let until = Instant::now() + awake;
    loop {
        std::thread::yield_now();
        match rx.try_recv() {
            Ok(job) => return Some(job),
            Err(mpsc::TryRecvError::Disconnected) => return None,
            Err(mpsc::TryRecvError::Empty) if Instant::now() >= until => return None,
            Err(mpsc::TryRecvError::Empty) => {}
        }
    }
}

fn run<C: BatchConn>(conn: &Mutex<C>, rx: mpsc::Receiver<Box<dyn Job<C>>>, synchronous_full: bool, shared: &Shared) {
    let lock = || conn.lock().unwrap_or_else(|p| p.into_inner());
    let mut adopted = false;
    loop {
        let (idle_after, awake) = {
            let c = lock();
            (c.idle_after(), c.stay_awake_for())
        };
        let next = match rx.try_recv() {
            Ok(job) => Ok(job),
            Err(mpsc::TryRecvError::Disconnected) => Err(false),
            Err(mpsc::TryRecvError::Empty) => match stay_awake(&rx, awake) {
                Some(job) => Ok(job),
                None => {
                    let woke = match idle_after {
                        Some(wait) => rx.recv_timeout(wait).map_err(|e| e == mpsc::RecvTimeoutError::Timeout),
                        None => rx.recv().map_err(|_| false),
                    };
                    if woke.is_ok() {
                        shared.counters.wakes.fetch_add(1, Ordering::Relaxed);
                    }
                    woke
                }
            },
        };
        let first = match next {
            Ok(job) => job,
            Err(true) => {
                lock().idle();
                continue;
            }
            Err(false) => break,
        };
        // Attached after this thread started, before the journal's first command.
        if !adopted {
            if let Some(l) = shared.ledger.get() {
                ledger::adopt(Arc::clone(l));
                adopted = true;
            }
        }
        // Let submitters that are already runnable queue their commands too:
        // no fixed delay, and nothing to wait for when the process is idle.
        std::thread::yield_now();
        let mut batch = vec![first];
        batch::drain(&rx, &mut batch);
        // A batch of checkpoints only is nobody's wait: linger briefly so the
        // record that usually follows (a provider that answers at once) joins
        // it in one transaction, one commit per dispatch instead of two.
        let until = Instant::now() + CHECKPOINT_LINGER;
        if !batch.iter().any(|j| j.awaited()) {
            lock().open_early();
        }
        while batch.len() < MAX_BATCH && !batch.iter().any(|j| j.awaited()) {
            let left = until.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(job) => {
                    // The drain above emptied the queue: this one came while it waited.
                    shared.counters.wakes.fetch_add(1, Ordering::Relaxed);
                    batch.push(job);
                    batch::drain(&rx, &mut batch);
                }
                Err(_) => break,
            }
        }
        let wakes = batch.iter().any(|j| j.durable());
        batch::run_and_settle(&mut *lock(), batch, (synchronous_full && wakes, wakes), shared, true);
    }
    // The sender is gone and the queue is empty: dropping the last `conn`
    // closes it (for SQLite, checkpointing the WAL when this is the file's
    // last connection).
}
