//! Importing a sidecar folder into a journal through the journal's own
//! record commands (checkpoint, then a final record or a failed attempt),
//! so the record rules stay written once and every row is one the engine
//! could have written itself.
//!
//! A receipt keeps less than a dispatch row: what it lacks is written as a
//! placeholder the journal's grammar accepts, documented on each constant.
//! With them, a later `dispatch` of the same source in the shipped dialect
//! replays an imported terminal receipt (its identity is the `pwh_` id) and
//! retries an imported `retryable_failure` at `attempt_count + 1`, while
//! `recover()` counts an imported unfinished row as skipped: no hook is
//! installed under the placeholder registration digest and the placeholder
//! request is no source.

use std::path::Path;

use serde::Serialize;
use serde_json::{json, Value};
use ts_rs::TS;

use super::scan::{scan, Entry, Found};
use super::{Reason, Rejected};
use crate::contract::Dialect;
use crate::dialect::shipped::engine::{receipt_from_row, stored_intent};
use crate::dialect::shipped::{self as doc, SidecarReceipt, SidecarStatus};
use crate::identity;
use crate::journal::{
    Checkpoint, CheckpointState, DispatchRow, DispatchState, FailureOutcome, FailureRecord, FinalRecord, FinalStatus,
    Journal, JournalError, RecordOutcome,
};

/// The `effect_id` column of an imported row: a receipt does not carry the
/// source's identity.
pub const IMPORTED_EFFECT_ID: &str = "sidecar_import";
/// The `event_kind` column of an imported row: a receipt does not carry it
/// (only its dispatch id was derived from it).
pub const IMPORTED_EVENT_KIND: &str = "sidecar_import";
/// The `registration_digest` of an imported row: a receipt does not carry
/// the registration's policy version, and no installed hook has this digest.
pub const IMPORTED_REGISTRATION_DIGEST: &str = "0000000000000000000000000000000000000000000000000000000000000000";
/// The stored request of an imported unfinished row: a receipt does not
/// carry its source, and this object is no admissible source.
pub const IMPORTED_REQUEST: &str = "{}";

/// What an import did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "camelCase")]
#[ts(export, rename = "SidecarImportReport")]
pub struct ImportReport {
    /// Identities written now.
    pub imported: u32,
    /// Identities the journal already held with the same receipt.
    pub already_present: u32,
    /// Entries not imported, in folder order.
    pub rejected: Vec<Rejected>,
}

/// Imports every receipt file under `runtime_root` into `journal`. Blocks on
/// the journal's replies: call it off an async worker thread. Only a root
/// that cannot be listed is an error; every file is judged on its own.
pub fn import_sidecars(journal: &Journal, runtime_root: &Path) -> std::io::Result<ImportReport> {
    let mut report = ImportReport::default();
    for entry in scan(runtime_root)? {
        match entry {
            Entry::Rejected(r) => report.rejected.push(r),
            Entry::Found(found) => match import_one(journal, &found) {
                Ok(Imported::Now) => report.imported += 1,
                Ok(Imported::AlreadyPresent) => report.already_present += 1,
                Err((reason, code)) => report.rejected.push(Rejected { file: found.file, reason, code }),
            },
        }
    }
    Ok(report)
}

pub enum Imported {
    Now,
    AlreadyPresent,
}

pub type Refusal = (Reason, Option<String>);

/// The receipt a file holds, judged as LoopX's reader judges it and more:
/// the shipped receipt contract, and the name being its dispatch id.
pub fn receipt_of(found: &Found) -> Result<SidecarReceipt, Refusal> {
    let text = std::str::from_utf8(&found.bytes).map_err(|_| (Reason::NotJson, None))?;
    let value: Value = serde_json::from_str(text).map_err(|_| (Reason::NotJson, None))?;
    let receipt = doc::validate_receipt(&value)
        .map_err(|v| (Reason::InvalidReceipt, v.first().map(|v| v.rule.as_str().to_owned())))?;
    if receipt.dispatch_id != found.stem {
        return Err((Reason::NameMismatch, None));
    }
    Ok(receipt)
}

/// One file, one identity: its checkpoint, then its record. The receipt's
/// validation already met every grammar the journal checks, so only a
/// journal failure between the two can leave the checkpoint alone; the identity is then reported
/// (`journal_failed`) and a re-import completes it (see [`continues`]).
fn import_one(journal: &Journal, found: &Found) -> Result<Imported, Refusal> {
    import_receipt(journal, &receipt_of(found)?)
}

