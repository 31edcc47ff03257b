//! One hook's dispatch: identity, checkpoint, invocation under its timeout,
//! result validation, and the record. Every failure is a value with a code;
//! nothing a provider says is kept.

use std::sync::Arc;

use serde_json::Value;
use tokio::time::Instant;

use super::outcome::{HookOutcome, HookOutcomeKind};
use super::profile::ReplayMode;
use super::projection::{dispatch_id_for, project};
use super::provider::ProviderReply;
use super::registry::RegisteredHook;
use super::request::DispatchRequest;
use super::stored::{receipt_from_row, stored_intent};
use super::Dispatcher;
use crate::contract::{
    DispatchReceipt, DispatchReceiptSchemaVersion, DispatchStatus, EventKind, FailureCode, FailureDetail,
    PostWritebackHookResult, ResultStatus,
};
use crate::identity;
use crate::journal::{
    Checkpoint, CheckpointState, DispatchRow, FailureOutcome, FailureRecord, FinalRecord, FinalStatus, JournalError,
    RecordOutcome,
};
use crate::validate::{validate_hook_result, IntentKinds, ResultContext, Rule};

struct Failure {
    code: FailureCode,
    rule: Option<Rule>,
}

impl Failure {
    fn new(code: FailureCode, rule: Option<Rule>) -> Self {
        Failure { code, rule }
    }
}

/// An accepted result with what recording needs.
struct Accepted {
    result: PostWritebackHookResult,
    digest: String,
}

fn outcome(hook: &RegisteredHook, dispatch_id: &str, kind: HookOutcomeKind, attempt: u32) -> HookOutcome {
    HookOutcome {
        hook_id: hook.registration.hook_id.clone(),
        dispatch_id: dispatch_id.to_owned(),
        outcome: kind,
        attempt,
        receipt: None,
        failure_code: None,
        failure_rule: None,
    }
}

fn failed(hook: &RegisteredHook, dispatch_id: &str, attempt: u32, f: &Failure) -> HookOutcome {
    HookOutcome {
        failure_code: Some(f.code),
        failure_rule: f.rule,
        ..outcome(hook, dispatch_id, HookOutcomeKind::Failed, attempt)
    }
}

