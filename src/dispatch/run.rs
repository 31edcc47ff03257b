//! The pieces of one hook's dispatch: outcomes, receipts, and the validation
//! of what its provider answered. Every failure is a value with a code;
//! nothing a provider says is kept.

use serde_json::Value;

use super::outcome::{HookOutcome, HookOutcomeKind, ShippedEnd};
use super::provider::ProviderReply;
use super::registry::{HookContract, RegisteredHook};
use super::shipped::{self, ShippedSource};
use super::source::Source;
use super::stored::{receipt_from_row, stored_intent};
use crate::contract::{
    Dialect, DispatchReceipt, DispatchReceiptSchemaVersion, DispatchStatus, EventKind, FailureCode, FailureDetail,
    ResultStatus,
};
use crate::identity;
use crate::journal::{DispatchRow, IntentRow};
use crate::shipped::{FailureCode as ShippedCode, Intent as ShippedIntent, SidecarStatus};
use crate::validate::{validate_hook_result, IntentKinds, ResultContext, Rule};

pub(super) struct Failure {
    pub code: FailureCode,
    pub rule: Option<Rule>,
    /// The shipped code where it is not [`Failure::shipped_code`]'s reading of `code`.
    pub shipped: Option<ShippedCode>,
}

impl Failure {
    pub fn new(code: FailureCode, rule: Option<Rule>) -> Self {
        Failure { code, rule, shipped: None }
    }

    /// A later hook of one shipped dispatch reused an earlier hook's
    /// `idempotency_key`.
    pub fn intent_key_conflict() -> Self {
        Failure { code: FailureCode::IntentConflict, rule: None, shipped: Some(ShippedCode::IntentKeyConflict) }
    }

    /// A shipped identity whose `attempt_count` reached its ceiling: LoopX
    /// isolates it before the producer runs as `journal_write_failed`.
    pub fn attempts_spent_shipped() -> Self {
        Failure {
            code: FailureCode::DispatchBudgetExhausted,
            rule: None,
            shipped: Some(ShippedCode::JournalWriteFailed),
        }
    }

    /// Its code in the shipped contract.
    pub fn shipped_code(&self) -> ShippedCode {
        self.shipped.unwrap_or(match self.code {
            FailureCode::RegistrationRejected | FailureCode::InputBoundaryRejected => {
                ShippedCode::RegistrationOrInputRejected
            }
            FailureCode::ProducerFailed | FailureCode::ProducerTimedOut => ShippedCode::ProducerFailed,
            FailureCode::ResultContractRejected => ShippedCode::ContractRejected,
            FailureCode::IntentConflict => ShippedCode::ReceiptConflict,
            FailureCode::DispatchBudgetExhausted => ShippedCode::DispatchFailed,
        })
    }

    /// The code stored for it in a row of `dialect`.
    pub fn stored_code(&self, dialect: Dialect) -> &'static str {
        match dialect {
            Dialect::ContractV0 => self.code.as_str(),
            Dialect::LoopxShippedV0 => self.shipped_code().as_str(),
        }
    }
}

/// An accepted result with what recording needs, whatever its dialect.
pub(super) struct Accepted {
    pub status: ResultStatus,
    /// The journal rows of its intents, in result order.
    pub intents: Vec<IntentRow>,
    /// The intent document of a shipped result, for its receipt.
    pub shipped_intent: Option<ShippedIntent>,
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
        shipped: (hook.dialect() == Dialect::LoopxShippedV0)
            .then(|| Box::new(ShippedEnd { capability_id: hook.capability_id.clone(), ..ShippedEnd::default() })),
    }
}

