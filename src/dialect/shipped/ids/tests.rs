use serde_json::{json, Value};

use super::*;
use crate::dialect::shipped::pyjson::testkit::{python, Rng, PRELUDE};
use crate::identity::sha256_hex;

/// The design page's worked example.
fn worked_example() -> EventFacts<'static> {
    EventFacts {
        event_kind: "refresh_state",
        goal_id: "goal-1",
        agent_id: "agent-\u{1f600}",
        todo_id: Some("todo-1"),
        turn_instance_id: "turn-1",
        effect_id: "effect-1",
        state_version: "state-v1",
        receipt_id: None,
        committed_at: "2026-09-02T12:00:00Z",
    }
}

#[test]
fn worked_example_ids() {
    let event = event_id(&worked_example());
    assert_eq!(event, "pwr_1e21e6cc20ec36025f486859");
    let dispatch = dispatch_id(&event, "refresh_state", "periodic_report.stage_completion", "periodic-report", "v0");
    assert_eq!(dispatch, "pwh_bd119d54eba68a96ecd93c21ff3565283decd8c1e3746d2d9ab1bfc621098933");
}

/// Pins every key of both hashed objects and the escaped astral character.
#[test]
fn pre_images_by_hand() {
    let facts = concat!(
        r#"{"committed_at":"2026-09-02T12:00:00Z","event_kind":"refresh_state","#,
        r#""identity":{"agent_id":"agent-\ud83d\ude00","effect_id":"effect-1","goal_id":"goal-1","#,
        r#""todo_id":"todo-1","turn_instance_id":"turn-1"},"state_version":"state-v1"}"#,
    );
    assert_eq!(event_id(&worked_example()), format!("pwr_{}", &sha256_hex(facts.as_bytes())[..24]));

    let no_todo = EventFacts { todo_id: None, receipt_id: Some("rcpt-1"), ..worked_example() };
    let facts = concat!(
        r#"{"event_kind":"refresh_state","#,
        r#""identity":{"agent_id":"agent-\ud83d\ude00","effect_id":"effect-1","goal_id":"goal-1","#,
        r#""todo_id":null,"turn_instance_id":"turn-1"},"receipt_id":"rcpt-1","state_version":"state-v1"}"#,
    );
    assert_eq!(event_id(&no_todo), format!("pwr_{}", &sha256_hex(facts.as_bytes())[..24]));

    let object = concat!(
        r#"{"capability_id":"cap","event_kind":"todo_complete","hook_id":"h.one","policy_version":"v2","#,
        r#""registration_schema":"loopx_post_writeback_capability_hook_registration_v0","#,
        r#""source_receipt_id":"pwr_x"}"#,
    );
    assert_eq!(
        dispatch_id("pwr_x", "todo_complete", "h.one", "cap", "v2"),
        format!("pwh_{}", sha256_hex(object.as_bytes()))
    );
}

#[test]
fn receipt_id_replaces_the_clock() {
    let base = worked_example();
    let later = EventFacts { committed_at: "2026-09-03T00:00:00Z", ..base };
    assert_ne!(event_id(&base), event_id(&later));
    let with_receipt = EventFacts { receipt_id: Some("rcpt-1"), ..base };
    let with_receipt_later = EventFacts { receipt_id: Some("rcpt-1"), ..later };
    assert_eq!(event_id(&with_receipt), event_id(&with_receipt_later));
    assert_ne!(event_id(&with_receipt), event_id(&base));
    // a null todo is hashed as null, not as an empty or missing id
    assert_ne!(event_id(&EventFacts { todo_id: None, ..base }), event_id(&EventFacts { todo_id: Some(""), ..base }));
}

#[test]
fn policy_version_rotates_the_dispatch_id() {
    let a = dispatch_id("pwr_1", "refresh_state", "h.one", "cap", "v0");
    assert_ne!(a, dispatch_id("pwr_1", "refresh_state", "h.one", "cap", "v1"));
    assert_eq!(a.len(), 68);
    assert!(a[4..].bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')));
}

/// Python derives both ids from generated sources by the design page's
/// definition; the Rust ids must equal them.
#[test]
fn generated_ids_match_python() {
    let mut rng = Rng::new(0x1d5);
    let mut sources = Vec::new();
    for _ in 0..300 {
        let field = |rng: &mut Rng| if rng.below(3) == 0 { rng.string() } else { format!("id-{}", rng.below(1000)) };
        let source = json!({
            "event_kind": if rng.below(2) == 0 { "refresh_state".to_owned() } else { field(&mut rng) },
            "identity": {
                "goal_id": field(&mut rng),
                "agent_id": field(&mut rng),
                "todo_id": if rng.below(3) == 0 { Value::Null } else { json!(field(&mut rng)) },
                "turn_instance_id": field(&mut rng),
                "effect_id": field(&mut rng),
            },
            "state_version": field(&mut rng),
            "receipt_id": if rng.below(2) == 0 { Value::Null } else { json!(field(&mut rng)) },
            "committed_at": field(&mut rng),
            "hook_id": field(&mut rng),
            "capability_id": field(&mut rng),
            "policy_version": field(&mut rng),
        });
        sources.push(source);
    }
    let script = format!(
        r#"{PRELUDE}
def sha(v):
    return hashlib.sha256(dumps(v).encode("utf-8")).hexdigest()
out = []
for s in data:
    facts = {{"event_kind": s["event_kind"], "identity": s["identity"], "state_version": s["state_version"]}}
    if s["receipt_id"] is None:
        facts["committed_at"] = s["committed_at"]
    else:
        facts["receipt_id"] = s["receipt_id"]
    event = "pwr_" + sha(facts)[:24]
    dispatch = "pwh_" + sha({{"source_receipt_id": event, "event_kind": s["event_kind"], "hook_id": s["hook_id"],
        "capability_id": s["capability_id"], "registration_schema": "{REGISTRATION_SCHEMA}",
        "policy_version": s["policy_version"]}})
    out.append([event, dispatch])
print(json.dumps(out))
"#
    );
    let expected = python(&script, &Value::Array(sources.clone()));
    let expected = expected.as_array().expect("a list");
    assert_eq!(expected.len(), sources.len());
    for (s, pair) in sources.iter().zip(expected) {
        let text = |v: &Value| v.as_str().expect("a string field").to_owned();
        let id = &s["identity"];
        let (goal, agent, turn, effect) =
            (text(&id["goal_id"]), text(&id["agent_id"]), text(&id["turn_instance_id"]), text(&id["effect_id"]));
        let (kind, state, committed) = (text(&s["event_kind"]), text(&s["state_version"]), text(&s["committed_at"]));
        let facts = EventFacts {
            event_kind: &kind,
            goal_id: &goal,
            agent_id: &agent,
            todo_id: id["todo_id"].as_str(),
            turn_instance_id: &turn,
            effect_id: &effect,
            state_version: &state,
            receipt_id: s["receipt_id"].as_str(),
            committed_at: &committed,
        };
        let event = event_id(&facts);
        assert_eq!(event, pair[0], "event id of {s}");
        let dispatch =
            dispatch_id(&event, &kind, &text(&s["hook_id"]), &text(&s["capability_id"]), &text(&s["policy_version"]));
        assert_eq!(dispatch, pair[1], "dispatch id of {s}");
    }
}
