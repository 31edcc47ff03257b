//! The identities of the `loopx-shipped-v0` dialect, as LoopX computes them.
//!
//! Both are SHA-256 over Python's `json.dumps` canonical form (`pyjson`), not
//! RFC 8785, and carry no domain field: the hashed objects are LoopX's own,
//! so an id computed here equals the one a LoopX host already stored.
//! Inputs are taken as given: the source validator strips them with
//! `py_strip` first, as LoopX does before hashing.
use serde_json::{json, Map, Value};

use crate::dialect::shipped::pyjson::dumps;
use crate::identity::sha256_hex;

/// The registration schema string, hashed into every dispatch id.
pub const REGISTRATION_SCHEMA: &str = "loopx_post_writeback_capability_hook_registration_v0";
/// Prefix of a shipped event id (the hook input's `receipt.event_id`).
pub const EVENT_ID_PREFIX: &str = "pwr_";
/// Prefix of a shipped dispatch id.
pub const DISPATCH_ID_PREFIX: &str = "pwh_";
/// An event id keeps this many hex digits of its digest.
const EVENT_ID_HEX_DIGITS: usize = 24;

/// The facts of a source that its event id is derived from.
#[derive(Clone, Copy, Debug)]
pub struct EventFacts<'a> {
    pub event_kind: &'a str,
    pub goal_id: &'a str,
    pub agent_id: &'a str,
    pub todo_id: Option<&'a str>,
    pub turn_instance_id: &'a str,
    pub effect_id: &'a str,
    pub state_version: &'a str,
    /// The source's `receipt_id` when non-null: it then replaces
    /// `committed_at` in the hashed facts, so the clock does not change the id.
    pub receipt_id: Option<&'a str>,
    pub committed_at: &'a str,
}

/// `"pwr_"` + the first 24 hex digits of `sha256(pyjson(facts))`, where facts
/// is `{event_kind, identity, state_version}` plus `receipt_id` when the
/// source has one, else `committed_at`. The identity always carries all five
/// keys, `todo_id` as `null` when absent, as LoopX's normalised identity does.
pub fn event_id(f: &EventFacts) -> String {
    let mut facts = Map::new();
    facts.insert("event_kind".into(), json!(f.event_kind));
    facts.insert(
        "identity".into(),
        json!({
            "goal_id": f.goal_id,
            "agent_id": f.agent_id,
            "todo_id": f.todo_id,
            "turn_instance_id": f.turn_instance_id,
            "effect_id": f.effect_id,
        }),
    );
    facts.insert("state_version".into(), json!(f.state_version));
    match f.receipt_id {
        Some(receipt_id) => facts.insert("receipt_id".into(), json!(receipt_id)),
        None => facts.insert("committed_at".into(), json!(f.committed_at)),
    };
    let digest = sha256_hex(dumps(&Value::Object(facts)).as_bytes());
    format!("{EVENT_ID_PREFIX}{}", &digest[..EVENT_ID_HEX_DIGITS])
}

/// `"pwh_"` + `sha256hex(pyjson({source_receipt_id, event_kind, hook_id,
/// capability_id, registration_schema, policy_version}))`. Budget and read
/// scope are not hashed, so changing them keeps the id; a new
/// `policy_version` rotates it.
pub fn dispatch_id(
    event_id: &str,
    event_kind: &str,
    hook_id: &str,
    capability_id: &str,
    policy_version: &str,
) -> String {
    let object = json!({
        "source_receipt_id": event_id,
        "event_kind": event_kind,
        "hook_id": hook_id,
        "capability_id": capability_id,
        "registration_schema": REGISTRATION_SCHEMA,
        "policy_version": policy_version,
    });
    format!("{DISPATCH_ID_PREFIX}{}", sha256_hex(dumps(&object).as_bytes()))
}

#[cfg(test)]
mod tests;
