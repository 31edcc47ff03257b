//! The transaction over real sidecar folders: LoopX's golden ids, its
//! key reservations, deep results, the lock budget and the envelope.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{evaluate, Reason, Rejected, REQUEST_SCHEMA_VERSION};
use crate::journal::tests::TempDir;

fn registration(hook_id: &str, max_result_bytes: u32) -> Value {
    json!({
        "schema_version": "loopx_post_writeback_capability_hook_registration_v0",
        "hook_id": hook_id,
        "capability_id": "periodic-report",
        "policy_version": "v0",
        "phase": "post_writeback",
        "event_kinds": ["refresh_state"],
        "intent_kinds": ["periodic_report.trigger_evaluation"],
        "budget": { "max_invocations_per_dispatch": 1, "max_input_bytes": 65536, "max_result_bytes": max_result_bytes },
        "failure_policy": "isolate",
        "requested_read_scope": ["stage_completion"],
        "requested_write_scope": [],
    })
}

fn source() -> Value {
    json!({
        "schema_version": "loopx_post_writeback_hook_source_v0",
        "event_kind": "refresh_state",
        "status": "committed",
        "durable": true,
        "identity": { "goal_id": "goal-1", "agent_id": "agent-1", "todo_id": "todo-1", "turn_instance_id": "turn-1", "effect_id": "effect-1" },
        "state_version": "state-v1",
        "committed_at": "2026-09-02T12:00:00Z",
        "projection": { "stage_completion": { "transition": "goal_terminal" } },
    })
}

fn legacy_input(event_id: &str) -> Value {
    json!({
        "schema_version": "loopx_post_writeback_capability_hook_input_v0",
        "receipt": {
            "schema_version": "loopx_rollout_event_v0", "event_id": event_id, "event_kind": "refresh_state",
            "status": "appended", "recorded_at": "2026-08-30T01:00:00+08:00", "durable": true,
        },
        "identity": { "goal_id": "goal-1", "agent_id": "agent-1", "todo_id": "todo-1", "turn_instance_id": "turn-1", "effect_id": "goal-1:agent-1:todo-1:turn-1" },
        "state_version": "vision-revision-2",
        "projection": { "stage_completion": { "transition": "goal_terminal" } },
    })
}

struct Tx {
    root: Option<String>,
    source: Value,
    hook_input: Value,
    registrations: Vec<Value>,
}

impl Tx {
    fn new(root: Option<&TempDir>, registrations: Vec<Value>) -> Tx {
        let root = root.map(|d| d.file("").to_string_lossy().trim_end_matches('/').to_owned());
        Tx { root, source: source(), hook_input: Value::Null, registrations }
    }

    fn request(&self, phase: &str, transaction_id: Value, outcomes: Vec<Value>) -> String {
        json!({
            "schema_version": REQUEST_SCHEMA_VERSION,
            "phase": phase,
            "runtime_root": self.root,
            "source": self.source,
            "hook_input": self.hook_input,
            "registrations": self.registrations,
            "transaction_id": transaction_id,
            "provider_outcomes": outcomes,
        })
        .to_string()
    }

    fn preflight(&self) -> Value {
        serde_json::from_str(&evaluate(self.request("preflight", Value::Null, vec![]), None).unwrap().text).unwrap()
    }

    fn finalize_text(&self, preflight: &Value, outcomes: Vec<Value>) -> Result<String, Rejected> {
        evaluate(self.request("finalize", preflight["transaction_id"].clone(), outcomes), None).map(|e| e.text)
    }

    fn finalize(&self, preflight: &Value, outcomes: Vec<Value>) -> Value {
        let text = self.finalize_text(preflight, outcomes).unwrap();
        serde_json::from_str::<Value>(&text).unwrap()["dispatch"].clone()
    }
}

fn plans(preflight: &Value) -> Vec<Value> {
    preflight["provider_plan"].as_array().unwrap().clone()
}

fn intent_outcome(plan: &Value, key: &str, payload: Value) -> Value {
    json!({
        "dispatch_id": plan["dispatch_id"], "hook_id": plan["hook_id"], "capability_id": plan["capability_id"],
        "attempt_count": plan["attempt_count"], "status": "returned",
        "result": {
            "schema_version": "loopx_post_writeback_capability_hook_result_v0",
            "hook_id": plan["hook_id"], "capability_id": plan["capability_id"], "phase": "post_writeback", "status": "intent",
            "intent": {
                "schema_version": "loopx_capability_intent_v0", "intent_kind": "periodic_report.trigger_evaluation",
                "idempotency_key": key, "source_receipt_id": plan["hook_input"]["receipt"]["event_id"],
                "payload": payload, "requested_write_scope": [],
            },
        },
    })
}

