//! `outbox_events` rebuilds the intent document in SQL for CDC readers,
//! which never run this build's code; `dispatch::intent_from_stored` is the
//! one definition of that document. On rows of varied stored documents the
//! view's payload must be exactly what `intent_from_stored` builds.

use serde_json::{json, Value};

use super::super::super::tests::{checkpoint, dispatch_id, hex, intent_id};
use super::super::super::{FinalRecord, FinalStatus, IntentFilter, IntentRow, RecordOutcome};
use super::super::tests::Schema;
use crate::contract::Dialect;
use crate::dialect::with_intent_doc;
use crate::journal::Checkpoint;

/// A stored document as `dispatch::stored_intent` writes it.
fn stored(op: &str, policy: &str, payload: Value, budget: (u32, u32), scope: &[&str]) -> String {
    serde_json::to_string(&(op, policy, payload, budget, scope)).unwrap()
}

#[test]
fn the_outbox_events_payload_is_the_document_intent_from_stored_builds() {
    let docs = [
        stored("report.create", "v1", json!({}), (1, 1), &[]),
        stored(
            "report.update",
            "policy \"2\"",
            json!({"title": "Ünïcødé \"quoted\" \\ back\nslash", "n": 3, "f": 1.5, "neg": -7, "ok": true, "none": null}),
            (5, 65536),
            &["reports", "reports/archive"],
        ),
        stored(
            "x",
            "v",
            json!({"nested": {"list": [1, [2, {"deep": []}], "x"]}, "big": 9007199254740993u64}),
            (3, 10),
            &["s"],
        ),
    ];
    let s = Schema::new("view");
    let j = s.open();
    j.checkpoint(checkpoint("v")).wait().unwrap();
    let intents = docs
        .iter()
        .enumerate()
        .map(|(n, doc)| IntentRow {
            intent_id: intent_id(&format!("v{n}")),
            capability_id: "weekly_digest".into(),
            intent_kind: format!("kind_{n}"),
            stored_json: doc.clone(),
        })
        .collect();
    let record = FinalRecord {
        dispatch_id: dispatch_id("v"),
        attempt: 1,
        status: FinalStatus::Proposed,
        result_digest: Some(hex("v")),
        intents,
        failure: None,
    };
    assert_eq!(j.record_final(record).wait(), Ok(RecordOutcome::Recorded));
    // A loopx-shipped-v0 dispatch's intent is built in its own dialect.
    let shipped = Checkpoint {
        dialect: Dialect::LoopxShippedV0,
        recorded_at: Some("2026-09-02T12:00:00Z".into()),
        receipt_id: "pwr_1e21e6cc20ec36025f486859".into(),
        capability_id: "periodic-report".into(),
        ..checkpoint("w")
    };
    j.checkpoint(shipped).wait().unwrap();
    let stored = json!(["periodic-report:stage-1", "pwr_1e21e6cc20ec36025f486859", {"stage": "s", "n": 1.5}]);
    let record = FinalRecord {
        dispatch_id: dispatch_id("w"),
        attempt: 1,
        status: FinalStatus::Proposed,
        result_digest: Some(hex("w")),
        intents: vec![IntentRow {
            intent_id: intent_id("w0"),
            capability_id: "periodic-report".into(),
            intent_kind: "weekly_digest.deliver".into(),
            stored_json: stored.to_string(),
        }],
        failure: None,
    };
    assert_eq!(j.record_final(record).wait(), Ok(RecordOutcome::Recorded));

    let rows = j.list_intents(&IntentFilter::default()).unwrap().items;
    let view = s.sql("SELECT id, aggregatetype, aggregateid, type, payload::text FROM outbox_events");
    assert_eq!((rows.len(), view.len()), (docs.len() + 1, docs.len() + 1));
    for i in &rows {
        let r = view.iter().find(|r| r.get::<_, String>(0) == i.intent_id).expect("the intent is in the view");
        let doc = with_intent_doc(i.clone()).doc_json.expect("a stored document");
        let expected: Value = serde_json::from_str(&doc).unwrap();
        let payload: Value = serde_json::from_str(&r.get::<_, String>(4)).unwrap();
        assert_eq!(payload, expected, "{}", i.intent_kind);
        let columns: (String, String, String) = (r.get(1), r.get(2), r.get(3));
        assert_eq!(columns, (i.capability_id.clone(), i.dispatch_id.clone(), i.intent_kind.clone()));
    }
}
