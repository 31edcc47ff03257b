//! The inbox store's API values. They are owner-private: message identities,
//! routes and payloads cross only between a provider, the store and the
//! Agent's private drain, never into a public receipt or journal.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use ts_rs::TS;

/// Who captured a message: the realtime collector (no provider write is ever
/// admitted from it) or the turn-start hook's own read.
#[derive(Serialize, Deserialize, TS, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum CaptureSource {
    Collector,
    TurnStart,
}

/// The sender's type, as the provider knows it (never guessed from a display
/// name or the body).
#[derive(Serialize, Deserialize, TS, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum SenderKind {
    Human,
    Bot,
    System,
    /// Unresolved: captured (the self filter fails open), never reacted to.
    Unknown,
}

/// Who sent a captured message, as the provider verified it.
#[derive(Serialize, Deserialize, TS, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[ts(export)]
pub struct Sender {
    pub kind: SenderKind,
    /// The sender's identity as verified for the configured profile, exact;
    /// null when unresolved.
    pub verified_identity: Option<String>,
}

/// Attention class: scheduling and reply policy only, never whether a read
/// message gets its acknowledgement.
#[derive(Serialize, Deserialize, TS, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum Attention {
    Ordinary,
    Mention,
    DirectQuestion,
    VerifiedReply,
}

impl Attention {
    pub fn as_str(self) -> &'static str {
        match self {
            Attention::Ordinary => "ordinary",
            Attention::Mention => "mention",
            Attention::DirectQuestion => "direct_question",
            Attention::VerifiedReply => "verified_reply",
        }
    }
}

/// One message, identified by its route and its provider message identity.
#[derive(Serialize, Deserialize, TS, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[ts(export)]
pub struct MessageRef {
    pub route_id: String,
    pub provider_message_id: String,
}

/// One provider message to capture into the inbox (`InboxCollector.capture` for
/// realtime collection, `TurnStartSession.capture` for a turn-start hook).
#[derive(Serialize, Deserialize, TS, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[ts(export)]
pub struct CaptureInput {
    pub route_id: String,
    pub provider_message_id: String,
    pub source: CaptureSource,
    pub sender: Sender,
    pub attention: Attention,
    /// The message as the provider keeps it (private; at most 64 KiB of JSON).
    #[ts(type = "unknown")]
    pub payload: Value,
}

/// What `capture` did: captured, a repeat of a captured message, or the profile's own message.
#[derive(Serialize, Deserialize, TS, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum CaptureOutcome {
    Captured,
    /// Already in the inbox under this provider message identity: collapsed.
    Duplicate,
    /// From the configured profile's own, exactly verified identity.
    SelfFiltered,
}

/// What one turn-start dispatch's first Agent reads amounted to: the counts
/// of a public receipt.
#[derive(Serialize, Deserialize, TS, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "camelCase")]
#[ts(export)]
pub struct FirstReads {
    /// Pending messages that got their first Agent read now.
    pub observations_new: u32,
    pub direct_questions: u32,
    pub verified_replies: u32,
    /// Messages pending after this call, the new ones included.
    pub pending: u32,
}

/// The Agent's typed semantic disposition of a message it read.
#[derive(Serialize, Deserialize, TS, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum Disposition {
    /// Update the selected work without changing the durable Goal frontier.
    SteerCurrentTurn,
    /// Update Todo/vision/priority state before continuing.
    ReplanGoal,
    /// Commit a durable domain effect or evidence record.
    RecordContext,
    /// Considered; the current plan stands.
    ContinueCurrentWork,
    /// Irrelevant or duplicate material, settled explicitly.
    NoFollowUp,
}

impl Disposition {
    pub fn as_str(self) -> &'static str {
        match self {
            Disposition::SteerCurrentTurn => "steer_current_turn",
            Disposition::ReplanGoal => "replan_goal",
            Disposition::RecordContext => "record_context",
            Disposition::ContinueCurrentWork => "continue_current_work",
            Disposition::NoFollowUp => "no_follow_up",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [
            Disposition::SteerCurrentTurn,
            Disposition::ReplanGoal,
            Disposition::RecordContext,
            Disposition::ContinueCurrentWork,
            Disposition::NoFollowUp,
        ]
        .into_iter()
        .find(|d| d.as_str() == s)
    }

