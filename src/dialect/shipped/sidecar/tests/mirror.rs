use std::time::Duration;

use serde_json::json;

use super::*;
use crate::dialect::shipped::engine::receipt_from_row;
use crate::dialect::shipped::sidecar::scan::{scan, Entry};
use crate::dialect::shipped::sidecar::{
    import::receipt_of, import_sidecars, mirror_receipt, MirrorError, MirrorOutcome,
};
use crate::journal::tests::Backend;

const SHORT: Duration = Duration::from_millis(200);

fn file_of(root: &Root, goal: &str, r: &serde_json::Value) -> std::path::PathBuf {
    root.dir(goal).join(format!("{}.json", r["dispatch_id"].as_str().unwrap()))
}

#[test]
fn what_the_mirror_writes_imports_back_as_the_same_receipts() {
    let from = Root::new("mirror-from");
    let valid = loopx_folder(&from);
    let to = Root::new("mirror-to");
    for v in &valid {
        let goal = ["goal-1", "goal.two", "Goal_3"]
            .into_iter()
            .find(|g| from.dir(g).join(format!("{}.json", v["dispatch_id"].as_str().unwrap())).exists())
            .unwrap();
        assert_eq!(mirror_receipt(&to.0, goal, &typed(v), SHORT), Ok(MirrorOutcome::Written));
        // Byte for byte what LoopX's TypeScript writer puts there.
        let text = std::fs::read_to_string(file_of(&to, goal, v)).unwrap();
        assert_eq!(text, format!("{}\n", serde_json::to_string_pretty(v).unwrap()));
    }
    let read: Vec<_> = scan(&to.0)
        .unwrap()
        .into_iter()
        .map(|e| match e {
            Entry::Found(f) => receipt_of(&f).unwrap(),
            Entry::Rejected(r) => panic!("refused {r:?}"),
        })
        .collect();
    let mut want: Vec<_> = valid.iter().map(typed).collect();
    want.sort_by(|a, b| a.dispatch_id.cmp(&b.dispatch_id));
    let mut read = read;
    read.sort_by(|a, b| a.dispatch_id.cmp(&b.dispatch_id));
    assert_eq!(read, want);
    let b = Backend::sqlite("mirror");
    let j = b.open();
    assert_eq!(import_sidecars(&j, &to.0).unwrap().imported, 6);
    for r in &want {
        assert_eq!(receipt_from_row(&j.get_dispatch(&r.dispatch_id).unwrap().unwrap()).as_ref(), Some(r));
    }
    let leftovers: Vec<_> = std::fs::read_dir(to.dir("goal-1")).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(leftovers.iter().all(|n| !n.to_string_lossy().contains(".tmp") && !n.to_string_lossy().contains(".lock")));
}

#[test]
fn an_equal_receipt_is_a_replay_and_only_a_retry_at_the_next_attempt_replaces_a_failure() {
    let root = Root::new("cas");
    let failed = receipt("goal-1", "state-v1", STAGE, "retryable_failure", 2);
    let path = file_of(&root, "goal-1", &failed);
    assert_eq!(mirror_receipt(&root.0, "goal-1", &typed(&failed), SHORT), Ok(MirrorOutcome::Written));
    // LoopX compares values: another formatting of the same receipt is a replay, left as it is.
    std::fs::write(&path, failed.to_string()).unwrap();
    assert_eq!(mirror_receipt(&root.0, "goal-1", &typed(&failed), SHORT), Ok(MirrorOutcome::Replayed));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), failed.to_string());

    let skipped = receipt("goal-1", "state-v1", STAGE, "retryable_failure", 4);
    assert_eq!(mirror_receipt(&root.0, "goal-1", &typed(&skipped), SHORT), Err(MirrorError::ReceiptConflict));
    let mut moved = receipt("goal-1", "state-v1", STAGE, "retryable_failure", 3);
    moved["recorded_at"] = json!("2026-09-03T00:00:00Z");
    assert_eq!(mirror_receipt(&root.0, "goal-1", &typed(&moved), SHORT), Err(MirrorError::ReceiptConflict));
    let done = receipt("goal-1", "state-v1", STAGE, "intent_recorded", 3);
    assert_eq!(mirror_receipt(&root.0, "goal-1", &typed(&done), SHORT), Ok(MirrorOutcome::Written));
    // A terminal receipt is never replaced, not even by a later attempt.
    let after = receipt("goal-1", "state-v1", STAGE, "not_applicable", 4);
    assert_eq!(mirror_receipt(&root.0, "goal-1", &typed(&after), SHORT), Err(MirrorError::ReceiptConflict));
    let on_disk: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(on_disk, done);
    // A file that is not JSON is no receipt to replace.
    std::fs::write(&path, "{").unwrap();
    assert_eq!(mirror_receipt(&root.0, "goal-1", &typed(&done), SHORT), Err(MirrorError::ReceiptConflict));
}

#[test]
fn a_live_writer_holding_the_lock_times_out_and_a_dead_ones_lock_is_reclaimed() {
    let root = Root::new("lock");
    let r = receipt("goal-1", "state-v1", STAGE, "not_applicable", 1);
    let path = file_of(&root, "goal-1", &r);
    let lock = std::path::PathBuf::from(format!("{}.ts-effect.lock", path.display()));
    std::fs::write(&lock, json!({ "pid": std::process::id(), "token": "python-live-owner" }).to_string()).unwrap();
    assert_eq!(mirror_receipt(&root.0, "goal-1", &typed(&r), SHORT), Err(MirrorError::LockAcquireTimeout));
    assert_eq!(MirrorError::LockAcquireTimeout.code(), "lock_acquire_timeout");
    assert!(!path.exists());
    assert!(lock.exists(), "another owner's lock is not ours to remove");

    // The owner releases it while we wait: the write goes through.
    let holder = {
        let lock = lock.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            std::fs::remove_file(lock).unwrap();
        })
    };
    assert_eq!(mirror_receipt(&root.0, "goal-1", &typed(&r), Duration::from_secs(5)), Ok(MirrorOutcome::Written));
    holder.join().unwrap();
    assert!(!lock.exists());

    // An owner that is gone does not hold the receipt forever.
    let r2 = receipt("goal-1", "state-v2", STAGE, "not_applicable", 1);
    let lock2 = format!("{}.ts-effect.lock", file_of(&root, "goal-1", &r2).display());
    std::fs::write(&lock2, json!({ "pid": 999_999_999u32, "token": "dead-writer" }).to_string()).unwrap();
    assert_eq!(mirror_receipt(&root.0, "goal-1", &typed(&r2), SHORT), Ok(MirrorOutcome::Written));
    assert!(!std::path::Path::new(&lock2).exists());
}

#[test]
fn a_goal_id_that_cannot_name_a_folder_is_refused() {
    let root = Root::new("goal");
    let r = typed(&receipt("goal-1", "state-v1", STAGE, "not_applicable", 1));
    for goal in ["../up", "", "-x", "a/b"] {
        assert_eq!(mirror_receipt(&root.0, goal, &r, SHORT), Err(MirrorError::BadGoalId));
    }
    assert!(!root.0.join("goals").exists());
}