pub(super) fn failed(hook: &RegisteredHook, dispatch_id: &str, attempt: u32, f: &Failure) -> HookOutcome {
    let mut o = HookOutcome {
        failure_code: Some(f.code),
        failure_rule: f.rule,
        ..outcome(hook, dispatch_id, HookOutcomeKind::Failed, attempt)
    };
    if let Some(end) = o.shipped.as_deref_mut() {
        end.error_code = Some(f.shipped_code());
    }
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
    match o.shipped.as_deref_mut() {
        None => {
            o.receipt = receipt_from_row(row);
            o.attempt = o.receipt.as_ref().map_or(0, |r| r.attempt);
        }
        Some(end) => {
            end.receipt = shipped::receipt_from_row(row);
            end.error_code = conflict.then_some(ShippedCode::ReceiptConflict);
        }
    }
    o
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
    match source {
        Source::ContractV0(request) => {
            o.receipt = Some(DispatchReceipt {
                schema_version: DispatchReceiptSchemaVersion::V0,
                dispatch_id: o.dispatch_id.clone(),
                hook_id: hook.hook_id.clone(),
                capability_id: hook.capability_id.clone(),
                receipt_id: request.receipt.receipt_id.clone(),
                effect_id: request.receipt.effect_id.clone(),
                // The projection validated the event kind before we get here.
                event_kind: EventKind::parse(&request.event.event_kind).unwrap_or(EventKind::TodoCompleted),
                registration_digest: hook.digest.clone(),
                status,
                attempt: o.attempt,
                intent_ids: accepted
                    .map(|a| a.intents.iter().map(|i| i.intent_id.clone()).collect())
                    .unwrap_or_default(),
                result_digest: accepted.map(|a| a.digest.clone()),
                failure,
            })
        }
        Source::LoopxShippedV0(s) => {
            let (ShippedSource::Admissible { source, event_id }, Some(end)) = (&**s, o.shipped.as_deref_mut()) else {
                return;
            };
            let fresh = shipped::Fresh {
                dispatch_id: &o.dispatch_id,
                hook_id: &hook.hook_id,
                capability_id: &hook.capability_id,
                event_id,
                recorded_at: &source.committed_at,
                attempt: o.attempt,
            };
            end.receipt = match status {
                DispatchStatus::Proposed => Some(fresh.receipt(
                    SidecarStatus::IntentRecorded,
                    accepted.and_then(|a| a.shipped_intent.clone()),
                    None,
                )),
                DispatchStatus::NotApplicable => Some(fresh.receipt(SidecarStatus::NotApplicable, None, None)),
                DispatchStatus::Failed | DispatchStatus::Exhausted => None,
            };
        }
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

/// Validates what a provider call produced, against its hook's registration
/// in the dialect the hook was registered in.
pub(super) fn accept(
    hook: &RegisteredHook,
    kinds: &IntentKinds,
    call: CallResult,
    dispatch_id: &str,
    source: &Source,
) -> Result<Accepted, Failure> {
    let shipped = hook.dialect() == Dialect::LoopxShippedV0;
    let text = match call {
        // A shipped hook has no timeout of its own: the wall budget is its
        // limit, and a producer that outlives it failed.
        CallResult::WallExceeded if shipped => return Err(Failure::new(FailureCode::ProducerTimedOut, None)),
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
    let (digest, bytes) = (identity::result_digest(&doc), crate::canonical::canonical_len(&doc));
    match (&hook.contract, source) {
        (HookContract::ContractV0(registration), _) => {
            let ctx = ResultContext { registration, dispatch_id, kinds };
            let result = validate_hook_result(&doc, &ctx)
                .map_err(|v| Failure::new(FailureCode::ResultContractRejected, v.first().map(|v| v.rule)))?;
            let intents = result.intents.iter().map(stored_intent).collect();
            Ok(Accepted { status: result.status, intents, shipped_intent: None, digest, bytes })
        }
        (HookContract::LoopxShippedV0(registration), Source::LoopxShippedV0(s)) => {
            let ShippedSource::Admissible { event_id, .. } = &**s else {
                return Err(Failure::new(FailureCode::InputBoundaryRejected, None));
            };
            let a = shipped::accept(&doc, registration, event_id)
                .map_err(|rule| Failure::new(FailureCode::ResultContractRejected, rule))?;
            let intents =
                a.intent.iter().map(|i| shipped::stored_intent(dispatch_id, &hook.capability_id, i)).collect();
            Ok(Accepted { status: a.status, intents, shipped_intent: a.intent, digest, bytes })
        }
        (HookContract::LoopxShippedV0(_), Source::ContractV0(_)) => {
            Err(Failure::new(FailureCode::InputBoundaryRejected, None))
        }
    }
}
