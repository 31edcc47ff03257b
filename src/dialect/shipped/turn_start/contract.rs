//! The turn-start documents of the `loopx-shipped-v0` dialect, as serde +
//! ts-rs + schemars types (TypeScript names `Shipped...`): registration v0 and
//! v1, the provider's result and the dispatch v1 document with its required
//! reads. As elsewhere, the types are the *shape*; `super::registration`,
//! `super::result` and `super::document` are the acceptance policy.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::contract::macros::{closed_set, literal};
use crate::contract::FailurePolicy;
use crate::turn_start::TurnStartPhase;

/// The shipped token grammar, for the JSON Schemas.
pub const TOKEN_PATTERN: &str = r"^[a-z][a-z0-9_.:-]{2,95}$";
/// Bounds of the shipped turn-start contract.
pub const MAX_READ_SCOPES: usize = 16;
pub const MAX_WRITE_SCOPES: usize = 8;
pub const MIN_RESULT_BYTES: u32 = 1024;
pub const MAX_RESULT_BYTES: u32 = 65_536;
pub const MAX_OBSERVATIONS: u32 = 10_000;
pub const COMMAND_MAX_BYTES: usize = 1024;
/// In UTF-16 code units, as LoopX's TypeScript measures `reason.length`.
pub const REASON_MAX_UNITS: usize = 240;
pub const MAX_PROMPT_BUDGET_BYTES: u32 = 2048;

literal!(
    /// The `schema_version` of a loopx-shipped-v0 turn-start registration, v0.
    ShippedTurnStartRegistrationV0Schema = "loopx_turn_start_capability_hook_registration_v0");
literal!(
    /// The `schema_version` of a loopx-shipped-v0 turn-start registration, v1.
    ShippedTurnStartRegistrationV1Schema = "loopx_turn_start_capability_hook_registration_v1");
literal!(
    /// The `schema_version` of a loopx-shipped-v0 turn-start result.
    ShippedTurnStartResultSchema = "loopx_turn_start_capability_hook_result_v0");
literal!(
    /// The `schema_version` of a loopx-shipped-v0 turn-start dispatch.
    ShippedTurnStartDispatchSchema = "loopx_turn_start_capability_hook_dispatch_v1");
literal!(
    /// Where a projected required read came from.
    ShippedRequiredReadSource = "turn_start_capability_hook"
);

closed_set!(
    /// What a shipped turn-start hook may write; `agent_private_capability_memory`
    /// only from registration v1 on.
    ShippedTurnStartWriteScope {
        OwnerPrivateInbox = "owner_private_inbox",
        OwnerPrivateCursor = "owner_private_cursor",
        ProviderMessageReaction = "provider_message_reaction",
        AgentPrivateCapabilityMemory = "agent_private_capability_memory",
    }
);

closed_set!(
    /// The status a provider reports. `provider_contract_error` is not a
    /// status here: it is an error code, carried with `failed`.
    ShippedTurnStartStatus {
        NotApplicable = "not_applicable",
        Observed = "observed",
        Empty = "empty",
        Partial = "partial",
        Unavailable = "unavailable",
        Failed = "failed",
    }
);

closed_set!(
    /// Why a hook is in the dispatch's `failures` instead of its `results`.
    ShippedTurnStartFailureCode {
        /// A later registration under a hook_id already seen (it never runs).
        DuplicateHookId = "duplicate_hook_id",
        /// The registration is not a valid v0 or v1 registration.
        RegistrationRejected = "registration_rejected",
        /// The provider threw, rejected, answered no JSON or did not settle.
        ProducerFailed = "producer_failed",
        /// The answer is not a valid result of this registration.
        ContractRejected = "contract_rejected",
        /// The runtime's normalized result was unusable (LoopX's bridge code;
        /// the in-process dispatch, whose validator is its normalizer, never makes it).
        RuntimeResultInvalid = "runtime_result_invalid",
    }
);

closed_set!(
    /// When a required read is done.
    ShippedReadOrdering { BeforeWork = "before_work" }
);

/// `{max_invocations_per_dispatch: 1, max_result_bytes: 1024..=65536}`.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
#[ts(export)]
pub struct ShippedTurnStartBudget {
    #[schemars(range(min = 1, max = 1))]
    pub max_invocations_per_dispatch: u32,
    #[schemars(range(min = 1024, max = 65536))]
    pub max_result_bytes: u32,
}

/// The read the Agent must do before work when the hook's result requires it.
/// Field order is the order its JSON is measured in against `prompt_budget_bytes`.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
#[ts(export)]
pub struct ShippedRequiredRead {
    #[schemars(regex(pattern = TOKEN_PATTERN))]
    pub kind: String,
    /// Trimmed; at most 1024 UTF-8 bytes; no control characters; absolute paths allowed.
    #[schemars(length(min = 1))]
    pub command: String,
    /// Trimmed; at most 240 UTF-16 code units; no control characters.
    #[schemars(length(min = 1))]
    pub reason: String,
    pub ordering: ShippedReadOrdering,
    /// When present, the descriptor's JSON fits in this many bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    #[schemars(range(min = 1, max = 2048))]
    pub prompt_budget_bytes: Option<u32>,
}

/// `loopx_turn_start_capability_hook_registration_v0`: no required read, three write scopes.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
#[ts(export)]
pub struct ShippedTurnStartRegistrationV0 {
    pub schema_version: ShippedTurnStartRegistrationV0Schema,
    #[schemars(regex(pattern = TOKEN_PATTERN))]
    pub hook_id: String,
    #[schemars(regex(pattern = TOKEN_PATTERN))]
    pub capability_id: String,
    pub phase: TurnStartPhase,
    pub budget: ShippedTurnStartBudget,
    pub failure_policy: FailurePolicy,
    #[schemars(length(max = 16), extend("uniqueItems" = true))]
    pub requested_read_scope: Vec<String>,
    #[schemars(length(max = 8), extend("uniqueItems" = true))]
    pub requested_write_scope: Vec<ShippedTurnStartWriteScope>,
}

