//! The turn-start room (RFC "Provider-Neutral Turn-Start Inbox Hook v0",
//! contract-v0 section 6): its public documents, their validators and the
//! kernel. It shares contract-v0's grammar primitives and rule codes with the
//! post-writeback side and knows nothing of post-writeback dispatch.

pub mod contract;
mod entry;
mod hook;
pub mod inbox;
mod judge;
mod kernel;
mod lane;
mod outcome;
mod reconcile;
mod request;
mod session;
mod sessions;
mod steps;
mod validate;

pub use crate::provider_reply::{ProviderReply, ReplyFuture};
pub use contract::*;
pub use hook::{InstalledTurnStartHook, TurnStartHookInput, TurnStartProvider};
pub use judge::{TurnStartCallResult, MAX_RECEIPT_BYTES};
pub use kernel::{Registered, TurnStartKernel, TurnStartProfile};
pub use lane::{decide_lane, lane_reason};
pub use outcome::*;
pub use request::{
    validate_turn_start_request, TurnIdentity, TurnStartQuotaRequest, TurnStartRequest, MAX_QUOTA_UNITS,
};
pub use session::{SessionCounts, SessionError, TurnStartSession};
pub use sessions::{DispatchStart, Granted, InboxSessions};
pub use steps::{TurnStartCall, TurnStartPlan, TurnStartPrepared};
pub use validate::{command, is_command_word, validate_turn_start_receipt, validate_turn_start_registration};

#[cfg(test)]
mod tests;
