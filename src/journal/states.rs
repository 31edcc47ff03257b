//! The journal's vocabulary of standings: where a dispatch identity stands,
//! the final states a record sets, and an executor's decision on an intent.
//! The bottom of the journal's model: rows, records and the outbox use it.

use serde::Serialize;
use ts_rs::TS;

/// Where a dispatch identity stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, TS)]
#[ts(export)]
#[serde(rename_all = "snake_case")]
pub enum DispatchState {
    Checkpointed,
    Failed,
    Proposed,
    NotApplicable,
    Exhausted,
}

impl DispatchState {
    pub const ALL: [DispatchState; 5] = [
        DispatchState::Checkpointed,
        DispatchState::Failed,
        DispatchState::Proposed,
        DispatchState::NotApplicable,
        DispatchState::Exhausted,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            DispatchState::Checkpointed => "checkpointed",
            DispatchState::Failed => "failed",
            DispatchState::Proposed => "proposed",
            DispatchState::NotApplicable => "not_applicable",
            DispatchState::Exhausted => "exhausted",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        DispatchState::ALL.into_iter().find(|st| st.as_str() == s)
    }

    /// Proposed, not_applicable and exhausted hold a final receipt.
    pub fn is_final(self) -> bool {
        !matches!(self, DispatchState::Checkpointed | DispatchState::Failed)
    }
}

/// The final states a record can set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FinalStatus {
    Proposed,
    NotApplicable,
    Exhausted,
}

impl From<FinalStatus> for DispatchState {
    fn from(s: FinalStatus) -> Self {
        match s {
            FinalStatus::Proposed => DispatchState::Proposed,
            FinalStatus::NotApplicable => DispatchState::NotApplicable,
            FinalStatus::Exhausted => DispatchState::Exhausted,
        }
    }
}

/// An executor's decision on a recorded intent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, TS)]
#[ts(export)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Admit,
    Reject,
}

impl Decision {
    /// The stored value: `admitted` or `rejected`.
    pub fn as_stored(self) -> &'static str {
        match self {
            Decision::Admit => "admitted",
            Decision::Reject => "rejected",
        }
    }

    pub(crate) fn from_stored(s: &str) -> Option<Self> {
        match s {
            "admitted" => Some(Decision::Admit),
            "rejected" => Some(Decision::Reject),
            _ => None,
        }
    }
}
