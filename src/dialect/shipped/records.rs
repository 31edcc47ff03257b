//! What a provider returns and what a dispatch records: the result and its
//! one intent, the sidecar receipt (one per dispatch id) and the dispatch
//! result (one per source). Exact-field, as the documents are.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use ts_rs::TS;

use super::enums::{
    FailureCode, ResultStatus, RuntimeFailurePhase, ShippedDispatchSchemaVersion, ShippedHookResultSchemaVersion,
    ShippedIntentSchemaVersion, ShippedRuntimeFailureSchemaVersion, ShippedSidecarReceiptSchemaVersion, SidecarStatus,
};
use super::pattern;
use crate::contract::{require_every_property, Phase};

/// `loopx_post_writeback_capability_hook_result_v0`: `not_applicable` with
/// a null intent, or `intent` with exactly one.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
#[ts(export, rename = "ShippedHookResult")]
#[schemars(rename = "ShippedHookResult", transform = require_every_property)]
pub struct HookResult {
    pub schema_version: ShippedHookResultSchemaVersion,
    #[schemars(regex(pattern = pattern::TOKEN))]
    pub hook_id: String,
    #[schemars(regex(pattern = pattern::TOKEN))]
    pub capability_id: String,
    pub phase: Phase,
    pub status: ResultStatus,
    pub intent: Option<Intent>,
}

/// `loopx_capability_intent_v0`: a proposal, deduplicated by the
/// provider's `idempotency_key` within a dispatch.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
#[ts(export, rename = "ShippedIntent")]
#[schemars(rename = "ShippedIntent")]
pub struct Intent {
    pub schema_version: ShippedIntentSchemaVersion,
    #[schemars(regex(pattern = pattern::TOKEN))]
    pub intent_kind: String,
    /// The provider's choice, e.g. `periodic-report:<stage>`.
    #[schemars(length(min = 1))]
    pub idempotency_key: String,
    /// The hook input's `receipt.event_id`.
    #[schemars(length(min = 1))]
    pub source_receipt_id: String,
    /// Core checks no payload schema.
    pub payload: Map<String, Value>,
    #[ts(type = "[]")]
    #[schemars(length(max = 0))]
    pub requested_write_scope: Vec<String>,
}

/// `loopx_post_writeback_capability_hook_receipt_v0`: the sidecar record
/// of one dispatch id.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
#[ts(export, rename = "ShippedSidecarReceipt")]
#[schemars(rename = "ShippedSidecarReceipt", transform = require_every_property)]
pub struct SidecarReceipt {
    pub schema_version: ShippedSidecarReceiptSchemaVersion,
    #[schemars(regex(pattern = pattern::DISPATCH_ID))]
    pub dispatch_id: String,
    #[schemars(regex(pattern = pattern::TOKEN))]
    pub hook_id: String,
    #[schemars(regex(pattern = pattern::TOKEN))]
    pub capability_id: String,
    #[schemars(length(min = 1))]
    pub source_receipt_id: String,
    pub status: SidecarStatus,
    /// Present exactly when status is `intent_recorded`.
    pub intent: Option<Intent>,
    /// Present exactly when status is `retryable_failure`.
    pub error_code: Option<FailureCode>,
    /// Attempts of this dispatch id so far, 1-based.
    #[schemars(range(min = 1, max = 10000))]
    pub attempt_count: u32,
    /// The source's `committed_at`.
    #[schemars(length(min = 1))]
    pub recorded_at: String,
}

/// `loopx_post_writeback_capability_hook_dispatch_v0`: one source's dispatch.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
#[ts(export, rename = "ShippedDispatchResult")]
#[schemars(rename = "ShippedDispatchResult")]
pub struct DispatchResult {
    pub schema_version: ShippedDispatchSchemaVersion,
    pub phase: Phase,
    pub registered_count: u32,
    pub invoked_count: u32,
    /// Hooks whose terminal receipt was returned without calling them.
    pub replayed_hooks: Vec<String>,
    /// Hooks run again after a `retryable_failure`.
    pub retried_hooks: Vec<String>,
    /// `intents.length`.
    pub intent_count: u32,
    pub intents: Vec<Intent>,
    pub failures: Vec<DispatchFailure>,
    #[ts(type = "true")]
    #[schemars(extend("const" = true))]
    pub primary_writeback_preserved: bool,
    #[ts(type = "false")]
    #[schemars(extend("const" = false))]
    pub external_writes_performed: bool,
    /// Set when the host's runtime itself failed (every hook then failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub runtime_failure: Option<RuntimeFailure>,
}

/// One hook's failure in a dispatch.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
#[ts(export, rename = "ShippedDispatchFailure")]
#[schemars(rename = "ShippedDispatchFailure")]
pub struct DispatchFailure {
    /// As registered; may be `""` or `unknown` for a registration without one.
    pub hook_id: String,
    pub capability_id: String,
    pub error_code: FailureCode,
    /// `post-writeback-hook:<dispatch_id>` when a receipt was written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub durable_receipt_ref: Option<String>,
}

/// `loopx_post_writeback_runtime_failure_v0`: codes only, no message.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
#[ts(export, rename = "ShippedRuntimeFailure")]
#[schemars(rename = "ShippedRuntimeFailure")]
pub struct RuntimeFailure {
    pub schema_version: ShippedRuntimeFailureSchemaVersion,
    pub phase: RuntimeFailurePhase,
    #[schemars(regex(pattern = pattern::TOKEN))]
    pub error_kind: String,
    #[schemars(regex(pattern = pattern::TOKEN))]
    pub diagnostic_code: String,
}
