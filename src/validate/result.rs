//! `loopx_post_writeback_hook_result_v0` and its intents (RFC section 8,
//! contract-v0 sections 1 and 3): what a provider returns, checked against the
//! admitted registration, the dispatch identity and the defined intent kinds.

use std::collections::HashSet;

use serde_json::Value;

use super::input::bound_token;
use super::intent_kind::{CompiledIntentKind, IntentKinds};
use super::registration::failure_policy;
use super::report::{child, index, Members, Report, Verdict, Violations};
use super::shape;
use crate::contract::{
    HookResultSchemaVersion, IntentSchemaVersion, PostWritebackHookRegistration, PostWritebackHookResult, ResultStatus,
    Rule,
};
use crate::{canonical, identity};

const FIELDS: &[&str] = &["schema_version", "status", "intents"];
const INTENT_FIELDS: &[&str] = &[
    "schema_version",
    "intent_id",
    "hook_id",
    "capability_id",
    "source_dispatch_id",
    "intent_kind",
    "operation",
    "policy_version",
    "payload",
    "budget",
    "requested_write_scope",
    "failure_policy",
    "grants_new_action_authority",
    "external_write_performed",
];
const BUDGET_FIELDS: &[&str] = &["max_attempts", "max_result_bytes"];
/// No result carries more intents than this, whatever a registration says.
const MAX_INTENTS: usize = 16;

/// What a result is checked against: the admitted registration, the dispatch
/// identity core computed, and the intent kinds defined at the composition root.
#[derive(Clone, Copy, Debug)]
pub struct ResultContext<'a> {
    pub registration: &'a PostWritebackHookRegistration,
    pub dispatch_id: &'a str,
    pub kinds: &'a IntentKinds,
}

/// Validates a provider's result.
///
/// Choices where contract-v0 is silent:
/// - the size check (`result_too_large` at `""`) runs whenever the document is
///   an object, so an oversize result says so even with other faults;
/// - with an unknown `status`, only the intent budget is applied to `intents`;
/// - `intent_id` is recomputed with core's dispatch id (`ctx.dispatch_id`), not
///   the intent's `source_dispatch_id`, and only when intent_kind is admitted,
///   policy_version is valid and the payload fits its schema;
/// - an intent whose kind is not admitted has no schema to check its payload
///   against, so the payload is only required to be an object;
/// - `duplicate_item` compares the well-formed intent_ids as sent.
pub fn validate_hook_result(doc: &Value, ctx: &ResultContext) -> Verdict<PostWritebackHookResult> {
    walk(doc, ctx).finish(&shape::integral_numbers(doc))
}

/// The verdict of `validate_hook_result` without the typed document.
pub fn check_hook_result(doc: &Value, ctx: &ResultContext) -> Result<(), Violations> {
    walk(doc, ctx).into_result()
}

fn walk(doc: &Value, ctx: &ResultContext) -> Report {
    let mut r = Report::new();
    let Some(map) = shape::object(&mut r, doc, "", FIELDS) else { return r };

    if let Some(v) = map.get("schema_version") {
        shape::schema_version(&mut r, v, "/schema_version", HookResultSchemaVersion::VALUE);
    }
    let status = map.get("status").and_then(|v| shape::one_of(&mut r, v, "/status", ResultStatus::parse));
    if let Some(v) = map.get("intents") {
        intents(&mut r, v, status, ctx);
    }
    if canonical::canonical_len(doc) > ctx.registration.budget.max_result_bytes as usize {
        r.add("", Rule::ResultTooLarge);
    }
    r
}

/// The intent list: its count against the status and budget, each intent, and
/// repeated intent_ids (`duplicate_item` at the later one's `intent_id`).
fn intents(r: &mut Report, v: &Value, status: Option<ResultStatus>, ctx: &ResultContext) {
    let Some(items) = shape::array(r, v, "/intents", 0, usize::MAX) else { return };
    let budget = (ctx.registration.budget.max_intents_per_dispatch as usize).min(MAX_INTENTS);
    match status {
        Some(ResultStatus::NotApplicable) if !items.is_empty() => r.add("/intents", Rule::TooManyItems),
        Some(ResultStatus::NotApplicable) => {}
        Some(ResultStatus::Proposed) if items.is_empty() => r.add("/intents", Rule::TooFewItems),
        _ if items.len() > budget => r.add("/intents", Rule::IntentBudgetExceeded),
        _ => {}
    }
    let mut seen = HashSet::new();
    for (i, item) in items.iter().enumerate() {
        let path = index("/intents", i);
        if let Some(id) = intent(r, item, &path, ctx) {
            if !seen.insert(id) {
                r.add(&child(&path, "intent_id"), Rule::DuplicateItem);
            }
        }
    }
}

