//! Core's turn-start enforcement, shared by both dialects: the owner-private
//! inbox attached to a runtime, the sessions it grants one per provider call,
//! and the settling of every hook's receipt against what core saw (its
//! sessions' counts, the inbox's standing after the calls). The contract-v0
//! kernel and the shipped dialect's `ShippedTurnStart` each hold one of these,
//! so the same rules hold whichever documents go in and come out.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use super::contract::{TurnStartBudget, TurnStartWriteScope};
use super::inbox::{InboxStanding, InboxStore, ReadBefore};
use super::lane::decide_outcome_lane;
use super::outcome::{TurnStartHookOutcome, TurnStartLane};
use super::reconcile::{fail_closed, reconcile, recount};
use super::session::{SessionCounts, TurnStartSession};
use crate::identity;

/// One call's session: its token (what the provider's side names it by) and the session.
pub type Granted = (String, Arc<TurnStartSession>);

/// The inbox attached to a runtime and the sessions of its calls in flight.
#[derive(Default)]
pub struct InboxSessions {
    inbox: RwLock<Option<Arc<InboxStore>>>,
    by_token: Mutex<HashMap<String, Arc<TurnStartSession>>>,
    counter: AtomicU64,
}

/// What the inbox looked like when a dispatch began, to tell fresh reads from carried ones.
#[derive(Default)]
pub struct DispatchStart {
    read_before: Option<ReadBefore>,
}

impl InboxSessions {
    /// Attaches the owner-private inbox store the providers use.
    pub fn use_inbox(&self, store: Arc<InboxStore>) {
        *self.inbox.write().unwrap_or_else(|p| p.into_inner()) = Some(store);
    }

    pub fn inbox(&self) -> Option<Arc<InboxStore>> {
        self.inbox.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The session of a call in flight.
    pub fn session(&self, token: &str) -> Option<Arc<TurnStartSession>> {
        self.by_token.lock().unwrap_or_else(|p| p.into_inner()).get(token).cloned()
    }

    /// Reads which pending messages the inbox had read before any call runs.
    pub fn start(&self) -> DispatchStart {
        DispatchStart { read_before: self.inbox().and_then(|store| store.read_before().ok()) }
    }

    /// Opens a session for one call of `hook_id`, when an inbox is attached.
    pub fn open(&self, hook_id: &str, scopes: Vec<TurnStartWriteScope>, budget: TurnStartBudget) -> Option<Granted> {
        let store = self.inbox()?;
        let session = Arc::new(TurnStartSession::new(store, scopes, budget));
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        let seed = format!("{}:{n}:{:?}:{hook_id}", std::process::id(), std::time::SystemTime::now());
        let token = format!("tss_{}", identity::sha256_hex(seed.as_bytes()));
        self.by_token.lock().unwrap_or_else(|p| p.into_inner()).insert(token.clone(), session.clone());
        Some((token, session))
    }

    /// Ends a call's session the moment the call ends: its token is
    /// forgotten and every later operation refused, while the rest of the
    /// dispatch runs on.
    pub fn end(&self, granted: &Granted) {
        self.by_token.lock().unwrap_or_else(|p| p.into_inner()).remove(&granted.0);
        granted.1.end();
    }

    /// Ends the session and returns what core counted in it.
    pub fn close(&self, granted: &Granted) -> SessionCounts {
        self.end(granted);
        granted.1.close()
    }

    /// Settles every hook's receipt against what core saw, then decides the lane:
    /// - each session's counts stand where a receipt reports fewer, and a
    ///   private write that failed makes a success `partial`
    ///   (`private_receipt_failed`) with only what the store persisted;
    /// - the inbox's pending material after the calls is every hook's floor
    ///   (a read obligation is never under-reported);
    /// - a failed hook takes its pending count from the inbox, or, without
    ///   one, its standing is unknown and its read stays required.
    ///
    /// `counts` has one entry per outcome, `None` where the call had no
    /// session: no inbox, or a registration that does not write to it.
    pub fn settle(
        &self,
        start: &DispatchStart,
        outcomes: &mut [TurnStartHookOutcome],
        counts: Vec<Option<SessionCounts>>,
    ) -> TurnStartLane {
        // A hook whose call had no session does not share the inbox: its
        // pending material is not the inbox's to count.
        let shares: Vec<bool> = counts.iter().map(Option::is_some).collect();
        for (outcome, counts) in outcomes.iter_mut().zip(counts) {
            if let Some(counts) = counts {
                reconcile(outcome, counts);
            }
        }
        let standing: Option<InboxStanding> = match (&start.read_before, self.inbox()) {
            (Some(before), Some(store)) => store.standing(before).ok(),
            _ => None,
        };
        let pending = match standing {
            Some(s) => Some(s.pending()),
            None => self.inbox().and_then(|store| store.pending_count().ok()),
        };
        for (outcome, shares) in outcomes.iter_mut().zip(shares) {
            let pending = pending.filter(|_| shares);
            if outcome.receipt.status.failure_code().is_some() {
                fail_closed(outcome, pending);
            } else {
                recount(outcome, pending);
            }
        }
        decide_outcome_lane(outcomes, standing)
    }
}
