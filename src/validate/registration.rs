//! `loopx_post_writeback_capability_hook_registration_v0` (RFC section 6,
//! contract-v0 section 1): checked whole before any provider is invoked.

use serde_json::Value;

use super::intent_kind::IntentKinds;
use super::report::{child, Report, Verdict, Violations};
use super::{grammar, shape};
use crate::contract::{
    EventKind, FailurePolicy, Phase, PostWritebackHookRegistration, ReadScope, RegistrationSchemaVersion, Rule,
};

pub(super) const FIELDS: &[&str] = &[
    "schema_version",
    "hook_id",
    "capability_id",
    "phase",
    "event_kinds",
    "intent_kinds",
    "requested_read_scope",
    "budget",
    "failure_policy",
];
/// Each budget member with its inclusive bounds.
pub(super) const BUDGET: [(&str, i64, i64); 4] = [
    ("max_invocations_per_dispatch", 1, 4),
    ("max_intents_per_dispatch", 1, 16),
    ("max_result_bytes", 256, 65536),
    ("timeout_ms", 1, 30000),
];
const BUDGET_FIELDS: &[&str] = &[BUDGET[0].0, BUDGET[1].0, BUDGET[2].0, BUDGET[3].0];
/// Fewest items of each of the registration's arrays.
pub(super) const ITEMS_MIN: usize = 1;
/// Most intent kinds one registration may name.
pub(super) const INTENT_KINDS_MAX: usize = 16;
/// The one failure policy v0 admits.
pub(super) const ISOLATE: &str = FailurePolicy::Isolate.as_str();

/// Validates a registration against contract-v0 and the defined intent kinds.
///
/// Choices where contract-v0 is silent:
/// - an intent kind that is undefined *and* outside `<capability_id>.` gets
///   both `unknown_intent_kind` and `capability_mismatch`: they are two
///   independent faults;
/// - ownership checks (`hook_id`, `intent_kinds`) run only when
///   `capability_id` itself is a valid token, so one bad capability_id is one
///   violation, not one per owned name.
pub fn validate_registration(doc: &Value, kinds: &IntentKinds) -> Verdict<PostWritebackHookRegistration> {
    walk(doc, kinds).finish(&shape::integral_numbers(doc))
}

/// The verdict of `validate_registration` without the typed document.
pub fn check_registration(doc: &Value, kinds: &IntentKinds) -> Result<(), Violations> {
    walk(doc, kinds).into_result()
}

fn walk(doc: &Value, kinds: &IntentKinds) -> Report {
    let mut r = Report::new();
    let Some(map) = shape::object(&mut r, doc, "", FIELDS) else { return r };

    if let Some(v) = map.get("schema_version") {
        shape::schema_version(&mut r, v, "/schema_version", RegistrationSchemaVersion::VALUE);
    }
    let capability = map.get("capability_id").and_then(|v| shape::token(&mut r, v, "/capability_id"));
    if let Some(hook) = map.get("hook_id").and_then(|v| shape::token(&mut r, v, "/hook_id")) {
        if capability.is_some_and(|c| !grammar::is_owned_by(hook, c)) {
            r.add("/hook_id", Rule::CapabilityMismatch);
        }
    }
    if let Some(v) = map.get("phase") {
        shape::one_of(&mut r, v, "/phase", Phase::parse);
    }
    if let Some(v) = map.get("event_kinds") {
        for (path, item) in shape::unique_array(&mut r, v, "/event_kinds", ITEMS_MIN, EventKind::ALL.len()) {
            event_kind(&mut r, item, &path);
        }
    }
    if let Some(v) = map.get("intent_kinds") {
        for (path, item) in shape::unique_array(&mut r, v, "/intent_kinds", ITEMS_MIN, INTENT_KINDS_MAX) {
            let Some(kind) = shape::token(&mut r, item, &path) else { continue };
            let definition = kinds.get(kind).map(|k| &k.definition);
            if definition.is_none() {
                r.add(&path, Rule::UnknownIntentKind);
            }
            if let Some(c) = capability {
                if !grammar::is_owned_by(kind, c) || definition.is_some_and(|d| d.capability_id != c) {
                    r.add(&path, Rule::CapabilityMismatch);
                }
            }
        }
    }
    if let Some(v) = map.get("requested_read_scope") {
        for (path, item) in shape::unique_array(&mut r, v, "/requested_read_scope", ITEMS_MIN, ReadScope::ALL.len()) {
            shape::one_of(&mut r, item, &path, ReadScope::parse);
        }
    }
    if let Some(v) = map.get("budget") {
        budget(&mut r, v);
    }
    if let Some(v) = map.get("failure_policy") {
        failure_policy(&mut r, v, "/failure_policy");
    }
    r
}

fn budget(r: &mut Report, v: &Value) {
    let Some(map) = shape::object(r, v, "/budget", BUDGET_FIELDS) else { return };
    for (field, min, max) in BUDGET {
        if let Some(v) = map.get(field) {
            shape::integer(r, v, &child("/budget", field), min, max);
        }
    }
}

/// A known event kind: `bad_token` when it is not a token at all,
/// `unknown_event_kind` when it is a token v0 does not define.
pub(super) fn event_kind(r: &mut Report, v: &Value, path: &str) -> Option<EventKind> {
    let s = shape::token(r, v, path)?;
    let kind = EventKind::parse(s);
    if kind.is_none() {
        r.add(path, Rule::UnknownEventKind);
    }
    kind
}

/// Exactly `"isolate"`: any other string is `policy_not_isolate` (it names a
/// policy v0 refuses), a non-string `wrong_type`.
pub(super) fn failure_policy(r: &mut Report, v: &Value, path: &str) {
    if shape::string(r, v, path).is_some_and(|s| s != ISOLATE) {
        r.add(path, Rule::PolicyNotIsolate);
    }
}
