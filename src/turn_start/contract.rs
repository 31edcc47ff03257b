//! The public documents of the turn-start inbox hook (RFC "Provider-Neutral
//! Turn-Start Inbox Hook v0", contract-v0 section 6), as serde + ts-rs +
//! schemars types: the registration and the public receipt.
//!
//! As in `crate::contract`, these types describe the *shape* of a valid
//! document; `super::validate` is the acceptance policy, and only a document
//! it accepts is deserialized into them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::contract::macros::{closed_set, literal};
use crate::contract::FailurePolicy;

literal!(
    /// The `schema_version` of a turn-start hook registration.
    TurnStartRegistrationSchemaVersion = "loopx_turn_start_capability_hook_registration_v0");
literal!(
    /// The `schema_version` of a turn-start hook receipt.
    TurnStartReceiptSchemaVersion = "loopx_turn_start_hook_receipt_v0");

/// Grammar of a required-read command (contract-v0 section 6): 1..=16 words of
/// `(--)?[a-z0-9][a-z0-9_.=:-]*` separated by single spaces, at most 256 bytes.
pub const COMMAND_PATTERN: &str = r"^(--)?[a-z0-9][a-z0-9_.=:-]*( (--)?[a-z0-9][a-z0-9_.=:-]*){0,15}$";
pub const COMMAND_MAX_BYTES: usize = 256;
pub const COMMAND_MAX_WORDS: usize = 16;

/// The ceilings of a turn-start budget and of the receipt's route counts (a
/// receipt never reports more routes than any registration could allow).
pub const MAX_TIMEOUT_MS: u32 = 30_000;
pub const MAX_ATTEMPTS_PER_DISPATCH: u32 = 16;
pub const MAX_ROUTES: u32 = 16;

closed_set!(
    /// The hook phase of this contract; `post_writeback` belongs to the other one.
    TurnStartPhase { TurnStart = "turn_start" }
);

closed_set!(
    /// What a turn-start hook may write (RFC: "Its only allowed local writes
    /// are the registered owner-private inbox and cursor scopes. Its only
    /// admitted external write is the explicit provider_message_reaction scope").
    TurnStartWriteScope {
        /// The owner-private inbox: captured messages, read and effect receipts. Always declared.
        OwnerPrivateInbox = "owner_private_inbox",
        /// Provider-local history and acknowledgement cursors.
        OwnerPrivateCursor = "owner_private_cursor",
        /// One idempotent acknowledgement reaction on a captured, still-pending,
        /// human-authored message the hook has read into the Agent's turn.
        ProviderMessageReaction = "provider_message_reaction",
    }
);

closed_set!(
    /// The status of one turn-start hook dispatch. The set comes from the RFC's
    /// "Failure and replay" section:
    /// - `ok`: a valid provider success envelope was read on every route tried
    ///   and at least one pending message received its first Agent-owned read
    ///   in this dispatch (the counterpart of `empty`);
    /// - `empty`: "a valid provider success envelope was read and no pending
    ///   message received its first Agent-owned turn-start read in this dispatch";
    /// - `partial`: "partial multi-route success", and "provider or
    ///   private-receipt failure is partial, never a false success";
    /// - `provider_contract_error`: "the success envelope did not match its
    ///   declared schema; it must never degrade to empty" (also what core makes
    ///   of a receipt that breaks this contract);
    /// - `provider_permission_denied`, `provider_unavailable`: "provider
    ///   permission and availability failures remain typed and isolated";
    /// - `timed_out`: the hook did not finish within its budget's timeout_ms
    ///   (the registration's bounded budget).
    TurnStartStatus {
        Ok = "ok",
        Empty = "empty",
        Partial = "partial",
        ProviderContractError = "provider_contract_error",
        ProviderPermissionDenied = "provider_permission_denied",
        ProviderUnavailable = "provider_unavailable",
        TimedOut = "timed_out",
    }
);

closed_set!(
    /// The compact error code of a receipt: null on `ok` and `empty`, the
    /// status itself on a failure status, and on `partial` the code of the
    /// failed routes (when a route failed) or of the failed step.
    TurnStartErrorCode {
        /// A route's success envelope did not match its schema.
        ProviderContractError = "provider_contract_error",
        /// A route refused the configured credentials.
        ProviderPermissionDenied = "provider_permission_denied",
        /// A route could not be reached.
        ProviderUnavailable = "provider_unavailable",
        /// A route (or the hook) ran past its timeout.
        TimedOut = "timed_out",
        /// Every route read, but an acknowledgement reaction failed; the read
        /// stays pending and the reaction is retried from the pending-read set.
        ReactionFailed = "reaction_failed",
        /// An owner-private read or effect receipt could not be committed and
        /// read back; the captured inbox event is kept.
        PrivateReceiptFailed = "private_receipt_failed",
        /// The aggregate per-dispatch attempt budget ended the dispatch before
        /// every pending read or reaction was served; the rest stays eligible.
        AttemptBudgetExhausted = "attempt_budget_exhausted",
    }
);

impl TurnStartErrorCode {
    /// Codes that name failed routes: on `partial` they need routes_failed >= 1,
    /// and routes_failed >= 1 needs one of them.
    pub fn names_routes(self) -> bool {
        matches!(
            self,
            TurnStartErrorCode::ProviderContractError
                | TurnStartErrorCode::ProviderPermissionDenied
                | TurnStartErrorCode::ProviderUnavailable
                | TurnStartErrorCode::TimedOut
        )
    }
}