fn codes(dispatch: &Value) -> Vec<(String, String)> {
    let f = dispatch["failures"].as_array().unwrap();
    f.iter()
        .map(|f| (f["hook_id"].as_str().unwrap().to_owned(), f["error_code"].as_str().unwrap().to_owned()))
        .collect()
}

fn receipt_file(dir: &TempDir, plan: &Value) -> std::path::PathBuf {
    dir.file("goals/goal-1/post_writeback_hooks").join(format!("{}.json", plan["dispatch_id"].as_str().unwrap()))
}

#[test]
fn golden_ids_match_loopx_on_the_source_and_the_legacy_paths() {
    let mut tx = Tx::new(None, vec![registration("periodic_report.stage_completion", 16384)]);
    tx.source["identity"]["agent_id"] = json!("agent-😀");
    let plan = &plans(&tx.preflight())[0];
    assert_eq!(plan["hook_input"]["receipt"]["event_id"], "pwr_1e21e6cc20ec36025f486859");
    assert_eq!(plan["dispatch_id"], "pwh_bd119d54eba68a96ecd93c21ff3565283decd8c1e3746d2d9ab1bfc621098933");

    tx.source = Value::Null;
    for (event_id, dispatch_id) in [
        ("evt-\u{7f}", "pwh_814eeff656b73bb32cdfb8cb56adfdc3df1a51b299fbbfac5b339a56daeee9ce"),
        ("\u{85}evt-\u{feff}\u{85}", "pwh_e1e565a53173e5e5a6d932096699fd022494355a32913f1fb15acd8e0128fd33"),
    ] {
        tx.hook_input = legacy_input(event_id);
        let plan = &plans(&tx.preflight())[0];
        assert_eq!(plan["dispatch_id"], dispatch_id);
        assert_eq!(plan["hook_input"]["receipt"]["event_id"], event_id, "the event id is dispatched as given");
    }
    tx.hook_input["unexpected"] = json!(true);
    let refused = tx.preflight();
    assert_eq!(refused["provider_plan"], json!([]));
    assert_eq!(
        codes(&refused["dispatch"]),
        vec![("periodic_report.stage_completion".into(), "registration_or_input_rejected".into())]
    );
}

#[test]
fn an_id_blank_to_javascripts_trim_is_refused_before_any_provider() {
    let mut tx = Tx::new(None, vec![registration("periodic_report.stage_completion", 16384)]);
    tx.source["identity"]["agent_id"] = json!("\u{feff}");
    let answer = tx.preflight();
    assert_eq!(answer["provider_plan"], json!([]));
    assert_eq!(answer["dispatch"]["failures"][0]["error_code"], "registration_or_input_rejected");
}

#[test]
fn a_result_nested_two_thousand_levels_is_recorded_and_replayed_byte_for_byte() {
    // The test's own building, printing and dropping of the document recurse too.
    let deep = std::thread::Builder::new().stack_size(256 << 20).spawn(deep_result_round_trip).unwrap();
    deep.join().unwrap();
}

fn deep_result_round_trip() {
    let dir = TempDir::new("tx-deep");
    let tx = Tx::new(Some(&dir), vec![registration("periodic_report.a_deep", 65536)]);
    let preflight = tx.preflight();
    let plan = &plans(&preflight)[0];
    let mut payload = json!({ "leaf": true });
    for _ in 0..2_000 {
        payload = json!({ "next": payload });
    }
    let outcomes = vec![intent_outcome(plan, "deep-key", payload)];
    let first = tx.finalize_text(&preflight, outcomes.clone()).unwrap();
    let bytes = std::fs::read(receipt_file(&dir, plan)).unwrap();
    let replay = tx.finalize_text(&preflight, outcomes).unwrap();
    let parse = |text: &str| super::request::parse_deep(text.as_bytes()).unwrap();
    let (first, replay) = (parse(&first), parse(&replay));
    assert_eq!(first["dispatch"]["intent_count"], 1);
    assert_eq!(replay["dispatch"]["failures"], json!([]));
    assert_eq!(replay["dispatch"]["replayed_hooks"], json!(["periodic_report.a_deep"]));
    assert_eq!(first["dispatch"]["intents"].to_string(), replay["dispatch"]["intents"].to_string());
    assert_eq!(std::fs::read(receipt_file(&dir, plan)).unwrap(), bytes);
}

