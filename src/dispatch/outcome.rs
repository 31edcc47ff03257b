//! What `dispatch` resolves to: the admission verdict and one outcome per
//! admitted hook. Public-safe: ids, codes and contract documents only.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::request::AdmissionRefusal;
use crate::contract::{DispatchReceipt, FailureCode};
use crate::validate::Rule;

/// How one hook's dispatch ended.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum HookOutcomeKind {
    /// A proposed result was validated and recorded.
    Recorded,
    /// The provider answered not_applicable; that is recorded too.
    NotApplicable,
    /// The identity already had a final receipt; it is returned unchanged.
    Replayed,
    /// This attempt failed with `failure.code`; a later dispatch may retry.
    Failed,
    /// Verify-mode replay produced a different result: rejected, original kept.
    Conflict,
    /// No attempts remain: final `dispatch_budget_exhausted`.
    Exhausted,
}

/// One admitted hook's outcome.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[ts(export)]
pub struct HookOutcome {
    pub hook_id: String,
    pub dispatch_id: String,
    pub outcome: HookOutcomeKind,
    /// The attempt this outcome belongs to (1-based); the receipt's attempt on replay.
    pub attempt: u32,
    /// The final receipt, when there is one (recorded, not_applicable, replayed, conflict, exhausted).
    pub receipt: Option<DispatchReceipt>,
    /// The failure code, for failed, conflict and exhausted.
    pub failure_code: Option<FailureCode>,
    /// The violated rule, where one applies.
    pub failure_rule: Option<Rule>,
    /// Where the rule was broken, when a document was judged: a JSON Pointer
    /// into the provider's result (or the hook's input, for
    /// `input_boundary_rejected`). A member name that is not a plain short
    /// token (ASCII letters, digits, `_`; credential-like never) is
    /// `~0redacted~0`; array indices are kept.
    pub failure_pointer: Option<String>,
    /// When the identity was pruned to its tombstone (epoch ms), on a replay
    /// or conflict of a pruned identity; null otherwise. Its request, failed
    /// attempts and intents' documents are gone, and `receipt` is the
    /// tombstone's, the same receipt as before.
    #[serde(default)]
    #[ts(type = "number | null")]
    pub pruned_at: Option<i64>,
    /// What a `loopx-shipped-v0` dispatch result needs beyond this; never
    /// serialized with it (that dialect's result is its own document).
    #[serde(skip)]
    #[ts(skip)]
    #[schemars(skip)]
    pub shipped: Option<Box<ShippedEnd>>,
}

/// The admission verdict and per-hook outcomes, in hook_id byte order.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[ts(export)]
pub struct DispatchOutcome {
    pub admitted: bool,
    /// Why the dispatch was refused; null when admitted.
    pub refusal: Option<AdmissionRefusal>,
    pub hooks: Vec<HookOutcome>,
}

impl DispatchOutcome {
    pub fn refused(refusal: AdmissionRefusal) -> Self {
        DispatchOutcome { admitted: false, refusal: Some(refusal), hooks: Vec::new() }
    }

    /// Every hook answered from its final receipt, which never changes: the
    /// same request gets this outcome again for as long as no hook or intent
    /// kind is added, so a caller may keep it for that request.
    pub fn is_final_replay(&self) -> bool {
        self.admitted && !self.hooks.is_empty() && self.hooks.iter().all(|h| h.outcome == HookOutcomeKind::Replayed)
    }
}

/// What the shipped dispatch result needs of one hook's outcome beyond the
/// engine's: never serialized with it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ShippedEnd {
    pub capability_id: String,
    pub error_code: Option<crate::dialect::shipped::FailureCode>,
    pub receipt: Option<crate::dialect::shipped::SidecarReceipt>,
    /// Its provider was called in this dispatch.
    pub invoked: bool,
    /// Its receipt was a `retryable_failure` before this dispatch.
    pub retried: bool,
    /// The dispatch was refused as a whole before any provider ran (the
    /// dialect's batch admission), so this hook failed with it.
    pub batch_refused: bool,
}
