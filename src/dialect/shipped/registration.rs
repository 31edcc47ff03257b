//! The shipped registration: checked whole before any provider runs. No
//! intent-kind definitions and no ownership rule: nothing ties a hook id's
//! prefix to its capability id (`periodic_report.stage_completion` belongs
//! to `periodic-report`).

use serde_json::Value;

use super::enums::ShippedRegistrationSchemaVersion;
use super::grammar;
use super::Registration;
use crate::contract::{Phase, Rule};
use crate::validate::{child, shape, Report, Verdict};

const FIELDS: &[&str] = &[
    "schema_version",
    "hook_id",
    "capability_id",
    "policy_version",
    "phase",
    "event_kinds",
    "intent_kinds",
    "budget",
    "failure_policy",
    "requested_read_scope",
    "requested_write_scope",
];
const BUDGET_FIELDS: &[&str] = &["max_invocations_per_dispatch", "max_input_bytes", "max_result_bytes"];
/// The one budget envelope LoopX admits: (field, min, max).
const BUDGET_BOUNDS: [(&str, i64, i64); 3] =
    [("max_invocations_per_dispatch", 1, 1), ("max_input_bytes", 1024, 262_144), ("max_result_bytes", 1024, 65_536)];

/// Validates a shipped registration; every violation, each at its pointer.
pub fn validate_registration(doc: &Value) -> Verdict<Registration> {
    let mut r = Report::new();
    let Some(map) = shape::object(&mut r, doc, "", FIELDS) else { return Err(r.into_violations()) };

    if let Some(v) = map.get("schema_version") {
        shape::schema_version(&mut r, v, "/schema_version", ShippedRegistrationSchemaVersion::VALUE);
    }
    for field in ["hook_id", "capability_id"] {
        if let Some(v) = map.get(field) {
            grammar::token(&mut r, v, &child("", field));
        }
    }
    if let Some(v) = map.get("policy_version") {
        grammar::policy_version(&mut r, v, "/policy_version");
    }
    if let Some(v) = map.get("phase") {
        shape::one_of(&mut r, v, "/phase", Phase::parse);
    }
    for (field, min, max) in [("event_kinds", 1, 16), ("intent_kinds", 1, 16), ("requested_read_scope", 0, 16)] {
        if let Some(v) = map.get(field) {
            grammar::token_array(&mut r, v, &child("", field), min, max);
        }
    }
    if let Some(v) = map.get("requested_write_scope") {
        grammar::empty_write_scope(&mut r, v, "/requested_write_scope");
    }
    if let Some(v) = map.get("budget") {
        if let Some(budget) = shape::object(&mut r, v, "/budget", BUDGET_FIELDS) {
            for (field, min, max) in BUDGET_BOUNDS {
                if let Some(v) = budget.get(field) {
                    shape::integer(&mut r, v, &child("/budget", field), min, max);
                }
            }
        }
    }
    if let Some(v) = map.get("failure_policy") {
        if shape::string(&mut r, v, "/failure_policy").is_some_and(|s| s != "isolate") {
            r.add("/failure_policy", Rule::PolicyNotIsolate);
        }
    }
    r.finish(&shape::integral_numbers(doc))
}