/// `loopx_turn_start_capability_hook_registration_v1`: v0's fields plus a
/// required `required_read` (an object or null).
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
#[ts(export)]
pub struct ShippedTurnStartRegistrationV1 {
    pub schema_version: ShippedTurnStartRegistrationV1Schema,
    #[schemars(regex(pattern = TOKEN_PATTERN))]
    pub hook_id: String,
    #[schemars(regex(pattern = TOKEN_PATTERN))]
    pub capability_id: String,
    pub phase: TurnStartPhase,
    pub budget: ShippedTurnStartBudget,
    pub failure_policy: FailurePolicy,
    #[schemars(length(max = 16), extend("uniqueItems" = true))]
    pub requested_read_scope: Vec<String>,
    #[schemars(length(max = 8), extend("uniqueItems" = true))]
    pub requested_write_scope: Vec<ShippedTurnStartWriteScope>,
    pub required_read: Option<ShippedRequiredRead>,
}

/// A shipped turn-start registration of either version.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Debug, PartialEq)]
#[serde(untagged)]
#[ts(export)]
pub enum ShippedTurnStartRegistration {
    V1(ShippedTurnStartRegistrationV1),
    V0(ShippedTurnStartRegistrationV0),
}

impl ShippedTurnStartRegistration {
    pub fn hook_id(&self) -> &str {
        match self {
            Self::V1(r) => &r.hook_id,
            Self::V0(r) => &r.hook_id,
        }
    }
    pub fn capability_id(&self) -> &str {
        match self {
            Self::V1(r) => &r.capability_id,
            Self::V0(r) => &r.capability_id,
        }
    }
    pub fn budget(&self) -> ShippedTurnStartBudget {
        match self {
            Self::V1(r) => r.budget,
            Self::V0(r) => r.budget,
        }
    }
    pub fn write_scopes(&self) -> &[ShippedTurnStartWriteScope] {
        match self {
            Self::V1(r) => &r.requested_write_scope,
            Self::V0(r) => &r.requested_write_scope,
        }
    }
    /// The registered read; a v0 registration has none.
    pub fn required_read(&self) -> Option<&ShippedRequiredRead> {
        match self {
            Self::V1(r) => r.required_read.as_ref(),
            Self::V0(_) => None,
        }
    }
}

/// `loopx_turn_start_capability_hook_result_v0`: what a provider answers.
/// Counts, booleans, a status and an error code; nothing a provider read.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
#[ts(export)]
#[schemars(transform = crate::contract::require_every_property)]
pub struct ShippedTurnStartResult {
    pub schema_version: ShippedTurnStartResultSchema,
    #[schemars(regex(pattern = TOKEN_PATTERN))]
    pub hook_id: String,
    #[schemars(regex(pattern = TOKEN_PATTERN))]
    pub capability_id: String,
    pub phase: TurnStartPhase,
    pub status: ShippedTurnStartStatus,
    #[schemars(range(min = 0, max = 10000))]
    pub observation_count: u32,
    pub agent_read_required: bool,
    pub external_reads_performed: bool,
    pub external_writes_performed: bool,
    pub local_private_state_mutated: bool,
    /// Always false in an accepted result.
    pub private_content_returned: bool,
    /// Always false in an accepted result.
    pub provider_payload_returned: bool,
    /// A token or null; required on `partial`, `unavailable` and `failed`.
    #[schemars(regex(pattern = TOKEN_PATTERN))]
    pub error_code: Option<String>,
}

/// One hook that produced no result, and why.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
#[ts(export)]
pub struct ShippedTurnStartFailure {
    /// The registration's, or `""` when it is not a valid token (never echoed).
    pub hook_id: String,
    /// The registration's, or `""` when it is not a valid token (never echoed).
    pub capability_id: String,
    pub error_code: ShippedTurnStartFailureCode,
}

/// A registered required read, projected for a hook whose result requires it:
/// the descriptor plus where it came from.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
#[ts(export)]
pub struct ShippedRequiredReadEntry {
    #[schemars(regex(pattern = TOKEN_PATTERN))]
    pub kind: String,
    pub command: String,
    pub reason: String,
    pub ordering: ShippedReadOrdering,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    #[schemars(range(min = 1, max = 2048))]
    pub prompt_budget_bytes: Option<u32>,
    pub source: ShippedRequiredReadSource,
    #[schemars(regex(pattern = TOKEN_PATTERN))]
    pub hook_id: String,
    #[schemars(regex(pattern = TOKEN_PATTERN))]
    pub capability_id: String,
}

/// `loopx_turn_start_capability_hook_dispatch_v1`: one turn-start dispatch.
/// Every registration is in exactly one of `results` and `failures`;
/// `invoked_count` counts the results, as LoopX does.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
#[ts(export)]
pub struct ShippedTurnStartDispatch {
    pub schema_version: ShippedTurnStartDispatchSchema,
    pub phase: TurnStartPhase,
    pub registered_count: u32,
    pub invoked_count: u32,
    pub results: Vec<ShippedTurnStartResult>,
    /// Deduplicated by command: the first in hook_id order wins.
    pub required_reads: Vec<ShippedRequiredReadEntry>,
    pub failures: Vec<ShippedTurnStartFailure>,
}
