//! The acceptance policy of the turn-start contract (contract-v0 sections 1,
//! 2 and 6): each validator walks raw JSON with `crate::validate::grammar`'s
//! primitives and returns the typed document or *all* violations, each with a
//! JSON Pointer and one of contract-v0's rule codes. No rule was added.

use serde_json::{Map, Value};

use super::contract::{
    TurnStartErrorCode, TurnStartHookRegistration, TurnStartPhase, TurnStartReceipt, TurnStartReceiptSchemaVersion,
    TurnStartRegistrationSchemaVersion, TurnStartStatus, TurnStartWriteScope, COMMAND_MAX_BYTES, COMMAND_MAX_WORDS,
    MAX_ATTEMPTS_PER_DISPATCH, MAX_ROUTES, MAX_TIMEOUT_MS,
};
use crate::validate::{child, grammar, shape, Report, Rule, Verdict};

const REGISTRATION_FIELDS: &[&str] = &[
    "schema_version",
    "hook_id",
    "capability_id",
    "phase",
    "required_read",
    "write_scopes",
    "budget",
    "failure_policy",
];
const REQUIRED_READ_FIELDS: &[&str] = &["command"];
const BUDGET_FIELDS: &[&str] = &["timeout_ms", "max_attempts_per_dispatch", "max_routes"];
const RECEIPT_FIELDS: &[&str] = &[
    "schema_version",
    "hook_id",
    "status",
    "error_code",
    "agent_read_required",
    "observations_new",
    "pending",
    "direct_questions",
    "verified_replies",
    "routes_ok",
    "routes_failed",
    "reactions_added",
    "external_writes_performed",
];
/// Message counts have no contract ceiling; they must fit a u32.
const MESSAGE_COUNT_MAX: i64 = u32::MAX as i64;

/// One word of a required-read command: `(--)?[a-z0-9][a-z0-9_.=:-]*`.
pub fn is_command_word(word: &str) -> bool {
    let b = word.strip_prefix("--").unwrap_or(word).as_bytes();
    !b.is_empty()
        && (b[0].is_ascii_lowercase() || b[0].is_ascii_digit())
        && b[1..]
            .iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, b'_' | b'.' | b'=' | b':' | b'-'))
}

/// A credential inside a command: a word, or a word's `=`/`:`-separated
/// part (`--token=ghp_...`), that is credential-like. The word grammar admits
/// several credential prefixes (`sk-`, `ghp_`, `npm_`), so the whole-string
/// check of contract-v0 section 1 alone would let `loopx --token=sk-...` by.
fn holds_credential(command: &str) -> bool {
    command.split(' ').any(|word| {
        let word = word.strip_prefix("--").unwrap_or(word);
        grammar::is_credential_like(word) || word.split(['=', ':']).any(grammar::is_credential_like)
    })
}

/// A required-read command (contract-v0 section 6). A credential-like word
/// or word part is `credential_like_value`; over 256 bytes or over 16 words
/// is `too_long`; an empty command, an empty word (a leading, trailing or
/// double space) or a word outside the grammar is `bad_token`.
pub fn command<'a>(r: &mut Report, v: &'a Value, path: &str) -> Option<&'a str> {
    let s = shape::string(r, v, path)?;
    if holds_credential(s) {
        r.add(path, Rule::CredentialLikeValue);
        return None;
    }
    if s.len() > COMMAND_MAX_BYTES {
        r.add(path, Rule::TooLong);
        return None;
    }
    if !s.split(' ').all(is_command_word) {
        r.add(path, Rule::BadToken);
        return None;
    }
    if s.split(' ').count() > COMMAND_MAX_WORDS {
        r.add(path, Rule::TooLong);
        return None;
    }
    Some(s)
}

/// Validates a turn-start registration.
///
/// Choices where contract-v0 is silent:
/// - hook_id must start with `<capability_id>.` (`capability_mismatch` at
///   `/hook_id`), checked only when capability_id is itself a valid token;
/// - write_scopes is 1..=3 unique items of the closed set and must hold
///   `owner_private_inbox` (the RFC's first step is the provider's owner-private
///   inbox commit): without it, and every item otherwise valid, it is
///   `not_allowed_value` at `/write_scopes`;
/// - failure_policy other than `"isolate"` is `policy_not_isolate`.
pub fn validate_turn_start_registration(doc: &Value) -> Verdict<TurnStartHookRegistration> {
    let mut r = Report::new();
    let Some(map) = shape::object(&mut r, doc, "", REGISTRATION_FIELDS) else { return Err(r.into_violations()) };

    if let Some(v) = map.get("schema_version") {
        shape::schema_version(&mut r, v, "/schema_version", TurnStartRegistrationSchemaVersion::VALUE);
    }
    let capability = map.get("capability_id").and_then(|v| shape::token(&mut r, v, "/capability_id"));
    if let Some(hook) = map.get("hook_id").and_then(|v| shape::token(&mut r, v, "/hook_id")) {
        if capability.is_some_and(|c| !grammar::is_owned_by(hook, c)) {
            r.add("/hook_id", Rule::CapabilityMismatch);
        }
    }
    if let Some(v) = map.get("phase") {
        shape::one_of(&mut r, v, "/phase", TurnStartPhase::parse);
    }
    if let Some(v) = map.get("required_read") {
        if let Some(read) = shape::object(&mut r, v, "/required_read", REQUIRED_READ_FIELDS) {
            if let Some(v) = read.get("command") {
                command(&mut r, v, "/required_read/command");
            }
        }
    }
    if let Some(v) = map.get("write_scopes") {
        write_scopes(&mut r, v);
    }
    if let Some(v) = map.get("budget") {
        budget(&mut r, v);
    }
    if let Some(v) = map.get("failure_policy") {
        if shape::string(&mut r, v, "/failure_policy").is_some_and(|s| s != "isolate") {
            r.add("/failure_policy", Rule::PolicyNotIsolate);
        }
    }
    r.finish(&shape::integral_numbers(doc))
}

