//! What readers return and how they filter.

use serde::{Serialize, Serializer};
use ts_rs::TS;

use super::states::{Decision, DispatchState};
use crate::contract::Dialect;

/// Rows per page, at most.
pub const MAX_PAGE: u32 = 1000;

/// One dispatch as the journal holds it (`HookJournal.getDispatch`, `listDispatches`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
#[serde(rename_all = "camelCase")]
pub struct DispatchRow {
    /// Insertion order; the paging cursor.
    #[ts(type = "number")]
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
    #[ts(type = "number")]
    pub created_at: i64,
    #[ts(type = "number")]
    pub updated_at: i64,
    /// The contract the row was written in.
    pub dialect: Dialect,
    /// The source's commit time, kept for the receipts of dialects that carry
    /// it (`loopx-shipped-v0`); null otherwise. The source's own text, kept
    /// byte for byte, so it is `...Iso`, not an epoch-ms `...At`.
    #[serde(rename = "recordedAtIso")]
    pub recorded_at: Option<String>,
    /// The dispatch request, as recorded at the checkpoint; null once the
    /// identity is final (only `recover()` needs it).
    #[serde(rename = "request", serialize_with = "embedded_json_opt")]
    #[ts(rename = "request", as = "Option<crate::dispatch::RowRequest>")]
    pub request_json: Option<String>,
    /// Ids of the dispatch's intents in `seq` (result) order; empty unless
    /// proposed. Not serialized on its own: it is part of `receipt`.
    #[serde(skip)]
    #[ts(skip)]
    pub intent_ids: Vec<String>,
    /// For a row of a dialect whose receipt embeds more than ids
    /// (`loopx-shipped-v0`): its intent as `<intent_kind> <stored doc>` when
    /// proposed, its last failure's code when failed; else null.
    #[serde(skip)]
    #[ts(skip)]
    pub receipt_extra: Option<String>,
    /// A checkpointed row whose last attempt was counted by a process known
    /// to have ended (PostgreSQL: its session's lock is gone), so that
    /// attempt is not running anywhere. Always false on SQLite, whose ended
    /// processes' attempts are folded in as failed attempts instead.
    #[serde(skip)]
    #[ts(skip)]
    pub holder_ended: bool,
    /// When the row was pruned (epoch ms): its request, failures and intents
    /// are gone and the row is the identity's tombstone (`HookJournal.prune`).
    /// Null while the row was never pruned.
    #[ts(type = "number | null")]
    pub pruned_at: Option<i64>,
    // Not stored: journal readers leave it `None`, and
    // `dispatch::receipt_from_row` builds it from the columns and
    // `intent_ids` (the binding fills it before handing rows to JS).
    /// The final receipt, once there is one.
    #[serde(rename = "receipt", serialize_with = "embedded_json_opt")]
    #[ts(rename = "receipt", as = "Option<crate::dispatch::RowReceipt>")]
    pub receipt_json: Option<String>,
}

/// One failed attempt of a dispatch (`HookJournal.listFailures`): codes only, never a message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
#[serde(rename_all = "camelCase")]
pub struct FailureRow {
    pub dispatch_id: String,
    pub attempt: u32,
    pub code: String,
    pub rule: Option<String>,
    /// Where `rule` was broken, as the hook's outcome said (`failurePointer`);
    /// null when no document was judged, and for rows of older journals.
    pub pointer: Option<String>,
    /// When the attempt failed (epoch ms, as every `...At` of the journal).
    #[ts(type = "number")]
    pub failed_at: i64,
}

/// A proposed intent as the outbox holds it, with its executor's decision and done mark.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
#[serde(rename_all = "camelCase")]
pub struct StoredIntent {
    /// Global insertion order; the paging cursor.
    #[ts(type = "number")]
    pub seq: i64,
    pub intent_id: String,
    pub dispatch_id: String,
    pub capability_id: String,
    pub intent_kind: String,
    pub decision: Option<Decision>,
    pub executor_id: Option<String>,
    pub reason_code: Option<String>,
    #[ts(type = "number | null")]
    pub decided_at: Option<i64>,
    #[ts(type = "number | null")]
    pub done_at: Option<i64>,
    /// The hook of the source dispatch (its row's `hook_id`).
    pub hook_id: String,
    /// The contract of the source dispatch (its row's `dialect`).
    pub dialect: Dialect,
    /// What the journal stores of the document beyond the columns
    /// ([`super::IntentRow::stored_json`]).
    #[serde(skip)]
    #[ts(skip)]
    pub stored_json: String,
    // Not stored whole: journal readers leave it `None`, and
    // `dispatch::intent_from_stored` rebuilds it from the columns, `hook_id`
    // and `stored_json` (the binding fills it before handing rows to JS).
    /// The intent document.
    #[serde(rename = "intent", serialize_with = "embedded_json_opt")]
    #[ts(rename = "intent", as = "crate::dispatch::RowIntent")]
    pub doc_json: Option<String>,
}

/// One page of a reader: not a contract document, so camelCase (`nextCursor`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "camelCase")]
#[ts(export)]
pub struct Page<T> {
    pub items: Vec<T>,
    /// Pass as `after` of the next query; null when this page was the last.
    #[ts(type = "number | null")]
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
        DispatchFilter { state: None, hook_id: None, after_cursor: None, limit: 100 }
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

/// Counts of the journal's dispatches by state and of its intents (`HookJournal.stats`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
#[serde(rename_all = "camelCase")]
pub struct JournalStats {
    #[ts(type = "number")]
    pub checkpointed: u64,
    #[ts(type = "number")]
    pub failed: u64,
    #[ts(type = "number")]
    pub proposed: u64,
    #[ts(type = "number")]
    pub not_applicable: u64,
    #[ts(type = "number")]
    pub exhausted: u64,
    #[ts(type = "number")]
    pub intents: u64,
    #[ts(type = "number")]
    pub intents_open: u64,
}

/// Stored documents are JSON text; readers hand them out as nested JSON so
/// callers never parse twice. Text that is somehow not JSON reads as null.
fn embedded_json<S: Serializer>(text: &str, s: S) -> Result<S::Ok, S::Error> {
    crate::validate::text::from_str_nested::<serde_json::Value>(text, crate::validate::text::MAX_NESTED_DEPTH)
        .unwrap_or(serde_json::Value::Null)
        .serialize(s)
}

fn embedded_json_opt<S: Serializer>(text: &Option<String>, s: S) -> Result<S::Ok, S::Error> {
    match text {
        Some(t) => embedded_json(t, s),
        None => s.serialize_none(),
    }
}
