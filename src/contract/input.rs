use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::{EventKind, EventProjectionSchemaVersion, HookInputSchemaVersion, StepKind, Transition};

/// `loopx_post_writeback_hook_input_v0` (RFC section 7): the compact,
/// public-safe projection one admitted hook receives.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
#[ts(export)]
pub struct PostWritebackHookInput {
    pub schema_version: HookInputSchemaVersion,
    #[schemars(regex(pattern = super::pattern::DISPATCH_ID))]
    pub dispatch_id: String,
    #[schemars(regex(pattern = super::pattern::TOKEN), length(min = 1, max = 128))]
    pub hook_id: String,
    #[schemars(regex(pattern = super::pattern::TOKEN), length(min = 1, max = 128))]
    pub capability_id: String,
    pub source: ReceiptSource,
    pub projection: EventProjection,
    pub boundary: BoundaryAttestation,
}

/// The committed durable-writeback receipt identity, as opaque refs. What
/// identity and applicability need is always there; the settlement's ids
/// and the state revision only under the `settlement_identity` read scope
/// (contract-v0 section 1).
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
#[ts(export)]
pub struct ReceiptSource {
    #[schemars(regex(pattern = super::pattern::OPAQUE_REF))]
    pub receipt_id: String,
    #[schemars(regex(pattern = super::pattern::OPAQUE_REF))]
    pub effect_id: String,
    pub step_kind: StepKind,
    /// Granted by `settlement_identity`; absent without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    #[schemars(with = "String", regex(pattern = super::pattern::OPAQUE_REF))]
    pub goal_id: Option<String>,
    /// Granted by `settlement_identity`; absent without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    #[schemars(with = "String", regex(pattern = super::pattern::OPAQUE_REF))]
    pub agent_id: Option<String>,
    /// Granted by `settlement_identity`; absent without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    #[schemars(with = "String", regex(pattern = super::pattern::OPAQUE_REF))]
    pub todo_id: Option<String>,
    /// Granted by `settlement_identity`; absent without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    #[schemars(with = "String", regex(pattern = super::pattern::OPAQUE_REF))]
    pub turn_instance_id: Option<String>,
    pub event_kind: EventKind,
    /// Granted by `settlement_identity`; absent without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    #[schemars(with = "String", regex(pattern = super::pattern::OPAQUE_REF))]
    pub state_revision: Option<String>,
    /// RFC 3339 UTC, e.g. `2026-08-26T00:00:00Z`.
    #[schemars(regex(pattern = super::pattern::TIMESTAMP))]
    pub committed_at: String,
}

/// The core-chosen bounded projection of one event. `fact_refs` is `[]`
/// unless the registration requests `bounded_event_projection`.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
#[ts(export)]
pub struct EventProjection {
    pub schema_version: EventProjectionSchemaVersion,
    pub transition: Transition,
    #[schemars(length(max = 32), extend("uniqueItems" = true), inner(regex(pattern = super::pattern::OPAQUE_REF)))]
    pub fact_refs: Vec<String>,
}

/// What the boundary proves was not recorded: every flag must be `false`.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(deny_unknown_fields)]
#[ts(export)]
pub struct BoundaryAttestation {
    #[ts(type = "false")]
    #[schemars(extend("const" = false))]
    pub raw_task_text_recorded: bool,
    #[ts(type = "false")]
    #[schemars(extend("const" = false))]
    pub raw_logs_recorded: bool,
    #[ts(type = "false")]
    #[schemars(extend("const" = false))]
    pub raw_trajectory_recorded: bool,
    #[ts(type = "false")]
    #[schemars(extend("const" = false))]
    pub raw_session_transcript_recorded: bool,
    #[ts(type = "false")]
    #[schemars(extend("const" = false))]
    pub credential_values_recorded: bool,
    #[ts(type = "false")]
    #[schemars(extend("const" = false))]
    pub absolute_paths_recorded: bool,
}

impl BoundaryAttestation {
    pub const FIELDS: [&'static str; 6] = [
        "raw_task_text_recorded",
        "raw_logs_recorded",
        "raw_trajectory_recorded",
        "raw_session_transcript_recorded",
        "credential_values_recorded",
        "absolute_paths_recorded",
    ];
}
