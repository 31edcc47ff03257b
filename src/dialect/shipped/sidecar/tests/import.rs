use serde_json::json;

use super::*;
use crate::dialect::shipped::engine::receipt_from_row;
use crate::dialect::shipped::sidecar::import::{result_digest, IMPORTED_REGISTRATION_DIGEST};
use crate::dialect::shipped::sidecar::{import_sidecars, Reason};
use crate::journal::tests::{both, Backend};
use crate::journal::{DispatchFilter, DispatchRow, DispatchState, Journal};

fn rows(j: &Journal) -> Vec<DispatchRow> {
    j.list_dispatches(&DispatchFilter { limit: 1000, ..Default::default() }).unwrap().items
}

/// Every expected refusal of `loopx_folder`, in folder order: the foreign
/// files (`notes.txt`, the retry log, a temp file) are not listed.
fn expected_refusals() -> Vec<(String, &'static str)> {
    let mut misnamed =
        receipt("goal-1", "state-v3", STAGE, "not_applicable", 1)["dispatch_id"].as_str().unwrap().to_owned();
    misnamed.push_str(".json");
    let over = format!(
        "{}.json",
        receipt("goal-1", "state-v4", STAGE, "retryable_failure", 1)["dispatch_id"].as_str().unwrap()
    );
    let mut goal1 = vec![
        (format!("pwh_{}.json", "a".repeat(64)), "not_json"),
        (format!("pwh_{}.json", "c".repeat(64)), "not_a_regular_file"),
        (misnamed, "name_mismatch"),
        (over, "invalid_receipt"),
    ];
    goal1.sort();
    let mut all = vec![("post_writeback_hooks".to_owned(), "bad_goal_id")];
    all.extend(goal1);
    all
}

fn imports_every_receipt_with_its_ids_statuses_and_attempts(b: &Backend) {
    let root = Root::new("import");
    let valid = loopx_folder(&root);
    let j = b.open();
    let report = import_sidecars(&j, &root.0).unwrap();
    assert_eq!((report.imported, report.already_present), (6, 0));
    let mut got = reasons(&report);
    got.sort();
    let mut want = expected_refusals();
    want.sort();
    assert_eq!(got, want);
    assert_eq!(
        report.rejected.iter().find(|r| r.reason == Reason::InvalidReceipt).unwrap().code.as_deref(),
        Some("out_of_range")
    );
    for r in report.rejected.iter() {
        assert!(r.file.starts_with("goals/") && !r.file.contains(root.0.to_str().unwrap()));
    }
    for v in &valid {
        let want = typed(v);
        let row = j.get_dispatch(&want.dispatch_id).unwrap().expect("imported");
        assert_eq!(receipt_from_row(&row), Some(want.clone()));
        assert_eq!(row.attempts, want.attempt_count);
        assert_eq!(row.registration_digest, IMPORTED_REGISTRATION_DIGEST);
        let state = match v["status"].as_str().unwrap() {
            "intent_recorded" => DispatchState::Proposed,
            "not_applicable" => DispatchState::NotApplicable,
            _ => DispatchState::Failed,
        };
        assert_eq!(row.state, state);
        assert_eq!(row.result_digest, result_digest(&want));
    }
    assert_eq!(rows(&j).len(), 6);
}

fn a_second_import_changes_nothing(b: &Backend) {
    let root = Root::new("twice");
    loopx_folder(&root);
    let j = b.open();
    let first = import_sidecars(&j, &root.0).unwrap();
    let before = rows(&j);
    let second = import_sidecars(&j, &root.0).unwrap();
    assert_eq!((second.imported, second.already_present), (0, 6));
    assert_eq!(second.rejected, first.rejected);
    assert_eq!(rows(&j), before);
}

fn a_file_the_journal_holds_otherwise_is_a_conflict_and_changes_nothing(b: &Backend) {
    let root = Root::new("conflict");
    let valid = loopx_folder(&root);
    let j = b.open();
    import_sidecars(&j, &root.0).unwrap();
    let before = rows(&j);
    let mut changed = valid[0].clone();
    changed["intent"]["payload"]["stage"] = json!("another");
    root.put("goal-1", &changed);
    let mut earlier = valid[2].clone();
    earlier["attempt_count"] = json!(1);
    root.put("goal-1", &earlier);
    let report = import_sidecars(&j, &root.0).unwrap();
    assert_eq!((report.imported, report.already_present), (0, 4));
    let conflicts = report.rejected.iter().filter(|r| r.reason == Reason::Conflict).count();
    assert_eq!(conflicts, 2);
    assert_eq!(rows(&j), before);
}

fn a_later_attempt_of_an_unfinished_identity_is_imported(b: &Backend) {
    let root = Root::new("later");
    let valid = loopx_folder(&root);
    let j = b.open();
    import_sidecars(&j, &root.0).unwrap();
    let mut later = valid[2].clone();
    later["attempt_count"] = json!(3);
    root.put("goal-1", &later);
    let mut done = receipt("goal-1", "state-v2", STAGE, "not_applicable", 4);
    assert_eq!(done["dispatch_id"], later["dispatch_id"]);
    let report = import_sidecars(&j, &root.0).unwrap();
    assert_eq!((report.imported, report.already_present), (1, 5));
    let row = j.get_dispatch(later["dispatch_id"].as_str().unwrap()).unwrap().unwrap();
    assert_eq!((row.state, row.attempts), (DispatchState::Failed, 3));
    done["recorded_at"] = json!("2026-09-02T12:00:00Z");
    root.put("goal-1", &done);
    let report = import_sidecars(&j, &root.0).unwrap();
    assert_eq!((report.imported, report.already_present), (1, 5));
    let row = j.get_dispatch(later["dispatch_id"].as_str().unwrap()).unwrap().unwrap();
    assert_eq!((row.state, row.attempts), (DispatchState::NotApplicable, 4));
}

fn a_journal_that_refuses_the_records_reports_every_identity_and_holds_none(b: &Backend) {
    let root = Root::new("readonly");
    loopx_folder(&root);
    b.open().close();
    let j = b.open_read_only().unwrap();
    let report = import_sidecars(&j, &root.0).unwrap();
    assert_eq!((report.imported, report.already_present), (0, 0));
    let refused: Vec<_> = report.rejected.iter().filter(|r| r.reason == Reason::JournalFailed).collect();
    assert_eq!(refused.len(), 6);
    assert!(refused.iter().all(|r| r.code.as_deref() == Some("journal_read_only")));
    assert!(rows(&j).is_empty());
}

both!(
    imports_every_receipt_with_its_ids_statuses_and_attempts,
    a_journal_that_refuses_the_records_reports_every_identity_and_holds_none,
    a_second_import_changes_nothing,
    a_file_the_journal_holds_otherwise_is_a_conflict_and_changes_nothing,
    a_later_attempt_of_an_unfinished_identity_is_imported,
);

#[test]
fn a_root_without_goals_imports_nothing() {
    let root = Root::new("empty");
    let b = Backend::sqlite("empty");
    let report = import_sidecars(&b.open(), &root.0).unwrap();
    assert_eq!(report, Default::default());
}
