//! The finalize phase: every plan's outcome judged, its receipt written
//! under the batch's one lock budget, and the dispatch reduced in canonical
//! hook order. An intent key, once taken by an earlier hook (recorded,
//! replayed, a divergent winner, or a write that failed), stays taken.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::envelope;
use super::inspect::{self, hook_failure, Admitted, Inspection, Plan, Slot};
use super::request::{goal_of, Outcome, OutcomeStatus, Request};
use super::store::{self, Stored};
use super::{Rejected, RESULT_SCHEMA_VERSION};
use crate::dialect::shipped::{self as doc, ResultContext};

/// LoopX's managed call answers within five seconds; the whole batch shares
/// one shorter wait for contended receipts, so they cannot add up.
pub const LOCK_BUDGET: Duration = Duration::from_millis(1_000);

pub type Outcomes<'a> = HashMap<&'a str, &'a Outcome>;

pub fn finalize(request: &Request, transaction_id: &str) -> Result<(Value, Inspection), Rejected> {
    let mut inspection = inspect::inspect(request)?;
    let outcomes: Outcomes = request.outcomes.iter().map(|o| (o.dispatch_id.as_str(), o)).collect();
    for plan in &inspection.plans {
        let Some(o) = outcomes.get(plan.dispatch_id.as_str()) else {
            return Err(Rejected::request("provider_outcomes do not cover the current provider plan"));
        };
        if !binds(o, &plan.hook_id, &plan.capability_id)
            || (!o.status.deferred() && o.attempt_count != plan.attempt_count)
        {
            return Err(Rejected::request("provider outcome does not bind its current plan"));
        }
    }
    for o in &request.outcomes {
        if !inspection.known.contains(&o.dispatch_id) {
            return Err(Rejected::request("provider outcome dispatch_id is outside this transaction"));
        }
        if inspection.plans.iter().any(|p| p.dispatch_id == o.dispatch_id) {
            continue;
        }
        let admitted = inspection.admitted.get(&o.dispatch_id);
        if inspection.blocked.contains(&o.dispatch_id) {
            if !admitted.is_some_and(|a| binds(o, &a.registration.hook_id, &a.registration.capability_id)) {
                return Err(Rejected::request("provider outcome does not bind its blocked hook"));
            }
            continue;
        }
        if admitted.is_none() || !inspection.terminal.contains_key(&o.dispatch_id) {
            return Err(Rejected::request("provider outcome is outside the current provider plan"));
        }
    }
    let invoked = request.outcomes.iter().filter(|o| !o.status.deferred()).count();
    envelope::admit(&inspection, transaction_id, invoked)?;
    materialize(request, &mut inspection, &outcomes)?;
    let result = json!({
        "schema_version": RESULT_SCHEMA_VERSION,
        "phase": "finalize",
        "transaction_id": transaction_id,
        "provider_plan": [],
        "dispatch": envelope::dispatch_result(&inspection, invoked),
    });
    Ok((result, inspection))
}

fn binds(o: &Outcome, hook_id: &str, capability_id: &str) -> bool {
    o.hook_id == hook_id && o.capability_id == capability_id
}

/// Each slot, in order: a failure as it is, a terminal receipt replayed (or
/// in conflict with a divergent outcome), a plan finalized.
pub fn materialize(request: &Request, n: &mut Inspection, outcomes: &Outcomes) -> Result<(), Rejected> {
    let deadline = Instant::now() + LOCK_BUDGET;
    let plans: HashMap<String, usize> = n.plans.iter().enumerate().map(|(i, p)| (p.dispatch_id.clone(), i)).collect();
    let slots = std::mem::take(&mut n.slots);
    for slot in &slots {
        let id = match slot {
            Slot::Failure(f) => {
                n.failures.push(f.clone());
                continue;
            }
            Slot::Hook(id) => id,
        };
        let outcome = outcomes.get(id.as_str()).copied();
        if let Some(terminal) = n.terminal.get(id).cloned() {
            match outcome.filter(|o| !o.status.deferred()) {
                Some(o) if receipt_for(&n.admitted[id], o, o.attempt_count) != terminal => {
                    receipt_conflict(n, id, Some(&terminal))
                }
                _ => replay(n, id, &terminal),
            }
            continue;
        }
        let Some(&plan) = plans.get(id) else { return Err(Rejected::request("result slot lost its provider plan")) };
        finalize_plan(request, n, plan, outcome, deadline)?;
    }
    n.slots = slots;
    Ok(())
}

