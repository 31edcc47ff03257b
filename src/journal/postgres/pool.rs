//! Reader threads: each owns one read-only connection and runs queries sent
//! to it. The `postgres` client blocks on a runtime of its own, which must
//! not happen on an async runtime's thread, and journal reads are called
//! from anywhere (the JS thread, napi's tokio workers); handing them to
//! plain threads keeps every caller safe for one thread hop per read.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use postgres::Config;

use super::super::{JournalError, Result};
use super::conn::Link;

type Job = Box<dyn FnOnce(&mut Link) + Send>;

/// Reader threads per journal.
const READERS: usize = 2;
/// Retries of a read whose server went away: short, since a synchronous
/// reader may be holding up the JS thread (writes retry longer).
const READ_RETRIES: u32 = 6;

pub(super) struct ReadPool {
    tx: Mutex<Option<mpsc::Sender<Job>>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl ReadPool {
    pub(super) fn spawn(config: &Config, schema: &str) -> Result<ReadPool> {
        let (tx, rx) = mpsc::channel::<Job>();
        let rx = Arc::new(Mutex::new(rx));
        let mut threads = Vec::with_capacity(READERS);
        for _ in 0..READERS {
            let rx = Arc::clone(&rx);
            let mut link = Link::new(config.clone(), schema, true);
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
        Ok(ReadPool { tx: Mutex::new(Some(tx)), threads: Mutex::new(threads) })
    }

    /// Runs `f` on a reader's connection and waits for its answer; a lost
    /// connection is reopened and `f` tried again, a few times.
    pub(super) fn read<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: Fn(&mut Link) -> Result<T> + Send + 'static,
    {
        let (answer, rx) = mpsc::sync_channel(1);
        let job: Job = Box::new(move |link| {
            let mut tries = 0;
            let out = loop {
                match f(link) {
                    Err(JournalError::Unavailable) if tries < READ_RETRIES => {
                        link.forget();
                        std::thread::sleep(Duration::from_millis(25 << tries));
                        tries += 1;
                    }
                    other => break other,
                }
            };
            let _ = answer.send(out);
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

    /// Lets running reads finish, then closes every connection.
    pub(super) fn close(&self) {
        self.tx.lock().unwrap_or_else(|p| p.into_inner()).take();
        let threads = std::mem::take(&mut *self.threads.lock().unwrap_or_else(|p| p.into_inner()));
        for t in threads {
            let _ = t.join();
        }
    }
}