/// One receipt already read and validated, as [`import_sidecars`] imports
/// each file's.
pub fn import_receipt(journal: &Journal, receipt: &SidecarReceipt) -> Result<Imported, Refusal> {
    let receipt = receipt.clone();
    let digest = result_digest(&receipt);
    if let Some(row) = journal.get_dispatch(&receipt.dispatch_id).map_err(failed)? {
        if holds(&row, &receipt, digest.as_deref()) {
            return Ok(Imported::AlreadyPresent);
        }
        if !continues(&row, &receipt) {
            return Err((Reason::Conflict, None));
        }
    }
    match journal.checkpoint(checkpoint(&receipt)).wait().map_err(failed)? {
        CheckpointState::Fresh | CheckpointState::Pending { .. } => {}
        // Recorded by someone else since the read above.
        CheckpointState::Final { row } => return settled(&row, &receipt, digest.as_deref()),
    }
    match receipt.status {
        SidecarStatus::IntentRecorded | SidecarStatus::NotApplicable => {
            match journal.record_final(final_record(&receipt, digest.clone())).wait().map_err(failed)? {
                RecordOutcome::Recorded => Ok(Imported::Now),
                RecordOutcome::AlreadyFinal { row } => settled(&row, &receipt, digest.as_deref()),
            }
        }
        SidecarStatus::RetryableFailure => {
            match journal.record_failure(failure_record(&receipt)).wait().map_err(failed)? {
                FailureOutcome::Recorded { .. } => Ok(Imported::Now),
                FailureOutcome::AlreadyFinal { row } => settled(&row, &receipt, None),
            }
        }
    }
}

fn failed(e: JournalError) -> Refusal {
    (Reason::JournalFailed, Some(e.code().to_owned()))
}

fn settled(row: &DispatchRow, r: &SidecarReceipt, digest: Option<&str>) -> Result<Imported, Refusal> {
    if holds(row, r, digest) {
        Ok(Imported::AlreadyPresent)
    } else {
        Err((Reason::Conflict, None))
    }
}

/// The journal's row is this receipt: the same receipt rebuilt from it and,
/// for a final one, the same result digest (so a verify-mode replay agrees).
fn holds(row: &DispatchRow, r: &SidecarReceipt, digest: Option<&str>) -> bool {
    row.dialect == Dialect::LoopxShippedV0
        && receipt_from_row(row).as_ref() == Some(r)
        && (!row.state.is_final() || row.result_digest.as_deref() == digest)
}

/// The receipt is a later point of the row's unfinished identity: the same
/// ids, and attempts the row has not yet recorded an outcome of (a
/// checkpoint at the receipt's attempt is one left by an import or a
/// dispatch cut short before its record).
fn continues(row: &DispatchRow, r: &SidecarReceipt) -> bool {
    let same_ids = row.dialect == Dialect::LoopxShippedV0
        && row.hook_id == r.hook_id
        && row.capability_id == r.capability_id
        && row.receipt_id == r.source_receipt_id
        && row.recorded_at.as_deref() == Some(r.recorded_at.as_str());
    let later = match row.state {
        DispatchState::Checkpointed => row.attempts <= r.attempt_count,
        DispatchState::Failed => row.attempts < r.attempt_count,
        _ => false,
    };
    same_ids && later
}

fn checkpoint(r: &SidecarReceipt) -> Checkpoint {
    Checkpoint {
        dispatch_id: r.dispatch_id.clone(),
        hook_id: r.hook_id.clone(),
        capability_id: r.capability_id.clone(),
        receipt_id: r.source_receipt_id.clone(),
        effect_id: IMPORTED_EFFECT_ID.to_owned(),
        event_kind: IMPORTED_EVENT_KIND.to_owned(),
        registration_digest: IMPORTED_REGISTRATION_DIGEST.to_owned(),
        dialect: Dialect::LoopxShippedV0,
        recorded_at: Some(r.recorded_at.clone()),
        request_json: IMPORTED_REQUEST.to_owned(),
        attempt: r.attempt_count,
    }
}

fn final_record(r: &SidecarReceipt, digest: Option<String>) -> FinalRecord {
    let (status, intents) = match &r.intent {
        Some(intent) => (FinalStatus::Proposed, vec![stored_intent(&r.dispatch_id, &r.capability_id, intent)]),
        None => (FinalStatus::NotApplicable, Vec::new()),
    };
    FinalRecord {
        dispatch_id: r.dispatch_id.clone(),
        attempt: r.attempt_count,
        status,
        result_digest: digest,
        intents,
        failure: None,
    }
}

fn failure_record(r: &SidecarReceipt) -> FailureRecord {
    FailureRecord {
        dispatch_id: r.dispatch_id.clone(),
        attempt: r.attempt_count,
        code: r.error_code.map(|c| c.as_str()).unwrap_or_default().to_owned(),
        rule: None,
        pointer: None,
    }
}

/// The digest the engine records for the shipped hook result this terminal
/// receipt settled: a result with the same fields compares equal on replay.
pub fn result_digest(r: &SidecarReceipt) -> Option<String> {
    let status = match r.status {
        SidecarStatus::IntentRecorded => "intent",
        SidecarStatus::NotApplicable => "not_applicable",
        SidecarStatus::RetryableFailure => return None,
    };
    let result = json!({
        "schema_version": doc::ShippedHookResultSchemaVersion::VALUE,
        "hook_id": r.hook_id,
        "capability_id": r.capability_id,
        "phase": "post_writeback",
        "status": status,
        "intent": r.intent,
    });
    Some(identity::result_digest(&result))
}