#[test]
fn a_request_deeper_than_the_walk_is_refused_not_a_crash() {
    let deep = format!("{}{}", "[".repeat(super::MAX_DEPTH + 1), "]".repeat(super::MAX_DEPTH + 1));
    let refused = evaluate(deep, None).err().unwrap();
    assert_eq!(refused.reason, Reason::TooDeep);
}

#[test]
fn an_earlier_fresh_hook_keeps_its_key_ahead_of_a_later_terminal_replay() {
    let dir = TempDir::new("tx-keys");
    let terminal = Tx::new(Some(&dir), vec![registration("periodic_report.b", 16384)]);
    let p = terminal.preflight();
    terminal.finalize(&p, vec![intent_outcome(&plans(&p)[0], "shared-key", json!({}))]);

    let both =
        Tx::new(Some(&dir), vec![registration("periodic_report.b", 16384), registration("periodic_report.a", 16384)]);
    let p = both.preflight();
    let fresh = plans(&p);
    assert_eq!(fresh.len(), 1);
    let dispatch = both.finalize(&p, vec![intent_outcome(&fresh[0], "shared-key", json!({}))]);
    assert_eq!(dispatch["intents"][0]["source_receipt_id"], fresh[0]["hook_input"]["receipt"]["event_id"]);
    assert_eq!(dispatch["replayed_hooks"], json!([]));
    assert_eq!(codes(&dispatch), vec![("periodic_report.b".into(), "intent_key_conflict".into())]);
}

#[test]
fn a_held_lock_fails_that_hook_within_the_budget_and_its_key_stays_taken() {
    let dir = TempDir::new("tx-lock");
    let tx = Tx::new(
        Some(&dir),
        vec![registration("periodic_report.a_locked", 16384), registration("periodic_report.b_dup", 16384)],
    );
    let p = tx.preflight();
    let ps = plans(&p);
    let lock = format!("{}.ts-effect.lock", receipt_file(&dir, &ps[0]).display());
    std::fs::create_dir_all(receipt_file(&dir, &ps[0]).parent().unwrap()).unwrap();
    std::fs::write(&lock, json!({ "pid": std::process::id(), "token": "held-by-test" }).to_string()).unwrap();
    let started = Instant::now();
    let dispatch = tx.finalize(&p, ps.iter().map(|plan| intent_outcome(plan, "shared-key", json!({}))).collect());
    assert!(started.elapsed() < Duration::from_secs(4), "the batch shares one lock budget");
    assert_eq!(dispatch["intent_count"], 0);
    assert_eq!(
        codes(&dispatch),
        vec![
            ("periodic_report.a_locked".into(), "journal_write_failed".into()),
            ("periodic_report.b_dup".into(), "intent_key_conflict".into())
        ]
    );
    assert!(!receipt_file(&dir, &ps[0]).exists());
    assert!(std::path::Path::new(&lock).exists(), "another owner's lock is left alone");
    let dup: Value = serde_json::from_slice(&std::fs::read(receipt_file(&dir, &ps[1])).unwrap()).unwrap();
    assert_eq!(
        (dup["status"].as_str(), dup["error_code"].as_str()),
        (Some("retryable_failure"), Some("intent_key_conflict"))
    );
}

#[test]
fn a_malformed_sidecar_is_isolated_before_any_provider_and_kept() {
    let dir = TempDir::new("tx-malformed");
    let tx = Tx::new(Some(&dir), vec![registration("periodic_report.stage_completion", 16384)]);
    let plan = plans(&tx.preflight())[0].clone();
    std::fs::create_dir_all(receipt_file(&dir, &plan).parent().unwrap()).unwrap();
    std::fs::write(receipt_file(&dir, &plan), "{}\n").unwrap();
    let answer = tx.preflight();
    assert_eq!(answer["provider_plan"], json!([]));
    assert_eq!(answer["dispatch"]["failures"][0]["error_code"], "journal_read_failed");
    assert_eq!(std::fs::read_to_string(receipt_file(&dir, &plan)).unwrap(), "{}\n");
}

