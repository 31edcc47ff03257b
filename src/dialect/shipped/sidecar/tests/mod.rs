//! A runtime root built the way LoopX's host keeps it (several goals, each
//! receipt status, attempt counts up to the bound, and the files a real
//! folder also holds), imported into both journal backends and mirrored
//! back out.

mod import;
mod mirror;

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::dialect::shipped::ids;
use crate::dialect::shipped::{self as doc, SidecarReceipt};

pub(super) const STAGE: &str = "periodic_report.stage_completion";
pub(super) const TRIGGER: &str = "periodic_report.runtime_trigger";

/// A temporary runtime root, removed on drop.
pub(super) struct Root(pub PathBuf);

impl Root {
    pub fn new(tag: &str) -> Root {
        static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("loopx-sidecar-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Root(dir)
    }

    /// The receipt folder of `goal`, created.
    pub fn dir(&self, goal: &str) -> PathBuf {
        let d = self.0.join("goals").join(goal).join("post_writeback_hooks");
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// Writes `receipt` where LoopX keeps it, as LoopX's writer formats it.
    pub fn put(&self, goal: &str, receipt: &Value) -> PathBuf {
        let name = format!("{}.json", receipt["dispatch_id"].as_str().unwrap());
        let path = self.dir(goal).join(name);
        std::fs::write(&path, format!("{}\n", serde_json::to_string_pretty(receipt).unwrap())).unwrap();
        path
    }
}

impl Drop for Root {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The `pwr_` event id of a `refresh_state` source of `goal` at `version`.
pub(super) fn event_id(goal: &str, version: &str) -> String {
    ids::event_id(&ids::EventFacts {
        event_kind: "refresh_state",
        goal_id: goal,
        agent_id: "agent-1",
        todo_id: None,
        turn_instance_id: "turn-1",
        effect_id: "effect-1",
        state_version: version,
        receipt_id: None,
        committed_at: "2026-09-02T12:00:00Z",
    })
}

/// The receipt of hook `hook` for that source, with `status` at `attempt`.
pub(super) fn receipt(goal: &str, version: &str, hook: &str, status: &str, attempt: u32) -> Value {
    let event = event_id(goal, version);
    let dispatch_id = ids::dispatch_id(&event, "refresh_state", hook, "periodic-report", "v0");
    let intent = (status == "intent_recorded").then(|| {
        json!({
            "schema_version": "loopx_capability_intent_v0",
            "intent_kind": "periodic_report.deliver",
            "idempotency_key": format!("periodic-report:{version}"),
            "source_receipt_id": event,
            "payload": { "stage": version, "goal": goal, "note": "caf\u{e9} \u{1F600}" },
            "requested_write_scope": [],
        })
    });
    json!({
        "schema_version": "loopx_post_writeback_capability_hook_receipt_v0",
        "dispatch_id": dispatch_id,
        "hook_id": hook,
        "capability_id": "periodic-report",
        "source_receipt_id": event,
        "status": status,
        "intent": intent,
        "error_code": (status == "retryable_failure").then_some("producer_failed"),
        "attempt_count": attempt,
        "recorded_at": "2026-09-02T12:00:00Z",
    })
}

pub(super) fn typed(v: &Value) -> SidecarReceipt {
    doc::validate_receipt(v).expect("a valid receipt")
}

/// A folder of three goals holding every status, attempt counts 1, 2, 7
/// and 10000, and beside them what the import must refuse or ignore.
/// Returns the valid receipts.
pub(super) fn loopx_folder(root: &Root) -> Vec<Value> {
    let valid = vec![
        ("goal-1", receipt("goal-1", "state-v1", STAGE, "intent_recorded", 1)),
        ("goal-1", receipt("goal-1", "state-v1", TRIGGER, "not_applicable", 1)),
        ("goal-1", receipt("goal-1", "state-v2", STAGE, "retryable_failure", 2)),
        ("goal.two", receipt("goal.two", "state-v1", STAGE, "intent_recorded", 7)),
        ("goal.two", receipt("goal.two", "state-v1", TRIGGER, "retryable_failure", 10_000)),
        ("Goal_3", receipt("Goal_3", "state-v9", STAGE, "not_applicable", 10_000)),
    ];
    for (goal, r) in &valid {
        root.put(goal, r);
    }
    let dir = root.dir("goal-1");
    std::fs::write(dir.join(format!("pwh_{}.json", "a".repeat(64))), "{\"schema_version\": ").unwrap();
    let mut misnamed = receipt("goal-1", "state-v3", STAGE, "not_applicable", 1);
    let real = misnamed["dispatch_id"].as_str().unwrap().to_owned();
    misnamed["dispatch_id"] = json!(format!("pwh_{}", "b".repeat(64)));
    std::fs::write(dir.join(format!("{real}.json")), misnamed.to_string()).unwrap();
    let mut over = receipt("goal-1", "state-v4", STAGE, "retryable_failure", 1);
    over["attempt_count"] = json!(10_001);
    root.put("goal-1", &over);
    std::os::unix::fs::symlink("/etc/hostname", dir.join(format!("pwh_{}.json", "c".repeat(64)))).unwrap();
    std::fs::write(dir.join("composition-retry-receipts.jsonl"), "{}\n").unwrap();
    std::fs::write(dir.join("notes.txt"), "not a receipt").unwrap();
    std::fs::write(dir.join(format!("pwh_{}.json.tmp", "d".repeat(64))), "{}").unwrap();
    std::fs::create_dir_all(root.0.join("goals").join("-bad").join("post_writeback_hooks")).unwrap();
    valid.into_iter().map(|(_, r)| r).collect()
}

/// The reasons of an import's rejections, by file name.
pub(super) fn reasons(report: &super::ImportReport) -> Vec<(String, &'static str)> {
    report
        .rejected
        .iter()
        .map(|r| (Path::new(&r.file).file_name().unwrap().to_string_lossy().into_owned(), r.reason.as_str()))
        .collect()
}
