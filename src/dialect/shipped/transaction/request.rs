//! The transaction request: parsed without a depth limit below
//! [`MAX_DEPTH`], and decoded as LoopX decodes it, with LoopX's messages.

use serde_json::{json, Map, Value};

use super::{Reason, Rejected, REQUEST_SCHEMA_VERSION};
use crate::dialect::shipped::grammar::{is_goal_id, js_blank};
use crate::dialect::shipped::pyjson::{dumps, py_strip};
use crate::dialect::shipped::{self as doc};
use crate::identity::sha256_hex;
use crate::validate::text::{depth_within, from_str_nested};

/// The deepest nesting a request may hold: a result within the largest
/// result budget (64 KiB) nests at most half as deep.
pub const MAX_DEPTH: usize = 40_000;
const MAX_REGISTRATIONS: usize = 128;
const MAX_ATTEMPTS: u64 = crate::dialect::shipped::MAX_ATTEMPT_COUNT as u64;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Preflight,
    Finalize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutcomeStatus {
    Returned,
    ProducerFailed,
    ContractRejected,
    LockUnavailable,
    LockFailed,
    ReceiptChanged,
}

impl OutcomeStatus {
    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "returned" => Self::Returned,
            "producer_failed" => Self::ProducerFailed,
            "contract_rejected" => Self::ContractRejected,
            "lock_unavailable" => Self::LockUnavailable,
            "lock_failed" => Self::LockFailed,
            "receipt_changed" => Self::ReceiptChanged,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Returned => "returned",
            Self::ProducerFailed => "producer_failed",
            Self::ContractRejected => "contract_rejected",
            Self::LockUnavailable => "lock_unavailable",
            Self::LockFailed => "lock_failed",
            Self::ReceiptChanged => "receipt_changed",
        }
    }

    /// A host that could not take or keep the receipt's lock defers the
    /// hook: no provider ran, nothing durable can be built from it.
    pub fn deferred(self) -> bool {
        matches!(self, Self::LockUnavailable | Self::LockFailed | Self::ReceiptChanged)
    }
}

#[derive(Clone, Debug)]
pub struct Outcome {
    pub dispatch_id: String,
    pub hook_id: String,
    pub capability_id: String,
    pub attempt_count: u32,
    pub status: OutcomeStatus,
    pub result: Option<Value>,
}

/// Where the hooks' input comes from.
pub enum Input {
    /// A source as LoopX decodes it, and as the dialect's contract takes it
    /// with its event id (none: the contract refuses it).
    Source { source: Option<(Box<doc::Source>, String)>, normalized: Value },
    /// A ready hook input (the legacy path), the same for every hook.
    Ready(Value),
}

pub struct Request {
    pub phase: Phase,
    pub runtime_root: Option<String>,
    pub input: Input,
    pub registrations: Vec<Value>,
    pub supplied_transaction_id: Option<String>,
    pub outcomes: Vec<Outcome>,
}

impl Request {
    /// Whether the source names its primary receipt: its stored receipts'
    /// clocks are then diagnostic, not part of the identity.
    pub fn has_receipt_id(&self) -> bool {
        matches!(&self.input, Input::Source { normalized, .. } if !normalized["receipt_id"].is_null())
    }

    /// `pwtx_` + the digest of everything a finalize must repeat: the root,
    /// the input and the registrations in canonical order.
    pub fn transaction_id(&self) -> String {
        let (source, hook_input) = match &self.input {
            Input::Source { normalized, .. } => (normalized.clone(), Value::Null),
            Input::Ready(v) => (Value::Null, v.clone()),
        };
        let facts = json!({
            "runtime_root": self.runtime_root,
            "source": source,
            "hook_input": hook_input,
            "registrations": ordered(&self.registrations),
        });
        format!("pwtx_{}", sha256_hex(dumps(&facts).as_bytes()))
    }
}

