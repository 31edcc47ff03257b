//! The kernel's projections over a dispatch's hook outcomes: the required
//! reads (deduplicated by command, Agent then CLI, before work) and the lane.

use std::sync::Arc;

use super::contract::TurnStartReceipt;
use super::kernel::InstalledTurnStartHook;
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

/// The lane over every hook: its receipt's reason, or for a hook whose
/// pending standing is unknown at least `standing_unknown`.
pub(super) fn decide_outcome_lane(outcomes: &[TurnStartHookOutcome]) -> TurnStartLane {
    let reason = |o: &TurnStartHookOutcome| {
        let reason = lane_reason(&o.receipt);
        if o.pending_standing == PendingStanding::Unknown {
            reason.max(TurnStartLaneReason::StandingUnknown)
        } else {
            reason
        }
    };
    TurnStartLane::from_reason(outcomes.iter().map(reason).max().unwrap_or(TurnStartLaneReason::NothingToRead))
}

/// The lane over every receipt: a direct question or verified reply preempts
/// on its first turn; material first read on an earlier turn and still
/// pending preempts into material review; a fresh ordinary read notifies and
/// keeps the selected lane; otherwise the selected lane runs.
pub fn decide_lane<'a>(receipts: impl Iterator<Item = &'a TurnStartReceipt>) -> TurnStartLane {
    TurnStartLane::from_reason(receipts.map(lane_reason).max().unwrap_or(TurnStartLaneReason::NothingToRead))
}