impl TurnStartStatus {
    /// The error code a failure status carries: the status itself.
    pub fn failure_code(self) -> Option<TurnStartErrorCode> {
        match self {
            TurnStartStatus::ProviderContractError => Some(TurnStartErrorCode::ProviderContractError),
            TurnStartStatus::ProviderPermissionDenied => Some(TurnStartErrorCode::ProviderPermissionDenied),
            TurnStartStatus::ProviderUnavailable => Some(TurnStartErrorCode::ProviderUnavailable),
            TurnStartStatus::TimedOut => Some(TurnStartErrorCode::TimedOut),
            TurnStartStatus::Ok | TurnStartStatus::Empty | TurnStartStatus::Partial => None,
        }
    }
}

/// `loopx_turn_start_capability_hook_registration_v0`: one provider hook of
/// the `turn_start` phase.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
#[ts(export)]
pub struct TurnStartHookRegistration {
    pub schema_version: TurnStartRegistrationSchemaVersion,
    /// A token that starts with `<capability_id>.`.
    #[schemars(regex(pattern = crate::contract::pattern::TOKEN), length(min = 1, max = 128))]
    pub hook_id: String,
    #[schemars(regex(pattern = crate::contract::pattern::TOKEN), length(min = 1, max = 128))]
    pub capability_id: String,
    pub phase: TurnStartPhase,
    pub required_read: TurnStartRequiredRead,
    /// Unique; always holds `owner_private_inbox`; `provider_message_reaction`
    /// only when the provider adds acknowledgement reactions.
    #[schemars(
        length(min = 1, max = 3),
        extend("uniqueItems" = true, "contains" = { "const": "owner_private_inbox" })
    )]
    pub write_scopes: Vec<TurnStartWriteScope>,
    pub budget: TurnStartBudget,
    pub failure_policy: FailurePolicy,
}

/// The one bounded, public-safe read the Agent must do before work when this
/// hook's receipt says so. Core sets the channels and the ordering.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Debug, PartialEq, Eq, Hash)]
#[serde(deny_unknown_fields)]
#[ts(export)]
pub struct TurnStartRequiredRead {
    /// 1..=16 words of `(--)?[a-z0-9][a-z0-9_.=:-]*`, single spaces, <= 256 bytes.
    #[schemars(regex(pattern = COMMAND_PATTERN), length(min = 1, max = 256))]
    pub command: String,
}

/// Ceilings of one turn-start dispatch of this hook.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
#[ts(export)]
pub struct TurnStartBudget {
    #[schemars(range(min = 1, max = 30000))]
    pub timeout_ms: u32,
    /// One aggregate budget for every provider attempt of a dispatch: route
    /// reads, retries and reaction replays together.
    #[schemars(range(min = 1, max = 16))]
    pub max_attempts_per_dispatch: u32,
    /// Routes one dispatch may read.
    #[schemars(range(min = 1, max = 16))]
    pub max_routes: u32,
}

/// `loopx_turn_start_hook_receipt_v0`: the public result of one turn-start
/// hook dispatch. Counts, one boolean, a status and an error code; no string
/// but the hook_id and enumerated codes, so no message content, provider
/// payload, credential, destination, profile name or cursor value fits.
///
/// Counts are of this dispatch, except `pending`: the messages durably
/// pending (captured, first-read, not yet acknowledged) after it, the new
/// ones included.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
#[ts(export)]
#[schemars(transform = crate::contract::require_every_property)]
pub struct TurnStartReceipt {
    pub schema_version: TurnStartReceiptSchemaVersion,
    #[schemars(regex(pattern = crate::contract::pattern::TOKEN), length(min = 1, max = 128))]
    pub hook_id: String,
    pub status: TurnStartStatus,
    /// Null exactly on `ok` and `empty`.
    pub error_code: Option<TurnStartErrorCode>,
    /// True when the Agent must read before work; required by observations_new > 0.
    pub agent_read_required: bool,
    /// Pending messages that received their first Agent-owned read in this dispatch.
    #[schemars(range(min = 0, max = 4294967295u32))]
    pub observations_new: u32,
    /// Messages durably pending after this dispatch, new ones included (>= observations_new).
    #[schemars(range(min = 0, max = 4294967295u32))]
    pub pending: u32,
    /// New observations that are direct questions (<= observations_new).
    #[schemars(range(min = 0, max = 4294967295u32))]
    pub direct_questions: u32,
    /// New observations that are verified replies (<= observations_new).
    #[schemars(range(min = 0, max = 4294967295u32))]
    pub verified_replies: u32,
    #[schemars(range(min = 0, max = 16))]
    pub routes_ok: u32,
    /// routes_ok + routes_failed <= 16.
    #[schemars(range(min = 0, max = 16))]
    pub routes_failed: u32,
    /// Acknowledgement reactions added (<= external_writes_performed).
    #[schemars(range(min = 0, max = 4294967295u32))]
    pub reactions_added: u32,
    /// Provider writes performed, confirmed or not; nonzero only for a hook
    /// that registered `provider_message_reaction`, and within its budget's
    /// max_attempts_per_dispatch. No ceiling here: writes a reply claims past
    /// its budget are published as claimed (core rejects the receipt), never hidden.
    #[schemars(range(min = 0, max = 4294967295u32))]
    pub external_writes_performed: u32,
}
