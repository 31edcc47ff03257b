//! The pieces of one hook's dispatch: outcomes, receipts, and the validation
//! of what its provider answered. Every failure is a value with a code;
//! nothing a provider says is kept.

use serde_json::Value;

use super::outcome::{HookOutcome, HookOutcomeKind};
use super::provider::ProviderReply;
use super::registry::{HookContract, RegisteredHook};
use super::source::Source;
use super::stored::receipt_from_row;
use crate::contract::{
    DispatchReceipt, DispatchReceiptSchemaVersion, DispatchStatus, EventKind, FailureCode, FailureDetail,
    PostWritebackHookResult,
};
use crate::identity;
use crate::journal::DispatchRow;
use crate::validate::{validate_hook_result, IntentKinds, ResultContext, Rule};

pub(super) struct Failure {
    pub code: FailureCode,
    pub rule: Option<Rule>,
}

impl Failure {
    pub fn new(code: FailureCode, rule: Option<Rule>) -> Self {
        Failure { code, rule }
    }
}

/// An accepted result with what recording needs.
pub(super) struct Accepted {
    pub result: PostWritebackHookResult,
    pub digest: String,
    /// Length of the result's canonical JSON.
    pub bytes: usize,
}

pub(super) fn outcome(hook: &RegisteredHook, dispatch_id: &str, kind: HookOutcomeKind, attempt: u32) -> HookOutcome {
    HookOutcome {
        hook_id: hook.hook_id.clone(),
        dispatch_id: dispatch_id.to_owned(),
        outcome: kind,
        attempt,
        receipt: None,
        failure_code: None,
        failure_rule: None,
    }
}

pub(super) fn failed(hook: &RegisteredHook, dispatch_id: &str, attempt: u32, f: &Failure) -> HookOutcome {
    HookOutcome {
        failure_code: Some(f.code),
        failure_rule: f.rule,
        ..outcome(hook, dispatch_id, HookOutcomeKind::Failed, attempt)
    }
}

/// A final row as an outcome: replayed, or a conflict when `new_digest` differs
/// from the recorded one.
pub(super) fn from_final(
    hook: &RegisteredHook,
    dispatch_id: &str,
    row: &DispatchRow,
    new_digest: Option<&str>,
) -> HookOutcome {
    let receipt = receipt_from_row(row);
    let attempt = receipt.as_ref().map_or(0, |r| r.attempt);
    let conflict = matches!((row.result_digest.as_deref(), new_digest), (Some(a), Some(b)) if a != b);
    let kind = if conflict { HookOutcomeKind::Conflict } else { HookOutcomeKind::Replayed };
    HookOutcome {
        receipt,
        failure_code: conflict.then_some(FailureCode::IntentConflict),
        ..outcome(hook, dispatch_id, kind, attempt)
    }
}

pub(super) fn receipt(
    request: &Source,
    hook: &RegisteredHook,
    dispatch_id: &str,
    status: DispatchStatus,
    attempt: u32,
    accepted: Option<&Accepted>,
    failure: Option<FailureDetail>,
) -> DispatchReceipt {
    let Source::ContractV0(request) = request;
    DispatchReceipt {
        schema_version: DispatchReceiptSchemaVersion::V0,
        dispatch_id: dispatch_id.to_owned(),
        hook_id: hook.hook_id.clone(),
        capability_id: hook.capability_id.clone(),
        receipt_id: request.receipt.receipt_id.clone(),
        effect_id: request.receipt.effect_id.clone(),
        // The projection validated the event kind before we get here.
        event_kind: EventKind::parse(&request.event.event_kind).unwrap_or(EventKind::TodoCompleted),
        registration_digest: hook.digest.clone(),
        status,
        attempt,
        intent_ids: accepted
            .map(|a| a.result.intents.iter().map(|i| i.intent_id.clone()).collect())
            .unwrap_or_default(),
        result_digest: accepted.map(|a| a.digest.clone()),
        failure,
    }
}

/// What came of one provider call, as the caller of [`super::Dispatcher::begin`]
/// observed it. The caller measures the call (start-to-close) against the
/// limit `begin` gave it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CallResult {
    /// The provider settled within its limit.
    Reply(ProviderReply),
    /// Its own `timeout_ms` ran out first.
    TimedOut,
    /// The dispatch's wall budget ran out first.
    WallExceeded,
    /// The reply's text was longer than [`max_reply_len`] allows; it was not kept.
    TooLarge,
    /// `begin` refused to start it (the wall budget was spent): not invoked.
    NotStarted,
}

/// The longest reply text worth parsing, in bytes (a UTF-16 length above it
/// is above it in bytes too). Compact JSON is never much longer than its
/// canonical form; refusing absurd sizes first saves parsing them.
pub fn max_reply_len(hook: &RegisteredHook) -> usize {
    2 * hook.max_result_bytes as usize + 1024
}

/// Validates what a provider call produced.
pub(super) fn accept(
    hook: &RegisteredHook,
    kinds: &IntentKinds,
    call: CallResult,
    dispatch_id: &str,
) -> Result<Accepted, Failure> {
    let text = match call {
        CallResult::WallExceeded | CallResult::NotStarted => {
            return Err(Failure::new(FailureCode::DispatchBudgetExhausted, None))
        }
        CallResult::TimedOut => return Err(Failure::new(FailureCode::ProducerTimedOut, None)),
        CallResult::TooLarge => {
            return Err(Failure::new(FailureCode::ResultContractRejected, Some(Rule::ResultTooLarge)))
        }
        CallResult::Reply(ProviderReply::Threw) => return Err(Failure::new(FailureCode::ProducerFailed, None)),
        CallResult::Reply(ProviderReply::NotJson) => {
            return Err(Failure::new(FailureCode::ResultContractRejected, Some(Rule::NotJsonValue)))
        }
        CallResult::Reply(ProviderReply::Json(text)) => text,
    };
    if text.len() > max_reply_len(hook) {
        return Err(Failure::new(FailureCode::ResultContractRejected, Some(Rule::ResultTooLarge)));
    }
    let doc: Value = serde_json::from_str(&text)
        .map_err(|_| Failure::new(FailureCode::ResultContractRejected, Some(Rule::NotJsonValue)))?;
    let HookContract::ContractV0(registration) = &hook.contract;
    let ctx = ResultContext { registration, dispatch_id, kinds };
    let result = validate_hook_result(&doc, &ctx)
        .map_err(|v| Failure::new(FailureCode::ResultContractRejected, v.first().map(|v| v.rule)))?;
    Ok(Accepted { digest: identity::result_digest(&doc), bytes: crate::canonical::canonical_len(&doc), result })
}
