//! What `ShippedTurnStart` answers: LoopX's dispatch v1 document, valid
//! under LoopX's rules, inside the package's object that carries what those
//! rules leave no room for: core's fail-closed reads (a failed result may
//! not claim a read there), each hook's standing as core counted it, and the
//! lane.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::contract::{ShippedReadOrdering, ShippedRequiredReadSource, ShippedTurnStartDispatch, TOKEN_PATTERN};
use crate::contract::macros::closed_set;
use crate::turn_start::{PendingStanding, TurnStartLane};

closed_set!(
    /// Why a read is required before work.
    ShippedReadBasis {
        /// The hook's result requires it; the document's `required_reads` has it too.
        Result = "result",
        /// Core requires it where the result does not (the hook failed,
        /// answered a failure status, or reported less than the inbox
        /// holds): the read obligation of pending material stays.
        FailClosed = "fail_closed",
    }
);

/// One read the Agent makes before work: the registration's `required_read`
/// with its hook, as the document's entries are, and why it is required.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
#[ts(export)]
pub struct ShippedEnforcedRead {
    pub command: String,
    #[schemars(regex(pattern = TOKEN_PATTERN))]
    pub hook_id: String,
    #[schemars(regex(pattern = TOKEN_PATTERN))]
    pub capability_id: String,
    #[schemars(regex(pattern = TOKEN_PATTERN))]
    pub kind: String,
    pub reason: String,
    pub ordering: ShippedReadOrdering,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub prompt_budget_bytes: Option<u32>,
    pub source: ShippedRequiredReadSource,
    pub basis: ShippedReadBasis,
}

/// One called hook as core saw it.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
#[ts(export)]
pub struct ShippedHookStanding {
    pub hook_id: String,
    pub capability_id: String,
    /// The hook is in the document's `failures`, or its result has a
    /// failure status (`unavailable`, `failed`).
    pub failed: bool,
    /// First reads of this call: core's count when the call had a session.
    pub observations_new: u32,
    /// Pending messages after the calls, where core could count them.
    pub pending: u32,
    /// The hook's read obligation stands.
    pub read_required: bool,
    pub pending_standing: PendingStanding,
}

/// One `ShippedTurnStart` dispatch.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[ts(export)]
pub struct ShippedTurnStartOutcome {
    /// LoopX's dispatch v1 document. Valid under LoopX's rules; where core
    /// counted more than a result reports (first reads made through its
    /// session), the result carries core's count.
    pub document: ShippedTurnStartDispatch,
    /// Every read the Agent makes before work, deduplicated by command in
    /// hook_id order: the document's, then core's fail-closed ones.
    pub required_reads: Vec<ShippedEnforcedRead>,
    /// Each called hook, in hook_id order.
    pub hooks: Vec<ShippedHookStanding>,
    /// The lane decision, as the contract-v0 kernel decides it.
    pub lane: TurnStartLane,
}
