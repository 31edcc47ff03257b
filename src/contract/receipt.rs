use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::{DispatchReceiptSchemaVersion, DispatchStatus, EventKind, FailureCode, FailureReceiptSchemaVersion};
use crate::validate::Rule;

/// `loopx_post_writeback_dispatch_receipt_v0`: the sidecar record of one
/// dispatch identity. Public-safe by construction: ids, codes and counts only.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
#[ts(export)]
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
    #[schemars(regex(pattern = super::pattern::SHA256_HEX), required)]
    pub result_digest: Option<String>,
    /// Present exactly when status is `failed` or `exhausted`.
    #[schemars(required)]
    pub failure: Option<FailureDetail>,
}

/// A compact failure: a stable code and, where one applies, the violated rule.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
#[ts(export)]
pub struct FailureDetail {
    pub code: FailureCode,
    #[schemars(required)]
    pub rule: Option<Rule>,
}

/// `loopx_post_writeback_failure_receipt_v0`: one failed attempt. Never holds
/// an exception message, a stack or any text a provider made.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
#[ts(export)]
pub struct FailureReceipt {
    pub schema_version: FailureReceiptSchemaVersion,
    #[schemars(regex(pattern = super::pattern::DISPATCH_ID))]
    pub dispatch_id: String,
    #[schemars(regex(pattern = super::pattern::TOKEN), length(min = 1, max = 128))]
    pub hook_id: String,
    pub code: FailureCode,
    #[schemars(required)]
    pub rule: Option<Rule>,
    #[schemars(range(min = 1, max = 4))]
    pub attempt: u32,
}