/// The registrations in canonical order: by raw `hook_id` as JavaScript
/// compares strings (UTF-16 code units), listing order among equals.
pub fn ordered(registrations: &[Value]) -> Vec<Value> {
    let mut list: Vec<&Value> = registrations.iter().collect();
    list.sort_by(|a, b| raw_hook_id(a).encode_utf16().cmp(raw_hook_id(b).encode_utf16()));
    list.into_iter().cloned().collect()
}

/// A registration's `hook_id` as given, or `""`: the key it is ordered by
/// before it is validated.
pub fn raw_hook_id(registration: &Value) -> &str {
    registration.get("hook_id").and_then(Value::as_str).unwrap_or("")
}

/// JSON text to a value, refusing nesting past [`MAX_DEPTH`] before parsing.
pub fn parse(text: &str) -> Result<Value, Rejected> {
    if !depth_within(text.as_bytes(), MAX_DEPTH) {
        return Err(Rejected {
            message: "post-writeback hook transaction request is nested too deeply".into(),
            reason: Reason::TooDeep,
        });
    }
    match parse_deep(text.as_bytes()) {
        Some(v @ Value::Object(_)) => Ok(v),
        _ => Err(Rejected::request("post-writeback hook transaction request must be a JSON object")),
    }
}

/// JSON bytes of at most [`MAX_DEPTH`] levels, parsed without serde's
/// default depth limit (the caller's stack is sized for them).
pub(super) fn parse_deep(bytes: &[u8]) -> Option<Value> {
    from_str_nested(std::str::from_utf8(bytes).ok()?, MAX_DEPTH)
}

fn exact_fields(map: &Map<String, Value>, expected: &[&str], label: &str) -> Result<(), Rejected> {
    if map.len() == expected.len() && expected.iter().all(|f| map.contains_key(*f)) {
        Ok(())
    } else {
        Err(Rejected::request(format!("{label} fields are invalid")))
    }
}

fn non_empty<'a>(v: Option<&'a Value>, label: &str) -> Result<&'a str, Rejected> {
    match v.and_then(Value::as_str) {
        Some(s) if !js_blank(s) => Ok(s),
        _ => Err(Rejected::request(format!("{label} must be a non-empty string"))),
    }
}

fn optional_non_empty<'a>(v: Option<&'a Value>, label: &str) -> Result<Option<&'a str>, Rejected> {
    match v {
        None | Some(Value::Null) => Ok(None),
        some => non_empty(some, label).map(Some),
    }
}

pub fn decode(value: &Value) -> Result<Request, Rejected> {
    const FIELDS: &[&str] = &[
        "schema_version",
        "phase",
        "runtime_root",
        "source",
        "hook_input",
        "registrations",
        "transaction_id",
        "provider_outcomes",
    ];
    let map = value
        .as_object()
        .ok_or_else(|| Rejected::request("post-writeback hook transaction request fields are invalid"))?;
    exact_fields(map, FIELDS, "post-writeback hook transaction request")?;
    if map["schema_version"] != REQUEST_SCHEMA_VERSION {
        return Err(Rejected::request("post-writeback hook transaction schema is invalid"));
    }
    let phase = match map["phase"].as_str() {
        Some("preflight") => Phase::Preflight,
        Some("finalize") => Phase::Finalize,
        _ => return Err(Rejected::request("post-writeback hook transaction phase is unsupported")),
    };
    let registrations =
        map["registrations"].as_array().ok_or_else(|| Rejected::request("registrations must be an array"))?;
    if registrations.len() > MAX_REGISTRATIONS {
        return Err(Rejected::request("registrations exceed the batch limit"));
    }
    let outcomes =
        map["provider_outcomes"].as_array().ok_or_else(|| Rejected::request("provider_outcomes must be an array"))?;
    let transaction_id = optional_non_empty(map.get("transaction_id"), "transaction_id")?.map(str::to_owned);
    match (phase, &transaction_id, outcomes.is_empty()) {
        (Phase::Preflight, Some(_), _) => return Err(Rejected::request("preflight transaction_id must be null")),
        (Phase::Preflight, None, false) => return Err(Rejected::request("preflight provider_outcomes must be empty")),
        (Phase::Finalize, None, _) => return Err(Rejected::request("finalize transaction_id is required")),
        _ => {}
    }
    let outcomes = outcomes.iter().enumerate().map(|(i, o)| outcome(o, i)).collect::<Result<Vec<_>, _>>()?;
    let mut seen = std::collections::HashSet::new();
    if !outcomes.iter().all(|o| seen.insert(o.dispatch_id.as_str())) {
        return Err(Rejected::request("provider_outcomes contain duplicate dispatch_id"));
    }
    let input = match (map["source"].is_null(), map["hook_input"].is_null()) {
        (false, true) => source_input(&map["source"])?,
        (true, false) if map["hook_input"].is_object() => Input::Ready(map["hook_input"].clone()),
        (true, false) => return Err(Rejected::request("hook_input must be an object")),
        _ => return Err(Rejected::request("exactly one of source or hook_input is required")),
    };
    Ok(Request {
        phase,
        runtime_root: runtime_root(map.get("runtime_root"))?,
        input,
        registrations: registrations.clone(),
        supplied_transaction_id: transaction_id,
        outcomes,
    })
}

