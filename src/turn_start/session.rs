//! A turn-start hook's session (issue 12, turn-start item 7): the
//! owner-private inbox as one hook invocation may use it, with its
//! registration's write scopes and budget enforced by core rather than
//! self-reported. The kernel opens one per invocation when an inbox store is
//! attached and closes it when the invocation ends (answered, thrown or timed
//! out); every call after that is refused.
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
use std::sync::{Arc, Mutex};

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

impl SessionError {
    /// The stable code at the JS boundary.
    pub fn code(&self) -> &'static str {
        match self {
            SessionError::ScopeNotGranted(_) | SessionError::CollectorCapture => "ERR_LOOPX_SCOPE_NOT_GRANTED",
            SessionError::BudgetExhausted(_) => "ERR_LOOPX_BUDGET_EXHAUSTED",
            SessionError::Closed => "ERR_LOOPX_SESSION_CLOSED",
            SessionError::Inbox(e) => e.stable_code(),
        }
    }
}

type Result<T> = std::result::Result<T, SessionError>;

/// What core counted in one session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SessionCounts {
    pub routes_read: u32,
    pub attempts: u32,
    pub external_writes: u32,
    pub reactions_added: u32,
}

#[derive(Default)]
struct State {
    closed: bool,
    routes: BTreeSet<String>,
    counts: SessionCounts,
}

pub struct TurnStartSession {
    store: Arc<InboxStore>,
    scopes: Vec<TurnStartWriteScope>,
    budget: TurnStartBudget,
    state: Mutex<State>,
}

impl TurnStartSession {
    pub fn new(store: Arc<InboxStore>, scopes: Vec<TurnStartWriteScope>, budget: TurnStartBudget) -> Self {
        TurnStartSession { store, scopes, budget, state: Mutex::new(State::default()) }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn grant(&self, scope: TurnStartWriteScope, name: &'static str) -> Result<()> {
        if self.state().closed {
            return Err(SessionError::Closed);
        }
        if self.scopes.contains(&scope) {
            Ok(())
        } else {
            Err(SessionError::ScopeNotGranted(name))
        }
    }

    /// Takes one attempt of the aggregate budget, or refuses.
    fn attempt(state: &mut State, budget: &TurnStartBudget) -> Result<()> {
        if state.counts.attempts >= budget.max_attempts_per_dispatch {
            return Err(SessionError::BudgetExhausted("attempt"));
        }
        state.counts.attempts += 1;
        Ok(())
    }

    /// Declares one external read of `route_id` before the provider makes
    /// it: one attempt, and a new route counts against `max_routes`.
    pub fn read_route(&self, route_id: &str) -> Result<SessionCounts> {
        let mut state = self.state();
        if state.closed {
            return Err(SessionError::Closed);
        }
        let new_route = !state.routes.contains(route_id);
        if new_route && state.routes.len() as u32 >= self.budget.max_routes {
            return Err(SessionError::BudgetExhausted("route"));
        }
        if route_id.is_empty() || route_id.len() > super::inbox::MAX_ID_BYTES {
            return Err(SessionError::Inbox(InboxError::InvalidArgument { what: "routeId" }));
        }
        Self::attempt(&mut state, &self.budget)?;
        if new_route {
            state.routes.insert(route_id.to_owned());
            state.counts.routes_read += 1;
        }
        Ok(state.counts)
    }

    pub fn capture(&self, input: &CaptureInput) -> Result<CaptureOutcome> {
        self.grant(TurnStartWriteScope::OwnerPrivateInbox, "owner_private_inbox")?;
        if input.source == CaptureSource::Collector {
            return Err(SessionError::CollectorCapture);
        }
        Ok(self.store.capture(input)?)
    }

    pub fn record_first_reads(&self, read_ref: &str) -> Result<FirstReads> {
        self.grant(TurnStartWriteScope::OwnerPrivateInbox, "owner_private_inbox")?;
        Ok(self.store.record_first_reads(read_ref)?)
    }

    pub fn claim_cursor(&self, scope: &str, kind: CursorKind, lease_ms: u32) -> Result<ClaimOutcome> {
        self.grant(TurnStartWriteScope::OwnerPrivateCursor, "owner_private_cursor")?;
        Ok(self.store.claim_cursor(scope, kind, lease_ms)?)
    }

    pub fn advance_cursor(
        &self,
        scope: &str,
        kind: CursorKind,
        token: &str,
        value: &str,
        read: &[MessageRef],
    ) -> Result<AdvanceOutcome> {
        self.grant(TurnStartWriteScope::OwnerPrivateCursor, "owner_private_cursor")?;
        Ok(self.store.advance_cursor(scope, kind, token, value, read)?)
    }

    pub fn release_cursor(&self, scope: &str, kind: CursorKind, token: &str) -> Result<bool> {
        self.grant(TurnStartWriteScope::OwnerPrivateCursor, "owner_private_cursor")?;
        Ok(self.store.release_cursor(scope, kind, token)?)
    }

    pub fn reaction_candidates(&self, collector_id: &str, max: u32) -> Result<Vec<MessageRef>> {
        self.grant(TurnStartWriteScope::ProviderMessageReaction, "provider_message_reaction")?;
        Ok(self.store.reaction_candidates(collector_id, max)?)
    }

    /// One attempt of the budget; a `Proceed` (the provider may now create
    /// the reaction) is one external write.
    pub fn begin_reaction(&self, m: &MessageRef) -> Result<ReactionBegin> {
        self.grant(TurnStartWriteScope::ProviderMessageReaction, "provider_message_reaction")?;
        Self::attempt(&mut self.state(), &self.budget)?;
        let begun = self.store.begin_reaction(m)?;
        if begun == ReactionBegin::Proceed {
            self.state().counts.external_writes += 1;
        }
        Ok(begun)
    }

    pub fn finish_reaction(&self, m: &MessageRef, result: ReactionResult) -> Result<ReactionFinish> {
        self.grant(TurnStartWriteScope::ProviderMessageReaction, "provider_message_reaction")?;
        let finished = self.store.finish_reaction(m, result)?;
        if result == ReactionResult::Added && finished == ReactionFinish::Recorded {
            self.state().counts.reactions_added += 1;
        }
        Ok(finished)
    }

    pub fn resolve_reaction(&self, m: &MessageRef, result: ReactionResult) -> Result<ReactionFinish> {
        self.grant(TurnStartWriteScope::ProviderMessageReaction, "provider_message_reaction")?;
        Ok(self.store.resolve_reaction(m, result)?)
    }

    /// Ends the session; what core counted.
    pub fn close(&self) -> SessionCounts {
        let mut state = self.state();
        state.closed = true;
        state.counts
    }
}
