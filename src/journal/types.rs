//! The values of the dispatch record commands and their outcomes.

use serde::Serialize;
use ts_rs::TS;

use super::states::FinalStatus;
use super::DispatchRow;
use crate::contract::Dialect;

/// The checkpoint written before a provider is invoked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checkpoint {
    pub dispatch_id: String,
    pub hook_id: String,
    pub capability_id: String,
    pub receipt_id: String,
    pub effect_id: String,
    pub event_kind: String,
    pub registration_digest: String,
    /// The contract the dispatch speaks: it decides the grammar the ids are
    /// checked against and how readers rebuild the receipt.
    pub dialect: Dialect,
    /// The source's commit time, for dialects whose receipt carries it.
    pub recorded_at: Option<String>,
    /// The public-safe dispatch request, enough to re-dispatch on recover.
    /// Stored verbatim; the journal does not parse it.
    pub request_json: String,
    /// The invocation this checkpoint precedes (1-based): an unfinished row's
    /// `attempts` becomes at least this, so an invocation cut short by a crash
    /// still counts against the lifetime budget. 0 journals the identity as
    /// deferred: owed (recover() runs it) with no attempt used.
    pub attempt: u32,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CheckpointState {
    /// The row was created now (with `attempts` = the checkpoint's attempt).
    Fresh,
    /// The identity exists without a final receipt (checkpointed or failed);
    /// `attempts_used` is its count before this checkpoint raised it.
    Pending { attempts_used: u32 },
    /// The identity is final: replay it, do not invoke. The row's columns
    /// (with its intent ids) are the receipt; `dispatch::receipt_from_row`
    /// builds it.
    Final { row: Box<DispatchRow> },
}

impl CheckpointState {
    /// Attempts used before this checkpoint; 0 when fresh, the final attempt count is not kept here.
    pub fn attempts_used(&self) -> Option<u32> {
        match self {
            CheckpointState::Fresh => Some(0),
            CheckpointState::Pending { attempts_used } => Some(*attempts_used),
            CheckpointState::Final { .. } => None,
        }
    }
}

/// One intent of a proposed result. Its id, kind and capability are columns;
/// the rest of the document that the dispatch row does not determine is
/// `stored_json`, opaque to the journal (`dispatch::stored_intent` writes it,
/// `dispatch::intent_from_stored` rebuilds the full document).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IntentRow {
    pub intent_id: String,
    pub capability_id: String,
    pub intent_kind: String,
    pub stored_json: String,
}

/// The final record of a dispatch identity.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FinalRecord {
    pub dispatch_id: String,
    /// The attempt that produced it, 1-based.
    pub attempt: u32,
    pub status: FinalStatus,
    /// sha256 hex of the canonical accepted result: required when `status` is
    /// proposed or not_applicable, absent when exhausted. No receipt document
    /// is stored: the row's columns and intents are the receipt.
    pub result_digest: Option<String>,
    /// Non-empty only when `status` is proposed.
    pub intents: Vec<IntentRow>,
    /// `(code, rule)`; required when `status` is exhausted, else absent. It is
    /// stored as the failures row of `attempt` unless that attempt already has
    /// one (a failed invocation keeps its own code; the receipt holds the
    /// exhausted code either way).
    pub failure: Option<(String, Option<String>)>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RecordOutcome {
    Recorded,
    /// Someone recorded a final receipt first; nothing was written. Compare
    /// digests to tell a replay from a conflict.
    AlreadyFinal {
        row: Box<DispatchRow>,
    },
}

/// One failed attempt (a FailureReceipt: codes only, never a message).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FailureRecord {
    pub dispatch_id: String,
    pub attempt: u32,
    pub code: String,
    pub rule: Option<String>,
    /// Where `rule` was broken: a JSON Pointer already made public
    /// (`validate::public_pointer`); the journal stores it as given.
    pub pointer: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FailureOutcome {
    Recorded { attempts_used: u32 },
    AlreadyFinal { row: Box<DispatchRow> },
}

/// What `PRAGMA integrity_check` and `PRAGMA foreign_key_check` said.
/// `messages` are SQLite's (page numbers, table and index names; never
/// stored values), empty when `ok`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct IntegrityVerdict {
    pub ok: bool,
    pub messages: Vec<String>,
}
