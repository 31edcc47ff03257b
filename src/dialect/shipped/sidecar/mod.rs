//! LoopX's own journal of post-writeback dispatches, a folder of sidecar
//! receipts (`<runtime_root>/goals/<goal_id>/post_writeback_hooks/pwh_*.json`),
//! read into a journal of this package (`import.rs`, over the files
//! `scan.rs` finds) and written back out one receipt at a time during a
//! migration (`mirror.rs`), so LoopX's consumer that scans the folder keeps
//! working.
//!
//! Nothing here reports a path outside the runtime root or a byte of a
//! file's content: an entry is named by its path relative to the root and
//! judged with a stable reason code.

pub mod import;
pub mod mirror;
pub mod scan;

#[cfg(test)]
mod tests;

use serde::Serialize;
use ts_rs::TS;

pub use import::{import_receipt, import_sidecars, ImportReport, Imported};
pub use mirror::{mirror_for_source, mirror_receipt, MirrorError, MirrorOutcome};
pub use scan::{scan, Entry, Found};

/// The folder of one goal's receipts, relative to its goal's folder.
pub const RECEIPT_DIR: &str = "post_writeback_hooks";

/// Why an entry of the folder was not imported.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export, rename = "SidecarRejectReason")]
pub enum Reason {
    /// A symlink, folder, FIFO or device where a receipt file is expected.
    NotARegularFile,
    /// The file could not be opened or read.
    Unreadable,
    /// Larger than any receipt can be.
    TooLarge,
    /// Not UTF-8 JSON.
    NotJson,
    /// JSON that the shipped receipt contract rejects (`rule` names the first rule).
    InvalidReceipt,
    /// The file's name is not its receipt's `dispatch_id`.
    NameMismatch,
    /// The goal folder's name breaks the shipped goal id grammar.
    BadGoalId,
    /// The journal holds this identity with another receipt.
    Conflict,
    /// The journal refused or failed the identity's records; nothing of it
    /// was applied, or a re-import completes it.
    JournalFailed,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::NotARegularFile => "not_a_regular_file",
            Reason::Unreadable => "unreadable",
            Reason::TooLarge => "too_large",
            Reason::NotJson => "not_json",
            Reason::InvalidReceipt => "invalid_receipt",
            Reason::NameMismatch => "name_mismatch",
            Reason::BadGoalId => "bad_goal_id",
            Reason::Conflict => "conflict",
            Reason::JournalFailed => "journal_failed",
        }
    }
}

/// One entry that was not imported.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, TS)]
#[ts(export, rename = "SidecarRejected")]
pub struct Rejected {
    /// Relative to the runtime root, `/`-separated.
    pub file: String,
    pub reason: Reason,
    /// The first violated rule code, for `invalid_receipt`; the journal's
    /// error code for `journal_failed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub code: Option<String>,
}

/// Whether `name` is a receipt file's name: `pwh_` + 64 lowercase hex + `.json`.
pub fn is_receipt_name(name: &str) -> bool {
    name.strip_prefix("pwh_")
        .and_then(|rest| rest.strip_suffix(".json"))
        .is_some_and(|hex| hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
}