fn write_scopes(r: &mut Report, v: &Value) {
    let items = shape::unique_array(r, v, "/write_scopes", 1, TurnStartWriteScope::ALL.len());
    let before = r.len();
    let scopes: Vec<_> =
        items.iter().filter_map(|(path, item)| shape::one_of(r, item, path, TurnStartWriteScope::parse)).collect();
    if !items.is_empty() && r.len() == before && !scopes.contains(&TurnStartWriteScope::OwnerPrivateInbox) {
        r.add("/write_scopes", Rule::NotAllowedValue);
    }
}

fn budget(r: &mut Report, v: &Value) {
    let Some(map) = shape::object(r, v, "/budget", BUDGET_FIELDS) else { return };
    let bounds: [(&str, u32); 3] = [
        ("timeout_ms", MAX_TIMEOUT_MS),
        ("max_attempts_per_dispatch", MAX_ATTEMPTS_PER_DISPATCH),
        ("max_routes", MAX_ROUTES),
    ];
    for (field, max) in bounds {
        if let Some(v) = map.get(field) {
            shape::integer(r, v, &child("/budget", field), 1, i64::from(max));
        }
    }
}

/// What the nullable error_code held. An absent or invalid member takes no
/// part in the consistency checks (it is already reported).
#[derive(Clone, Copy, PartialEq)]
enum Code {
    Null,
    Present(TurnStartErrorCode),
    Unusable,
}

/// The receipt's counts, each `None` when absent or invalid (already reported).
struct Counts {
    observations_new: Option<i64>,
    pending: Option<i64>,
    direct_questions: Option<i64>,
    verified_replies: Option<i64>,
    routes_ok: Option<i64>,
    routes_failed: Option<i64>,
    reactions_added: Option<i64>,
    external_writes_performed: Option<i64>,
}

fn count(r: &mut Report, map: &Map<String, Value>, field: &str, max: i64) -> Option<i64> {
    map.get(field).and_then(|v| shape::integer(r, v, &child("", field), 0, max))
}

/// Validates a turn-start receipt: grammars and bounds, then the consistency
/// of status, error_code, agent_read_required and the counts.
///
/// Consistency (contract-v0 section 6, and choices where it is silent):
/// - agent_read_required is true when there are new observations, and on
///   `ok`, `empty` and `partial` when anything is pending; it false then, or
///   it true with nothing pending, is `not_allowed_value` at
///   `/agent_read_required` (core turns such a provider receipt into
///   `provider_contract_error`). A failure status keeps its type whatever it
///   says of pending material: core recounts that from the inbox store, or
///   requires the read when it cannot;
/// - observations_new <= pending (new reads are pending until an Agent
///   disposition is acknowledged), direct_questions and verified_replies <=
///   observations_new, routes_ok + routes_failed <= 16, reactions_added <=
///   external_writes_performed: `out_of_range` at the count that is over
///   (`/routes_failed` for the route sum);
/// - `ok` and `empty`: error_code null, routes_failed 0, routes_ok >= 1 (a
///   success envelope was read); `ok` has observations_new >= 1, `empty` 0;
/// - `partial`: routes_ok >= 1 and an error_code; a route code
///   (`provider_*`, `timed_out`) exactly when routes_failed >= 1, otherwise
///   the failed step's code (`reaction_failed`, `private_receipt_failed`,
///   `attempt_budget_exhausted`);
/// - a failure status: error_code equal to the status and routes_ok 0; its
///   observations_new counts first reads the dispatch made before it failed
///   (they are spent, so the read they require must stay visible);
/// - reactions_added and external_writes_performed have no contract ceiling
///   (a receipt is held against its own registration's budget by the
///   kernel), so a reply that claims writes past any budget is published
///   with them, never as zero;
/// - a count that breaks a status rule is `out_of_range` at the count; an
///   error_code that does is `not_allowed_value` at `/error_code`.
pub fn validate_turn_start_receipt(doc: &Value) -> Verdict<TurnStartReceipt> {
    let mut r = Report::new();
    let Some(map) = shape::object(&mut r, doc, "", RECEIPT_FIELDS) else { return Err(r.into_violations()) };

    if let Some(v) = map.get("schema_version") {
        shape::schema_version(&mut r, v, "/schema_version", TurnStartReceiptSchemaVersion::VALUE);
    }
    if let Some(v) = map.get("hook_id") {
        shape::token(&mut r, v, "/hook_id");
    }
    let status = map.get("status").and_then(|v| shape::one_of(&mut r, v, "/status", TurnStartStatus::parse));
    let code = match map.get("error_code") {
        Some(Value::Null) => Code::Null,
        Some(v) => {
            shape::one_of(&mut r, v, "/error_code", TurnStartErrorCode::parse).map_or(Code::Unusable, Code::Present)
        }
        None => Code::Unusable,
    };
    let read_required = map.get("agent_read_required").and_then(|v| shape::boolean(&mut r, v, "/agent_read_required"));
    let routes = i64::from(MAX_ROUTES);
    let writes = MESSAGE_COUNT_MAX;
    let counts = Counts {
        observations_new: count(&mut r, map, "observations_new", MESSAGE_COUNT_MAX),
        pending: count(&mut r, map, "pending", MESSAGE_COUNT_MAX),
        direct_questions: count(&mut r, map, "direct_questions", MESSAGE_COUNT_MAX),
        verified_replies: count(&mut r, map, "verified_replies", MESSAGE_COUNT_MAX),
        routes_ok: count(&mut r, map, "routes_ok", routes),
        routes_failed: count(&mut r, map, "routes_failed", routes),
        reactions_added: count(&mut r, map, "reactions_added", writes),
        external_writes_performed: count(&mut r, map, "external_writes_performed", writes),
    };
    counts_consistency(&mut r, &counts, read_required, status);
    if let Some(status) = status {
        status_consistency(&mut r, status, code, &counts);
    }
    r.finish(&shape::integral_numbers(doc))
}

