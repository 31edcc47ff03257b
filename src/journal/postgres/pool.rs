//! Readers. The `postgres` client blocks on a runtime of its own, which must
//! not happen on a thread that drives an async runtime, and journal reads are
//! called from anywhere (the JS thread, napi's tokio workers, async tests).
//! A caller outside any runtime context (the JS thread: the dispatcher's
//! standing reads) queries on its own thread with a pooled connection; any
//! other caller hands the query to a reader thread and waits for it (one
//! thread hop). Pooled connections are dropped on a plain thread.
//!
//! A read on the caller's thread waits at most one statement bound
//! (`conn.rs`). When one ran out, the server may be frozen: further such
//! reads fail at once until a reader thread's probe gets an answer, so a
//! stuck server costs the JS thread one bound, not one per read.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio_postgres::Config;
use tokio_postgres_rustls::MakeRustlsConnect;

use super::super::{JournalError, Result};
use super::conn::{Bounds, Link};

type Job = Box<dyn FnOnce(&mut Link) + Send>;

/// Reader threads per journal.
const READERS: usize = 2;
/// Retries of a read on a reader thread whose server went away (writes
/// retry longer). A read on the caller's thread never sleeps: see `read_here`.
const READ_RETRIES: u32 = 6;
/// After a read on the caller's thread found the server unreachable, further
/// such reads fail at once for this long instead of each trying to connect
/// (with a black-holed host, a connect waits its whole timeout).
const UNREACHABLE_FOR: Duration = Duration::from_millis(250);

pub(super) struct ReadPool {
    tx: Mutex<Option<mpsc::Sender<Job>>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    /// Connections for callers outside any runtime; `None` once closed.
    idle: Mutex<Option<Vec<Link>>>,
    config: Config,
    tls: Option<MakeRustlsConnect>,
    schema: String,
    /// The journal's busy timeout, every reader's lock timeout (`conn.rs`).
    busy_timeout_ms: u32,
    bounds: Bounds,
    /// Until when reads on the caller's thread fail without trying.
    unreachable_until: Mutex<Option<Instant>>,
    /// A read on the caller's thread ran out of time: such reads fail at
    /// once until a probe on a reader thread is answered.
    frozen: Arc<AtomicBool>,
    /// A probe is queued or running.
    probing: Arc<AtomicBool>,
}

/// Idle connections kept for callers outside a runtime.
const IDLE: usize = 2;

impl ReadPool {
    pub(super) fn spawn(
        config: &Config,
        tls: &Option<MakeRustlsConnect>,
        schema: &str,
        busy_timeout_ms: u32,
        bounds: Bounds,
    ) -> Result<ReadPool> {
        let (tx, rx) = mpsc::channel::<Job>();
        let rx = Arc::new(Mutex::new(rx));
        let mut threads = Vec::with_capacity(READERS);
        for _ in 0..READERS {
            let rx = Arc::clone(&rx);
            let mut link = Link::new(config.clone(), tls.clone(), schema, true, bounds).lock_timeout(busy_timeout_ms);
            let thread = std::thread::Builder::new().name("loopx-journal-reader".into()).spawn(move || loop {
                // The lock is held only while waiting: the first idle reader takes the job.
                let job = rx.lock().unwrap_or_else(|p| p.into_inner()).recv();
                match job {
                    Ok(job) => job(&mut link),
                    Err(_) => break,
                }
            })?;
            threads.push(thread);
        }
        Ok(ReadPool {
            tx: Mutex::new(Some(tx)),
            threads: Mutex::new(threads),
            idle: Mutex::new(Some(Vec::new())),
            config: config.clone(),
            tls: tls.clone(),
            schema: schema.to_owned(),
            busy_timeout_ms,
            bounds,
            unreachable_until: Mutex::new(None),
            frozen: Arc::default(),
            probing: Arc::default(),
        })
    }

    /// Runs `f` on a reader's connection and waits for its answer; a lost
    /// connection is reopened and `f` tried again, a few times.
    pub(super) fn read<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: Fn(&mut Link) -> Result<T> + Send + 'static,
    {
        if tokio::runtime::Handle::try_current().is_err() || super::super::caller::waits() {
            return self.read_here(f);
        }
        let (answer, rx) = mpsc::sync_channel(1);
        let job: Job = Box::new(move |link| {
            let _ = answer.send(with_retries(link, &f));
        });
        if !self.send(job) {
            return Err(JournalError::Closed);
        }
        rx.recv().unwrap_or(Err(JournalError::Closed))
    }

