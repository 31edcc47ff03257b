//! Acceptance of a shipped turn-start registration, v0 or v1, over raw JSON:
//! every violation at its JSON Pointer with the crate's rule codes. What it
//! admits is the registration LoopX admits, normalized as LoopX normalizes it
//! (the required read's command and reason trimmed).

use serde_json::Value;

use super::contract::*;
use super::text::{has_control, holds_credential, js_trim, token};
use crate::turn_start::TurnStartPhase;
use crate::validate::{child, shape, Report, Rule, Verdict};

const V0_FIELDS: &[&str] = &[
    "schema_version",
    "hook_id",
    "capability_id",
    "phase",
    "budget",
    "failure_policy",
    "requested_read_scope",
    "requested_write_scope",
];
const V1_FIELDS: &[&str] = &[
    "schema_version",
    "hook_id",
    "capability_id",
    "phase",
    "budget",
    "failure_policy",
    "requested_read_scope",
    "requested_write_scope",
    "required_read",
];
const BUDGET_FIELDS: &[&str] = &["max_invocations_per_dispatch", "max_result_bytes"];
const READ_FIELDS: &[&str] = &["kind", "command", "reason", "ordering"];
const PROMPT_BUDGET: &str = "prompt_budget_bytes";

#[derive(Clone, Copy, PartialEq)]
enum Version {
    V0,
    V1,
}

/// Validates a shipped turn-start registration.
///
/// The version is read first: a v0 document has no `required_read` (the
/// member is `unknown_field` there) and no `agent_private_capability_memory`
/// scope; an unknown or absent version is checked against v1's fields.
/// Bounds: tokens 3..=96 bytes, read scopes 0..=16 unique tokens, write scopes
/// 0..=8 unique items of the version's set (`not_allowed_value` outside it),
/// budget exactly `{max_invocations_per_dispatch: 1, max_result_bytes:
/// 1024..=65536}` (`out_of_range`), phase `turn_start` and failure_policy
/// `isolate` (`policy_not_isolate`).
pub fn validate_registration(doc: &Value) -> Verdict<ShippedTurnStartRegistration> {
    let mut r = Report::new();
    let version = match doc.get("schema_version") {
        Some(v) => shape::string(&mut r, v, "/schema_version").and_then(|s| match s {
            ShippedTurnStartRegistrationV0Schema::VALUE => Some(Version::V0),
            ShippedTurnStartRegistrationV1Schema::VALUE => Some(Version::V1),
            _ => {
                r.add("/schema_version", Rule::BadSchemaVersion);
                None
            }
        }),
        None => None,
    };
    let fields = if version == Some(Version::V0) { V0_FIELDS } else { V1_FIELDS };
    let Some(map) = shape::object(&mut r, doc, "", fields) else { return Err(r.into_violations()) };

    for field in ["hook_id", "capability_id"] {
        if let Some(v) = map.get(field) {
            token(&mut r, v, &child("", field));
        }
    }
    if let Some(v) = map.get("phase") {
        shape::one_of(&mut r, v, "/phase", TurnStartPhase::parse);
    }
    if let Some(v) = map.get("failure_policy") {
        if shape::string(&mut r, v, "/failure_policy").is_some_and(|s| s != "isolate") {
            r.add("/failure_policy", Rule::PolicyNotIsolate);
        }
    }
    if let Some(v) = map.get("requested_read_scope") {
        for (path, item) in shape::unique_array(&mut r, v, "/requested_read_scope", 0, MAX_READ_SCOPES) {
            token(&mut r, item, &path);
        }
    }
    if let Some(v) = map.get("requested_write_scope") {
        write_scopes(&mut r, v, version.unwrap_or(Version::V1));
    }
    if let Some(v) = map.get("budget") {
        budget(&mut r, v);
    }
    if let Some(v) = map.get("required_read").filter(|_| version != Some(Version::V0)) {
        if !v.is_null() {
            required_read(&mut r, v, "/required_read");
        }
    }
    let admitted: ShippedTurnStartRegistration = r.finish(&shape::integral_numbers(doc))?;
    Ok(normalized(admitted))
}