/// `Some(true)` when both are known and `a > b`.
fn over(a: Option<i64>, b: Option<i64>) -> bool {
    matches!((a, b), (Some(a), Some(b)) if a > b)
}

fn counts_consistency(r: &mut Report, c: &Counts, read_required: Option<bool>, status: Option<TurnStartStatus>) {
    let succeeded = status.is_some_and(|s| s.failure_code().is_none());
    let pending = succeeded && c.pending.is_some_and(|n| n > 0);
    if read_required == Some(false) && (c.observations_new.is_some_and(|n| n > 0) || pending) {
        r.add("/agent_read_required", Rule::NotAllowedValue);
    }
    if read_required == Some(true) && c.pending == Some(0) {
        r.add("/agent_read_required", Rule::NotAllowedValue);
    }
    if over(c.observations_new, c.pending) {
        r.add("/observations_new", Rule::OutOfRange);
    }
    if over(c.direct_questions, c.observations_new) {
        r.add("/direct_questions", Rule::OutOfRange);
    }
    if over(c.verified_replies, c.observations_new) {
        r.add("/verified_replies", Rule::OutOfRange);
    }
    if let (Some(ok), Some(failed)) = (c.routes_ok, c.routes_failed) {
        if ok + failed > i64::from(MAX_ROUTES) {
            r.add("/routes_failed", Rule::OutOfRange);
        }
    }
    if over(c.reactions_added, c.external_writes_performed) {
        r.add("/reactions_added", Rule::OutOfRange);
    }
}

/// `out_of_range` at `/field` when its known value breaks the status's bound.
fn require(r: &mut Report, field: &str, value: Option<i64>, ok: fn(i64) -> bool) {
    if value.is_some_and(|v| !ok(v)) {
        r.add(&child("", field), Rule::OutOfRange);
    }
}

fn status_consistency(r: &mut Report, status: TurnStartStatus, code: Code, c: &Counts) {
    match status {
        TurnStartStatus::Ok | TurnStartStatus::Empty => {
            require(r, "routes_ok", c.routes_ok, |n| n >= 1);
            require(r, "routes_failed", c.routes_failed, |n| n == 0);
            if status == TurnStartStatus::Ok {
                require(r, "observations_new", c.observations_new, |n| n >= 1);
            } else {
                require(r, "observations_new", c.observations_new, |n| n == 0);
            }
            if matches!(code, Code::Present(_)) {
                r.add("/error_code", Rule::NotAllowedValue);
            }
        }
        TurnStartStatus::Partial => {
            require(r, "routes_ok", c.routes_ok, |n| n >= 1);
            match code {
                Code::Null => r.add("/error_code", Rule::NotAllowedValue),
                Code::Present(code) if code.names_routes() => require(r, "routes_failed", c.routes_failed, |n| n >= 1),
                Code::Present(_) => {
                    if c.routes_failed.is_some_and(|n| n >= 1) {
                        r.add("/error_code", Rule::NotAllowedValue);
                    }
                }
                Code::Unusable => {}
            }
        }
        TurnStartStatus::ProviderContractError
        | TurnStartStatus::ProviderPermissionDenied
        | TurnStartStatus::ProviderUnavailable
        | TurnStartStatus::TimedOut => {
            require(r, "routes_ok", c.routes_ok, |n| n == 0);
            if code != Code::Unusable && code != Code::Present(status.failure_code().expect("a failure status")) {
                r.add("/error_code", Rule::NotAllowedValue);
            }
        }
    }
}
