//! What the orchestrator hands to `dispatch`, and admission (contract-v0
//! section 4): a refusal invokes nothing and records nothing.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::contract::{EventKind, ReceiptStatus, StepKind};

/// The active Turn settlement's identity.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
#[ts(export)]
pub struct SettlementIdentity {
    pub goal_id: String,
    pub agent_id: String,
    pub todo_id: String,
    pub turn_instance_id: String,
    pub effect_id: String,
}

/// The primary durable-writeback receipt, as the settlement runtime holds it.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
#[ts(export)]
pub struct WritebackReceipt {
    pub receipt_id: String,
    pub effect_id: String,
    /// `"durable_writeback"` for an admissible source. Typed as the closed set
    /// for TypeScript callers; read as text, so another step is a refusal
    /// (`not_durable_writeback`), not a request that fails to parse.
    #[ts(as = "StepKind")]
    pub step_kind: String,
    /// `"committed"` is the only admissible status; the others are a refusal
    /// (`receipt_not_committed`). Typed and read as `step_kind` is.
    #[ts(as = "ReceiptStatus")]
    pub status: String,
    /// Whether the receipt is checkpointed durably enough to replay the same dispatch identity.
    pub checkpointed: bool,
    pub state_revision: String,
    pub committed_at: String,
}

/// The event that the writeback committed, with its bounded facts.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
#[ts(export)]
pub struct EventFacts {
    /// A core-owned event kind; read as text, so one no hook subscribes to
    /// dispatches nothing rather than failing to parse.
    #[ts(as = "EventKind")]
    pub event_kind: String,
    #[serde(default)]
    pub fact_refs: Vec<String>,
}

/// One dispatch request: settlement, receipt, event.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
#[ts(export)]
pub struct DispatchRequest {
    pub settlement: SettlementIdentity,
    pub receipt: WritebackReceipt,
    pub event: EventFacts,
}

/// A dispatch request given as JSON text that is not one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NotADispatchRequest;

impl DispatchRequest {
    /// The request in `text`. Unlike a turn-start request (whose bad text is
    /// a refused outcome), a dispatch request is built by the orchestrator's
    /// own code from its own receipt, so text that is not one is the
    /// caller's misuse: an error, not an outcome.
    pub fn from_json(text: &str) -> Result<Self, NotADispatchRequest> {
        serde_json::from_str(text).map_err(|_| NotADispatchRequest)
    }
}

/// Why a dispatch was refused before anything ran.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum AdmissionRefusal {
    IdentityIncomplete,
    EffectMismatch,
    /// The receipt is not of a durable-writeback step (a rollout event
    /// append, say): RFC 5.1 admits only a committed durable writeback.
    NotDurableWriteback,
    ReceiptNotCommitted,
    ReceiptNotCheckpointed,
    PhaseDisabled,
    /// `loopx-shipped-v0` only: the source broke its contract elsewhere than
    /// its identity, status or durability (the other refusals name those).
    SourceRejected,
}

/// Admission, checked in contract-v0's order; the first failing check names the refusal.
pub fn admit(request: &DispatchRequest, phase_enabled: bool) -> Result<(), AdmissionRefusal> {
    let s = &request.settlement;
    if [&s.goal_id, &s.agent_id, &s.todo_id, &s.turn_instance_id, &s.effect_id].iter().any(|id| id.is_empty()) {
        return Err(AdmissionRefusal::IdentityIncomplete);
    }
    receipt_admissible(&request.receipt, s)?;
    if !phase_enabled {
        return Err(AdmissionRefusal::PhaseDisabled);
    }
    Ok(())
}

/// Admission's checks of the receipt against its settlement, in order.
fn receipt_admissible(receipt: &WritebackReceipt, settlement: &SettlementIdentity) -> Result<(), AdmissionRefusal> {
    if receipt.effect_id != settlement.effect_id {
        return Err(AdmissionRefusal::EffectMismatch);
    }
    if receipt.step_kind != StepKind::DurableWriteback.as_str() {
        return Err(AdmissionRefusal::NotDurableWriteback);
    }
    if receipt.status != ReceiptStatus::Committed.as_str() {
        return Err(AdmissionRefusal::ReceiptNotCommitted);
    }
    if !receipt.checkpointed {
        return Err(AdmissionRefusal::ReceiptNotCheckpointed);
    }
    Ok(())
}

