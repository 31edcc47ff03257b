//! The documents a shipped host hands in and a provider receives: the
//! registration, the source, and the hook input built from both. Every
//! object is exact-field (`deny_unknown_fields`); `validate_*` is the
//! acceptance policy, these types only the shape of an accepted document.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use ts_rs::TS;

use super::enums::{
    InputReceiptSchema, ShippedHookInputSchemaVersion, ShippedRegistrationSchemaVersion, ShippedSourceSchemaVersion,
    SourceStatus,
};
use super::pattern;
use crate::contract::{require_every_property, FailurePolicy, Phase};

/// `loopx_post_writeback_capability_hook_registration_v0`, as shipped.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
#[ts(export, rename = "ShippedRegistration")]
#[schemars(rename = "ShippedRegistration")]
pub struct Registration {
    pub schema_version: ShippedRegistrationSchemaVersion,
    #[schemars(regex(pattern = pattern::TOKEN))]
    pub hook_id: String,
    #[schemars(regex(pattern = pattern::TOKEN))]
    pub capability_id: String,
    /// A change of it rotates every dispatch id of the hook.
    #[schemars(regex(pattern = pattern::POLICY_VERSION))]
    pub policy_version: String,
    pub phase: Phase,
    #[schemars(length(min = 1, max = 16), extend("uniqueItems" = true), inner(regex(pattern = pattern::TOKEN)))]
    pub event_kinds: Vec<String>,
    #[schemars(length(min = 1, max = 16), extend("uniqueItems" = true), inner(regex(pattern = pattern::TOKEN)))]
    pub intent_kinds: Vec<String>,
    pub budget: Budget,
    pub failure_policy: FailurePolicy,
    /// Projection keys the hook may read.
    #[schemars(length(max = 16), extend("uniqueItems" = true), inner(regex(pattern = pattern::TOKEN)))]
    pub requested_read_scope: Vec<String>,
    /// Always empty: a post-writeback hook writes nothing.
    #[ts(type = "[]")]
    #[schemars(length(max = 0))]
    pub requested_write_scope: Vec<String>,
}

/// The only budget the shipped dialect admits.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
#[ts(export, rename = "ShippedBudget")]
#[schemars(rename = "ShippedBudget")]
pub struct Budget {
    #[ts(type = "1")]
    #[schemars(range(min = 1, max = 1))]
    pub max_invocations_per_dispatch: u32,
    #[schemars(range(min = 1024, max = 262144))]
    pub max_input_bytes: u32,
    #[schemars(range(min = 1024, max = 65536))]
    pub max_result_bytes: u32,
}

/// `loopx_post_writeback_hook_source_v0`: one committed writeback, as the
/// host hands it in. The validator returns it with every id stripped.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
#[ts(export, rename = "ShippedSource")]
#[schemars(rename = "ShippedSource")]
pub struct Source {
    pub schema_version: ShippedSourceSchemaVersion,
    #[schemars(regex(pattern = pattern::TOKEN))]
    pub event_kind: String,
    pub status: SourceStatus,
    #[ts(type = "true")]
    #[schemars(extend("const" = true))]
    pub durable: bool,
    pub identity: Identity,
    #[schemars(length(min = 1))]
    pub state_version: String,
    /// The primary receipt's immutable id; when non-null it, not the clock,
    /// enters the event id. Absent, null and `""` all mean none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional = nullable)]
    pub receipt_id: Option<String>,
    #[schemars(length(min = 1))]
    pub committed_at: String,
    /// Keys are what read scopes name; the values are the host's.
    pub projection: Map<String, Value>,
}

/// The five ids of a committed writeback; `todo_id` is null on a replan.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
#[ts(export, rename = "ShippedIdentity")]
#[schemars(rename = "ShippedIdentity", transform = require_every_property)]
pub struct Identity {
    /// Names a folder on the host, hence its grammar.
    #[schemars(regex(pattern = pattern::GOAL_ID))]
    pub goal_id: String,
    #[schemars(length(min = 1))]
    pub agent_id: String,
    pub todo_id: Option<String>,
    #[schemars(length(min = 1))]
    pub turn_instance_id: String,
    #[schemars(length(min = 1))]
    pub effect_id: String,
}

/// `loopx_post_writeback_capability_hook_input_v0`: what one hook receives.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
#[ts(export, rename = "ShippedHookInput")]
#[schemars(rename = "ShippedHookInput")]
pub struct HookInput {
    pub schema_version: ShippedHookInputSchemaVersion,
    pub receipt: InputReceipt,
    pub identity: Identity,
    #[schemars(length(min = 1))]
    pub state_version: String,
    /// The source's projection, only the keys of `requested_read_scope`.
    pub projection: Map<String, Value>,
}

/// The primary writeback's receipt as the hook sees it.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
#[ts(export, rename = "ShippedInputReceipt")]
#[schemars(rename = "ShippedInputReceipt")]
pub struct InputReceipt {
    pub schema_version: InputReceiptSchema,
    /// `pwr_` + 24 hex when core built the input; a rollout event's own id
    /// on the legacy path.
    #[schemars(length(min = 1))]
    pub event_id: String,
    #[schemars(regex(pattern = pattern::TOKEN))]
    pub event_kind: String,
    pub status: SourceStatus,
    /// The source's `committed_at`.
    #[schemars(length(min = 1))]
    pub recorded_at: String,
    #[ts(type = "true")]
    #[schemars(extend("const" = true))]
    pub durable: bool,
}
