//! What the CLI or orchestrator hands to `dispatchTurnStart`, and its
//! validation. The RFC: "CLI request validation runs before hook dispatch, so
//! an invalid quota request performs no provider read or owner-private write".

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use ts_rs::TS;

use crate::validate::{child, shape, Report, Verdict};

/// The Turn that is about to start.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
#[ts(export)]
pub struct TurnIdentity {
    pub goal_id: String,
    pub agent_id: String,
    pub turn_instance_id: String,
}

/// The quota request of the Turn: how many work units quota selection may
/// select once status is projected. The kernel only validates it; selection
/// happens after the hooks ran.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
#[ts(export)]
pub struct TurnStartQuotaRequest {
    /// 1..=64.
    pub max_units: u32,
}

pub const MAX_QUOTA_UNITS: u32 = 64;

/// One turn-start dispatch request.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
#[ts(export)]
pub struct TurnStartRequest {
    pub turn: TurnIdentity,
    pub quota: TurnStartQuotaRequest,
}

const FIELDS: &[&str] = &["turn", "quota"];
const TURN_FIELDS: &[&str] = &["goal_id", "agent_id", "turn_instance_id"];
const QUOTA_FIELDS: &[&str] = &["max_units"];

/// Validates a request: exact fields, opaque refs (no path, URL, mail address
/// or credential), `max_units` in 1..=64. Every violation, with its pointer.
pub fn validate_turn_start_request(doc: &Value) -> Verdict<TurnStartRequest> {
    let mut r = Report::new();
    let Some(map) = shape::object(&mut r, doc, "", FIELDS) else { return Err(r.into_violations()) };
    if let Some(turn) = map.get("turn").and_then(|v| shape::object(&mut r, v, "/turn", TURN_FIELDS)) {
        for field in TURN_FIELDS {
            if let Some(v) = turn.get(*field) {
                shape::opaque_ref(&mut r, v, &child("/turn", field));
            }
        }
    }
    if let Some(quota) = map.get("quota").and_then(|v| shape::object(&mut r, v, "/quota", QUOTA_FIELDS)) {
        if let Some(v) = quota.get("max_units") {
            shape::integer(&mut r, v, "/quota/max_units", 1, i64::from(MAX_QUOTA_UNITS));
        }
    }
    r.finish(&shape::integral_numbers(doc))
}