/// Quota-spend eligibility (RFC 5.2, contract-v0 section 5): the settlement
/// spends its quota exactly when its primary receipt passes admission's
/// receipt checks. Nothing from the hook phase is an argument, so no hook
/// outcome can change it; a document that is not a receipt (or not a
/// settlement identity) is not eligible.
pub fn quota_spend_eligible(receipt: &serde_json::Value, settlement: &serde_json::Value) -> bool {
    match (WritebackReceipt::deserialize(receipt), SettlementIdentity::deserialize(settlement)) {
        (Ok(receipt), Ok(settlement)) => receipt_admissible(&receipt, &settlement).is_ok(),
        _ => false,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub fn request() -> DispatchRequest {
        DispatchRequest {
            settlement: SettlementIdentity {
                goal_id: "goal_opaque".into(),
                agent_id: "agent_opaque".into(),
                todo_id: "todo_opaque".into(),
                turn_instance_id: "turn_opaque".into(),
                effect_id: "effect_opaque".into(),
            },
            receipt: WritebackReceipt {
                receipt_id: "receipt_opaque".into(),
                effect_id: "effect_opaque".into(),
                step_kind: "durable_writeback".into(),
                status: "committed".into(),
                checkpointed: true,
                state_revision: "revision_opaque".into(),
                committed_at: "2026-08-26T00:00:00Z".into(),
            },
            event: EventFacts { event_kind: "todo_completed".into(), fact_refs: vec!["fact_opaque".into()] },
        }
    }

    /// RFC 5.1: "A successful diagnostic rollout-event append is not the
    /// source of authority": a committed, checkpointed receipt of any step
    /// other than durable_writeback is refused at admission.
    #[test]
    fn admission_refuses_a_source_that_is_not_a_committed_durable_writeback() {
        for step in ["rollout_event_append", "", "durable_writeback_", "Durable_Writeback"] {
            let mut r = request();
            r.receipt.step_kind = step.into();
            assert_eq!(admit(&r, true), Err(AdmissionRefusal::NotDurableWriteback), "{step:?}");
        }
    }

    /// Quota eligibility is admission's receipt checks: each refusal but an
    /// incomplete identity or a disabled phase makes a receipt ineligible.
    #[test]
    fn quota_spend_eligibility_follows_admission() {
        let doc = |r: &DispatchRequest| {
            (serde_json::to_value(&r.receipt).unwrap(), serde_json::to_value(&r.settlement).unwrap())
        };
        let (receipt, settlement) = doc(&request());
        assert!(quota_spend_eligible(&receipt, &settlement));
        let mut identity_incomplete = request();
        identity_incomplete.settlement.goal_id.clear();
        let (receipt, settlement) = doc(&identity_incomplete);
        assert!(quota_spend_eligible(&receipt, &settlement));
        let changes: [fn(&mut DispatchRequest); 4] = [
            |r| r.receipt.checkpointed = false,
            |r| r.receipt.status = "prepared".into(),
            |r| r.receipt.step_kind = "validation".into(),
            |r| r.settlement.effect_id = "e2".into(),
        ];
        for change in changes {
            let mut r = request();
            change(&mut r);
            assert!(admit(&r, true).is_err());
            let (receipt, settlement) = doc(&r);
            assert!(!quota_spend_eligible(&receipt, &settlement), "{r:?}");
        }
        let (receipt, settlement) = doc(&request());
        let mut without_checkpoint = receipt.clone();
        without_checkpoint.as_object_mut().unwrap().remove("checkpointed");
        assert!(!quota_spend_eligible(&without_checkpoint, &settlement));
        assert!(!quota_spend_eligible(&receipt, &serde_json::json!("settlement")));
    }

    #[test]
    fn dispatch_request_text_that_is_not_one_is_an_error() {
        let text = serde_json::to_string(&request()).unwrap();
        assert_eq!(DispatchRequest::from_json(&text), Ok(request()));
        for bad in ["", "not json", "{}", &text.replace("\"goal_id\"", "\"goal\"")] {
            assert_eq!(DispatchRequest::from_json(bad), Err(NotADispatchRequest), "{bad:?}");
        }
    }

    #[test]
    fn admission_order() {
        assert_eq!(admit(&request(), true), Ok(()));
        assert_eq!(admit(&request(), false), Err(AdmissionRefusal::PhaseDisabled));
        let mut r = request();
        r.receipt.checkpointed = false;
        assert_eq!(admit(&r, true), Err(AdmissionRefusal::ReceiptNotCheckpointed));
        r.receipt.status = "prepared".into();
        assert_eq!(admit(&r, true), Err(AdmissionRefusal::ReceiptNotCommitted));
        r.receipt.step_kind = "rollout_event_append".into();
        assert_eq!(admit(&r, true), Err(AdmissionRefusal::NotDurableWriteback));
        r.receipt.effect_id = "other".into();
        assert_eq!(admit(&r, true), Err(AdmissionRefusal::EffectMismatch));
        r.settlement.todo_id.clear();
        assert_eq!(admit(&r, false), Err(AdmissionRefusal::IdentityIncomplete));
    }
}
