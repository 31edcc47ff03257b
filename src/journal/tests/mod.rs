//! Journal tests against real backends: SQLite files in a temporary
//! directory (one unique directory per test, removed when the test ends) and
//! PostgreSQL schemas (`backend.rs`). A test about the journal runs on both;
//! one about SQLite files, or about the server, on its backend alone.

mod attempts;
mod backend;
mod begun;
mod concurrency;
mod hostile;
mod inline;
mod lease;
mod observe;
mod open;
mod outbox;
mod prune;
mod read;
mod records;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

pub(crate) use backend::{both, file_hashes, open, open_file, open_file_read_only, open_target, url, Backend, Schema};

use super::*;
use crate::identity::sha256_hex;

/// A unique directory under the system temp dir, removed on drop.
pub(crate) struct TempDir(PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static N: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
        let dir = std::env::temp_dir().join(format!(
            "loopx-journal-{tag}-{}-{}-{nanos}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    pub fn file(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub(super) fn hex(seed: &str) -> String {
    sha256_hex(seed.as_bytes())
}

pub(super) fn dispatch_id(seed: &str) -> String {
    format!("pwh_{}", hex(&format!("d:{seed}")))
}

pub(super) fn intent_id(seed: &str) -> String {
    format!("pwi_{}", hex(&format!("i:{seed}")))
}

pub(super) fn file_hash(path: &Path) -> String {
    sha256_hex(&std::fs::read(path).unwrap())
}

/// A checkpoint of a realistic size (the request is a compact hook input).
pub(super) fn checkpoint(seed: &str) -> Checkpoint {
    let dispatch_id = dispatch_id(seed);
    let request_json = format!(
        concat!(
            r#"{{"schema_version":"loopx_post_writeback_hook_input_v0","dispatch_id":"{}","#,
            r#""hook_id":"periodic_report.runtime_trigger","capability_id":"periodic_report","#,
            r#""source":{{"receipt_id":"receipt_{s}","effect_id":"effect_{s}","step_kind":"durable_writeback","#,
            r#""goal_id":"goal_1","agent_id":"agent_1","todo_id":"todo_{s}","turn_instance_id":"turn_{s}","#,
            r#""event_kind":"todo_completed","state_revision":"rev_{s}","committed_at":"2026-08-26T00:00:00Z"}},"#,
            r#""projection":{{"schema_version":"loopx_post_writeback_event_projection_v0","#,
            r#""transition":"segment_completed","fact_refs":["fact_{s}"]}},"#,
            r#""boundary":{{"raw_task_text_recorded":false,"raw_logs_recorded":false,"#,
            r#""raw_trajectory_recorded":false,"raw_session_transcript_recorded":false,"#,
            r#""credential_values_recorded":false,"absolute_paths_recorded":false}}}}"#
        ),
        dispatch_id,
        s = seed
    );
    Checkpoint {
        dispatch_id,
        hook_id: "periodic_report.runtime_trigger".into(),
        capability_id: "periodic_report".into(),
        receipt_id: format!("receipt_{seed}"),
        effect_id: format!("effect_{seed}"),
        event_kind: "todo_completed".into(),
        registration_digest: hex("registration"),
        dialect: crate::contract::Dialect::ContractV0,
        recorded_at: None,
        request_json,
        attempt: 1,
    }
}

/// The full intent document the dispatcher would have accepted for `seed`
/// (the journal stores only [`intent`]'s `stored_json` of it).
pub(super) fn intent_doc(seed: &str, dispatch_id: &str) -> String {
    format!(
        concat!(
            r#"{{"schema_version":"loopx_post_writeback_intent_v0","intent_id":"{}","#,
            r#""hook_id":"periodic_report.runtime_trigger","capability_id":"periodic_report","#,
            r#""source_dispatch_id":"{}","intent_kind":"periodic_report.trigger_evaluation","#,
            r#""operation":"evaluate_runtime_trigger","policy_version":"weekly_v0","#,
            r#""payload":{{"segment_ref":"segment_{s}","source_event_refs":["event_{s}"]}},"#,
            r#""budget":{{"max_attempts":1,"max_result_bytes":16384}},"requested_write_scope":[],"#,
            r#""failure_policy":"isolate","grants_new_action_authority":false,"external_write_performed":false}}"#
        ),
        intent_id(seed),
        dispatch_id,
        s = seed
    )
}

pub(super) fn intent(seed: &str, dispatch_id: &str) -> IntentRow {
    let doc: crate::contract::PostWritebackIntent = serde_json::from_str(&intent_doc(seed, dispatch_id)).unwrap();
    crate::dispatch::stored_intent(&doc)
}

/// The receipt document of [`proposed`] (the journal stores none: its row is it).
pub(super) fn proposed_receipt(seed: &str, attempt: u32, digest_seed: &str, intents: &[&str]) -> String {
    let ids = intents.iter().map(|s| format!("\"{}\"", intent_id(s))).collect::<Vec<_>>().join(",");
    format!(
        concat!(
            r#"{{"schema_version":"loopx_post_writeback_dispatch_receipt_v0","dispatch_id":"{}","#,
            r#""hook_id":"periodic_report.runtime_trigger","capability_id":"periodic_report","#,
            r#""receipt_id":"receipt_{s}","effect_id":"effect_{s}","event_kind":"todo_completed","#,
            r#""registration_digest":"{}","status":"proposed","attempt":{},"intent_ids":[{}],"#,
            r#""result_digest":"{}","failure":null}}"#
        ),
        dispatch_id(seed),
        hex("registration"),
        attempt,
        ids,
        hex(digest_seed),
        s = seed
    )
}

/// A proposed final record with one intent per seed in `intents`.
pub(super) fn proposed(seed: &str, attempt: u32, digest_seed: &str, intents: &[&str]) -> FinalRecord {
    let dispatch_id = dispatch_id(seed);
    let rows: Vec<IntentRow> = intents.iter().map(|s| intent(s, &dispatch_id)).collect();
    let result_digest = hex(digest_seed);
    FinalRecord {
        dispatch_id,
        attempt,
        status: FinalStatus::Proposed,
        result_digest: Some(result_digest),
        intents: rows,
        failure: None,
    }
}

pub(super) fn failure(seed: &str, attempt: u32) -> FailureRecord {
    FailureRecord { dispatch_id: dispatch_id(seed), attempt, code: "producer_failed".into(), rule: None, pointer: None }
}
