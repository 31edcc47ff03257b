//! The inspection both phases start from: each registration admitted or
//! refused in canonical order, its dispatch id, and its sidecar's standing
//! (fresh, retryable at attempt N, terminal, or unreadable).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::{json, Value};

use super::request::{self, goal_of, raw_hook_id, Input, Outcome, Request};
use super::store::{self, State};
use super::Rejected;
use crate::dialect::shipped::pyjson::py_strip;
use crate::dialect::shipped::{self as doc, ids, Registration, ResultContext, MAX_ATTEMPT_COUNT};

/// One hook admitted: its registration as given and as validated, its
/// input and its dispatch id.
pub struct Admitted {
    pub contract: Value,
    pub registration: Registration,
    pub hook_input: Value,
    pub dispatch_id: String,
}

impl Admitted {
    /// The input's `receipt.event_id` as given: what intents and receipts bind.
    pub fn event_id(&self) -> &str {
        self.hook_input.pointer("/receipt/event_id").and_then(Value::as_str).unwrap_or("")
    }

    pub fn recorded_at(&self) -> &Value {
        self.hook_input.pointer("/receipt/recorded_at").unwrap_or(&Value::Null)
    }

    /// A stored receipt judged against this hook (LoopX's receipt rules,
    /// with its intent judged as this hook's result would be); with
    /// `keeps_stored_clock`, its `recorded_at` is not compared.
    pub fn bind(&self, receipt: &Value, keeps_stored_clock: bool) -> Option<Value> {
        doc::validate_receipt(receipt).ok()?;
        let r = &self.registration;
        let clock_ok = keeps_stored_clock || &receipt["recorded_at"] == self.recorded_at();
        let bound = receipt["hook_id"] == r.hook_id.as_str()
            && receipt["capability_id"] == r.capability_id.as_str()
            && receipt["source_receipt_id"] == self.event_id()
            && clock_ok;
        if !bound {
            return None;
        }
        if !receipt["intent"].is_null() {
            let result = json!({
                "schema_version": doc::ShippedHookResultSchemaVersion::VALUE,
                "hook_id": r.hook_id,
                "capability_id": r.capability_id,
                "phase": "post_writeback",
                "status": "intent",
                "intent": receipt["intent"],
            });
            doc::validate_result(&result, &ResultContext { registration: r, event_id: self.event_id() }).ok()?;
        }
        Some(receipt.clone())
    }
}

pub struct Plan {
    pub dispatch_id: String,
    pub hook_id: String,
    pub capability_id: String,
    pub attempt_count: u32,
    pub retry: bool,
    pub receipt_snapshot: String,
    pub hook_input: Value,
}

impl Plan {
    pub fn to_json(&self) -> Value {
        json!({
            "dispatch_id": self.dispatch_id,
            "hook_id": self.hook_id,
            "capability_id": self.capability_id,
            "attempt_count": self.attempt_count,
            "retry": self.retry,
            "receipt_snapshot": self.receipt_snapshot,
            "hook_input": self.hook_input,
        })
    }
}

/// A place in the dispatch's failures and hooks, in canonical order.
pub enum Slot {
    Failure(Value),
    Hook(String),
}

#[derive(Default)]
pub struct Inspection {
    pub registered_count: usize,
    pub plans: Vec<Plan>,
    pub slots: Vec<Slot>,
    pub admitted: HashMap<String, Admitted>,
    pub known: BTreeSet<String>,
    pub blocked: BTreeSet<String>,
    pub terminal: BTreeMap<String, Value>,
    pub intents: Vec<Value>,
    pub failures: Vec<Value>,
    pub replayed_hooks: Vec<String>,
    pub retried_hooks: Vec<String>,
    pub seen_keys: BTreeSet<String>,
}

/// A failure entry of the dispatch for `registration` (validated or not).
pub fn hook_failure(registration: &Value, code: &str, durable_receipt_ref: Option<String>) -> Value {
    let name = |field: &str| match registration.get(field).and_then(Value::as_str) {
        Some(s) if !s.is_empty() => s.to_owned(),
        _ => "unknown".to_owned(),
    };
    let mut failure = json!({ "hook_id": name("hook_id"), "capability_id": name("capability_id"), "error_code": code });
    if let Some(r) = durable_receipt_ref {
        failure["durable_receipt_ref"] = Value::String(r);
    }
    failure
}