#[test]
fn the_envelope_is_admitted_before_anything_runs() {
    let many: Vec<Value> = (0..27).map(|i| registration(&format!("periodic_report.h{i:02}"), 65536)).collect();
    let refused = evaluate(Tx::new(None, many).request("preflight", Value::Null, vec![]), None).err().unwrap();
    assert_eq!(refused.reason, Reason::Envelope);

    let dir = TempDir::new("tx-envelope");
    let chunk = Tx::new(Some(&dir), (0..8).map(|i| registration(&format!("periodic_report.h{i}"), 65536)).collect());
    let p = chunk.preflight();
    let outcomes = plans(&p)
        .iter()
        .enumerate()
        .map(|(i, plan)| intent_outcome(plan, &format!("key-{i}"), json!({ "blob": "x".repeat(60_000) })))
        .collect();
    let dispatch = chunk.finalize(&p, outcomes);
    assert_eq!(dispatch["intent_count"], 8);
    assert_eq!(std::fs::read_dir(dir.file("goals/goal-1/post_writeback_hooks")).unwrap().count(), 8);
}

#[test]
fn protocol_faults_are_refused_with_loopxs_messages() {
    let tx = Tx::new(None, vec![registration("periodic_report.stage_completion", 16384)]);
    let p = tx.preflight();
    let uncovered = tx.finalize_text(&p, vec![]).unwrap_err();
    assert!(uncovered.message.contains("do not cover the current provider plan"));

    let mut changed = Tx::new(None, tx.registrations.clone());
    changed.source["state_version"] = json!("state-v2");
    let moved = changed.finalize_text(&p, vec![intent_outcome(&plans(&p)[0], "k", json!({}))]).unwrap_err();
    assert!(moved.message.contains("transaction_id"));

    let mut extra: Value = serde_json::from_str(&tx.request("preflight", Value::Null, vec![])).unwrap();
    extra["unexpected"] = json!(true);
    let unknown = evaluate(extra.to_string(), None).err().unwrap();
    assert!(unknown.message.contains("request fields are invalid"));
    assert_eq!(unknown.reason, Reason::Request);

    let mut stranger = intent_outcome(&plans(&p)[0], "k", json!({}));
    stranger["dispatch_id"] = json!(format!("pwh_{}", "0".repeat(64)));
    let outside = tx.finalize_text(&p, vec![intent_outcome(&plans(&p)[0], "k", json!({})), stranger]).unwrap_err();
    assert!(outside.message.contains("outside this transaction"));
}

#[test]
fn with_a_journal_each_receipt_the_folder_holds_is_imported_and_replays_from_it() {
    use crate::journal::tests::Backend;
    use crate::journal::DispatchState;
    let backend = Backend::sqlite("tx-journal");
    let journal = std::sync::Arc::new(backend.open());
    let dir = TempDir::new("tx-journal-root");
    let tx =
        Tx::new(Some(&dir), vec![registration("periodic_report.a", 16384), registration("periodic_report.b", 16384)]);
    let p = tx.preflight();
    let ps = plans(&p);
    let mut failed = intent_outcome(&ps[1], "k-b", json!({}));
    failed["status"] = json!("producer_failed");
    failed["result"] = Value::Null;
    let outcomes = vec![intent_outcome(&ps[0], "k-a", json!({ "n": 1 })), failed];
    let text = tx.request("finalize", p["transaction_id"].clone(), outcomes);
    let answer = evaluate(text.clone(), Some(journal.clone())).unwrap();
    let steps: Vec<(&str, &str)> = answer.journal.iter().map(|s| (s.dispatch_id.as_str(), s.outcome)).collect();
    let (a, b) = (ps[0]["dispatch_id"].as_str().unwrap(), ps[1]["dispatch_id"].as_str().unwrap());
    assert_eq!(steps, vec![(a, "imported"), (b, "imported")]);
    let row = |id: &str| journal.get_dispatch(id).unwrap().unwrap();
    assert_eq!((row(a).state, row(a).attempts), (DispatchState::Proposed, 1));
    assert_eq!((row(b).state, row(b).attempts), (DispatchState::Failed, 1));

    let again = evaluate(text, Some(journal.clone())).unwrap();
    assert!(again.journal.iter().all(|s| s.outcome == "already_present"), "{:?}", again.journal);
    assert!(evaluate(tx.request("preflight", Value::Null, vec![]), None).is_ok());
}
