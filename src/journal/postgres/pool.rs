//! Readers. The `postgres` client blocks on a runtime of its own, which must
//! not happen on a thread that drives an async runtime, and journal reads are
//! called from anywhere (the JS thread, napi's tokio workers, async tests).
//! A caller outside any runtime context (the JS thread: the dispatcher's
//! standing reads) queries on its own thread with a pooled connection; any
//! other caller hands the query to a reader thread and waits for it (one
//! thread hop). Pooled connections are dropped on a plain thread.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use postgres::Config;
use tokio_postgres_rustls::MakeRustlsConnect;

use super::super::{JournalError, Result};
use super::conn::Link;

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
    /// Until when reads on the caller's thread fail without trying.
    unreachable_until: Mutex<Option<Instant>>,
}

/// Idle connections kept for callers outside a runtime.
const IDLE: usize = 2;

impl ReadPool {
    pub(super) fn spawn(
        config: &Config,
        tls: &Option<MakeRustlsConnect>,
        schema: &str,
        busy_timeout_ms: u32,
    ) -> Result<ReadPool> {
        let (tx, rx) = mpsc::channel::<Job>();
        let rx = Arc::new(Mutex::new(rx));
        let mut threads = Vec::with_capacity(READERS);
        for _ in 0..READERS {
            let rx = Arc::clone(&rx);
            let mut link = Link::new(config.clone(), tls.clone(), schema, true).lock_timeout(busy_timeout_ms);
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
            unreachable_until: Mutex::new(None),
        })
    }

    /// Runs `f` on a reader's connection and waits for its answer; a lost
    /// connection is reopened and `f` tried again, a few times.
    pub(super) fn read<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: Fn(&mut Link) -> Result<T> + Send + 'static,
    {
        if tokio::runtime::Handle::try_current().is_err() {
            return self.read_here(f);
        }
        let (answer, rx) = mpsc::sync_channel(1);
        let job: Job = Box::new(move |link| {
            let _ = answer.send(with_retries(link, &f));
        });
        let sent = match self.tx.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
            Some(tx) => tx.send(job).is_ok(),
            None => false,
        };
        if !sent {
            return Err(JournalError::Closed);
        }
        rx.recv().unwrap_or(Err(JournalError::Closed))
    }

    /// On the caller's thread, with a pooled connection. That thread is
    /// usually the JS thread, which must not sleep through an outage: no
    /// backoff here. A pooled connection may have been cut while idle (a
    /// server restart), so a lost one gets one fresh connection at once;
    /// past that the read fails `Unavailable` and the caller decides (the
    /// dispatcher retries asynchronously, see lib/flights.ts).
    fn read_here<T>(&self, f: impl Fn(&mut Link) -> Result<T>) -> Result<T> {
        if self.unreachable_until.lock().unwrap_or_else(|p| p.into_inner()).is_some_and(|t| Instant::now() < t) {
            return Err(JournalError::Unavailable);
        }
        let pooled = match self.idle.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
            Some(idle) => idle.pop(),
            None => return Err(JournalError::Closed),
        };
        let was_pooled = pooled.is_some();
        let mut link = pooled.unwrap_or_else(|| {
            Link::new(self.config.clone(), self.tls.clone(), &self.schema, true).lock_timeout(self.busy_timeout_ms)
        });
        let mut out = f(&mut link);
        if was_pooled && matches!(out, Err(JournalError::Unavailable)) {
            link.forget();
            out = f(&mut link);
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
            Err(JournalError::Unavailable) if tries < READ_RETRIES => {
                link.forget();
                std::thread::sleep(Duration::from_millis(25 << tries));
                tries += 1;
            }
            other => return other,
        }
    }
}
