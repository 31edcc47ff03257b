//! What core makes of a hook's receipt from what it saw itself: its
//! session's counts, and the inbox store's pending count after an outage.

use super::contract::{TurnStartErrorCode, TurnStartStatus};
use super::outcome::{PendingStanding, TurnStartHookOutcome};
use super::session::SessionCounts;

/// Core's session is the source of truth for what it saw: its counts stand
/// where the receipt reports fewer, with everything the RFC derives from
/// them. First reads make the read required and turn `empty` into `ok`
/// ("empty means ... no pending message received its first Agent-owned
/// turn-start read in this dispatch"); a reaction that failed, or a call
/// refused by a budget, turns a success into `partial` ("provider or
/// private-receipt failure is partial, never a false success").
pub(super) fn reconcile(outcome: &mut TurnStartHookOutcome, counts: SessionCounts) {
    let receipt = &mut outcome.receipt;
    receipt.external_writes_performed = receipt.external_writes_performed.max(counts.external_writes);
    receipt.reactions_added = receipt.reactions_added.max(counts.reactions_added);
    let seen = counts.first_reads;
    receipt.observations_new = receipt.observations_new.max(seen.observations_new);
    receipt.direct_questions = receipt.direct_questions.max(seen.direct_questions);
    receipt.verified_replies = receipt.verified_replies.max(seen.verified_replies);
    receipt.pending = receipt.pending.max(seen.pending).max(receipt.observations_new);
    receipt.agent_read_required |= receipt.pending > 0;
    if receipt.status == TurnStartStatus::Empty && receipt.observations_new > 0 {
        receipt.status = TurnStartStatus::Ok;
    }
    if matches!(receipt.status, TurnStartStatus::Ok | TurnStartStatus::Empty) {
        let failed_step = if counts.reactions_failed > 0 {
            Some(TurnStartErrorCode::ReactionFailed)
        } else if counts.budget_refusals > 0 {
            Some(TurnStartErrorCode::AttemptBudgetExhausted)
        } else {
            None
        };
        if let Some(code) = failed_step {
            receipt.status = TurnStartStatus::Partial;
            receipt.error_code = Some(code);
        }
    }
}

/// An outage does not drop the read obligation: a failed hook (core's
/// stand-in receipt, or a provider's own failure status) takes its pending
/// count from the inbox store, or, without one, its standing is unknown and
/// the read stays required. A failure receipt has no new observations, so
/// pending material makes the lane `material_still_pending`.
pub(super) fn fail_closed(outcome: &mut TurnStartHookOutcome, pending: Option<u32>) {
    match pending {
        Some(n) => {
            let receipt = &mut outcome.receipt;
            receipt.pending = n.max(receipt.observations_new);
            receipt.agent_read_required = receipt.pending > 0;
            outcome.pending_standing = PendingStanding::InboxStore;
        }
        None => {
            outcome.receipt.agent_read_required |= outcome.receipt.pending > 0;
            outcome.pending_standing = PendingStanding::Unknown;
        }
    }
}
