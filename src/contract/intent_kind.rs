use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// An intent kind, defined at the composition root (never by a provider at
/// dispatch time). `payload_schema` is the closed JSON Schema subset of
/// contract-v0 section 1; `validate::payload_schema` enforces it.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
#[ts(export)]
pub struct IntentKindDefinition {
    /// A token that starts with `<capability_id>.`.
    #[schemars(regex(pattern = super::pattern::TOKEN), length(min = 1, max = 128))]
    pub intent_kind: String,
    #[schemars(regex(pattern = super::pattern::TOKEN), length(min = 1, max = 128))]
    pub capability_id: String,
    #[schemars(length(min = 1, max = 8), extend("uniqueItems" = true), inner(regex(pattern = super::pattern::TOKEN), length(min = 1, max = 128)))]
    pub operations: Vec<String>,
    #[ts(as = "super::PayloadObjectSchema")]
    #[schemars(with = "super::PayloadObjectSchema")]
    pub payload_schema: serde_json::Value,
}
