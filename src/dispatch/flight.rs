//! What the dispatcher shares with the writer thread: which identities are in
//! flight in this process, the dispatches in flight, and where finished ones
//! go. A dispatch that needs records finishes on the writer thread after its
//! group commit; every dispatch finished by one commit is handed on together.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use tokio::sync::{oneshot, watch, Notify};

use super::outcome::DispatchOutcome;
use crate::journal::{BatchInfo, JournalError};

/// A dispatch whose records committed (or failed to).
#[derive(Debug)]
pub struct Finished {
    pub ticket: u64,
    pub outcome: Result<DispatchOutcome, JournalError>,
}

/// Receives, on the writer thread, every dispatch one group commit finished,
/// with the token that says they are on their way to their callers.
pub type Deliver = Box<dyn Fn(Vec<Finished>, &BatchInfo, OnTheWay) + Send + Sync>;

/// Dispatches handed to the deliver callback whose callers have not received
/// them yet. Drop it where they are received (or where the hand-off failed):
/// until then none of the dispatches in flight counts as alone, since their
/// callers are about to start more.
#[must_use]
pub struct OnTheWay {
    count: Arc<AtomicUsize>,
    n: usize,
}

impl Drop for OnTheWay {
    fn drop(&mut self) {
        self.count.fetch_sub(self.n, Ordering::AcqRel);
    }
}

pub(super) struct Shared {
    /// dispatch_id -> the ticket of the dispatch that holds it. Two runs of
    /// one identity in this process take turns, so the second replays the
    /// first's receipt (or sees its failure) instead of invoking again.
    pub(super) claims: Mutex<HashMap<String, u64>>,
    /// Finished by the batch being answered, not yet handed on.
    finished: Mutex<Vec<Finished>>,
    /// Tickets someone awaits in Rust (the async driver).
    waiters: Mutex<HashMap<u64, oneshot::Sender<Result<DispatchOutcome, JournalError>>>>,
    /// Tickets whose caller takes the outcome itself if it is finished by
    /// the time `complete` returns (an inline commit): kept here, not delivered.
    held: Mutex<HashMap<u64, Option<Result<DispatchOutcome, JournalError>>>>,
    deliver: RwLock<Option<Deliver>>,
    /// Woken whenever claims are released.
    pub(super) released: Notify,
    /// Dispatches in flight; `close()` waits for none.
    pub(super) running: watch::Sender<usize>,
    /// Finished dispatches not yet received by their callers: counted from
    /// [`Shared::finish`], so from before they stop running.
    undelivered: Arc<AtomicUsize>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
    pub(super) fn new() -> Self {
        Shared {
            claims: Mutex::default(),
            finished: Mutex::default(),
            waiters: Mutex::default(),
            held: Mutex::default(),
            deliver: RwLock::new(None),
            released: Notify::new(),
            running: watch::channel(0).0,
            undelivered: Arc::default(),
        }
    }

    /// Claims every id for `ticket`, or none: the ticket holding one of them.
    pub(super) fn try_claim(&self, ids: &[String], ticket: u64) -> Result<(), u64> {
        let mut claims = lock(&self.claims);
        if let Some(holder) = ids.iter().find_map(|id| claims.get(id)) {
            return Err(*holder);
        }
        for id in ids {
            claims.insert(id.clone(), ticket);
        }
        Ok(())
    }

    pub(super) fn release(&self, ids: &[String], ticket: u64) {
        if ids.is_empty() {
            return;
        }
        {
            let mut claims = lock(&self.claims);
            for id in ids {
                if claims.get(id) == Some(&ticket) {
                    claims.remove(id);
                }
            }
        }
        self.released.notify_waiters();
    }

    pub(super) fn start_running(&self) {
        self.running.send_modify(|n| *n += 1);
    }

    pub(super) fn stop_running(&self) {
        self.running.send_modify(|n| *n = n.saturating_sub(1));
    }

    pub(super) fn finish(&self, done: Finished) {
        self.undelivered.fetch_add(1, Ordering::AcqRel);
        lock(&self.finished).push(done);
    }

    /// Whether every finished dispatch has reached its caller.
    pub(super) fn all_delivered(&self) -> bool {
        self.undelivered.load(Ordering::Acquire) == 0
    }

    pub(super) fn set_deliver(&self, deliver: Deliver) {
        *self.deliver.write().unwrap_or_else(|p| p.into_inner()) = Some(deliver);
    }

    /// Someone in Rust awaits `ticket` (registered before `complete`).
    pub(super) fn wait_for(&self, ticket: u64) -> oneshot::Receiver<Result<DispatchOutcome, JournalError>> {
        let (tx, rx) = oneshot::channel();
        lock(&self.waiters).insert(ticket, tx);
        rx
    }

    /// The caller of `complete` for `ticket` takes its outcome if it finishes
    /// before [`Shared::take_held`]; afterwards it is delivered as usual.
    pub(super) fn hold(&self, ticket: u64) {
        lock(&self.held).insert(ticket, None);
    }

    /// Ends the hold of `ticket`: its outcome, if it finished meanwhile.
    pub(super) fn take_held(&self, ticket: u64) -> Option<Result<DispatchOutcome, JournalError>> {
        lock(&self.held).remove(&ticket).flatten()
    }

    pub(super) fn forget(&self, ticket: u64) {
        lock(&self.waiters).remove(&ticket);
    }

    /// Hands on what the last batch finished: to its Rust waiter, else to the
    /// delivery callback, all in one call.
    pub(super) fn flush(&self, batch: &BatchInfo) {
        let done = std::mem::take(&mut *lock(&self.finished));
        if done.is_empty() {
            return;
        }
        let mut rest = Vec::with_capacity(done.len());
        let handed = done.len();
        {
            let mut waiters = lock(&self.waiters);
            let mut held = lock(&self.held);
            for f in done {
                match (waiters.remove(&f.ticket), held.get_mut(&f.ticket)) {
                    (Some(tx), _) => {
                        let _ = tx.send(f.outcome);
                    }
                    (None, Some(slot)) => *slot = Some(f.outcome),
                    (None, None) => rest.push(f),
                }
            }
        }
        // The ones a waiter or a holder took are received already.
        let on_the_way = OnTheWay { count: Arc::clone(&self.undelivered), n: rest.len() };
        self.undelivered.fetch_sub(handed - rest.len(), Ordering::AcqRel);
        if !rest.is_empty() {
            if let Some(deliver) = self.deliver.read().unwrap_or_else(|p| p.into_inner()).as_ref() {
                deliver(rest, batch, on_the_way);
            }
        }
    }
}
