//! `loopx_post_writeback_hook_input_v0` (RFC section 7): the compact input one
//! admitted hook receives, checked against the registration it was built for.

use serde_json::Value;

use super::registration::event_kind;
use super::report::{child, Members, Report, Verdict, Violations};
use super::shape;
use crate::contract::{
    BoundaryAttestation, EventKind, EventProjectionSchemaVersion, HookInputSchemaVersion, PostWritebackHookInput,
    PostWritebackHookRegistration, ReadScope, RegistrationSchemaVersion, Rule, StepKind, Transition,
};
use crate::identity::{self, DispatchIdentity};

const FIELDS: &[&str] =
    &["schema_version", "dispatch_id", "hook_id", "capability_id", "source", "projection", "boundary"];
/// The source members every input carries (identity and applicability).
const SOURCE_FIELDS: &[&str] = &["receipt_id", "effect_id", "step_kind", "event_kind", "committed_at"];
/// Every source member, in the order violations are reported.
const ALL_SOURCE_FIELDS: &[&str] = &[
    "receipt_id",
    "effect_id",
    "step_kind",
    "goal_id",
    "agent_id",
    "todo_id",
    "turn_instance_id",
    "event_kind",
    "state_revision",
    "committed_at",
];
/// The source members the `settlement_identity` read scope grants.
pub const SETTLEMENT_FIELDS: &[&str] = &["goal_id", "agent_id", "todo_id", "turn_instance_id", "state_revision"];
const PROJECTION_FIELDS: &[&str] = &["schema_version", "transition", "fact_refs"];

/// Validates a hook input built for `registration`, whose digest callers pass
/// in because they cache it.
///
/// Choices where contract-v0 is silent:
/// - a known `source.event_kind` the registration does not subscribe to is
///   `unknown_event_kind` at `/source/event_kind` (contract-v0 section 2), as
///   an intent kind the registration does not list is `unknown_intent_kind`;
/// - `hook_id` / `capability_id` are checked as tokens first, and compared
///   with the registration (`hook_mismatch` / `capability_mismatch`) only
///   when they are tokens, so one fault is one violation;
/// - `dispatch_id` is recomputed from the registration's own hook_id,
///   capability_id and schema_version (core's truth), so it is checked even
///   when the input misnames the hook.
///
/// Read scopes (contract-v0 section 1): a member the registration's
/// `requested_read_scope` does not grant is `not_allowed_value` where it
/// stands (a non-empty `fact_refs` without `bounded_event_projection`
/// included); a granted member that is missing is `missing_field`.
pub fn validate_hook_input(
    doc: &Value,
    registration: &PostWritebackHookRegistration,
    registration_digest: &str,
) -> Verdict<PostWritebackHookInput> {
    walk(doc, registration, registration_digest).finish(&shape::integral_numbers(doc))
}

/// The verdict of `validate_hook_input` without the typed document.
pub fn check_hook_input(
    doc: &Value,
    registration: &PostWritebackHookRegistration,
    registration_digest: &str,
) -> Result<(), Violations> {
    walk(doc, registration, registration_digest).into_result()
}

fn walk(doc: &Value, registration: &PostWritebackHookRegistration, registration_digest: &str) -> Report {
    let mut r = Report::new();
    let Some(map) = shape::object(&mut r, doc, "", FIELDS) else { return r };

    if let Some(v) = map.get("schema_version") {
        shape::schema_version(&mut r, v, "/schema_version", HookInputSchemaVersion::VALUE);
    }
    let dispatch_id = map
        .get("dispatch_id")
        .and_then(|v| shape::recomputed_id(&mut r, v, "/dispatch_id", "pwh_", Rule::DispatchIdMismatch));
    if let Some(v) = map.get("hook_id") {
        bound_token(&mut r, v, "/hook_id", &registration.hook_id, Rule::HookMismatch);
    }
    if let Some(v) = map.get("capability_id") {
        bound_token(&mut r, v, "/capability_id", &registration.capability_id, Rule::CapabilityMismatch);
    }
    let source = map.get("source").and_then(|v| source(&mut r, v, registration));
    if let Some(v) = map.get("projection") {
        let facts = registration.requested_read_scope.contains(&ReadScope::BoundedEventProjection);
        projection(&mut r, v, source.as_ref().and_then(|s| s.event_kind), facts);
    }
    if let Some(v) = map.get("boundary") {
        boundary(&mut r, v);
    }

    if let (
        Some(claimed),
        Some(Source { receipt_id: Some(receipt_id), effect_id: Some(effect_id), event_kind: Some(kind) }),
    ) = (dispatch_id, source)
    {
        let expected = identity::dispatch_id(&DispatchIdentity {
            receipt_id,
            effect_id,
            hook_id: &registration.hook_id,
            capability_id: &registration.capability_id,
            registration_digest,
            registration_schema_version: RegistrationSchemaVersion::VALUE,
            event_kind: kind.as_str(),
        });
        if claimed != expected {
            r.add("/dispatch_id", Rule::DispatchIdMismatch);
        }
    }
    r
}