    /// A material result changes work or durable state, so it must be bound
    /// to a durable effect receipt before the message is acknowledged.
    pub fn is_material(self) -> bool {
        matches!(self, Disposition::SteerCurrentTurn | Disposition::ReplanGoal | Disposition::RecordContext)
    }
}

/// One message of the private drain.
#[derive(Serialize, Deserialize, TS, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[ts(export)]
pub struct PendingMessage {
    /// Position in the inbox: the paging cursor.
    #[ts(type = "number")]
    pub seq: i64,
    pub route_id: String,
    pub provider_message_id: String,
    pub source: CaptureSource,
    pub sender_kind: SenderKind,
    pub attention: Attention,
    #[ts(type = "unknown")]
    pub payload: Value,
    /// Whether a turn-start dispatch has given it its first Agent read.
    pub read: bool,
    pub disposition: Option<Disposition>,
    pub effect_receipt_id: Option<String>,
}

/// What `dispose` did: recorded, unchanged, or why not.
#[derive(Serialize, Deserialize, TS, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum DisposeOutcome {
    Recorded,
    /// The same disposition (and effect) again.
    Unchanged,
    /// The Agent has not read it yet.
    NotRead,
    /// Another disposition, or another effect receipt, is already bound.
    Conflict,
    AlreadyAcked,
    UnknownMessage,
}

/// What `InboxStore.ack` did: acknowledged, or why not.
#[derive(Serialize, Deserialize, TS, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum AckOutcome {
    Acked,
    AlreadyAcked,
    NotRead,
    NoDisposition,
    /// A material disposition without its durable effect receipt.
    EffectNotBound,
    UnknownMessage,
}

/// Whether a reaction may be created now.
#[derive(Serialize, Deserialize, TS, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum ReactionBegin {
    /// Recorded as attempting: create the reaction, then `finishReaction`.
    Proceed,
    AlreadyAdded,
    /// Another attempt began less than `attemptStaleMs` ago and has not
    /// finished: no second create.
    InFlight,
    /// An earlier attempt's effect is unknown (it answered uncertain, or it
    /// never finished and is stale): fail closed, no new create until
    /// `resolveReaction` after a provider readback.
    Uncertain,
    /// Acknowledged already: the reaction is for still-pending messages.
    NotPending,
    /// Not human-authored (or the sender is unresolved).
    NotHuman,
    /// No turn-start hook has read it into the Agent's turn (collector-only capture).
    NotRead,
    UnknownMessage,
}

/// How one reaction attempt ended, as the provider saw it.
#[derive(Serialize, Deserialize, TS, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum ReactionResult {
    Added,
    /// Definitely not created: eligible again on a later dispatch.
    Failed,
    /// Unknown whether it was created.
    Uncertain,
}

/// What `finishReaction` or `resolveReaction` did.
#[derive(Serialize, Deserialize, TS, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum ReactionFinish {
    Recorded,
    /// There was no attempt in flight for this message.
    NotAttempting,
    UnknownMessage,
}

/// The provider-local cursors, independent of each other.
#[derive(Serialize, Deserialize, TS, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum CursorKind {
    /// History ingestion position.
    History,
    /// Acknowledgement replay position.
    Ack,
}

impl CursorKind {
    pub fn as_str(self) -> &'static str {
        match self {
            CursorKind::History => "history",
            CursorKind::Ack => "ack",
        }
    }
}

/// A single-flight claim of one cursor.
#[derive(Serialize, Deserialize, TS, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
#[ts(export)]
pub struct CursorClaim {
    /// Present the claim when advancing or releasing.
    pub token: String,
    /// The cursor's value; null before its first advance.
    pub value: Option<String>,
}

/// What `claimCursor` did: claimed (with the claim), or another holder's lease lives.
#[derive(Serialize, Deserialize, TS, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case", tag = "outcome")]
#[ts(export)]
pub enum ClaimOutcome {
    Claimed(CursorClaim),
    /// Another claim holds it and has not expired.
    Busy,
}

/// What `advanceCursor` did.
#[derive(Serialize, Deserialize, TS, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum AdvanceOutcome {
    /// Written and read back; the claim is released.
    Advanced,
    /// The claim expired or was never this one's: nothing written.
    LeaseLost,
    /// A message the provider read is not in the inbox: nothing written.
    MissingMessages,
}
