//! The kernel's projections over a dispatch's hook outcomes: the required
//! reads (deduplicated by command, Agent then CLI, before work) and the lane.

use std::sync::Arc;

use super::contract::TurnStartReceipt;
use super::hook::InstalledTurnStartHook;
use super::inbox::InboxStanding;
use super::outcome::{
    InteractionChannel, PendingStanding, ReadOrdering, RequiredReadProjection, TurnStartHookOutcome, TurnStartLane,
    TurnStartLaneReason,
};

/// The required reads of the hooks whose receipts need them, deduplicated by
/// command in hook order, each projected into the Agent then the CLI channel.
pub(super) fn project_required_reads(
    hooks: &[Arc<InstalledTurnStartHook>],
    outcomes: &[TurnStartHookOutcome],
) -> Vec<RequiredReadProjection> {
    let mut commands: Vec<&str> = Vec::new();
    for outcome in outcomes.iter().filter(|o| o.read_required()) {
        let Some(hook) = hooks.iter().find(|h| h.registration.hook_id == outcome.hook_id) else { continue };
        let command = hook.registration.required_read.command.as_str();
        if !commands.contains(&command) {
            commands.push(command);
        }
    }
    commands
        .into_iter()
        .flat_map(|command| {
            [InteractionChannel::Agent, InteractionChannel::Cli].map(|channel| RequiredReadProjection {
                channel,
                command: command.to_owned(),
                ordering: ReadOrdering::BeforeWork,
            })
        })
        .collect()
}

/// The strongest reason one receipt gives.
pub fn lane_reason(receipt: &TurnStartReceipt) -> TurnStartLaneReason {
    if receipt.direct_questions > 0 {
        TurnStartLaneReason::DirectQuestion
    } else if receipt.verified_replies > 0 {
        TurnStartLaneReason::VerifiedReply
    } else if receipt.pending > receipt.observations_new {
        TurnStartLaneReason::MaterialStillPending
    } else if receipt.observations_new > 0 {
        TurnStartLaneReason::FreshOrdinaryRead
    } else {
        TurnStartLaneReason::NothingToRead
    }
}

/// What a receipt's own new observations give, leaving pending material to
/// the inbox's standing.
fn fresh_reason(receipt: &TurnStartReceipt) -> TurnStartLaneReason {
    if receipt.direct_questions > 0 {
        TurnStartLaneReason::DirectQuestion
    } else if receipt.verified_replies > 0 {
        TurnStartLaneReason::VerifiedReply
    } else if receipt.observations_new > 0 {
        TurnStartLaneReason::FreshOrdinaryRead
    } else {
        TurnStartLaneReason::NothingToRead
    }
}

/// The reason the inbox gives, message by message: "A direct question or
/// verified reply still preempts on its first turn"; material "durably
/// pending on the next turn" preempts into material review (a captured
/// message no hook has read yet is pending material too); a fresh ordinary
/// read keeps the selected lane.
fn standing_reason(standing: &InboxStanding) -> TurnStartLaneReason {
    if standing.fresh_direct_questions > 0 {
        TurnStartLaneReason::DirectQuestion
    } else if standing.fresh_verified_replies > 0 {
        TurnStartLaneReason::VerifiedReply
    } else if standing.carried + standing.unread > 0 {
        TurnStartLaneReason::MaterialStillPending
    } else if standing.fresh_ordinary > 0 {
        TurnStartLaneReason::FreshOrdinaryRead
    } else {
        TurnStartLaneReason::NothingToRead
    }
}

/// The lane over every hook. With the inbox's standing, pending material is
/// counted per message from the inbox itself (several hooks share one inbox,
/// so one hook's fresh message is not another's pending material), and each
/// receipt adds only what its new observations give. Without it, each
/// receipt's reason; and for a hook whose pending standing is unknown, at
/// least `standing_unknown`.
pub(super) fn decide_outcome_lane(outcomes: &[TurnStartHookOutcome], standing: Option<InboxStanding>) -> TurnStartLane {
    let reason = |o: &TurnStartHookOutcome| {
        let reason = if standing.is_some() { fresh_reason(&o.receipt) } else { lane_reason(&o.receipt) };
        if o.pending_standing == PendingStanding::Unknown {
            reason.max(TurnStartLaneReason::StandingUnknown)
        } else {
            reason
        }
    };
    let from_inbox = match standing {
        Some(standing) if !outcomes.is_empty() => standing_reason(&standing),
        _ => TurnStartLaneReason::NothingToRead,
    };
    TurnStartLane::from_reason(outcomes.iter().map(reason).fold(from_inbox, Ord::max))
}

/// The lane over every receipt: a direct question or verified reply preempts
/// on its first turn; material first read on an earlier turn and still
/// pending preempts into material review; a fresh ordinary read notifies and
/// keeps the selected lane; otherwise the selected lane runs.
pub fn decide_lane<'a>(receipts: impl Iterator<Item = &'a TurnStartReceipt>) -> TurnStartLane {
    TurnStartLane::from_reason(receipts.map(lane_reason).max().unwrap_or(TurnStartLaneReason::NothingToRead))
}