/// A token that must equal the admitted `expected` value; `mismatch` when it
/// names another hook, capability or dispatch.
pub(super) fn bound_token(r: &mut Report, v: &Value, path: &str, expected: &str, mismatch: Rule) {
    if shape::token(r, v, path).is_some_and(|s| s != expected) {
        r.add(path, mismatch);
    }
}

/// The valid parts of `source` the dispatch identity is computed from.
struct Source<'a> {
    receipt_id: Option<&'a str>,
    effect_id: Option<&'a str>,
    event_kind: Option<EventKind>,
}

fn source<'a>(r: &mut Report, v: &'a Value, registration: &PostWritebackHookRegistration) -> Option<Source<'a>> {
    let Value::Object(map) = v else {
        r.add("/source", Rule::WrongType);
        return None;
    };
    let granted = registration.requested_read_scope.contains(&ReadScope::SettlementIdentity);
    let mut needed_seen = 0;
    for key in map.keys() {
        let settlement = SETTLEMENT_FIELDS.contains(&key.as_str());
        if settlement && !granted {
            r.add(&child("/source", key), Rule::NotAllowedValue);
        } else if !settlement && !SOURCE_FIELDS.contains(&key.as_str()) {
            r.add(&child("/source", key), Rule::UnknownField);
        } else {
            needed_seen += 1;
        }
    }
    // Keys are distinct, so every needed member was seen when as many were.
    let needed = SOURCE_FIELDS.len() + if granted { SETTLEMENT_FIELDS.len() } else { 0 };
    if needed_seen < needed {
        for field in ALL_SOURCE_FIELDS {
            let needed = granted || !SETTLEMENT_FIELDS.contains(field);
            if needed && !map.contains_key(*field) {
                r.add(&child("/source", field), Rule::MissingField);
            }
        }
    }
    let receipt_id = map.get("receipt_id").and_then(|v| shape::opaque_ref(r, v, "/source/receipt_id"));
    let effect_id = map.get("effect_id").and_then(|v| shape::opaque_ref(r, v, "/source/effect_id"));
    if granted {
        let mut ptr = Members::new("/source");
        for field in SETTLEMENT_FIELDS {
            if let Some(v) = map.get(*field) {
                shape::opaque_ref(r, v, ptr.at(field));
            }
        }
    }
    if let Some(v) = map.get("step_kind") {
        shape::one_of(r, v, "/source/step_kind", StepKind::parse);
    }
    let kind = map.get("event_kind").and_then(|v| event_kind(r, v, "/source/event_kind"));
    if kind.is_some_and(|k| !registration.event_kinds.contains(&k)) {
        r.add("/source/event_kind", Rule::UnknownEventKind);
    }
    if let Some(v) = map.get("committed_at") {
        shape::timestamp(r, v, "/source/committed_at");
    }
    Some(Source { receipt_id, effect_id, event_kind: kind })
}

/// The bounded projection; its transition must be the one that belongs to
/// the source's event kind (checked only when both are known), and its
/// fact_refs empty unless `bounded_event_projection` is granted.
fn projection(r: &mut Report, v: &Value, kind: Option<EventKind>, facts_granted: bool) {
    let Some(map) = shape::object(r, v, "/projection", PROJECTION_FIELDS) else { return };
    if let Some(v) = map.get("schema_version") {
        shape::schema_version(r, v, "/projection/schema_version", EventProjectionSchemaVersion::VALUE);
    }
    let transition =
        map.get("transition").and_then(|v| shape::one_of(r, v, "/projection/transition", Transition::parse));
    if let (Some(kind), Some(transition)) = (kind, transition) {
        if kind.transition() != transition {
            r.add("/projection/transition", Rule::TransitionMismatch);
        }
    }
    if let Some(v) = map.get("fact_refs") {
        if !facts_granted && v.as_array().is_some_and(|a| !a.is_empty()) {
            // Without bounded_event_projection the refs are not the hook's to see.
            r.add("/projection/fact_refs", Rule::NotAllowedValue);
            return;
        }
        for (path, item) in shape::unique_array(r, v, "/projection/fact_refs", 0, 32) {
            shape::opaque_ref(r, item, &path);
        }
    }
}

/// Exactly the six attestation flags, each `false`: a flag set `true` is a
/// boundary that admits what the input must exclude (`not_allowed_value`).
fn boundary(r: &mut Report, v: &Value) {
    let Some(map) = shape::object(r, v, "/boundary", &BoundaryAttestation::FIELDS) else { return };
    let mut ptr = Members::new("/boundary");
    for field in BoundaryAttestation::FIELDS {
        let path = ptr.at(field);
        if map.get(field).and_then(|v| shape::boolean(r, v, path)) == Some(true) {
            r.add(path, Rule::NotAllowedValue);
        }
    }
}