/// The source decoded as LoopX decodes it (each id stripped with Python's
/// strip, LoopX's message on a fault), then judged by the dialect's source
/// contract: a source that LoopX decodes but the contract refuses leaves
/// every hook without an input (`registration_or_input_rejected`), as
/// LoopX's input check then does.
fn source_input(source: &Value) -> Result<Input, Rejected> {
    let normalized = decode_source(source)?;
    let source = doc::validate_source(&normalized).ok().map(|source| {
        let event_id = doc::engine::event_id(&source);
        (Box::new(source), event_id)
    });
    Ok(Input::Source { source, normalized })
}

fn decode_source(v: &Value) -> Result<Value, Rejected> {
    const FIELDS: &[&str] = &[
        "schema_version",
        "event_kind",
        "status",
        "durable",
        "identity",
        "state_version",
        "committed_at",
        "projection",
    ];
    let refused = |m: String| Rejected { message: m, reason: Reason::Source };
    let map = v.as_object().ok_or_else(|| refused("source must be an object".into()))?;
    let mut fields = FIELDS.to_vec();
    if map.contains_key("receipt_id") {
        fields.push("receipt_id");
    }
    exact_fields(map, &fields, "source").map_err(|e| refused(e.message))?;
    if map["schema_version"] != doc::ShippedSourceSchemaVersion::VALUE {
        return Err(refused("post-writeback source schema is invalid".into()));
    }
    let identity = map["identity"].as_object().ok_or_else(|| refused("source.identity must be an object".into()))?;
    exact_fields(identity, super::super::source::IDENTITY_FIELDS, "source.identity").map_err(|e| refused(e.message))?;
    let stripped = |v: &Value, label: &str| match v.as_str().map(py_strip) {
        Some(s) if !s.is_empty() => Ok(Value::String(s.to_owned())),
        _ => Err(refused(format!("{label} must be a non-empty string"))),
    };
    let optional = |v: &Value, label: &str| match v {
        Value::Null => Ok(Value::Null),
        Value::String(s) if s.is_empty() => Ok(Value::Null),
        v => stripped(v, label),
    };
    let goal_id = stripped(&identity["goal_id"], "source.identity.goal_id")?;
    let identity = json!({
        "goal_id": goal_id,
        "agent_id": stripped(&identity["agent_id"], "source.identity.agent_id")?,
        "todo_id": optional(&identity["todo_id"], "source.identity.todo_id")?,
        "turn_instance_id": stripped(&identity["turn_instance_id"], "source.identity.turn_instance_id")?,
        "effect_id": stripped(&identity["effect_id"], "source.identity.effect_id")?,
    });
    if !goal_id.as_str().is_some_and(is_goal_id) {
        return Err(refused("source.identity.goal_id is not a safe path segment".into()));
    }
    let mut decoded = json!({
        "schema_version": doc::ShippedSourceSchemaVersion::VALUE,
        "event_kind": stripped(&map["event_kind"], "source.event_kind")?,
        "status": stripped(&map["status"], "source.status")?,
        "durable": map["durable"].as_bool().ok_or_else(|| refused("source.durable must be a boolean".into()))?,
        "identity": identity,
        "state_version": stripped(&map["state_version"], "source.state_version")?,
        "committed_at": stripped(&map["committed_at"], "source.committed_at")?,
        "projection": Value::Null,
    });
    if let Some(receipt_id) = map.get("receipt_id") {
        decoded["receipt_id"] = optional(receipt_id, "source.receipt_id")?;
    }
    if !map["projection"].is_object() {
        return Err(refused("source.projection must be an object".into()));
    }
    decoded["projection"] = map["projection"].clone();
    Ok(decoded)
}

