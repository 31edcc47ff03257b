//! Test fixtures shared by the validator tests: the RFC's example documents
//! (registration, input, a one-intent result) with real, recomputed ids, the
//! example intent kind, valid receipts, and small helpers to edit a document
//! at a JSON Pointer and to compare violation lists.

use serde_json::{json, Value};

use super::intent_kind::{validate_intent_kind_definition, IntentKinds};
use super::{Rule, Verdict};
use crate::contract::PostWritebackHookRegistration;
use crate::identity::{self, DispatchIdentity};

pub const HOOK_ID: &str = "periodic_report.runtime_trigger";
pub const CAPABILITY_ID: &str = "periodic_report";
pub const INTENT_KIND: &str = "periodic_report.trigger_evaluation";
pub const OPERATION: &str = "evaluate_runtime_trigger";
pub const POLICY_VERSION: &str = "weekly_v0";
pub const REGISTRATION_SCHEMA: &str = "loopx_post_writeback_capability_hook_registration_v0";

/// The example kind: the RFC intent's payload, as the closed schema subset.
pub fn kind_definition() -> Value {
    json!({
        "intent_kind": INTENT_KIND,
        "capability_id": CAPABILITY_ID,
        "operations": [OPERATION, "record_trigger_evaluation"],
        "payload_schema": {
            "type": "object",
            "properties": {
                "segment_ref": {"type": "string", "format": "opaque_ref"},
                "source_event_refs": {
                    "type": "array",
                    "items": {"type": "string", "format": "opaque_ref"},
                    "maxItems": 8,
                    "uniqueItems": true
                }
            },
            "required": ["segment_ref", "source_event_refs"],
            "additionalProperties": false
        }
    })
}

/// A second capability's kind, for ownership tests.
pub fn foreign_kind_definition() -> Value {
    json!({
        "intent_kind": "other_cap.do_thing",
        "capability_id": "other_cap",
        "operations": ["do_it"],
        "payload_schema": {"type": "object", "properties": {}, "required": [], "additionalProperties": false}
    })
}

pub fn kinds() -> IntentKinds {
    let mut kinds = IntentKinds::new();
    for definition in [kind_definition(), foreign_kind_definition()] {
        assert!(kinds.insert(validate_intent_kind_definition(&definition).expect("fixture kind is valid")));
    }
    kinds
}

/// RFC section 6, verbatim.
pub fn registration() -> Value {
    json!({
        "schema_version": REGISTRATION_SCHEMA,
        "hook_id": HOOK_ID,
        "capability_id": CAPABILITY_ID,
        "phase": "post_writeback",
        "event_kinds": ["todo_completed", "replan_recorded"],
        "intent_kinds": [INTENT_KIND],
        "requested_read_scope": ["settlement_identity", "bounded_event_projection"],
        "budget": {
            "max_invocations_per_dispatch": 1,
            "max_intents_per_dispatch": 1,
            "max_result_bytes": 16384,
            "timeout_ms": 1000
        },
        "failure_policy": "isolate"
    })
}

/// The typed form of a registration document assumed valid.
pub fn typed(registration: &Value) -> PostWritebackHookRegistration {
    serde_json::from_value(registration.clone()).expect("fixture registration deserializes")
}

pub fn registration_digest() -> String {
    identity::registration_digest(&registration())
}

/// The real dispatch id of the RFC input for the example registration.
pub fn dispatch_id() -> String {
    dispatch_id_for("receipt_opaque", "effect_opaque", "todo_completed")
}

pub fn dispatch_id_for(receipt_id: &str, effect_id: &str, event_kind: &str) -> String {
    identity::dispatch_id(&DispatchIdentity {
        receipt_id,
        effect_id,
        hook_id: HOOK_ID,
        capability_id: CAPABILITY_ID,
        registration_digest: &registration_digest(),
        registration_schema_version: REGISTRATION_SCHEMA,
        event_kind,
    })
}

/// RFC section 7, with its placeholder dispatch_id replaced by the real one.
pub fn input() -> Value {
    json!({
        "schema_version": "loopx_post_writeback_hook_input_v0",
        "dispatch_id": dispatch_id(),
        "hook_id": HOOK_ID,
        "capability_id": CAPABILITY_ID,
        "source": {
            "receipt_id": "receipt_opaque",
            "effect_id": "effect_opaque",
            "step_kind": "durable_writeback",
            "goal_id": "goal_opaque",
            "agent_id": "agent_opaque",
            "todo_id": "todo_opaque",
            "turn_instance_id": "turn_opaque",
            "event_kind": "todo_completed",
            "state_revision": "revision_opaque",
            "committed_at": "2026-08-26T00:00:00Z"
        },
        "projection": {
            "schema_version": "loopx_post_writeback_event_projection_v0",
            "transition": "segment_completed",
            "fact_refs": ["fact_opaque"]
        },
        "boundary": {
            "raw_task_text_recorded": false,
            "raw_logs_recorded": false,
            "raw_trajectory_recorded": false,
            "raw_session_transcript_recorded": false,
            "credential_values_recorded": false,
            "absolute_paths_recorded": false
        }
    })
}

