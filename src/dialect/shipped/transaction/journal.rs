//! This package's journal kept in step with the sidecar folder: after a
//! transaction, each admitted hook's receipt, as the folder holds it now,
//! is imported through the journal's own record commands (the folder
//! import's path), so the journal's rows, replays and outbox follow the
//! store LoopX's writers and consumer share.

use serde::Serialize;

use super::inspect::{Inspection, Slot};
use super::request::{goal_of, Request};
use super::store::{self, State};
use crate::dialect::shipped::sidecar::{import_receipt, Imported};
use crate::dialect::shipped::{self as doc};
use crate::journal::Journal;

/// What became of one hook's receipt in the journal.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    pub dispatch_id: String,
    /// `imported`, `already_present`, or why not: `conflict` (the journal
    /// holds another receipt for the identity), `journal_failed`,
    /// `invalid_receipt`.
    pub outcome: &'static str,
    /// The journal's error code, for `journal_failed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
}

pub fn keep_in_step(journal: &Journal, request: &Request, n: &Inspection) -> Vec<Step> {
    let Some(root) = &request.runtime_root else { return Vec::new() };
    let mut steps = Vec::new();
    for slot in &n.slots {
        let Slot::Hook(id) = slot else { continue };
        let Ok(goal) = goal_of(&n.admitted[id].hook_input) else { continue };
        let step = |outcome, code| Step { dispatch_id: id.clone(), outcome, code };
        match store::read(&store::receipt_path(root, &goal, id), id).state {
            State::Missing => {}
            State::Malformed => steps.push(step("invalid_receipt", None)),
            State::Present(value) => match doc::validate_receipt(&value) {
                Err(_) => steps.push(step("invalid_receipt", None)),
                Ok(receipt) => steps.push(match import_receipt(journal, &receipt) {
                    Ok(Imported::Now) => step("imported", None),
                    Ok(Imported::AlreadyPresent) => step("already_present", None),
                    Err((reason, code)) => step(reason.as_str(), code),
                }),
            },
        }
    }
    steps
}
