//! What came of one provider call, and core's verdict on it: a reply is
//! bounded, parsed, validated as a receipt and checked against the hook's own
//! registration; anything it cannot accept becomes a failure receipt core
//! writes itself, keeping the writes the reply claimed.

use serde_json::Value;

use super::contract::{
    TurnStartHookRegistration, TurnStartReceipt, TurnStartReceiptSchemaVersion, TurnStartStatus, TurnStartWriteScope,
};
use super::hook::InstalledTurnStartHook;
use super::outcome::{PendingStanding, TurnStartHookOutcome, TurnStartKernelFailure};
use super::validate::validate_turn_start_receipt;
use crate::contract::FailureCode;
use crate::provider_reply::ProviderReply;
use crate::validate::Rule;

/// A receipt is a few hundred bytes; text longer than this is refused unparsed.
pub const MAX_RECEIPT_BYTES: usize = 4096;

/// What came of one provider call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TurnStartCallResult {
    Reply(ProviderReply),
    /// `timeout_ms` ran out, counted from the call.
    TimedOut,
    /// The reply text was longer than `MAX_RECEIPT_BYTES`; it was not kept.
    TooLarge,
}

/// A receipt core makes for a hook whose provider gave none it can accept:
/// the failure status, nothing read, nothing routed. `writes` carries the
/// (reactions_added, external_writes_performed) the reply claimed, so writes
/// a provider made are never hidden by core's verdict on it.
fn failure_receipt(hook_id: &str, status: TurnStartStatus, writes: (u32, u32)) -> TurnStartReceipt {
    TurnStartReceipt {
        schema_version: TurnStartReceiptSchemaVersion::V0,
        hook_id: hook_id.to_owned(),
        status,
        error_code: status.failure_code(),
        agent_read_required: false,
        observations_new: 0,
        pending: 0,
        direct_questions: 0,
        verified_replies: 0,
        routes_ok: 0,
        routes_failed: 0,
        reactions_added: writes.0,
        external_writes_performed: writes.1,
    }
}

fn failed(
    hook: &InstalledTurnStartHook,
    status: TurnStartStatus,
    code: FailureCode,
    rule: Option<Rule>,
    writes: (u32, u32),
) -> TurnStartHookOutcome {
    let hook_id = &hook.registration.hook_id;
    TurnStartHookOutcome {
        hook_id: hook_id.clone(),
        receipt: failure_receipt(hook_id, status, writes),
        kernel_failure: Some(TurnStartKernelFailure { code, rule }),
        pending_standing: PendingStanding::Reported,
    }
}

fn rejected(hook: &InstalledTurnStartHook, rule: Rule, writes: (u32, u32)) -> TurnStartHookOutcome {
    failed(hook, TurnStartStatus::ProviderContractError, FailureCode::ResultContractRejected, Some(rule), writes)
}

/// A valid receipt checked against its own registration: its hook, its write
/// scopes, its routes and its aggregate attempt budget.
fn registration_rule(registration: &TurnStartHookRegistration, receipt: &TurnStartReceipt) -> Option<Rule> {
    if receipt.hook_id != registration.hook_id {
        return Some(Rule::HookMismatch);
    }
    if receipt.external_writes_performed > 0
        && !registration.write_scopes.contains(&TurnStartWriteScope::ProviderMessageReaction)
    {
        return Some(Rule::AuthorityClaimed);
    }
    let budget = &registration.budget;
    if receipt.routes_ok + receipt.routes_failed > budget.max_routes
        || receipt.external_writes_performed > budget.max_attempts_per_dispatch
    {
        return Some(Rule::OutOfRange);
    }
    None
}

/// The writes a reply claims, read from the document whether or not it is a
/// valid receipt: (reactions_added, external_writes_performed), each a
/// non-negative integer or 0, reactions capped at the writes.
fn claimed_writes(doc: &Value) -> (u32, u32) {
    let count =
        |field: &str| doc.get(field).and_then(Value::as_u64).map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX));
    let writes = count("external_writes_performed");
    (count("reactions_added").min(writes), writes)
}

/// Turns what one provider call produced into the hook's outcome.
pub(super) fn judge(hook: &InstalledTurnStartHook, call: TurnStartCallResult) -> TurnStartHookOutcome {
    let registration = &hook.registration;
    let none = (0, 0);
    let text = match call {
        TurnStartCallResult::TimedOut => {
            return failed(hook, TurnStartStatus::TimedOut, FailureCode::ProducerTimedOut, None, none)
        }
        TurnStartCallResult::TooLarge => return rejected(hook, Rule::ResultTooLarge, none),
        TurnStartCallResult::Reply(ProviderReply::Threw) => {
            return failed(hook, TurnStartStatus::ProviderContractError, FailureCode::ProducerFailed, None, none)
        }
        TurnStartCallResult::Reply(ProviderReply::NotJson) => return rejected(hook, Rule::NotJsonValue, none),
        TurnStartCallResult::Reply(ProviderReply::Json(text)) => text,
    };
    if text.len() > MAX_RECEIPT_BYTES {
        return rejected(hook, Rule::ResultTooLarge, none);
    }
    let Ok(doc) = serde_json::from_str::<Value>(&text) else { return rejected(hook, Rule::NotJsonValue, none) };
    let receipt = match validate_turn_start_receipt(&doc) {
        Ok(receipt) => receipt,
        Err(violations) => {
            return rejected(hook, violations.first().map_or(Rule::WrongType, |v| v.rule), claimed_writes(&doc))
        }
    };
    if let Some(rule) = registration_rule(registration, &receipt) {
        return rejected(hook, rule, (receipt.reactions_added, receipt.external_writes_performed));
    }
    TurnStartHookOutcome {
        hook_id: registration.hook_id.clone(),
        receipt,
        kernel_failure: None,
        pending_standing: PendingStanding::Reported,
    }
}
