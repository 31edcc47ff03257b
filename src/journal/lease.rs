//! Outbox consumers that share the work: leases on open intents.
//!
//! An executor claims up to `batch` open intents (undecided, or admitted and
//! not done), oldest first, optionally of one capability and kind, for
//! `lease_ms`. While an intent's lease is set, `decide` and `mark_done`
//! accept only its owner and only before it expires
//! ([`JournalError::LeaseNotHeld`], [`JournalError::LeaseExpired`]); an
//! expired lease makes the intent claimable again, so a consumer that died
//! mid-lease leaves nothing behind. The lease, not the deciding executor,
//! authorises `mark_done`: a successor may finish an intent its dead
//! predecessor admitted. A claim is a plain write command (no fsync: a claim
//! lost to a power cut only expires sooner), and a claim that finds nothing
//! claimable on a reader connection writes nothing.
//!
//! Waking consumers: they wait on the journal's commit generation
//! (`commit.rs`).

use std::time::Duration;

use super::{arg, Journal, JournalError, Reply, Result, StoredIntent};

/// Longest lease and largest batch a claim may ask for.
pub const MAX_LEASE_MS: u32 = 3_600_000;
pub const MAX_CLAIM_BATCH: u32 = 1000;

/// What an executor asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClaimRequest {
    pub executor_id: String,
    pub lease_ms: u32,
    pub batch: u32,
    pub capability_id: Option<String>,
    pub intent_kind: Option<String>,
}

/// The lease rule of `decide` and `mark_done`: a leased intent answers only
/// its owner, and only before the lease ends. `Ok(true)` when the caller
/// holds the live lease, `Ok(false)` when the intent was never claimed.
pub(crate) fn check_lease(owner: Option<&str>, until: Option<i64>, executor_id: &str, now: i64) -> Result<bool> {
    match owner {
        None => Ok(false),
        Some(o) if o != executor_id => Err(JournalError::LeaseNotHeld),
        Some(_) if until.is_none_or(|u| u <= now) => Err(JournalError::LeaseExpired),
        Some(_) => Ok(true),
    }
}

impl Journal {
    /// Claims up to `batch` open intents, oldest first, for `lease_ms`:
    /// those never claimed, or whose lease expired. Answers the claimed
    /// rows (an admitted one was admitted by an earlier holder: mark it done).
    pub fn claim(&self, r: ClaimRequest) -> Reply<Vec<StoredIntent>> {
        let checked = arg::token(&r.executor_id, "executorId")
            .and_then(|()| arg::opt_token(r.capability_id.as_deref(), "capabilityId"))
            .and_then(|()| arg::opt_token(r.intent_kind.as_deref(), "intentKind"))
            .and(match (r.lease_ms, r.batch) {
                (1..=MAX_LEASE_MS, 1..=MAX_CLAIM_BATCH) => Ok(()),
                (1..=MAX_LEASE_MS, _) => Err(JournalError::InvalidArgument { what: "batch" }),
                _ => Err(JournalError::InvalidArgument { what: "leaseMs" }),
            });
        if let Err(e) = checked {
            return Reply::ready(Err(e));
        }
        let now = super::commit::now_ms();
        self.queue(|then| self.store.claim(r, now, then))
    }

    /// The commit generation of this file in this process: it grows after
    /// every commit holding a record or a decision.
    pub fn commit_generation(&self) -> u64 {
        *self.commits.borrow()
    }

    /// Waits until the commit generation passes `after`, or `timeout`, or
    /// [`Journal::release_waits`], or the journal closes; answers whether
    /// the generation passed. Once closed it answers at once.
    pub async fn wait_for_commit(&self, after: u64, timeout: Duration) -> bool {
        let mut rx = self.commits.subscribe();
        let mut released = self.waits.subscribe();
        if *released.borrow_and_update() == CLOSED {
            return false;
        }
        tokio::select! {
            passed = rx.wait_for(|g| *g > after) => passed.is_ok(),
            _ = released.changed() => false,
            () = tokio::time::sleep(timeout) => false,
        }
    }

    /// Ends every pending [`Journal::wait_for_commit`] of this journal now
    /// (answering `false`), so that a consumer that stops leaves no timer
    /// behind; another consumer woken so looks for work once more.
    pub fn release_waits(&self) {
        self.waits.send_modify(|e| {
            if *e != CLOSED {
                *e = (*e + 1) % CLOSED;
            }
        });
    }
}

/// The value of a closed journal's wait epoch.
pub(super) const CLOSED: u64 = u64::MAX;