fn admit(request: &Request, raw: &Value) -> Option<Admitted> {
    let registration = doc::validate_registration(raw).ok()?;
    let hook_input = match &request.input {
        Input::Source { source, .. } => {
            let (source, event_id) = source.as_ref()?;
            doc::hook_input(source, event_id, &registration).ok()?
        }
        Input::Ready(input) => {
            doc::validate_hook_input(input, &registration).ok()?;
            input.clone()
        }
    };
    let text = |p: &str| hook_input.pointer(p).and_then(Value::as_str).map(py_strip).unwrap_or("").to_owned();
    let dispatch_id = ids::dispatch_id(
        &text("/receipt/event_id"),
        &text("/receipt/event_kind"),
        &registration.hook_id,
        &registration.capability_id,
        &registration.policy_version,
    );
    Some(Admitted { contract: raw.clone(), registration, hook_input, dispatch_id })
}

pub fn inspect(request: &Request) -> Result<Inspection, Rejected> {
    let mut n = Inspection { registered_count: request.registrations.len(), ..Default::default() };
    let supplied: HashMap<&str, &Outcome> = request.outcomes.iter().map(|o| (o.dispatch_id.as_str(), o)).collect();
    let mut seen_hooks = BTreeSet::new();
    for raw in request::ordered(&request.registrations) {
        let raw_id = raw_hook_id(&raw).to_owned();
        if !raw_id.is_empty() && !seen_hooks.insert(raw_id) {
            n.slots.push(Slot::Failure(hook_failure(&raw, "duplicate_hook_id", None)));
            continue;
        }
        let Some(admitted) = admit(request, &raw) else {
            n.slots.push(Slot::Failure(hook_failure(&raw, "registration_or_input_rejected", None)));
            continue;
        };
        let id = admitted.dispatch_id.clone();
        n.known.insert(id.clone());
        let (mut previous, mut snapshot) = (0u32, "missing".to_owned());
        if let Some(root) = &request.runtime_root {
            let path = store::receipt_path(root, &goal_of(&admitted.hook_input)?, &id);
            let read = store::read(&path, &id);
            snapshot = read.snapshot;
            let blocked = match read.state {
                State::Malformed => Some("journal_read_failed"),
                State::Missing => None,
                State::Present(stored) => match admitted.bind(&stored, request.has_receipt_id()) {
                    None => Some("receipt_conflict"),
                    Some(receipt) if receipt["status"] == "retryable_failure" => {
                        previous = receipt["attempt_count"].as_u64().unwrap_or(0) as u32;
                        n.retried_hooks.push(admitted.registration.hook_id.clone());
                        let resent = supplied.get(id.as_str()).is_some_and(|o| o.attempt_count == previous);
                        (previous >= MAX_ATTEMPT_COUNT && !resent).then_some("journal_write_failed")
                    }
                    Some(receipt) => {
                        n.terminal.insert(id.clone(), receipt);
                        n.slots.push(Slot::Hook(id.clone()));
                        n.admitted.insert(id, admitted);
                        continue;
                    }
                },
            };
            if let Some(code) = blocked {
                n.blocked.insert(id.clone());
                n.slots.push(Slot::Failure(hook_failure(&admitted.contract, code, None)));
                n.admitted.insert(id, admitted);
                continue;
            }
        }
        let resent = supplied.get(id.as_str()).is_some_and(|o| o.attempt_count == previous);
        n.plans.push(Plan {
            dispatch_id: id.clone(),
            hook_id: admitted.registration.hook_id.clone(),
            capability_id: admitted.registration.capability_id.clone(),
            attempt_count: if resent { previous } else { previous + 1 },
            retry: previous > 0,
            receipt_snapshot: snapshot,
            hook_input: admitted.hook_input.clone(),
        });
        n.slots.push(Slot::Hook(id.clone()));
        n.admitted.insert(id, admitted);
    }
    Ok(n)
}
