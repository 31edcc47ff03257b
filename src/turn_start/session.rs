//! A turn-start hook's session: the
//! owner-private inbox as one hook invocation may use it, with its
//! registration's write scopes and budget enforced by core rather than
//! self-reported. The kernel opens one per invocation when an inbox store is
//! attached and closes it the moment the invocation ends (answered, thrown, timed out,
//! past its wall budget), whatever else the dispatch still runs; every call
//! after that is refused.
//!
//! - Writes outside the registration's `write_scopes` are refused
//!   (`ScopeNotGranted`): captures and first reads need `owner_private_inbox`,
//!   cursors `owner_private_cursor`, reactions `provider_message_reaction`.
//! - A realtime-collection capture (`source: collector`) cannot go through a
//!   session: the collector gets no session, so it can never reach the
//!   reaction scope.
//! - Core counts: every route read and every reaction attempt is one attempt
//!   of the dispatch's aggregate `max_attempts_per_dispatch`; distinct routes
//!   read are bounded by `max_routes`; a reaction attempt admitted to create
//!   is an external write. Past a bound the call is refused
//!   (`BudgetExhausted`) and nothing is written.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard};

use super::contract::{TurnStartBudget, TurnStartWriteScope};
use super::inbox::{
    AdvanceOutcome, CaptureInput, CaptureOutcome, CaptureSource, ClaimOutcome, CursorKind, FirstReads, InboxError,
    InboxStore, MessageRef, ReactionBegin, ReactionFinish, ReactionResult,
};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SessionError {
    #[error("the registration does not grant the {0} write scope")]
    ScopeNotGranted(&'static str),
    #[error("a realtime-collection capture cannot use a turn-start session")]
    CollectorCapture,
    #[error("the dispatch's {0} budget is exhausted")]
    BudgetExhausted(&'static str),
    #[error("the hook's session is closed")]
    Closed,
    #[error(transparent)]
    Inbox(#[from] InboxError),
}

type Result<T> = std::result::Result<T, SessionError>;

/// What core counted in one session: what the provider did through it,
/// which stands where its receipt reports less.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SessionCounts {
    pub routes_read: u32,
    pub attempts: u32,
    pub external_writes: u32,
    /// Reactions this session admitted to create and saw added.
    pub reactions_added: u32,
    /// Reactions this session saw end failed or uncertain, or admitted and
    /// never saw finish before the call ended (their effect is unknown).
    pub reactions_failed: u32,
    /// Calls refused because a budget of the dispatch was spent.
    pub budget_refusals: u32,
    /// Private writes (capture, first reads, cursor, reaction receipt) the
    /// store refused or failed: a busy or closed inbox, an i/o error. What
    /// they would have recorded is not in the store, so it is not claimed.
    pub write_failures: u32,
    /// The first reads recorded through this session, summed; `pending` is
    /// the inbox's pending count after the last of them.
    pub first_reads: FirstReads,
}

#[derive(Default)]
struct State {
    routes: BTreeSet<String>,
    counts: SessionCounts,
    /// Reactions admitted (`Proceed`) here and not yet finished.
    admitted: BTreeSet<MessageRef>,
    /// The counts at close, unfinished admissions included; set once.
    closed: Option<SessionCounts>,
}

pub struct TurnStartSession {
    store: Arc<InboxStore>,
    scopes: Vec<TurnStartWriteScope>,
    budget: TurnStartBudget,
    /// Set the moment the call ends; every later operation is refused.
    ended: AtomicBool,
    /// Held shared by each operation for its whole run and taken exclusively
    /// by [`TurnStartSession::close`], so the counts at close include every
    /// operation that was admitted before the call ended.
    running: RwLock<()>,
    state: Mutex<State>,
}

impl TurnStartSession {
    pub fn new(store: Arc<InboxStore>, scopes: Vec<TurnStartWriteScope>, budget: TurnStartBudget) -> Self {
        TurnStartSession {
            store,
            scopes,
            budget,
            ended: AtomicBool::new(false),
            running: RwLock::new(()),
            state: Mutex::new(State::default()),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Admits one operation while the call lasts: the guard keeps `close`
    /// waiting until the operation is done.
    fn enter(&self) -> Result<RwLockReadGuard<'_, ()>> {
        let guard = self.running.read().unwrap_or_else(|p| p.into_inner());
        if self.ended.load(Ordering::SeqCst) {
            return Err(SessionError::Closed);
        }
        Ok(guard)
    }

    fn grant(&self, scope: TurnStartWriteScope, name: &'static str) -> Result<RwLockReadGuard<'_, ()>> {
        let guard = self.enter()?;
        if self.scopes.contains(&scope) {
            Ok(guard)
        } else {
            Err(SessionError::ScopeNotGranted(name))
        }
    }

    /// Takes one attempt of the aggregate budget, or refuses (and counts the refusal).
    fn attempt(state: &mut State, budget: &TurnStartBudget) -> Result<()> {
        if state.counts.attempts >= budget.max_attempts_per_dispatch {
            state.counts.budget_refusals += 1;
            return Err(SessionError::BudgetExhausted("attempt"));
        }
        state.counts.attempts += 1;
        Ok(())
    }

    /// Counts a private write the store did not commit; a caller's invalid
    /// argument is refused before any write and is not one.
    fn written<T>(&self, done: std::result::Result<T, InboxError>) -> Result<T> {
        if let Err(e) = &done {
            if !matches!(e, InboxError::InvalidArgument { .. }) {
                self.state().counts.write_failures += 1;
            }
        }
        Ok(done?)
    }

    /// Declares one external read of `route_id` before the provider makes
    /// it: one attempt, and a new route counts against `max_routes`.
    pub fn read_route(&self, route_id: &str) -> Result<SessionCounts> {
        let _running = self.enter()?;
        if route_id.is_empty() || route_id.len() > super::inbox::MAX_ID_BYTES {
            return Err(SessionError::Inbox(InboxError::InvalidArgument { what: "routeId" }));
        }
        let mut state = self.state();
        let new_route = !state.routes.contains(route_id);
        if new_route && state.routes.len() as u32 >= self.budget.max_routes {
            state.counts.budget_refusals += 1;
            return Err(SessionError::BudgetExhausted("route"));
        }
        Self::attempt(&mut state, &self.budget)?;
        if new_route {
            state.routes.insert(route_id.to_owned());
            state.counts.routes_read += 1;
        }
        Ok(state.counts)
    }

    pub fn capture(&self, input: &CaptureInput) -> Result<CaptureOutcome> {
        let _running = self.grant(TurnStartWriteScope::OwnerPrivateInbox, "owner_private_inbox")?;
        if input.source == CaptureSource::Collector {
            return Err(SessionError::CollectorCapture);
        }
        self.written(self.store.capture(input))
    }

    /// First reads through the session are core's own count of what this
    /// invocation routed to the Agent; a receipt cannot report fewer.
    pub fn record_first_reads(&self, read_ref: &str) -> Result<FirstReads> {
        let _running = self.grant(TurnStartWriteScope::OwnerPrivateInbox, "owner_private_inbox")?;
        let reads = self.written(self.store.record_first_reads(read_ref))?;
        let seen = &mut self.state().counts.first_reads;
        seen.observations_new += reads.observations_new;
        seen.direct_questions += reads.direct_questions;
        seen.verified_replies += reads.verified_replies;
        seen.pending = reads.pending;
        Ok(reads)
    }

    pub fn claim_cursor(&self, scope: &str, kind: CursorKind, lease_ms: u32) -> Result<ClaimOutcome> {
        let _running = self.grant(TurnStartWriteScope::OwnerPrivateCursor, "owner_private_cursor")?;
        self.written(self.store.claim_cursor(scope, kind, lease_ms))
    }

    pub fn advance_cursor(
        &self,
        scope: &str,
        kind: CursorKind,
        token: &str,
        value: &str,
        read: &[MessageRef],
    ) -> Result<AdvanceOutcome> {
        let _running = self.grant(TurnStartWriteScope::OwnerPrivateCursor, "owner_private_cursor")?;
        self.written(self.store.advance_cursor(scope, kind, token, value, read))
    }

    pub fn release_cursor(&self, scope: &str, kind: CursorKind, token: &str) -> Result<bool> {
        let _running = self.grant(TurnStartWriteScope::OwnerPrivateCursor, "owner_private_cursor")?;
        self.written(self.store.release_cursor(scope, kind, token))
    }

    pub fn reaction_candidates(&self, collector_id: &str, max: u32) -> Result<Vec<MessageRef>> {
        let _running = self.grant(TurnStartWriteScope::ProviderMessageReaction, "provider_message_reaction")?;
        Ok(self.store.reaction_candidates(collector_id, max)?)
    }

    /// One attempt of the budget; a `Proceed` (the provider may now create
    /// the reaction) is one external write.
    pub fn begin_reaction(&self, m: &MessageRef) -> Result<ReactionBegin> {
        let _running = self.grant(TurnStartWriteScope::ProviderMessageReaction, "provider_message_reaction")?;
        Self::attempt(&mut self.state(), &self.budget)?;
        let begun = self.written(self.store.begin_reaction(m))?;
        if begun == ReactionBegin::Proceed {
            let mut state = self.state();
            state.counts.external_writes += 1;
            state.admitted.insert(m.clone());
        }
        Ok(begun)
    }

    /// A reaction counts as added here only when this session admitted its
    /// create: one begun in an earlier dispatch was that dispatch's write.
    pub fn finish_reaction(&self, m: &MessageRef, result: ReactionResult) -> Result<ReactionFinish> {
        let _running = self.grant(TurnStartWriteScope::ProviderMessageReaction, "provider_message_reaction")?;
        let finished = self.written(self.store.finish_reaction(m, result))?;
        if finished == ReactionFinish::Recorded {
            let mut state = self.state();
            let admitted_here = state.admitted.remove(m);
            match result {
                ReactionResult::Added if admitted_here => state.counts.reactions_added += 1,
                ReactionResult::Added => {}
                ReactionResult::Failed | ReactionResult::Uncertain => state.counts.reactions_failed += 1,
            }
        }
        Ok(finished)
    }

    pub fn resolve_reaction(&self, m: &MessageRef, result: ReactionResult) -> Result<ReactionFinish> {
        let _running = self.grant(TurnStartWriteScope::ProviderMessageReaction, "provider_message_reaction")?;
        self.written(self.store.resolve_reaction(m, result))
    }

    /// Ends the call without waiting: every later operation is refused.
    pub fn end(&self) {
        self.ended.store(true, Ordering::SeqCst);
    }

    /// Ends the session, waits for the operations admitted before the end,
    /// and returns what core counted; a reaction admitted and never finished
    /// counts as failed (its effect is unknown). Idempotent.
    pub fn close(&self) -> SessionCounts {
        self.end();
        let _all_done = self.running.write().unwrap_or_else(|p| p.into_inner());
        let mut state = self.state();
        if let Some(counts) = state.closed {
            return counts;
        }
        let mut counts = state.counts;
        counts.reactions_failed += state.admitted.len() as u32;
        state.closed = Some(counts);
        counts
    }
}
