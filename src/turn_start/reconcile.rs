//! What core makes of a hook's receipt from what it saw itself: its
//! session's counts, and the inbox store's pending count after the calls.

use super::contract::{TurnStartErrorCode, TurnStartStatus};
use super::outcome::{PendingStanding, TurnStartHookOutcome};
use super::session::SessionCounts;

/// Core's session is the source of truth for what it saw: its counts stand
/// where the receipt reports fewer, with everything the RFC derives from
/// them. First reads make the read required and turn `empty` into `ok`
/// ("empty means ... no pending message received its first Agent-owned
/// turn-start read in this dispatch"); a reaction that failed, a call
/// refused by a budget, or a private write the store did not commit turns a
/// success into `partial` ("provider or private-receipt failure is partial,
/// never a false success"). After a failed private write the receipt's own
/// counts are not trusted: only the first reads the store persisted are
/// claimed, and pending is left for the inbox to recount.
pub(super) fn reconcile(outcome: &mut TurnStartHookOutcome, counts: SessionCounts) {
    let receipt = &mut outcome.receipt;
    receipt.external_writes_performed = receipt.external_writes_performed.max(counts.external_writes);
    receipt.reactions_added = receipt.reactions_added.max(counts.reactions_added);
    let seen = counts.first_reads;
    if counts.write_failures > 0 {
        receipt.observations_new = seen.observations_new;
        receipt.direct_questions = seen.direct_questions;
        receipt.verified_replies = seen.verified_replies;
        receipt.pending = seen.pending.max(seen.observations_new);
        receipt.agent_read_required = receipt.pending > 0;
        // Until the inbox recounts it; unknown keeps the read required.
        outcome.pending_standing = PendingStanding::Unknown;
    } else {
        receipt.observations_new = receipt.observations_new.max(seen.observations_new);
        receipt.direct_questions = receipt.direct_questions.max(seen.direct_questions);
        receipt.verified_replies = receipt.verified_replies.max(seen.verified_replies);
        receipt.pending = receipt.pending.max(seen.pending).max(receipt.observations_new);
        receipt.agent_read_required |= receipt.pending > 0;
    }
    if receipt.status == TurnStartStatus::Empty && receipt.observations_new > 0 {
        receipt.status = TurnStartStatus::Ok;
    }
    let failed_step = if counts.write_failures > 0 {
        Some(TurnStartErrorCode::PrivateReceiptFailed)
    } else if counts.reactions_failed > 0 {
        Some(TurnStartErrorCode::ReactionFailed)
    } else if counts.budget_refusals > 0 {
        Some(TurnStartErrorCode::AttemptBudgetExhausted)
    } else {
        None
    };
    let Some(code) = failed_step else { return };
    match receipt.status {
        TurnStartStatus::Ok | TurnStartStatus::Empty => {
            receipt.status = TurnStartStatus::Partial;
            receipt.error_code = Some(code);
        }
        // A failed route's code names the routes and stays; a step's code
        // gives way to a failed private write, the one that loses records.
        TurnStartStatus::Partial
            if code == TurnStartErrorCode::PrivateReceiptFailed
                && !receipt.error_code.is_some_and(TurnStartErrorCode::names_routes) =>
        {
            receipt.error_code = Some(code);
        }
        _ => {}
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

/// A hook that answered is held to the inbox's own count: what is still
/// pending after the calls is pending for it too, so a receipt that reports
/// less (an `empty` over material read on an earlier turn and never
/// acknowledged) still leaves the Agent its read. `pending` is None without
/// an inbox or when it cannot be read; a receipt whose counts core stopped
/// trusting (a failed private write) then stays unknown.
pub(super) fn recount(outcome: &mut TurnStartHookOutcome, pending: Option<u32>) {
    let Some(n) = pending else { return };
    let receipt = &mut outcome.receipt;
    if outcome.pending_standing == PendingStanding::Unknown || n > receipt.pending {
        receipt.pending = n.max(receipt.observations_new);
        receipt.agent_read_required = receipt.pending > 0;
        outcome.pending_standing = PendingStanding::InboxStore;
    }
}
