//! What the journal keeps of the contract documents, and how they come back.
//!
//! The journal stores nothing derivable. A final dispatch row's columns and
//! its intents' ids are its `DispatchReceipt` ([`receipt_from_row`]); an
//! intent row keeps its id, kind and capability as columns and only the rest
//! of the document its dispatch does not determine ([`stored_intent`]), and
//! [`intent_from_stored`] rebuilds the document. These are the only places
//! that turn journal rows into contract documents: the dispatcher (replays)
//! and the binding's readers both use them, so a replayed receipt is the one
//! returned when it was recorded, byte for byte.

use serde_json::Value;

use crate::contract::{
    DispatchReceipt, DispatchReceiptSchemaVersion, DispatchStatus, EventKind, FailureCode, FailureDetail,
    FailurePolicy, IntentBudget, IntentSchemaVersion, PostWritebackIntent,
};
use crate::journal::{DispatchRow, DispatchState, IntentRow, StoredIntent};

/// The receipt of a final dispatch row; `None` while it is not final (or if
/// the row is somehow not one this build writes).
///
/// Every field is a column except: `schema_version` (constant), `status` (the
/// final state), `attempt` (the `attempts` column, which a final record sets
/// to the producing attempt: N for proposed / not_applicable at attempt N,
/// the attempts used for exhausted), `intent_ids` (the dispatch's intents in
/// `seq` order, which is result order) and `failure` (`dispatch_budget_exhausted`
/// exactly when exhausted: the only final failure).
pub fn receipt_from_row(row: &DispatchRow) -> Option<DispatchReceipt> {
    let (status, failure) = match row.state {
        DispatchState::Proposed => (DispatchStatus::Proposed, None),
        DispatchState::NotApplicable => (DispatchStatus::NotApplicable, None),
        DispatchState::Exhausted => {
            (DispatchStatus::Exhausted, Some(FailureDetail { code: FailureCode::DispatchBudgetExhausted, rule: None }))
        }
        DispatchState::Checkpointed | DispatchState::Failed => return None,
    };
    Some(DispatchReceipt {
        schema_version: DispatchReceiptSchemaVersion::V0,
        dispatch_id: row.dispatch_id.clone(),
        hook_id: row.hook_id.clone(),
        capability_id: row.capability_id.clone(),
        receipt_id: row.receipt_id.clone(),
        effect_id: row.effect_id.clone(),
        event_kind: EventKind::parse(&row.event_kind)?,
        registration_digest: row.registration_digest.clone(),
        status,
        attempt: row.attempts,
        intent_ids: row.intent_ids.clone(),
        result_digest: row.result_digest.clone(),
        failure,
    })
}

/// What an intent row stores beyond its columns: the fields neither the
/// columns nor the dispatch determine, as a JSON array
/// `[operation, policy_version, payload, [max_attempts, max_result_bytes], requested_write_scope]`.
type Stored = (String, String, Value, (u32, u32), Vec<String>);

/// The journal row of an accepted (validated) intent.
pub fn stored_intent(i: &PostWritebackIntent) -> IntentRow {
    // Borrowed, it serializes as `Stored` does, with nothing cloned.
    let stored: (&str, &str, &Value, (u32, u32), &[String]) = (
        &i.operation,
        &i.policy_version,
        &i.payload,
        (i.budget.max_attempts, i.budget.max_result_bytes),
        &i.requested_write_scope,
    );
    IntentRow {
        intent_id: i.intent_id.clone(),
        capability_id: i.capability_id.clone(),
        intent_kind: i.intent_kind.clone(),
        stored_json: serde_json::to_string(&stored).unwrap_or_default(),
    }
}

/// The intent document of a stored intent: what the provider returned, as
/// accepted. Validation pinned the rest: `hook_id` and `capability_id` are the
/// registration's (the dispatch row's), `source_dispatch_id` is the dispatch,
/// `failure_policy` is `isolate` and both authority flags are false.
pub fn intent_from_stored(s: &StoredIntent) -> Option<PostWritebackIntent> {
    let (operation, policy_version, payload, (max_attempts, max_result_bytes), requested_write_scope): Stored =
        serde_json::from_str(&s.stored_json).ok()?;
    Some(PostWritebackIntent {
        schema_version: IntentSchemaVersion::V0,
        intent_id: s.intent_id.clone(),
        hook_id: s.hook_id.clone(),
        capability_id: s.capability_id.clone(),
        source_dispatch_id: s.dispatch_id.clone(),
        intent_kind: s.intent_kind.clone(),
        operation,
        policy_version,
        payload,
        budget: IntentBudget { max_attempts, max_result_bytes },
        requested_write_scope,
        failure_policy: FailurePolicy::Isolate,
        grants_new_action_authority: false,
        external_write_performed: false,
    })
}

/// A journal row's receipt in its dialect's document (what readers hand
/// out as `receipt`); TypeScript tells them apart by `schema_version`.
#[derive(serde::Serialize, ts_rs::TS)]
#[serde(untagged)]
#[ts(export)]
pub enum RowReceipt {
    ContractV0(DispatchReceipt),
    LoopxShippedV0(crate::dialect::shipped::SidecarReceipt),
}

/// A stored intent's document in its dialect (what readers hand out as `intent`).
#[derive(serde::Serialize, ts_rs::TS)]
#[serde(untagged)]
#[ts(export)]
pub enum RowIntent {
    ContractV0(PostWritebackIntent),
    LoopxShippedV0(crate::dialect::shipped::Intent),
}

/// An unfinished row's request in its dialect (what recovery re-dispatches).
#[derive(serde::Serialize, ts_rs::TS)]
#[serde(untagged)]
#[ts(export)]
pub enum RowRequest {
    ContractV0(super::DispatchRequest),
    LoopxShippedV0(crate::dialect::shipped::Source),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::PostWritebackHookResult;

    #[test]
    fn an_intent_is_stored_as_the_owned_tuple_would_be_written() {
        let result: PostWritebackHookResult =
            serde_json::from_str(include_str!("../../examples/hook_result.json")).unwrap();
        let i = &result.intents[0];
        let owned: Stored = (
            i.operation.clone(),
            i.policy_version.clone(),
            i.payload.clone(),
            (i.budget.max_attempts, i.budget.max_result_bytes),
            i.requested_write_scope.clone(),
        );
        let row = stored_intent(i);
        assert_eq!(row.stored_json, serde_json::to_string(&owned).unwrap());
        assert_eq!((row.intent_id.as_str(), row.intent_kind.as_str()), (i.intent_id.as_str(), i.intent_kind.as_str()));
    }
}
