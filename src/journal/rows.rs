//! What readers return and how they filter.

use serde::Serialize;

use super::{Decision, DispatchState};

/// Rows per page, at most.
pub const MAX_PAGE: u32 = 1000;

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DispatchRow {
    /// Insertion order; the paging cursor.
    pub seq: i64,
    pub dispatch_id: String,
    pub state: DispatchState,
    pub attempts: u32,
    pub hook_id: String,
    pub capability_id: String,
    pub receipt_id: String,
    pub effect_id: String,
    pub event_kind: String,
    pub registration_digest: String,
    pub result_digest: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
    pub request_json: String,
    pub receipt_json: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FailureRow {
    pub dispatch_id: String,
    pub attempt: u32,
    pub code: String,
    pub rule: Option<String>,
    pub at: i64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StoredIntent {
    /// Global insertion order; the paging cursor.
    pub seq: i64,
    pub intent_id: String,
    pub dispatch_id: String,
    pub capability_id: String,
    pub intent_kind: String,
    pub decision: Option<Decision>,
    pub executor_id: Option<String>,
    pub reason_code: Option<String>,
    pub decided_at: Option<i64>,
    pub done_at: Option<i64>,
    pub doc_json: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Page<T> {
    pub items: Vec<T>,
    /// Pass as the next `after_*`; `None` when this page was the last.
    pub next_cursor: Option<i64>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DispatchFilter {
    pub state: Option<DispatchState>,
    pub hook_id: Option<String>,
    /// Only rows with `seq` greater than this.
    pub after_cursor: Option<i64>,
    /// 1..=[`MAX_PAGE`]; larger values are clamped.
    pub limit: u32,
}

impl Default for DispatchFilter {
    fn default() -> Self {
        DispatchFilter {
            state: None,
            hook_id: None,
            after_cursor: None,
            limit: 100,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IntentFilter {
    pub dispatch_id: Option<String>,
    pub capability_id: Option<String>,
    pub intent_kind: Option<String>,
    /// Only open intents: undecided, or admitted and not done.
    pub pending_only: bool,
    /// Only intents with `seq` greater than this (0: from the start).
    pub after_seq: i64,
    /// 1..=[`MAX_PAGE`]; larger values are clamped.
    pub limit: u32,
}

impl Default for IntentFilter {
    fn default() -> Self {
        IntentFilter {
            dispatch_id: None,
            capability_id: None,
            intent_kind: None,
            pending_only: false,
            after_seq: 0,
            limit: 100,
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct JournalStats {
    pub checkpointed: u64,
    pub failed: u64,
    pub proposed: u64,
    pub not_applicable: u64,
    pub exhausted: u64,
    pub intents: u64,
    pub intents_open: u64,
}
