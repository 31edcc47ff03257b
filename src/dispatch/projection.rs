//! The compact, public-safe input one hook receives (RFC section 7). Core
//! chooses the projection; a registration cannot ask for more.

use serde_json::{json, Value};

use super::registry::RegisteredHook;
use super::request::DispatchRequest;
use crate::contract::{EventKind, EventProjectionSchemaVersion, HookInputSchemaVersion, RegistrationSchemaVersion};
use crate::identity::{dispatch_id, DispatchIdentity};
use crate::validate::{validate_hook_input, Violation};

/// The dispatch identity of `hook` for `request`.
pub fn dispatch_id_for(request: &DispatchRequest, hook: &RegisteredHook) -> String {
    dispatch_id(&DispatchIdentity {
        receipt_id: &request.receipt.receipt_id,
        effect_id: &request.receipt.effect_id,
        hook_id: &hook.registration.hook_id,
        capability_id: &hook.registration.capability_id,
        registration_digest: &hook.digest,
        registration_schema_version: RegistrationSchemaVersion::VALUE,
        event_kind: &request.event.event_kind,
    })
}

/// Builds the input and proves it public-safe with the same validator any
/// caller uses; when it cannot be proven, the hook is not invoked.
pub fn project(request: &DispatchRequest, hook: &RegisteredHook, dispatch_id: &str) -> Result<Value, Vec<Violation>> {
    let transition = EventKind::parse(&request.event.event_kind).map(|k| k.transition().as_str()).unwrap_or("");
    let r = &request.receipt;
    let s = &request.settlement;
    let input = json!({
        "schema_version": HookInputSchemaVersion::VALUE,
        "dispatch_id": dispatch_id,
        "hook_id": hook.registration.hook_id,
        "capability_id": hook.registration.capability_id,
        "source": {
            "receipt_id": r.receipt_id,
            "effect_id": r.effect_id,
            "step_kind": r.step_kind,
            "goal_id": s.goal_id,
            "agent_id": s.agent_id,
            "todo_id": s.todo_id,
            "turn_instance_id": s.turn_instance_id,
            "event_kind": request.event.event_kind,
            "state_revision": r.state_revision,
            "committed_at": r.committed_at,
        },
        "projection": {
            "schema_version": EventProjectionSchemaVersion::VALUE,
            "transition": transition,
            "fact_refs": request.event.fact_refs,
        },
        "boundary": {
            "raw_task_text_recorded": false,
            "raw_logs_recorded": false,
            "raw_trajectory_recorded": false,
            "raw_session_transcript_recorded": false,
            "credential_values_recorded": false,
            "absolute_paths_recorded": false,
        },
    });
    validate_hook_input(&input, &hook.registration, &hook.digest)?;
    Ok(input)
}