fn write_scopes(r: &mut Report, v: &Value, version: Version) {
    for (path, item) in shape::unique_array(r, v, "/requested_write_scope", 0, MAX_WRITE_SCOPES) {
        let Some(s) = token(r, item, &path) else { continue };
        let admitted = ShippedTurnStartWriteScope::parse(s).filter(|scope| {
            version == Version::V1 || *scope != ShippedTurnStartWriteScope::AgentPrivateCapabilityMemory
        });
        if admitted.is_none() {
            r.add(&path, Rule::NotAllowedValue);
        }
    }
}

fn budget(r: &mut Report, v: &Value) {
    let Some(map) = shape::object(r, v, "/budget", BUDGET_FIELDS) else { return };
    if let Some(v) = map.get("max_invocations_per_dispatch") {
        shape::integer(r, v, "/budget/max_invocations_per_dispatch", 1, 1);
    }
    if let Some(v) = map.get("max_result_bytes") {
        shape::integer(r, v, "/budget/max_result_bytes", i64::from(MIN_RESULT_BYTES), i64::from(MAX_RESULT_BYTES));
    }
}

/// Free text of a required read, trimmed as JavaScript trims: a credential
/// anywhere in it is `credential_like_value`; empty after trimming or holding
/// a control character is `not_allowed_value`; past `fits` is `too_long`.
fn descriptor_text<'a>(r: &mut Report, v: &'a Value, path: &str, fits: fn(&str) -> bool) -> Option<&'a str> {
    let s = js_trim(shape::string(r, v, path)?);
    let rule = if holds_credential(s) {
        Rule::CredentialLikeValue
    } else if s.is_empty() || has_control(s) {
        Rule::NotAllowedValue
    } else if !fits(s) {
        Rule::TooLong
    } else {
        return Some(s);
    };
    r.add(path, rule);
    None
}

/// The `required_read` descriptor: exactly kind, command, reason and ordering,
/// plus an optional `prompt_budget_bytes` (1..=2048) that the descriptor's
/// JSON, as LoopX writes it, must fit in (`too_long` at `/required_read`).
fn required_read(r: &mut Report, v: &Value, path: &str) {
    let fields: &[&str] = if v.get(PROMPT_BUDGET).is_some() {
        &["kind", "command", "reason", "ordering", PROMPT_BUDGET]
    } else {
        READ_FIELDS
    };
    let Some(map) = shape::object(r, v, path, fields) else { return };
    let before = r.len();
    let kind = map.get("kind").and_then(|v| token(r, v, &child(path, "kind")));
    let command = map
        .get("command")
        .and_then(|v| descriptor_text(r, v, &child(path, "command"), |s| s.len() <= COMMAND_MAX_BYTES));
    let reason = map
        .get("reason")
        .and_then(|v| descriptor_text(r, v, &child(path, "reason"), |s| s.encode_utf16().count() <= REASON_MAX_UNITS));
    if let Some(v) = map.get("ordering") {
        shape::one_of(r, v, &child(path, "ordering"), ShippedReadOrdering::parse);
    }
    let budget = map
        .get(PROMPT_BUDGET)
        .and_then(|v| shape::integer(r, v, &child(path, PROMPT_BUDGET), 1, i64::from(MAX_PROMPT_BUDGET_BYTES)));
    if let (Some(kind), Some(command), Some(reason), Some(budget), true) =
        (kind, command, reason, budget, r.len() == before)
    {
        let read = ShippedRequiredRead {
            kind: kind.to_owned(),
            command: command.to_owned(),
            reason: reason.to_owned(),
            ordering: ShippedReadOrdering::BeforeWork,
            prompt_budget_bytes: u32::try_from(budget).ok(),
        };
        if usize::try_from(budget).is_ok_and(|budget| descriptor_bytes(&read) > budget) {
            r.add(path, Rule::TooLong);
        }
    }
}

/// The UTF-8 length of the descriptor's JSON: LoopX's `JSON.stringify` of
/// `{kind, command, reason, ordering, prompt_budget_bytes}`, which serde
/// writes byte for byte the same for strings without control characters.
pub fn descriptor_bytes(read: &ShippedRequiredRead) -> usize {
    serde_json::to_string(read).map_or(usize::MAX, |s| s.len())
}

fn normalized(mut registration: ShippedTurnStartRegistration) -> ShippedTurnStartRegistration {
    if let ShippedTurnStartRegistration::V1(ShippedTurnStartRegistrationV1 { required_read: Some(read), .. }) =
        &mut registration
    {
        read.command = js_trim(&read.command).to_owned();
        read.reason = js_trim(&read.reason).to_owned();
    }
    registration
}
