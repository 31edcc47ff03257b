//! One installed turn-start hook: its registration, its identity, its
//! provider, and the input it receives. The kernel keeps a sorted list of
//! these; the steps, the judge and the lane read them.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::contract::{TurnStartBudget, TurnStartHookRegistration, TurnStartWriteScope};
use super::request::{TurnIdentity, TurnStartRequest};
use crate::provider_reply::ReplyFuture;

/// A turn-start provider: takes its input as JSON text, answers with its
/// public receipt. It does its bounded external reads, owner-private inbox
/// and cursor writes and (when registered) reactions itself.
pub trait TurnStartProvider: Send + Sync {
    /// Starts one invocation. The kernel applies timeout_ms and drops the
    /// future (and with it any late answer) when it expires.
    fn invoke(&self, input_json: String) -> ReplyFuture;
}

/// What a provider receives: who it is, the Turn, its budget and scopes.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
#[ts(export)]
pub struct TurnStartHookInput {
    pub hook_id: String,
    pub capability_id: String,
    pub turn: TurnIdentity,
    /// The one aggregate attempt budget of this dispatch, its routes and timeout.
    pub budget: TurnStartBudget,
    pub write_scopes: Vec<TurnStartWriteScope>,
    /// When an inbox store is attached: this invocation's session, through
    /// which core grants, counts and bounds its inbox writes and reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub session: Option<String>,
}

/// One installed hook.
pub struct InstalledTurnStartHook {
    pub registration: TurnStartHookRegistration,
    /// sha256 of the registration's canonical JSON: with hook_id, its identity.
    pub digest: String,
    /// `None` when the caller of the kernel's steps invokes it (a JS function).
    pub provider: Option<Arc<dyn TurnStartProvider>>,
}

/// The input one hook receives, with its session token when an inbox is attached.
pub(super) fn hook_input(hook: &InstalledTurnStartHook, request: &TurnStartRequest, session: Option<String>) -> String {
    let registration = &hook.registration;
    let input = TurnStartHookInput {
        hook_id: registration.hook_id.clone(),
        capability_id: registration.capability_id.clone(),
        turn: request.turn.clone(),
        budget: registration.budget,
        write_scopes: registration.write_scopes.clone(),
        session,
    };
    serde_json::to_string(&input).unwrap_or_default()
}
