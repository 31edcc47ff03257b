//! The source a shipped host hands in (core builds each hook's input from
//! it: `input::hook_input`).
//!
//! As LoopX decodes a source, every string is stripped with Python's
//! `str.strip()` whitespace set and must leave something; `todo_id` and
//! `receipt_id` may be null, and `""` means null for them too (what
//! LoopX's decoder does), while a string of whitespace is a rejection.

use serde_json::Value;

use super::enums::ShippedSourceSchemaVersion;
use super::{grammar, Identity, Source, SourceStatus};
use crate::contract::{Rule, Violation};
use crate::validate::{child, shape, Report, Verdict};

const REQUIRED: &[&str] =
    &["schema_version", "event_kind", "status", "durable", "identity", "state_version", "committed_at", "projection"];
const OPTIONAL: &[&str] = &["receipt_id"];
pub(super) const IDENTITY_FIELDS: &[&str] = &["goal_id", "agent_id", "todo_id", "turn_instance_id", "effect_id"];

/// Validates a source; the accepted one comes back with every string stripped.
///
/// Choices where the shipped contract is silent (LoopX's decoder decides):
/// - `status` is one of `committed`, `appended`, `receipt_repaired` (the
///   three LoopX's input boundary admits; its hosts send `committed`);
/// - `event_kind` is any token: the registrations say which they take;
/// - `committed_at` is any non-empty string, as LoopX checks no clock
///   grammar (it enters the event id byte for byte);
/// - `projection` is any object; its values are the host's, checked only
///   for credential-like strings.
pub fn validate_source(doc: &Value) -> Verdict<Source> {
    let mut r = Report::new();
    let Some(map) = grammar::object(&mut r, doc, "", REQUIRED, OPTIONAL) else { return Err(r.into_violations()) };

    if let Some(v) = map.get("schema_version") {
        shape::schema_version(&mut r, v, "/schema_version", ShippedSourceSchemaVersion::VALUE);
    }
    let event_kind = map.get("event_kind").and_then(|v| grammar::stripped(&mut r, v, "/event_kind")).filter(|s| {
        let ok = grammar::is_token(s);
        if !ok {
            let rule = if s.len() > grammar::TOKEN_MAX { Rule::TooLong } else { Rule::BadToken };
            r.add("/event_kind", rule);
        }
        ok
    });
    let status = map.get("status").and_then(|v| {
        let s = grammar::stripped(&mut r, v, "/status")?;
        let status = SourceStatus::parse(s);
        if status.is_none() {
            r.add("/status", Rule::NotAllowedValue);
        }
        status
    });
    if let Some(v) = map.get("durable") {
        grammar::must_be(&mut r, v, "/durable", true);
    }
    let identity = map.get("identity").and_then(|v| identity(&mut r, v, "/identity", true));
    let state_version = map.get("state_version").and_then(|v| grammar::stripped(&mut r, v, "/state_version"));
    let receipt_id = map.get("receipt_id").and_then(|v| nullable_id(&mut r, v, "/receipt_id", true));
    let committed_at = map.get("committed_at").and_then(|v| grammar::stripped(&mut r, v, "/committed_at"));
    let projection = map.get("projection").and_then(|v| grammar::free_object(&mut r, v, "/projection"));

    if !r.is_clean() {
        return Err(r.into_violations());
    }
    match (event_kind, status, identity, state_version, receipt_id, committed_at, projection) {
        (
            Some(event_kind),
            Some(status),
            Some(identity),
            Some(state_version),
            receipt_id,
            Some(committed_at),
            Some(p),
        ) => Ok(Source {
            schema_version: ShippedSourceSchemaVersion::V0,
            event_kind: event_kind.to_owned(),
            status,
            durable: true,
            identity,
            state_version: state_version.to_owned(),
            receipt_id: receipt_id.flatten(),
            committed_at: committed_at.to_owned(),
            projection: p.clone(),
        }),
        // A clean report with a member unread cannot happen; say so rather than panic.
        _ => Err(vec![Violation { path: String::new(), rule: Rule::WrongType }].into()),
    }
}

/// The five ids, stripped. `empty_means_null`: a source's `todo_id` of `""`
/// is null, as LoopX decodes it; an input's is a rejection.
pub(super) fn identity(r: &mut Report, v: &Value, path: &str, empty_means_null: bool) -> Option<Identity> {
    let map = shape::object(r, v, path, IDENTITY_FIELDS)?;
    let at = |f: &str| child(path, f);
    let goal_id = map.get("goal_id").and_then(|v| grammar::goal_id(r, v, &at("goal_id")));
    let mut id = |f: &str| map.get(f).and_then(|v| grammar::stripped(r, v, &at(f)));
    let (agent_id, turn_instance_id, effect_id) = (id("agent_id"), id("turn_instance_id"), id("effect_id"));
    let todo_id = map.get("todo_id").and_then(|v| nullable_id(r, v, &at("todo_id"), empty_means_null));
    Some(Identity {
        goal_id: goal_id?.to_owned(),
        agent_id: agent_id?.to_owned(),
        todo_id: todo_id?,
        turn_instance_id: turn_instance_id?.to_owned(),
        effect_id: effect_id?.to_owned(),
    })
}

/// `null`, or a stripped id; `Some(None)` for null.
fn nullable_id(r: &mut Report, v: &Value, path: &str, empty_means_null: bool) -> Option<Option<String>> {
    match v {
        Value::Null => Some(None),
        Value::String(s) if s.is_empty() && empty_means_null => Some(None),
        _ => grammar::stripped(r, v, path).map(|s| Some(s.to_owned())),
    }
}
