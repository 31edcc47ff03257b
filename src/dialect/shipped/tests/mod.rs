//! Tests of the shipped validators, one file per document, against
//! fixtures in the shape LoopX really uses: the periodic-report hook
//! (`periodic_report.stage_completion`, capability `periodic-report`,
//! policy `v0`) on `refresh_state` and `todo_complete` sources. Each case
//! asserts the exact `(path, rule)` list, so a missing or extra violation fails.

mod credentials;
mod dispatch;
mod input;
mod receipt;
mod registration;
mod result;
mod source;

use serde_json::{json, Value};

use super::{validate_registration, validate_source, Registration, Source};
use crate::dialect::shipped::ids::{event_id, EventFacts};

pub(super) const HOOK_ID: &str = "periodic_report.stage_completion";
pub(super) const CAPABILITY_ID: &str = "periodic-report";
pub(super) const INTENT_KIND: &str = "periodic_report.trigger_evaluation";
/// The event id of `source()`: the design page's worked example.
pub(super) const EVENT_ID: &str = "pwr_1e21e6cc20ec36025f486859";
pub(super) const DISPATCH_ID: &str = "pwh_bd119d54eba68a96ecd93c21ff3565283decd8c1e3746d2d9ab1bfc621098933";

pub(super) fn registration() -> Value {
    json!({
        "schema_version": "loopx_post_writeback_capability_hook_registration_v0",
        "hook_id": HOOK_ID,
        "capability_id": CAPABILITY_ID,
        "policy_version": "v0",
        "phase": "post_writeback",
        "event_kinds": ["refresh_state", "todo_complete"],
        "intent_kinds": [INTENT_KIND],
        "budget": { "max_invocations_per_dispatch": 1, "max_input_bytes": 65536, "max_result_bytes": 16384 },
        "failure_policy": "isolate",
        "requested_read_scope": ["stage_completion", "project_progress"],
        "requested_write_scope": []
    })
}

pub(super) fn typed_registration() -> Registration {
    validate_registration(&registration()).expect("the periodic-report registration")
}

/// A `refresh_state` source with the worked example's identity.
pub(super) fn source() -> Value {
    json!({
        "schema_version": "loopx_post_writeback_hook_source_v0",
        "event_kind": "refresh_state",
        "status": "committed",
        "durable": true,
        "identity": {
            "goal_id": "goal-1",
            "agent_id": "agent-\u{1F600}",
            "todo_id": "todo-1",
            "turn_instance_id": "turn-1",
            "effect_id": "effect-1"
        },
        "state_version": "state-v1",
        "committed_at": "2026-09-02T12:00:00Z",
        "projection": {
            "stage_completion": {
                "schema_version": "periodic_report_stage_completion_receipt_v0",
                "stage_identity": "stage-123"
            },
            "project_progress": { "completed": 3, "total": 5 },
            "last_report": { "report_id": "report-7" }
        }
    })
}

pub(super) fn typed_source() -> Source {
    validate_source(&source()).expect("the refresh_state source")
}

/// The event id core computes for a typed source.
pub(super) fn event_id_of(s: &Source) -> String {
    event_id(&EventFacts {
        event_kind: &s.event_kind,
        goal_id: &s.identity.goal_id,
        agent_id: &s.identity.agent_id,
        todo_id: s.identity.todo_id.as_deref(),
        turn_instance_id: &s.identity.turn_instance_id,
        effect_id: &s.identity.effect_id,
        state_version: &s.state_version,
        receipt_id: s.receipt_id.as_deref(),
        committed_at: &s.committed_at,
    })
}

/// The hook input LoopX builds from `source()` for `registration()`.
pub(super) fn input() -> Value {
    json!({
        "schema_version": "loopx_post_writeback_capability_hook_input_v0",
        "receipt": {
            "schema_version": "loopx_primary_writeback_receipt_v0",
            "event_id": EVENT_ID,
            "event_kind": "refresh_state",
            "status": "committed",
            "recorded_at": "2026-09-02T12:00:00Z",
            "durable": true
        },
        "identity": {
            "goal_id": "goal-1",
            "agent_id": "agent-\u{1F600}",
            "todo_id": "todo-1",
            "turn_instance_id": "turn-1",
            "effect_id": "effect-1"
        },
        "state_version": "state-v1",
        "projection": {
            "stage_completion": {
                "schema_version": "periodic_report_stage_completion_receipt_v0",
                "stage_identity": "stage-123"
            },
            "project_progress": { "completed": 3, "total": 5 }
        }
    })
}

pub(super) fn intent() -> Value {
    json!({
        "schema_version": "loopx_capability_intent_v0",
        "intent_kind": INTENT_KIND,
        "idempotency_key": "periodic-report:stage-123",
        "source_receipt_id": EVENT_ID,
        "payload": {
            "schema_version": "periodic_report_trigger_evaluation_intent_v0",
            "stage_completion": { "stage_identity": "stage-123" },
            "generation_authorized": false,
            "external_delivery_authorized": false
        },
        "requested_write_scope": []
    })
}

pub(super) fn result() -> Value {
    json!({
        "schema_version": "loopx_post_writeback_capability_hook_result_v0",
        "hook_id": HOOK_ID,
        "capability_id": CAPABILITY_ID,
        "phase": "post_writeback",
        "status": "intent",
        "intent": intent()
    })
}

pub(super) fn receipt() -> Value {
    json!({
        "schema_version": "loopx_post_writeback_capability_hook_receipt_v0",
        "dispatch_id": DISPATCH_ID,
        "hook_id": HOOK_ID,
        "capability_id": CAPABILITY_ID,
        "source_receipt_id": EVENT_ID,
        "status": "intent_recorded",
        "intent": intent(),
        "error_code": null,
        "attempt_count": 1,
        "recorded_at": "2026-09-02T12:00:00Z"
    })
}

pub(super) fn dispatch_result() -> Value {
    json!({
        "schema_version": "loopx_post_writeback_capability_hook_dispatch_v0",
        "phase": "post_writeback",
        "registered_count": 2,
        "invoked_count": 2,
        "replayed_hooks": [],
        "retried_hooks": [],
        "intent_count": 1,
        "intents": [intent()],
        "failures": [{
            "hook_id": "periodic_report.runtime_trigger",
            "capability_id": CAPABILITY_ID,
            "error_code": "producer_failed",
            "durable_receipt_ref": format!("post-writeback-hook:pwh_{}", "0".repeat(64))
        }],
        "primary_writeback_preserved": true,
        "external_writes_performed": false
    })
}
