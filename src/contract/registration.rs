use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::{EventKind, FailurePolicy, Phase, ReadScope, RegistrationSchemaVersion};

/// `loopx_post_writeback_capability_hook_registration_v0` (RFC section 6).
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
#[ts(export)]
pub struct PostWritebackHookRegistration {
    pub schema_version: RegistrationSchemaVersion,
    /// A token that starts with `<capability_id>.`.
    #[schemars(regex(pattern = super::pattern::TOKEN), length(min = 1, max = 128))]
    pub hook_id: String,
    #[schemars(regex(pattern = super::pattern::TOKEN), length(min = 1, max = 128))]
    pub capability_id: String,
    pub phase: Phase,
    #[schemars(length(min = 1, max = 2), extend("uniqueItems" = true))]
    pub event_kinds: Vec<EventKind>,
    /// Defined intent kinds owned by this capability.
    #[schemars(length(min = 1, max = 16), extend("uniqueItems" = true), inner(regex(pattern = super::pattern::TOKEN), length(min = 1, max = 128)))]
    pub intent_kinds: Vec<String>,
    #[schemars(length(min = 1, max = 2), extend("uniqueItems" = true))]
    pub requested_read_scope: Vec<ReadScope>,
    pub budget: HookBudget,
    pub failure_policy: FailurePolicy,
}

/// Per-hook ceilings (contract-v0 section 1).
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
#[ts(export)]
pub struct HookBudget {
    /// First try plus bounded retries of one dispatch identity, over its whole life.
    #[schemars(range(min = 1, max = 4))]
    pub max_invocations_per_dispatch: u32,
    #[schemars(range(min = 1, max = 16))]
    pub max_intents_per_dispatch: u32,
    #[schemars(range(min = 256, max = 65536))]
    pub max_result_bytes: u32,
    #[schemars(range(min = 1, max = 30000))]
    pub timeout_ms: u32,
}