fn outcome(v: &Value, index: usize) -> Result<Outcome, Rejected> {
    const FIELDS: &[&str] = &["dispatch_id", "hook_id", "capability_id", "attempt_count", "status", "result"];
    let label = format!("provider_outcomes[{index}]");
    let map = v.as_object().ok_or_else(|| Rejected::request(format!("{label} must be an object")))?;
    exact_fields(map, FIELDS, &label)?;
    let dispatch_id = non_empty(map.get("dispatch_id"), &format!("{label}.dispatch_id"))?;
    if !crate::dialect::shipped::sidecar::is_receipt_name(&format!("{dispatch_id}.json")) {
        return Err(Rejected::request(format!("{label}.dispatch_id is invalid")));
    }
    let status = map["status"]
        .as_str()
        .and_then(OutcomeStatus::parse)
        .ok_or_else(|| Rejected::request(format!("{label}.status is invalid")))?;
    let result = match &map["result"] {
        Value::Null => None,
        v @ Value::Object(_) => Some(v.clone()),
        _ => return Err(Rejected::request(format!("{label}.result must be an object"))),
    };
    if (status == OutcomeStatus::Returned) != result.is_some() {
        return Err(Rejected::request(format!("{label} result does not match status")));
    }
    let attempt_count = match map["attempt_count"].as_u64() {
        Some(n @ 1..=MAX_ATTEMPTS) => n as u32,
        _ => return Err(Rejected::request(format!("{label}.attempt_count is invalid"))),
    };
    Ok(Outcome {
        dispatch_id: dispatch_id.to_owned(),
        hook_id: non_empty(map.get("hook_id"), &format!("{label}.hook_id"))?.to_owned(),
        capability_id: non_empty(map.get("capability_id"), &format!("{label}.capability_id"))?.to_owned(),
        attempt_count,
        status,
        result,
    })
}

/// An absolute root, normalised as Node's `path.resolve` does, or none.
fn runtime_root(v: Option<&Value>) -> Result<Option<String>, Rejected> {
    let Some(root) = optional_non_empty(v, "runtime_root")? else { return Ok(None) };
    if !root.starts_with('/') {
        return Err(Rejected::request("runtime_root must be absolute"));
    }
    let mut parts: Vec<&str> = Vec::new();
    for part in root.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    Ok(Some(format!("/{}", parts.join("/"))))
}

/// The stripped goal of an input, as its sidecar folder is named.
pub fn goal_of(hook_input: &Value) -> Result<String, Rejected> {
    let goal = hook_input.pointer("/identity/goal_id").and_then(Value::as_str).map(py_strip).unwrap_or("");
    if is_goal_id(goal) {
        Ok(goal.to_owned())
    } else {
        Err(Rejected::request("hook_input.identity.goal_id is not a safe path segment"))
    }
}
