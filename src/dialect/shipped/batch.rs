//! LoopX's transport envelope as the admission of one dispatch. LoopX runs
//! a batch of hooks only when the worst case of its answer fits 1,750,000
//! bytes, checked before any provider runs or anything is written (its
//! `assertFinalResultFitsEnvelope`; `transaction/envelope.rs` is the same
//! rule over its transaction). Each hook still to answer counts at its
//! registration's `max_result_bytes`, a replayed one at its stored intent,
//! and each also at a replay entry and a failure entry (it may end as
//! either after a race); a hook that already failed counts as its failure.
//! What is measured is LoopX's transaction result around the dispatch
//! result, so that a batch LoopX admits is admitted here and one it refuses
//! is refused.

use serde_json::{json, Value};

use super::engine::{dispatch_result, receipt_from_row};
use super::{DispatchFailure, FailureCode};
use crate::dispatch::{DispatchOutcome, HookOutcome, HookOutcomeKind, PlannedHook, Standing};

/// LoopX's `MAX_TRANSACTION_RESULT_BYTES`.
pub const MAX_RESULT_BYTES: usize = 1_750_000;
/// An entry's commas and the counts' digits; the rest is counted exactly.
const PER_HOOK_OVERHEAD: usize = 16;
/// LoopX's transaction result schema, whose document wraps the dispatch result.
const TRANSACTION_RESULT_SCHEMA: &str = "loopx_post_writeback_hook_transaction_result_v0";

fn json_len(v: &impl serde::Serialize) -> usize {
    serde_json::to_string(v).map_or(usize::MAX, |s| s.len())
}

/// The bytes LoopX's transaction result adds around its dispatch result (a
/// `pwtx_` transaction id is 69 bytes).
fn wrapper_len() -> usize {
    let wrapper = json!({
        "schema_version": TRANSACTION_RESULT_SCHEMA,
        "phase": "finalize",
        "transaction_id": format!("pwtx_{}", "0".repeat(64)),
        "provider_plan": [],
        "dispatch": null,
    });
    json_len(&wrapper) - "null".len()
}

/// The hook's entry in `failures` should it end failed after a write.
fn failure_entry(p: &PlannedHook<'_>) -> usize {
    json_len(&DispatchFailure {
        hook_id: p.hook.hook_id.clone(),
        capability_id: p.hook.capability_id.clone(),
        error_code: FailureCode::JournalWriteFailed,
        durable_receipt_ref: Some(format!("post-writeback-hook:{}", p.dispatch_id)),
    })
}

/// The worst case of the answer to a dispatch planned so, in bytes.
pub fn worst_case(planned: &[PlannedHook<'_>], registered: u32) -> usize {
    // The hooks answered already by a failure are part of the baseline.
    let known: Vec<HookOutcome> = planned
        .iter()
        .filter_map(|p| match p.standing {
            Standing::Done(o) if o.outcome != HookOutcomeKind::Replayed => Some(o.clone()),
            _ => None,
        })
        .collect();
    let mut baseline = dispatch_result(&DispatchOutcome { admitted: true, refusal: None, hooks: known }, registered);
    baseline.invoked_count = planned.iter().filter(|p| matches!(p.standing, Standing::Call { .. })).count() as u32;
    baseline.retried_hooks = planned.iter().filter(|p| p.retried).map(|p| p.hook.hook_id.clone()).collect();
    baseline.failures.extend(planned.iter().filter(|p| matches!(p.standing, Standing::Deferred)).map(|p| {
        DispatchFailure {
            hook_id: p.hook.hook_id.clone(),
            capability_id: p.hook.capability_id.clone(),
            error_code: FailureCode::DispatchFailed,
            durable_receipt_ref: None,
        }
    }));
    let mut total = wrapper_len().saturating_add(json_len(&baseline));
    for p in planned {
        let intent = match p.standing {
            Standing::Call { terminal: None } => p.hook.max_result_bytes as usize,
            Standing::Call { terminal: Some(row) } => {
                receipt_from_row(row).and_then(|r| r.intent).map_or(0, |i| json_len(&i))
            }
            Standing::Done(o) if o.outcome == HookOutcomeKind::Replayed => {
                o.shipped.as_deref().and_then(|e| e.receipt.as_ref()?.intent.as_ref()).map_or(0, json_len)
            }
            Standing::Done(_) | Standing::Deferred => continue,
        };
        let replay = json_len(&Value::String(p.hook.hook_id.clone()));
        total = total.saturating_add(intent + replay + failure_entry(p) + PER_HOOK_OVERHEAD);
    }
    total
}

/// Whether LoopX would run a batch planned so.
pub fn fits(planned: &[PlannedHook<'_>], registered: u32) -> bool {
    worst_case(planned, registered) <= MAX_RESULT_BYTES
}
