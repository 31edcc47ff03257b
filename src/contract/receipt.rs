use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::{DispatchReceiptSchemaVersion, DispatchStatus, EventKind, FailureCode, FailureReceiptSchemaVersion, Rule};

/// schemars transform for the structs with `Option` fields: every property is
/// required, the nullable ones too (a missing field is rejected; `null` is the
/// value of an absent one). schemars leaves `Option` fields out of `required`,
/// and its `#[schemars(required)]` would also drop `null` from their schema.
/// The turn-start receipt uses it too.
pub(crate) fn require_every_property(schema: &mut schemars::Schema) {
    let Some(names) =
        schema.get("properties").and_then(|p| p.as_object()).map(|p| p.keys().cloned().collect::<Vec<_>>())
    else {
        return;
    };
    let required = schema.ensure_object().entry("required").or_insert_with(|| serde_json::Value::Array(Vec::new()));
    if let Some(required) = required.as_array_mut() {
        for name in names {
            if !required.iter().any(|r| r == &name) {
                required.push(name.into());
            }
        }
    }
}

/// `loopx_post_writeback_dispatch_receipt_v0`: the sidecar record of one
/// dispatch identity. Public-safe by construction: ids, codes and counts only.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
#[ts(export)]
#[schemars(transform = require_every_property)]
pub struct DispatchReceipt {
    pub schema_version: DispatchReceiptSchemaVersion,
    #[schemars(regex(pattern = super::pattern::DISPATCH_ID))]
    pub dispatch_id: String,
    #[schemars(regex(pattern = super::pattern::TOKEN), length(min = 1, max = 128))]
    pub hook_id: String,
    #[schemars(regex(pattern = super::pattern::TOKEN), length(min = 1, max = 128))]
    pub capability_id: String,
    #[schemars(regex(pattern = super::pattern::OPAQUE_REF))]
    pub receipt_id: String,
    #[schemars(regex(pattern = super::pattern::OPAQUE_REF))]
    pub effect_id: String,
    pub event_kind: EventKind,
    #[schemars(regex(pattern = super::pattern::SHA256_HEX))]
    pub registration_digest: String,
    pub status: DispatchStatus,
    /// The attempt that produced this receipt, 1-based.
    #[schemars(range(min = 1, max = 4))]
    pub attempt: u32,
    /// Ids of the recorded intents, in result order; empty unless `proposed`.
    #[schemars(length(max = 16), extend("uniqueItems" = true), inner(regex(pattern = super::pattern::INTENT_ID)))]
    pub intent_ids: Vec<String>,
    /// sha256 of the canonical accepted result; null unless `proposed` or `not_applicable`.
    #[schemars(regex(pattern = super::pattern::SHA256_HEX))]
    pub result_digest: Option<String>,
    /// Present exactly when status is `failed` or `exhausted`.
    pub failure: Option<FailureDetail>,
}

/// A compact failure: a stable code and, where one applies, the violated rule.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
#[ts(export)]
#[schemars(transform = require_every_property)]
pub struct FailureDetail {
    pub code: FailureCode,
    pub rule: Option<Rule>,
}

/// `loopx_post_writeback_failure_receipt_v0`: one failed attempt. Never holds
/// an exception message, a stack or any text a provider made.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
#[ts(export)]
#[schemars(transform = require_every_property)]
pub struct FailureReceipt {
    pub schema_version: FailureReceiptSchemaVersion,
    #[schemars(regex(pattern = super::pattern::DISPATCH_ID))]
    pub dispatch_id: String,
    #[schemars(regex(pattern = super::pattern::TOKEN), length(min = 1, max = 128))]
    pub hook_id: String,
    pub code: FailureCode,
    pub rule: Option<Rule>,
    #[schemars(range(min = 1, max = 4))]
    pub attempt: u32,
}
