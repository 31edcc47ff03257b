//! Acceptance of a dispatch v1 document as a whole (what a host stored or a
//! peer sent): its shape, each result by the result rules that need no
//! registration, each failure and required read, and the ties between them.

use std::collections::HashSet;

use serde_json::Value;

use super::contract::*;
use super::result::validate_result;
use super::text::token;
use crate::turn_start::TurnStartPhase;
use crate::validate::{child, index, shape, Report, Rule, Verdict};

const DISPATCH_FIELDS: &[&str] =
    &["schema_version", "phase", "registered_count", "invoked_count", "results", "required_reads", "failures"];
const FAILURE_FIELDS: &[&str] = &["hook_id", "capability_id", "error_code"];
const ENTRY_FIELDS: &[&str] = &["kind", "command", "reason", "ordering", "source", "hook_id", "capability_id"];
/// A dispatch has one entry per registration; more than this is not one LoopX makes.
const MAX_ENTRIES: usize = 10_000;

/// Validates a dispatch v1 document.
///
/// Ties (LoopX puts every registration in exactly one of `results` and
/// `failures`, and counts the results as invoked): `invoked_count` equals the
/// results and `registered_count` the results plus the failures
/// (`out_of_range` at the count); a required read's command appears once
/// (`duplicate_item` at the later command) and names a hook whose result
/// requires the read (`hook_mismatch` at its hook_id). A failure's ids are
/// tokens, or `""` for a registration rejected with ids that are not.
pub fn validate_dispatch(doc: &Value) -> Verdict<ShippedTurnStartDispatch> {
    let mut r = Report::new();
    let Some(map) = shape::object(&mut r, doc, "", DISPATCH_FIELDS) else { return Err(r.into_violations()) };
    if let Some(v) = map.get("schema_version") {
        shape::schema_version(&mut r, v, "/schema_version", ShippedTurnStartDispatchSchema::VALUE);
    }
    if let Some(v) = map.get("phase") {
        shape::one_of(&mut r, v, "/phase", TurnStartPhase::parse);
    }
    let max = MAX_ENTRIES as i64;
    let registered = map.get("registered_count").and_then(|v| shape::integer(&mut r, v, "/registered_count", 0, max));
    let invoked = map.get("invoked_count").and_then(|v| shape::integer(&mut r, v, "/invoked_count", 0, max));

    let mut reading = HashSet::new();
    let results = map.get("results").and_then(|v| shape::array(&mut r, v, "/results", 0, MAX_ENTRIES));
    for (i, item) in results.unwrap_or_default().iter().enumerate() {
        match validate_result(item, None) {
            Ok(result) if result.agent_read_required => {
                reading.insert(result.hook_id);
            }
            Ok(_) => {}
            Err(violations) => {
                for v in violations.prefixed(&index("/results", i)) {
                    r.add(&v.path, v.rule);
                }
            }
        }
    }
    let failures = map.get("failures").and_then(|v| shape::array(&mut r, v, "/failures", 0, MAX_ENTRIES));
    for (i, item) in failures.unwrap_or_default().iter().enumerate() {
        failure(&mut r, item, &index("/failures", i));
    }
    let reads = map.get("required_reads").and_then(|v| shape::array(&mut r, v, "/required_reads", 0, MAX_ENTRIES));
    let mut commands = HashSet::new();
    for (i, item) in reads.unwrap_or_default().iter().enumerate() {
        let path = index("/required_reads", i);
        let (hook, command) = read_entry(&mut r, item, &path);
        if command.is_some_and(|c| !commands.insert(c)) {
            r.add(&child(&path, "command"), Rule::DuplicateItem);
        }
        if hook.is_some_and(|h| !reading.contains(h)) {
            r.add(&child(&path, "hook_id"), Rule::HookMismatch);
        }
    }
    if let (Some(invoked), Some(results)) = (invoked, results) {
        if invoked != results.len() as i64 {
            r.add("/invoked_count", Rule::OutOfRange);
        }
    }
    if let (Some(registered), Some(results), Some(failures)) = (registered, results, failures) {
        if registered != (results.len() + failures.len()) as i64 {
            r.add("/registered_count", Rule::OutOfRange);
        }
    }
    r.finish(&shape::integral_numbers(doc))
}

fn failure(r: &mut Report, v: &Value, path: &str) {
    let Some(map) = shape::object(r, v, path, FAILURE_FIELDS) else { return };
    let code = map
        .get("error_code")
        .and_then(|v| shape::one_of(r, v, &child(path, "error_code"), ShippedTurnStartFailureCode::parse));
    for field in ["hook_id", "capability_id"] {
        let Some(v) = map.get(field) else { continue };
        let placeholder = code == Some(ShippedTurnStartFailureCode::RegistrationRejected) && v.as_str() == Some("");
        if !placeholder {
            token(r, v, &child(path, field));
        }
    }
}

/// A required-read entry: the descriptor's members as the registration
/// admitted them, `source`, and the hook's ids. Returns (hook_id, command).
fn read_entry<'a>(r: &mut Report, v: &'a Value, path: &str) -> (Option<&'a str>, Option<&'a str>) {
    let fields: Vec<&str> = match v.get("prompt_budget_bytes") {
        Some(_) => ENTRY_FIELDS.iter().copied().chain(["prompt_budget_bytes"]).collect(),
        None => ENTRY_FIELDS.to_vec(),
    };
    let Some(map) = shape::object(r, v, path, &fields) else { return (None, None) };
    if let Some(v) = map.get("kind") {
        token(r, v, &child(path, "kind"));
    }
    let command = map.get("command").and_then(|v| text(r, v, &child(path, "command")));
    if let Some(v) = map.get("reason") {
        text(r, v, &child(path, "reason"));
    }
    if let Some(v) = map.get("ordering") {
        shape::one_of(r, v, &child(path, "ordering"), ShippedReadOrdering::parse);
    }
    if let Some(v) = map.get("prompt_budget_bytes") {
        shape::integer(r, v, &child(path, "prompt_budget_bytes"), 1, i64::from(MAX_PROMPT_BUDGET_BYTES));
    }
    if let Some(v) = map.get("source") {
        shape::one_of(r, v, &child(path, "source"), |s| (s == ShippedRequiredReadSource::VALUE).then_some(()));
    }
    if let Some(v) = map.get("capability_id") {
        token(r, v, &child(path, "capability_id"));
    }
    let hook = map.get("hook_id").and_then(|v| token(r, v, &child(path, "hook_id")));
    (hook, command)
}

/// A descriptor's text as the registration admitted it (already trimmed):
/// checked with the same rules, and a string that is not its own trim is
/// `not_allowed_value`, since no admitted registration could have given it.
fn text<'a>(r: &mut Report, v: &'a Value, path: &str) -> Option<&'a str> {
    let s = shape::string(r, v, path)?;
    let ok = super::text::js_trim(s) == s
        && !s.is_empty()
        && !super::text::has_control(s)
        && !super::text::holds_credential(s)
        && s.len() <= COMMAND_MAX_BYTES;
    if !ok {
        let rule = if super::text::holds_credential(s) { Rule::CredentialLikeValue } else { Rule::NotAllowedValue };
        r.add(path, rule);
        return None;
    }
    Some(s)
}