fn finalize_plan(
    request: &Request,
    n: &mut Inspection,
    plan: usize,
    outcome: Option<&Outcome>,
    deadline: Instant,
) -> Result<(), Rejected> {
    let id = n.plans[plan].dispatch_id.clone();
    let status = outcome.map(|o| o.status);
    let deferred = match status {
        Some(OutcomeStatus::LockUnavailable) => Some("lock_acquire_timeout"),
        Some(OutcomeStatus::LockFailed) => Some("journal_read_failed"),
        Some(OutcomeStatus::ReceiptChanged) => Some("receipt_conflict"),
        _ => None,
    };
    if let Some(code) = deferred {
        n.failures.push(hook_failure(&n.admitted[&id].contract, code, None));
        return Ok(());
    }
    let admitted = &n.admitted[&id];
    let result = match outcome {
        Some(Outcome { status: OutcomeStatus::Returned, result: Some(r), .. }) => r,
        Some(Outcome { status: OutcomeStatus::Returned, .. }) => {
            return record_failure(request, n, plan, "runtime_result_invalid", deadline)
        }
        Some(o) => return record_failure(request, n, plan, o.status.as_str(), deadline),
        None => return record_failure(request, n, plan, "producer_failed", deadline),
    };
    let ctx = ResultContext { registration: &admitted.registration, event_id: admitted.event_id() };
    if doc::validate_result(result, &ctx).is_err() {
        return record_failure(request, n, plan, "contract_rejected", deadline);
    }
    if result["status"] != "intent" {
        let receipt = sidecar_receipt(admitted, n.plans[plan].attempt_count, "not_applicable", Value::Null, None);
        return match write(request, n, plan, &receipt, deadline)? {
            Stored::Failed => {
                n.failures.push(hook_failure(&n.admitted[&id].contract, "journal_write_failed", None));
                Ok(())
            }
            Stored::Conflict(held) => {
                receipt_conflict(n, &id, held.as_ref());
                Ok(())
            }
            Stored::Replayed(held) => {
                replay(n, &id, &held);
                Ok(())
            }
            Stored::Written => Ok(()),
        };
    }
    let intent = result["intent"].clone();
    let key = intent["idempotency_key"].as_str().unwrap_or_default().to_owned();
    if n.seen_keys.contains(&key) {
        return record_failure(request, n, plan, "intent_key_conflict", deadline);
    }
    // The key is this hook's from here on, even if its write fails below.
    n.seen_keys.insert(key.clone());
    let receipt = sidecar_receipt(admitted, n.plans[plan].attempt_count, "intent_recorded", intent.clone(), None);
    match write(request, n, plan, &receipt, deadline)? {
        Stored::Failed => n.failures.push(hook_failure(&n.admitted[&id].contract, "journal_write_failed", None)),
        Stored::Conflict(held) => receipt_conflict(n, &id, held.as_ref()),
        Stored::Replayed(held) => {
            // The key belongs to this very receipt, not to an earlier hook.
            n.seen_keys.remove(&key);
            replay(n, &id, &held);
        }
        Stored::Written => n.intents.push(intent),
    }
    Ok(())
}

