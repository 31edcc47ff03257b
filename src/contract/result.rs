use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::{FailurePolicy, HookResultSchemaVersion, IntentSchemaVersion, ResultStatus};

/// `loopx_post_writeback_hook_result_v0` (RFC section 8): `not_applicable` with
/// no intents, or `proposed` with 1..=max_intents_per_dispatch intents.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
#[ts(export)]
pub struct PostWritebackHookResult {
    pub schema_version: HookResultSchemaVersion,
    pub status: ResultStatus,
    #[schemars(length(max = 16))]
    pub intents: Vec<PostWritebackIntent>,
}

/// `loopx_post_writeback_intent_v0`: a typed, idempotent proposal. It grants
/// nothing; a governed executor admits it later.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
#[ts(export)]
pub struct PostWritebackIntent {
    pub schema_version: IntentSchemaVersion,
    #[schemars(regex(pattern = super::pattern::INTENT_ID))]
    pub intent_id: String,
    #[schemars(regex(pattern = super::pattern::TOKEN), length(min = 1, max = 128))]
    pub hook_id: String,
    #[schemars(regex(pattern = super::pattern::TOKEN), length(min = 1, max = 128))]
    pub capability_id: String,
    #[schemars(regex(pattern = super::pattern::DISPATCH_ID))]
    pub source_dispatch_id: String,
    #[schemars(regex(pattern = super::pattern::TOKEN), length(min = 1, max = 128))]
    pub intent_kind: String,
    #[schemars(regex(pattern = super::pattern::TOKEN), length(min = 1, max = 128))]
    pub operation: String,
    #[schemars(regex(pattern = super::pattern::POLICY_VERSION))]
    pub policy_version: String,
    /// Checked against the intent kind's payload schema.
    #[schemars(extend("type" = "object"))]
    pub payload: serde_json::Value,
    pub budget: IntentBudget,
    #[schemars(length(max = 8), extend("uniqueItems" = true), inner(regex(pattern = super::pattern::TOKEN), length(min = 1, max = 128)))]
    pub requested_write_scope: Vec<String>,
    pub failure_policy: FailurePolicy,
    #[ts(type = "false")]
    #[schemars(extend("const" = false))]
    pub grants_new_action_authority: bool,
    #[ts(type = "false")]
    #[schemars(extend("const" = false))]
    pub external_write_performed: bool,
}

/// Declarative budget for the later executor.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
#[ts(export)]
pub struct IntentBudget {
    #[schemars(range(min = 1, max = 8))]
    pub max_attempts: u32,
    #[schemars(range(min = 256, max = 65536))]
    pub max_result_bytes: u32,
}