/// One intent; returns its intent_id when that is well-formed.
fn intent<'a>(r: &mut Report, v: &'a Value, path: &str, ctx: &ResultContext) -> Option<&'a str> {
    let map = shape::object(r, v, path, INTENT_FIELDS)?;
    let mut ptr = Members::new(path);
    let registration = ctx.registration;

    if let Some(v) = map.get("schema_version") {
        shape::schema_version(r, v, ptr.at("schema_version"), IntentSchemaVersion::VALUE);
    }
    let id = map
        .get("intent_id")
        .and_then(|v| shape::recomputed_id(r, v, ptr.at("intent_id"), "pwi_", Rule::IntentIdMismatch));
    if let Some(v) = map.get("hook_id") {
        bound_token(r, v, ptr.at("hook_id"), &registration.hook_id, Rule::HookMismatch);
    }
    if let Some(v) = map.get("capability_id") {
        bound_token(r, v, ptr.at("capability_id"), &registration.capability_id, Rule::CapabilityMismatch);
    }
    if let Some(v) = map.get("source_dispatch_id") {
        let p = ptr.at("source_dispatch_id");
        if shape::digest_id(r, v, p, "pwh_").is_some_and(|d| d != ctx.dispatch_id) {
            r.add(p, Rule::DispatchMismatch);
        }
    }
    let kind = map.get("intent_kind").and_then(|v| admitted_kind(r, v, ptr.at("intent_kind"), ctx));
    if let Some(v) = map.get("operation") {
        let p = ptr.at("operation");
        let op = shape::token(r, v, p);
        if let (Some(op), Some(kind)) = (op, kind) {
            if !kind.definition.operations.iter().any(|o| o == op) {
                r.add(p, Rule::UnknownOperation);
            }
        }
    }
    let policy = map.get("policy_version").and_then(|v| shape::policy_version(r, v, ptr.at("policy_version")));
    let payload = map.get("payload").filter(|payload| match kind {
        Some(kind) => {
            let before = r.len();
            kind.check_payload(r, payload, ptr.at("payload"));
            r.len() == before
        }
        None => {
            if !payload.is_object() {
                r.add(ptr.at("payload"), Rule::WrongType);
            }
            false
        }
    });
    if let Some(v) = map.get("budget") {
        intent_budget(r, v, ptr.at("budget"));
    }
    if let Some(v) = map.get("requested_write_scope") {
        shape::token_array(r, v, ptr.at("requested_write_scope"), 0, 8);
    }
    if let Some(v) = map.get("failure_policy") {
        failure_policy(r, v, ptr.at("failure_policy"));
    }
    for flag in ["grants_new_action_authority", "external_write_performed"] {
        let p = ptr.at(flag);
        if map.get(flag).and_then(|v| shape::boolean(r, v, p)) == Some(true) {
            r.add(p, Rule::AuthorityClaimed);
        }
    }

    if let (Some(id), Some(kind), Some(policy), Some(payload)) = (id, kind, policy, payload) {
        if id != identity::intent_id(ctx.dispatch_id, &kind.definition.intent_kind, policy, payload) {
            r.add(ptr.at("intent_id"), Rule::IntentIdMismatch);
        }
    }
    id
}

/// The intent's kind, when it is a token the registration lists and the
/// composition root defines; `unknown_intent_kind` for any other token.
fn admitted_kind<'k>(r: &mut Report, v: &Value, path: &str, ctx: &ResultContext<'k>) -> Option<&'k CompiledIntentKind> {
    let name = shape::token(r, v, path)?;
    let kind = ctx.kinds.get(name).filter(|_| ctx.registration.intent_kinds.iter().any(|k| k == name));
    if kind.is_none() {
        r.add(path, Rule::UnknownIntentKind);
    }
    kind
}

fn intent_budget(r: &mut Report, v: &Value, path: &str) {
    let Some(map) = shape::object(r, v, path, BUDGET_FIELDS) else { return };
    for (field, min, max) in [("max_attempts", 1, 8), ("max_result_bytes", 256, 65536)] {
        if let Some(v) = map.get(field) {
            shape::integer(r, v, &child(path, field), min, max);
        }
    }
}