fn record_failure(
    request: &Request,
    n: &mut Inspection,
    plan: usize,
    code: &str,
    deadline: Instant,
) -> Result<(), Rejected> {
    let id = n.plans[plan].dispatch_id.clone();
    let receipt =
        sidecar_receipt(&n.admitted[&id], n.plans[plan].attempt_count, "retryable_failure", Value::Null, Some(code));
    let contract = n.admitted[&id].contract.clone();
    match write(request, n, plan, &receipt, deadline)? {
        Stored::Failed => n.failures.push(hook_failure(&contract, "journal_write_failed", None)),
        Stored::Conflict(held) => receipt_conflict(n, &id, held.as_ref()),
        Stored::Replayed(held) => replay(n, &id, &held),
        Stored::Written => {
            let reference = request.runtime_root.as_ref().map(|_| format!("post-writeback-hook:{id}"));
            n.failures.push(hook_failure(&contract, code, reference));
        }
    }
    Ok(())
}

/// Stores `receipt` as the plan's sidecar; without a runtime root there is
/// no store and the receipt stands as written.
fn write(
    request: &Request,
    n: &Inspection,
    plan: usize,
    receipt: &Value,
    deadline: Instant,
) -> Result<Stored, Rejected> {
    let Some(root) = &request.runtime_root else { return Ok(Stored::Written) };
    let plan: &Plan = &n.plans[plan];
    let admitted = &n.admitted[&plan.dispatch_id];
    let path = store::receipt_path(root, &goal_of(&admitted.hook_input)?, &plan.dispatch_id);
    let keeps = request.has_receipt_id();
    let bind = |stored: &Value| admitted.bind(stored, keeps);
    let w = store::Write {
        path: &path,
        dispatch_id: &plan.dispatch_id,
        receipt,
        attempt_count: plan.attempt_count,
        bind: &bind,
        keeps_stored_clock: keeps,
    };
    Ok(store::store(&w, deadline))
}

fn receipt_conflict(n: &mut Inspection, id: &str, held: Option<&Value>) {
    if let Some(key) = held.and_then(|r| r["intent"]["idempotency_key"].as_str()) {
        n.seen_keys.insert(key.to_owned());
    }
    n.failures.push(hook_failure(&n.admitted[id].contract, "receipt_conflict", None));
}

fn replay(n: &mut Inspection, id: &str, receipt: &Value) {
    let hook_id = n.admitted[id].registration.hook_id.clone();
    if let Some(key) = receipt["intent"]["idempotency_key"].as_str() {
        if !n.seen_keys.insert(key.to_owned()) {
            n.failures.push(hook_failure(&n.admitted[id].contract, "intent_key_conflict", None));
            return;
        }
        n.intents.push(receipt["intent"].clone());
    }
    n.replayed_hooks.push(hook_id);
}

/// The receipt an outcome would store, to compare with a terminal one.
fn receipt_for(admitted: &Admitted, o: &Outcome, attempt: u32) -> Value {
    let failed = |code: &str| sidecar_receipt(admitted, attempt, "retryable_failure", Value::Null, Some(code));
    let Some(result) = o.result.as_ref().filter(|_| o.status == OutcomeStatus::Returned) else {
        return failed(o.status.as_str());
    };
    let ctx = ResultContext { registration: &admitted.registration, event_id: admitted.event_id() };
    if doc::validate_result(result, &ctx).is_err() {
        return failed("contract_rejected");
    }
    if result["status"] != "intent" {
        return sidecar_receipt(admitted, attempt, "not_applicable", Value::Null, None);
    }
    sidecar_receipt(admitted, attempt, "intent_recorded", result["intent"].clone(), None)
}

fn sidecar_receipt(admitted: &Admitted, attempt: u32, status: &str, intent: Value, error_code: Option<&str>) -> Value {
    json!({
        "schema_version": doc::ShippedSidecarReceiptSchemaVersion::VALUE,
        "dispatch_id": admitted.dispatch_id,
        "hook_id": admitted.registration.hook_id,
        "capability_id": admitted.registration.capability_id,
        "source_receipt_id": admitted.event_id(),
        "status": status,
        "intent": intent,
        "error_code": error_code,
        "attempt_count": attempt,
        "recorded_at": admitted.recorded_at(),
    })
}