    fn send(&self, job: Job) -> bool {
        match self.tx.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
            Some(tx) => tx.send(job).is_ok(),
            None => false,
        }
    }

    /// Asks a reader thread whether the server answers again; one at a time.
    fn probe(&self) {
        if self.probing.swap(true, Ordering::SeqCst) {
            return;
        }
        let (frozen, probing) = (Arc::clone(&self.frozen), Arc::clone(&self.probing));
        let job: Job = Box::new(move |link| {
            if link.batch("SELECT 1").is_ok() {
                frozen.store(false, Ordering::SeqCst);
            }
            probing.store(false, Ordering::SeqCst);
        });
        if !self.send(job) {
            self.probing.store(false, Ordering::SeqCst);
        }
    }

    /// On the caller's thread, with a pooled connection. That thread is
    /// usually the JS thread, which must not sleep through an outage: no
    /// backoff here. A pooled connection may have been cut while idle (a
    /// server restart), so a lost one gets one fresh connection at once;
    /// past that the read fails `Unavailable` and the caller decides (the
    /// dispatcher retries asynchronously, see lib/flights.ts).
    fn read_here<T>(&self, f: impl Fn(&mut Link) -> Result<T>) -> Result<T> {
        if self.frozen.load(Ordering::SeqCst) {
            self.probe();
            return Err(JournalError::Unavailable);
        }
        if self.unreachable_until.lock().unwrap_or_else(|p| p.into_inner()).is_some_and(|t| Instant::now() < t) {
            return Err(JournalError::Unavailable);
        }
        let pooled = match self.idle.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
            Some(idle) => idle.pop(),
            None => return Err(JournalError::Closed),
        };
        let was_pooled = pooled.is_some();
        let mut link = pooled.unwrap_or_else(|| {
            Link::new(self.config.clone(), self.tls.clone(), &self.schema, true, self.bounds.within_statement())
                .lock_timeout(self.busy_timeout_ms)
        });
        let mut out = f(&mut link);
        // A connection found closed gets one fresh try; one that ran out of time does not.
        if was_pooled && !link.timed_out && matches!(out, Err(JournalError::Unavailable)) {
            link.forget();
            out = f(&mut link);
        }
        if link.timed_out {
            self.frozen.store(true, Ordering::SeqCst);
        }
        if matches!(out, Err(JournalError::Unavailable)) {
            link.forget();
            *self.unreachable_until.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now() + UNREACHABLE_FOR);
        }
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        match idle.as_mut() {
            Some(idle) if idle.len() < IDLE && !link.is_lost() => idle.push(link),
            // Closed meanwhile, lost, or enough idle: dropped here, outside any runtime.
            _ => drop(link),
        }
        out
    }

    /// Lets running reads finish, then closes every connection.
    pub(super) fn close(&self) {
        if let Some(links) = self.idle.lock().unwrap_or_else(|p| p.into_inner()).take() {
            // Dropping a client blocks on its runtime: never on the caller's (maybe async) thread.
            let _ = std::thread::spawn(move || drop(links)).join();
        }
        self.tx.lock().unwrap_or_else(|p| p.into_inner()).take();
        let threads = std::mem::take(&mut *self.threads.lock().unwrap_or_else(|p| p.into_inner()));
        for t in threads {
            let _ = t.join();
        }
    }
}

/// Runs `f`, reopening a lost connection and trying again a few times.
fn with_retries<T>(link: &mut Link, f: &impl Fn(&mut Link) -> Result<T>) -> Result<T> {
    let mut tries = 0;
    loop {
        match f(link) {
            // After a deadline the server may be frozen: another try would wait as long again.
            Err(JournalError::Unavailable) if tries < READ_RETRIES && !link.timed_out => {
                link.forget();
                std::thread::sleep(Duration::from_millis(25 << tries));
                tries += 1;
            }
            other => return other,
        }
    }
}
