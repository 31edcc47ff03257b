//! LoopX's transport envelope: the worst case of the answer is admitted
//! before any provider runs or receipt is written, and the answer itself
//! is bounded again when it is made.

use serde_json::{json, Value};

use super::inspect::{hook_failure, Inspection, Slot};
use super::{Reason, Rejected, RESULT_SCHEMA_VERSION};

pub const MAX_RESULT_BYTES: usize = 1_750_000;
/// An entry's commas and the counts' digits; the rest is counted exactly.
const PER_HOOK_OVERHEAD: usize = 16;
const DISPATCH_SCHEMA_VERSION: &str = "loopx_post_writeback_capability_hook_dispatch_v0";

fn too_large(message: &str) -> Rejected {
    Rejected { message: message.to_owned(), reason: Reason::Envelope }
}

fn json_len(v: &Value) -> usize {
    serde_json::to_string(v).map_or(usize::MAX, |s| s.len())
}

pub fn dispatch_result(n: &Inspection, invoked: usize) -> Value {
    json!({
        "schema_version": DISPATCH_SCHEMA_VERSION,
        "phase": "post_writeback",
        "registered_count": n.registered_count,
        "invoked_count": invoked,
        "replayed_hooks": n.replayed_hooks,
        "retried_hooks": n.retried_hooks,
        "intent_count": n.intents.len(),
        "intents": n.intents,
        "failures": n.failures,
        "primary_writeback_preserved": true,
        "external_writes_performed": false,
    })
}

/// Refuses a batch whose answer could exceed the envelope: each pending
/// hook counted at its full result budget (a terminal one at its stored
/// intent), plus a replay entry and a failure entry, since a hook gives at
/// most one intent or failure and may also be reported as a replay.
pub fn admit(n: &Inspection, transaction_id: &str, invoked: usize) -> Result<(), Rejected> {
    let mut dispatch = dispatch_result(n, invoked);
    dispatch["failures"] = n
        .slots
        .iter()
        .filter_map(|s| match s {
            Slot::Failure(f) => Some(f.clone()),
            Slot::Hook(_) => None,
        })
        .collect();
    let baseline = json_len(&json!({
        "schema_version": RESULT_SCHEMA_VERSION,
        "phase": "finalize",
        "transaction_id": transaction_id,
        "provider_plan": [],
        "dispatch": dispatch,
    }));
    let mut total = baseline;
    for slot in &n.slots {
        let Slot::Hook(id) = slot else { continue };
        let admitted = &n.admitted[id];
        let intent = match n.terminal.get(id) {
            None => admitted.registration.budget.max_result_bytes as usize,
            Some(t) if t["intent"].is_null() => 0,
            Some(t) => json_len(&t["intent"]),
        };
        let replay = json_len(&Value::String(admitted.registration.hook_id.clone()));
        let failure = json_len(&hook_failure(
            &admitted.contract,
            "journal_write_failed",
            Some(format!("post-writeback-hook:{id}")),
        ));
        total = total.saturating_add(intent + replay + failure + PER_HOOK_OVERHEAD);
    }
    if total > MAX_RESULT_BYTES {
        return Err(too_large("post-writeback hook transaction result may exceed the transport envelope"));
    }
    Ok(())
}

/// The answer as JSON text, within the envelope.
pub fn bounded(result: Value) -> Result<String, Rejected> {
    let text = serde_json::to_string(&result)
        .map_err(|_| Rejected { message: "the transaction could not be evaluated".into(), reason: Reason::Internal })?;
    if text.len() > MAX_RESULT_BYTES {
        return Err(too_large("post-writeback hook transaction result exceeds the transport envelope"));
    }
    Ok(text)
}
