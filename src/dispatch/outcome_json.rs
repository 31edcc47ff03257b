//! An outcome as the JSON text the JS side reads, written straight from its
//! structs. Its members come in the byte order of their names, the order a
//! `serde_json::Value` prints, so the text is the same as before it skipped
//! the `Value`: a receipt in an outcome still reads, as text, like the same
//! receipt read back from the journal. Building the `Value` cost several
//! times the writing, once per outcome on the writer's thread and once per
//! replay on the event loop's.
//!
//! Each mirror below destructures its struct with no `..`, so a field added
//! there does not compile here until it is written too.

use serde::Serialize;
use serde_json::Value;

use super::outcome::{DispatchOutcome, HookOutcome, HookOutcomeKind};
use super::request::AdmissionRefusal;
use crate::contract::{
    DispatchReceipt, DispatchReceiptSchemaVersion, DispatchStatus, EventKind, FailureCode, FailureDetail,
};
use crate::validate::Rule;

/// `outcome` as JSON text, with the dialect's own dispatch result beside it
/// under `shipped` when there is one.
pub fn outcome_json(outcome: &DispatchOutcome, shipped: Option<&Value>) -> String {
    let DispatchOutcome { admitted, refusal, hooks } = outcome;
    let sorted = Sorted { admitted: *admitted, hooks: hooks.iter().map(hook).collect(), refusal: *refusal, shipped };
    // Plain structs, strings and numbers: serializing them cannot fail.
    serde_json::to_string(&sorted).unwrap_or_default()
}

#[derive(Serialize)]
struct Sorted<'a> {
    admitted: bool,
    hooks: Vec<SortedHook<'a>>,
    refusal: Option<AdmissionRefusal>,
    #[serde(skip_serializing_if = "Option::is_none")]
    shipped: Option<&'a Value>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SortedHook<'a> {
    attempt: u32,
    dispatch_id: &'a str,
    failure_code: Option<FailureCode>,
    failure_pointer: Option<&'a str>,
    failure_rule: Option<Rule>,
    hook_id: &'a str,
    outcome: HookOutcomeKind,
    pruned_at: Option<i64>,
    receipt: Option<SortedReceipt<'a>>,
}

fn hook(o: &HookOutcome) -> SortedHook<'_> {
    let HookOutcome {
        hook_id,
        dispatch_id,
        outcome,
        attempt,
        receipt,
        failure_code,
        failure_rule,
        failure_pointer,
        pruned_at,
        shipped: _,
    } = o;
    SortedHook {
        attempt: *attempt,
        dispatch_id,
        failure_code: *failure_code,
        failure_pointer: failure_pointer.as_deref(),
        failure_rule: *failure_rule,
        hook_id,
        outcome: *outcome,
        pruned_at: *pruned_at,
        receipt: receipt.as_ref().map(receipt_of),
    }
}

#[derive(Serialize)]
struct SortedReceipt<'a> {
    attempt: u32,
    capability_id: &'a str,
    dispatch_id: &'a str,
    effect_id: &'a str,
    event_kind: EventKind,
    failure: Option<SortedFailure>,
    hook_id: &'a str,
    intent_ids: &'a [String],
    receipt_id: &'a str,
    registration_digest: &'a str,
    result_digest: Option<&'a str>,
    schema_version: DispatchReceiptSchemaVersion,
    status: DispatchStatus,
}

#[derive(Serialize)]
struct SortedFailure {
    code: FailureCode,
    rule: Option<Rule>,
}

fn receipt_of(r: &DispatchReceipt) -> SortedReceipt<'_> {
    let DispatchReceipt {
        schema_version,
        dispatch_id,
        hook_id,
        capability_id,
        receipt_id,
        effect_id,
        event_kind,
        registration_digest,
        status,
        attempt,
        intent_ids,
        result_digest,
        failure,
    } = r;
    SortedReceipt {
        attempt: *attempt,
        capability_id,
        dispatch_id,
        effect_id,
        event_kind: *event_kind,
        failure: failure.map(|FailureDetail { code, rule }| SortedFailure { code, rule }),
        hook_id,
        intent_ids,
        receipt_id,
        registration_digest,
        result_digest: result_digest.as_deref(),
        schema_version: *schema_version,
        status: *status,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::{DispatchReceipt, FailureDetail};

    /// The text as it was printed through a `serde_json::Value`.
    fn through_value(outcome: &DispatchOutcome, shipped: Option<&Value>) -> String {
        let mut v = serde_json::to_value(outcome).unwrap();
        if let Some(own) = shipped {
            v["shipped"] = own.clone();
        }
        v.to_string()
    }

    fn receipt(status: DispatchStatus, failure: Option<FailureDetail>, intents: usize) -> DispatchReceipt {
        DispatchReceipt {
            schema_version: DispatchReceiptSchemaVersion::V0,
            dispatch_id: format!("pwd_{}", "a".repeat(64)),
            hook_id: "hook.a\"\u{7}é".into(),
            capability_id: "cap.alpha".into(),
            receipt_id: "rcpt-1".into(),
            effect_id: "eff-1".into(),
            event_kind: EventKind::TodoCompleted,
            registration_digest: "b".repeat(64),
            status,
            attempt: 3,
            intent_ids: (0..intents).map(|i| format!("pwi_{i:064}")).collect(),
            result_digest: (intents > 0).then(|| "d".repeat(64)),
            failure,
        }
    }

    fn hook(kind: HookOutcomeKind, receipt: Option<DispatchReceipt>, failed: bool) -> HookOutcome {
        HookOutcome {
            hook_id: "hook.b".into(),
            dispatch_id: format!("pwd_{}", "c".repeat(64)),
            outcome: kind,
            attempt: 2,
            receipt,
            failure_code: failed.then_some(FailureCode::ResultContractRejected),
            failure_rule: failed.then_some(Rule::TooManyItems),
            failure_pointer: failed.then(|| "/intents/0/~0redacted~0".into()),
            pruned_at: failed.then_some(1_700_000_000_123),
            shipped: None,
        }
    }

    #[test]
    fn the_text_is_the_one_a_value_prints_for_every_kind_of_outcome() {
        let failure = Some(FailureDetail { code: FailureCode::ProducerTimedOut, rule: Some(Rule::TooManyItems) });
        let hooks = vec![
            hook(HookOutcomeKind::Recorded, Some(receipt(DispatchStatus::Proposed, None, 2)), false),
            hook(HookOutcomeKind::NotApplicable, Some(receipt(DispatchStatus::NotApplicable, None, 0)), false),
            hook(HookOutcomeKind::Replayed, Some(receipt(DispatchStatus::Proposed, None, 1)), true),
            hook(HookOutcomeKind::Failed, None, true),
            hook(HookOutcomeKind::Conflict, Some(receipt(DispatchStatus::Failed, failure, 0)), true),
            hook(HookOutcomeKind::Exhausted, Some(receipt(DispatchStatus::Exhausted, failure, 0)), true),
        ];
        let shipped = serde_json::json!({ "z": 1, "a": [null, { "y": "x", "b": true }] });
        let outcomes = [
            DispatchOutcome { admitted: true, refusal: None, hooks },
            DispatchOutcome::refused(AdmissionRefusal::ReceiptNotCommitted),
            DispatchOutcome { admitted: true, refusal: None, hooks: Vec::new() },
        ];
        for outcome in &outcomes {
            for shipped in [None, Some(&shipped)] {
                assert_eq!(outcome_json(outcome, shipped), through_value(outcome, shipped));
            }
        }
    }
}
