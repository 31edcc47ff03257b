//! The pieces of one hook's dispatch: outcomes, receipts, and the validation
//! of what its provider answered. Every failure is a value with a code;
//! nothing a provider says is kept.

use serde_json::Value;

use super::dialect::{RegisteredHook, Source};
use super::judged::{Accepted, Failure};
use super::outcome::{HookOutcome, HookOutcomeKind};
use super::provider::ProviderReply;
use crate::contract::{DispatchStatus, FailureCode, FailureDetail};
use crate::identity;
use crate::journal::DispatchRow;
use crate::validate::{IntentKinds, Rule};

pub(super) fn outcome(hook: &RegisteredHook, dispatch_id: &str, kind: HookOutcomeKind, attempt: u32) -> HookOutcome {
    let mut o = HookOutcome {
        hook_id: hook.hook_id.clone(),
        dispatch_id: dispatch_id.to_owned(),
        outcome: kind,
        attempt,
        receipt: None,
        failure_code: None,
        failure_rule: None,
        failure_pointer: None,
        pruned_at: None,
        shipped: None,
    };
    hook.rules.fresh_outcome(&mut o, hook);
    o
}

pub(super) fn failed(hook: &RegisteredHook, dispatch_id: &str, attempt: u32, f: &Failure) -> HookOutcome {
    let mut o = HookOutcome {
        failure_code: Some(f.code),
        failure_rule: f.rule,
        failure_pointer: f.pointer.clone(),
        ..outcome(hook, dispatch_id, HookOutcomeKind::Failed, attempt)
    };
    hook.rules.failed_outcome(&mut o, f);
    o
}

/// A final row as an outcome: replayed, or a conflict when `new_digest` differs
/// from the recorded one.
pub(super) fn from_final(
    hook: &RegisteredHook,
    dispatch_id: &str,
    row: &DispatchRow,
    new_digest: Option<&str>,
) -> HookOutcome {
    let conflict = matches!((row.result_digest.as_deref(), new_digest), (Some(a), Some(b)) if a != b);
    let kind = if conflict { HookOutcomeKind::Conflict } else { HookOutcomeKind::Replayed };
    let mut o = HookOutcome {
        failure_code: conflict.then_some(FailureCode::IntentConflict),
        ..outcome(hook, dispatch_id, kind, row.attempts)
    };
    hook.rules.final_receipt(&mut o, row, conflict);
    o.pruned_at = row.pruned_at;
    o
}

/// Marks an outcome whose provider this dispatch called.
pub(super) fn invoked(o: &mut HookOutcome) {
    if let Some(end) = o.shipped.as_deref_mut() {
        end.invoked = true;
    }
}

/// Marks an outcome whose identity's receipt was retryable before this dispatch.
pub(super) fn retried(o: &mut HookOutcome) {
    if let Some(end) = o.shipped.as_deref_mut() {
        end.retried = true;
    }
}

/// Sets the receipt a record of `o`'s hook writes, in the dialect of `source`.
pub(super) fn set_receipt(
    o: &mut HookOutcome,
    source: &Source,
    hook: &RegisteredHook,
    status: DispatchStatus,
    accepted: Option<&Accepted>,
    failure: Option<FailureDetail>,
) {
    source.rules().set_receipt(o, source, hook, status, accepted, failure)
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

/// Validates what a provider call produced, against its hook's registration
/// in the dialect the hook was registered in.
pub(super) fn accept(
    hook: &RegisteredHook,
    kinds: &IntentKinds,
    call: CallResult,
    dispatch_id: &str,
    source: &Source,
) -> Result<Accepted, Failure> {
    accept_doc(hook, kinds, &parse_reply(hook, call)?, dispatch_id, source)
}

/// A verify-mode replay's answer, against the final row it replays: the
/// stored receipt (no validation) when it is the very document that row's
/// result digest names, under the same registration, since that document
/// was validated when it was recorded; otherwise validated as [`accept`]
/// does, its digest then telling a replay from a conflict.
pub(super) fn verify(
    hook: &RegisteredHook,
    kinds: &IntentKinds,
    call: CallResult,
    row: &DispatchRow,
    dispatch_id: &str,
    source: &Source,
) -> HookOutcome {
    let doc = match parse_reply(hook, call) {
        Ok(doc) => doc,
        Err(f) => return failed(hook, dispatch_id, 0, &f),
    };
    if row.registration_digest == hook.digest && row.result_digest.as_deref() == Some(&identity::result_digest(&doc)) {
        return from_final(hook, dispatch_id, row, None);
    }
    match accept_doc(hook, kinds, &doc, dispatch_id, source) {
        Ok(accepted) => from_final(hook, dispatch_id, row, Some(&accepted.digest)),
        Err(f) => failed(hook, dispatch_id, 0, &f),
    }
}

/// The provider's answer as a JSON document, or the failure it is.
fn parse_reply(hook: &RegisteredHook, call: CallResult) -> Result<Value, Failure> {
    let text = match call {
        CallResult::WallExceeded => return Err(hook.rules.wall_exceeded()),
        CallResult::NotStarted => return Err(Failure::new(FailureCode::DispatchBudgetExhausted, None)),
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
    crate::validate::text::from_str_nested(&text, hook.rules.max_result_depth())
        .ok_or_else(|| Failure::new(FailureCode::ResultContractRejected, Some(Rule::NotJsonValue)))
}

/// Validates a parsed answer against its hook's registration, in the
/// dialect the hook was registered in.
fn accept_doc(
    hook: &RegisteredHook,
    kinds: &IntentKinds,
    doc: &Value,
    dispatch_id: &str,
    source: &Source,
) -> Result<Accepted, Failure> {
    let mut accepted = hook.rules.accept(doc, hook, kinds, dispatch_id, source)?;
    (accepted.digest, accepted.bytes) = identity::result_digest_and_len(doc);
    Ok(accepted)
}
