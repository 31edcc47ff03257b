//! What `dispatchTurnStart` resolves to: request verdict, one public receipt
//! per hook, the required reads projected into the interaction channels, and
//! the lane decision. Public-safe: ids, codes, counts and registered commands.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::contract::TurnStartReceipt;
use crate::contract::FailureCode;
use crate::validate::{Rule, Violation};

/// Where a required read is shown: the Agent's turn context and the CLI.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum InteractionChannel {
    Agent,
    Cli,
}

/// When a required read is done: before the selected work, always.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum ReadOrdering {
    #[default]
    BeforeWork,
}

/// One registered required read, projected into one channel.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
#[ts(export)]
pub struct RequiredReadProjection {
    pub channel: InteractionChannel,
    pub command: String,
    pub ordering: ReadOrdering,
}

/// What happens to the work lane quota selection picks.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum TurnStartLaneDecision {
    /// Nothing fresh and nothing left pending: the selected lane runs.
    KeepSelected,
    /// A fresh ordinary read: a non-blocking user notification, and the
    /// selected lane runs after the required read.
    NotifyKeepSelected,
    /// The material-review lane preempts the selected work.
    PreemptMaterialReview,
}

/// Why the lane decision is what it is (the strongest reason over every hook).
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum TurnStartLaneReason {
    /// No hook reported fresh or pending material.
    NothingToRead,
    /// New ordinary observations, first turn: notify, keep the lane.
    FreshOrdinaryRead,
    /// A hook failed and, with no inbox store to count from, whether material
    /// is pending is unknown: the required read runs before work (fail
    /// closed), and the lane is kept, because an unknown is no evidence of
    /// pending material and an outage must not block work indefinitely.
    StandingUnknown,
    /// Material first read on an earlier turn is still durably pending.
    MaterialStillPending,
    /// A verified reply among the new observations preempts on its first turn.
    VerifiedReply,
    /// A direct question among the new observations preempts on its first turn.
    DirectQuestion,
}

impl TurnStartLaneReason {
    pub fn decision(self) -> TurnStartLaneDecision {
        match self {
            TurnStartLaneReason::NothingToRead => TurnStartLaneDecision::KeepSelected,
            TurnStartLaneReason::FreshOrdinaryRead | TurnStartLaneReason::StandingUnknown => {
                TurnStartLaneDecision::NotifyKeepSelected
            }
            TurnStartLaneReason::MaterialStillPending
            | TurnStartLaneReason::VerifiedReply
            | TurnStartLaneReason::DirectQuestion => TurnStartLaneDecision::PreemptMaterialReview,
        }
    }
}

/// The lane decision with its reason.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
#[ts(export)]
pub struct TurnStartLane {
    pub decision: TurnStartLaneDecision,
    pub reason: TurnStartLaneReason,
}

impl TurnStartLane {
    pub fn from_reason(reason: TurnStartLaneReason) -> Self {
        TurnStartLane { decision: reason.decision(), reason }
    }
}

/// Why core made a hook's receipt itself: the provider threw
/// (`producer_failed`), did not settle within timeout_ms
/// (`producer_timed_out`), or answered with something that is not a valid
/// receipt of this hook (`result_contract_rejected`, with the first rule).
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[ts(export)]
pub struct TurnStartKernelFailure {
    pub code: FailureCode,
    pub rule: Option<Rule>,
}

/// Where a hook's `pending` count comes from.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum PendingStanding {
    /// The provider's receipt, accepted as it came (the hook succeeded).
    Reported,
    /// Core counted the inbox store's durably pending messages itself, and
    /// requires a read when there are any: the hook failed (an outage),
    /// reported fewer than the inbox holds, or a private write of its call
    /// failed.
    InboxStore,
    /// The hook failed, or a private write of its call failed, and no inbox
    /// store is attached (or it could not be read): unknown, so core
    /// requires the read anyway (fail closed).
    Unknown,
}

/// One hook's dispatch: its public receipt (the provider's, or the one core
/// made for a failure) and, when core made it, why.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[ts(export)]
pub struct TurnStartHookOutcome {
    pub hook_id: String,
    pub receipt: TurnStartReceipt,
    pub kernel_failure: Option<TurnStartKernelFailure>,
    pub pending_standing: PendingStanding,
}

impl TurnStartHookOutcome {
    /// Whether the hook's read obligation stands: its receipt requires the
    /// read, or its pending standing is unknown.
    pub fn read_required(&self) -> bool {
        self.receipt.agent_read_required || self.pending_standing == PendingStanding::Unknown
    }
}

/// The outcome of one `dispatchTurnStart`.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[ts(export)]
pub struct TurnStartOutcome {
    /// False when the request was invalid: nothing was read or written.
    pub admitted: bool,
    /// The request's violations; empty when admitted.
    pub violations: Vec<Violation>,
    /// False when the profile disables the phase (no hook ran).
    pub phase_enabled: bool,
    /// One per hook identity that ran, in hook_id byte order.
    pub hooks: Vec<TurnStartHookOutcome>,
    /// The required reads of hooks whose receipts need them, deduplicated by
    /// command (first in hook order), each in the Agent then the CLI channel.
    pub required_reads: Vec<RequiredReadProjection>,
    pub lane: TurnStartLane,
}