/// A final row as an outcome: replayed, or a conflict when `new_digest` differs
/// from the recorded one.
fn from_final(hook: &RegisteredHook, dispatch_id: &str, row: &DispatchRow, new_digest: Option<&str>) -> HookOutcome {
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

fn receipt(
    request: &DispatchRequest,
    hook: &RegisteredHook,
    dispatch_id: &str,
    status: DispatchStatus,
    attempt: u32,
    accepted: Option<&Accepted>,
    failure: Option<FailureDetail>,
) -> DispatchReceipt {
    DispatchReceipt {
        schema_version: DispatchReceiptSchemaVersion::V0,
        dispatch_id: dispatch_id.to_owned(),
        hook_id: hook.registration.hook_id.clone(),
        capability_id: hook.registration.capability_id.clone(),
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

/// Invokes the provider under `timeout_ms` and the dispatch's wall budget,
/// then validates its reply. The late answer of a timed-out provider is
/// dropped with its future.
async fn invoke(
    hook: &RegisteredHook,
    kinds: &IntentKinds,
    input: &Value,
    dispatch_id: &str,
    deadline: Instant,
) -> Result<Accepted, Failure> {
    let own = Instant::now() + std::time::Duration::from_millis(u64::from(hook.registration.budget.timeout_ms));
    let wall_is_tighter = deadline < own;
    let reply = tokio::time::timeout_at(own.min(deadline), hook.provider.invoke(input.to_string())).await;
    let text = match reply {
        Err(_) if wall_is_tighter => return Err(Failure::new(FailureCode::DispatchBudgetExhausted, None)),
        Err(_) => return Err(Failure::new(FailureCode::ProducerTimedOut, None)),
        Ok(ProviderReply::Threw) => return Err(Failure::new(FailureCode::ProducerFailed, None)),
        Ok(ProviderReply::NotJson) => {
            return Err(Failure::new(FailureCode::ResultContractRejected, Some(Rule::NotJsonValue)))
        }
        Ok(ProviderReply::Json(text)) => text,
    };
    // Compact JSON is never much longer than its canonical form; refuse
    // absurd sizes before spending time parsing them.
    let max = hook.registration.budget.max_result_bytes as usize;
    if text.len() > 2 * max + 1024 {
        return Err(Failure::new(FailureCode::ResultContractRejected, Some(Rule::ResultTooLarge)));
    }
    let doc: Value = serde_json::from_str(&text)
        .map_err(|_| Failure::new(FailureCode::ResultContractRejected, Some(Rule::NotJsonValue)))?;
    let ctx = ResultContext { registration: &hook.registration, dispatch_id, kinds };
    let result = validate_hook_result(&doc, &ctx)
        .map_err(|v| Failure::new(FailureCode::ResultContractRejected, v.first().map(|v| v.rule)))?;
    Ok(Accepted { digest: identity::result_digest(&doc), result })
}

pub(super) async fn run_hook(
    dispatcher: &Dispatcher,
    kinds: &IntentKinds,
    hook: &Arc<RegisteredHook>,
    request: &DispatchRequest,
    deadline: Instant,
    over_ceiling: bool,
) -> Result<HookOutcome, JournalError> {
    let journal = dispatcher.journal();
    let dispatch_id = dispatch_id_for(request, hook);
    // Hooks past a per-dispatch ceiling are not started: nothing is invoked
    // or recorded, so a later dispatch with room runs them normally.
    if over_ceiling || Instant::now() >= deadline {
        return Ok(failed(hook, &dispatch_id, 0, &Failure::new(FailureCode::DispatchBudgetExhausted, None)));
    }
    // The common replay: a final identity in `return` mode is answered from a
    // reader connection, with no projection and no round trip to the writer.
    // Anything else (not final yet, or verify mode) takes the full path below,
    // where the checkpoint re-reads the standing under the identity lock.
    if dispatcher.profile().replay == ReplayMode::Return {
        if let Some(row) = journal.get_dispatch(&dispatch_id)? {
            if row.state.is_final() {
                return Ok(from_final(hook, &dispatch_id, &row, None));
            }
        }
    }
    // An input the boundary cannot prove public-safe is neither sent nor
    // journaled (the request itself may carry what must not be stored).
    let input = match project(request, hook, &dispatch_id) {
        Ok(input) => input,
        Err(v) => {
            let f = Failure::new(FailureCode::InputBoundaryRejected, v.first().map(|v| v.rule));
            return Ok(failed(hook, &dispatch_id, 0, &f));
        }
    };
    let _identity = dispatcher.lock_identity(&dispatch_id).await;
    let state = journal
        .checkpoint(Checkpoint {
            dispatch_id: dispatch_id.clone(),
            hook_id: hook.registration.hook_id.clone(),
            capability_id: hook.registration.capability_id.clone(),
            receipt_id: request.receipt.receipt_id.clone(),
            effect_id: request.receipt.effect_id.clone(),
            event_kind: request.event.event_kind.clone(),
            registration_digest: hook.digest.clone(),
            request_json: serde_json::to_string(request).unwrap_or_default(),
        })
        .await?;
    let attempts_used = match state {
        CheckpointState::Final { row } => {
            // Verification compares results; an exhausted identity has none.
            let verify = dispatcher.profile().replay == ReplayMode::Verify && row.result_digest.is_some();
            return Ok(match verify {
                false => from_final(hook, &dispatch_id, &row, None),
                true => match invoke(hook, kinds, &input, &dispatch_id, deadline).await {
                    Ok(accepted) => from_final(hook, &dispatch_id, &row, Some(&accepted.digest)),
                    Err(f) => failed(hook, &dispatch_id, 0, &f),
                },
            });
        }
        CheckpointState::Pending { attempts_used } => attempts_used,
        CheckpointState::Fresh => 0,
    };
    let max = hook.registration.budget.max_invocations_per_dispatch;
    if attempts_used >= max {
        let detail = FailureDetail { code: FailureCode::DispatchBudgetExhausted, rule: None };
        let r = receipt(request, hook, &dispatch_id, DispatchStatus::Exhausted, attempts_used, None, Some(detail));
        let recorded = journal
            .record_final(FinalRecord {
                dispatch_id: dispatch_id.clone(),
                attempt: attempts_used,
                status: FinalStatus::Exhausted,
                result_digest: None,
                intents: Vec::new(),
                failure: Some((FailureCode::DispatchBudgetExhausted.as_str().into(), None)),
            })
            .await?;
        return Ok(match recorded {
            RecordOutcome::Recorded => HookOutcome {
                receipt: Some(r),
                failure_code: Some(FailureCode::DispatchBudgetExhausted),
                ..outcome(hook, &dispatch_id, HookOutcomeKind::Exhausted, attempts_used)
            },
            RecordOutcome::AlreadyFinal { row } => from_final(hook, &dispatch_id, &row, None),
        });
    }
    let attempt = attempts_used + 1;
    match invoke(hook, kinds, &input, &dispatch_id, deadline).await {
        Ok(accepted) => {
            let (status, final_status, kind) = match accepted.result.status {
                ResultStatus::Proposed => (DispatchStatus::Proposed, FinalStatus::Proposed, HookOutcomeKind::Recorded),
                ResultStatus::NotApplicable => {
                    (DispatchStatus::NotApplicable, FinalStatus::NotApplicable, HookOutcomeKind::NotApplicable)
                }
            };
            let r = receipt(request, hook, &dispatch_id, status, attempt, Some(&accepted), None);
            let intents = accepted.result.intents.iter().map(stored_intent).collect();
            let recorded = journal
                .record_final(FinalRecord {
                    dispatch_id: dispatch_id.clone(),
                    attempt,
                    status: final_status,
                    result_digest: Some(accepted.digest.clone()),
                    intents,
                    failure: None,
                })
                .await?;
            Ok(match recorded {
                RecordOutcome::Recorded => {
                    HookOutcome { receipt: Some(r), ..outcome(hook, &dispatch_id, kind, attempt) }
                }
                RecordOutcome::AlreadyFinal { row } => from_final(hook, &dispatch_id, &row, Some(&accepted.digest)),
            })
        }
        Err(f) => {
            let recorded = journal
                .record_failure(FailureRecord {
                    dispatch_id: dispatch_id.clone(),
                    attempt,
                    code: f.code.as_str().into(),
                    rule: f.rule.map(|r| r.as_str().into()),
                })
                .await?;
            Ok(match recorded {
                FailureOutcome::Recorded { .. } => failed(hook, &dispatch_id, attempt, &f),
                FailureOutcome::AlreadyFinal { row } => from_final(hook, &dispatch_id, &row, None),
            })
        }
    }
}