/// RFC section 8's intent, with real intent_id and source_dispatch_id.
pub fn intent() -> Value {
    sealed(json!({
        "schema_version": "loopx_post_writeback_intent_v0",
        "intent_id": "",
        "hook_id": HOOK_ID,
        "capability_id": CAPABILITY_ID,
        "source_dispatch_id": dispatch_id(),
        "intent_kind": INTENT_KIND,
        "operation": OPERATION,
        "policy_version": POLICY_VERSION,
        "payload": {
            "segment_ref": "segment_opaque",
            "source_event_refs": ["event_opaque"]
        },
        "budget": {"max_attempts": 1, "max_result_bytes": 16384},
        "requested_write_scope": [],
        "failure_policy": "isolate",
        "grants_new_action_authority": false,
        "external_write_performed": false
    }))
}

/// `intent` with its intent_id recomputed from its own kind, policy and
/// payload under the fixture dispatch id, so a test changes one thing only.
pub fn sealed(mut intent: Value) -> Value {
    let id = identity::intent_id(
        &dispatch_id(),
        intent["intent_kind"].as_str().unwrap_or_default(),
        intent["policy_version"].as_str().unwrap_or_default(),
        &intent["payload"],
    );
    intent["intent_id"] = Value::String(id);
    intent
}

pub fn result_of(intents: Vec<Value>) -> Value {
    json!({"schema_version": "loopx_post_writeback_hook_result_v0", "status": "proposed", "intents": intents})
}

/// A proposed result with the one RFC intent.
pub fn result() -> Value {
    result_of(vec![intent()])
}

pub fn not_applicable() -> Value {
    json!({"schema_version": "loopx_post_writeback_hook_result_v0", "status": "not_applicable", "intents": []})
}

/// The final receipt of the example dispatch, status `proposed`.
pub fn dispatch_receipt() -> Value {
    json!({
        "schema_version": "loopx_post_writeback_dispatch_receipt_v0",
        "dispatch_id": dispatch_id(),
        "hook_id": HOOK_ID,
        "capability_id": CAPABILITY_ID,
        "receipt_id": "receipt_opaque",
        "effect_id": "effect_opaque",
        "event_kind": "todo_completed",
        "registration_digest": registration_digest(),
        "status": "proposed",
        "attempt": 1,
        "intent_ids": [intent()["intent_id"].clone()],
        "result_digest": identity::result_digest(&result()),
        "failure": null
    })
}

pub fn failure_receipt() -> Value {
    json!({
        "schema_version": "loopx_post_writeback_failure_receipt_v0",
        "dispatch_id": dispatch_id(),
        "hook_id": HOOK_ID,
        "code": "result_contract_rejected",
        "rule": "intent_id_mismatch",
        "attempt": 2
    })
}

/// `doc` with the member or item at `pointer` set to `value` (an object
/// member is added when absent).
pub fn with(mut doc: Value, pointer: &str, value: Value) -> Value {
    let (parent, last) = split(pointer);
    match doc.pointer_mut(parent).unwrap_or_else(|| panic!("no parent for {pointer}")) {
        Value::Object(map) => {
            map.insert(last, value);
        }
        Value::Array(items) => items[last.parse::<usize>().expect("array index")] = value,
        _ => panic!("{pointer}: parent is not a container"),
    }
    doc
}

/// `doc` without the member at `pointer`.
pub fn without(mut doc: Value, pointer: &str) -> Value {
    let (parent, last) = split(pointer);
    let removed = doc.pointer_mut(parent).and_then(Value::as_object_mut).and_then(|map| map.remove(&last));
    assert!(removed.is_some(), "nothing at {pointer}");
    doc
}

fn split(pointer: &str) -> (&str, String) {
    let at = pointer.rfind('/').expect("a pointer below the root");
    (&pointer[..at], pointer[at + 1..].replace("~1", "/").replace("~0", "~"))
}

/// The verdict's violations as sorted `(path, rule)` pairs; empty when accepted.
pub fn violations<T>(verdict: &Verdict<T>) -> Vec<(String, Rule)> {
    let mut out: Vec<_> = match verdict {
        Ok(_) => Vec::new(),
        Err(v) => v.iter().map(|v| (v.path.clone(), v.rule)).collect(),
    };
    out.sort_by(|a, b| (&a.0, a.1.as_str()).cmp(&(&b.0, b.1.as_str())));
    out
}

/// Asserts the exact violation list, order aside.
#[track_caller]
pub fn assert_violations<T: std::fmt::Debug>(verdict: &Verdict<T>, expected: &[(&str, Rule)]) {
    let mut expected: Vec<(String, Rule)> = expected.iter().map(|(p, r)| (p.to_string(), *r)).collect();
    expected.sort_by(|a, b| (&a.0, a.1.as_str()).cmp(&(&b.0, b.1.as_str())));
    assert_eq!(violations(verdict), expected);
}

/// Asserts exactly one violation.
#[track_caller]
pub fn assert_one<T: std::fmt::Debug>(verdict: &Verdict<T>, path: &str, rule: Rule) {
    assert_violations(verdict, &[(path, rule)]);
}
