use serde_json::{json, Value};

use super::*;
use crate::validate::Violation;

fn pairs(v: impl IntoIterator<Item = Violation>) -> Vec<(String, Rule)> {
    v.into_iter().map(|v| (v.path, v.rule)).collect()
}

fn rejected(doc: &Value) -> Vec<(String, Rule)> {
    pairs(validate_intent_kind_definition(doc).expect_err("definition should be rejected"))
}

fn p(path: &str, rule: Rule) -> (String, Rule) {
    (path.to_owned(), rule)
}

/// The RFC section 8 example kind.
fn rfc_kind() -> Value {
    json!({
        "intent_kind": "periodic_report.trigger_evaluation",
        "capability_id": "periodic_report",
        "operations": ["evaluate_runtime_trigger"],
        "payload_schema": {
            "type": "object",
            "properties": {
                "segment_ref": {"type": "string", "format": "opaque_ref"},
                "source_event_refs": {
                    "type": "array",
                    "items": {"type": "string", "format": "opaque_ref"},
                    "maxItems": 32,
                    "uniqueItems": true
                }
            },
            "required": ["segment_ref", "source_event_refs"],
            "additionalProperties": false
        }
    })
}

fn with(field: &str, value: Value) -> Value {
    let mut doc = rfc_kind();
    doc[field] = value;
    doc
}

#[test]
fn rfc_example_kind_and_payload_are_accepted() {
    let kind = validate_intent_kind_definition(&rfc_kind()).expect("RFC kind");
    assert_eq!(kind.definition.intent_kind, "periodic_report.trigger_evaluation");
    assert_eq!(kind.definition.operations, vec!["evaluate_runtime_trigger"]);
    assert_eq!(kind.definition.payload_schema, rfc_kind()["payload_schema"]);
    assert_eq!(kind.payload_schema().properties.len(), 2);
    let mut r = Report::new();
    kind.check_payload(
        &mut r,
        &json!({"segment_ref": "segment_opaque", "source_event_refs": ["event_opaque"]}),
        "/intents/0/payload",
    );
    assert!(r.is_clean(), "{:?}", r.violations());
}

#[test]
fn integral_float_bounds_are_stored_as_integers() {
    let mut doc = rfc_kind();
    doc["payload_schema"]["properties"]["source_event_refs"]["maxItems"] = json!(32.0);
    let kind = validate_intent_kind_definition(&doc).unwrap();
    assert_eq!(kind.definition.payload_schema, rfc_kind()["payload_schema"]);
    assert_eq!(serde_json::to_value(kind.payload_schema()).unwrap(), kind.definition.payload_schema);
}

#[test]
fn rfc_kind_payload_violations_are_under_the_base_path() {
    let kind = validate_intent_kind_definition(&rfc_kind()).unwrap();
    let mut r = Report::new();
    kind.check_payload(
        &mut r,
        &json!({"segment_ref": "/etc/passwd", "source_event_refs": ["e1", "e1"], "prose": "x"}),
        "/intents/0/payload",
    );
    assert_eq!(
        pairs(r.into_violations()),
        vec![
            p("/intents/0/payload/prose", Rule::UnknownField),
            p("/intents/0/payload/segment_ref", Rule::BadOpaqueRef),
            p("/intents/0/payload/source_event_refs/1", Rule::DuplicateItem),
        ]
    );
}

#[test]
fn exact_fields() {
    let mut doc = rfc_kind();
    doc.as_object_mut().unwrap().remove("payload_schema");
    doc["payload_schma"] = json!({});
    doc.as_object_mut().unwrap().remove("operations");
    assert_eq!(
        rejected(&doc),
        vec![
            p("/payload_schma", Rule::UnknownField),
            p("/operations", Rule::MissingField),
            p("/payload_schema", Rule::MissingField),
        ]
    );
    assert_eq!(rejected(&json!([])), vec![p("", Rule::WrongType)]);
    assert_eq!(
        rejected(&json!({})),
        vec![
            p("/intent_kind", Rule::MissingField),
            p("/capability_id", Rule::MissingField),
            p("/operations", Rule::MissingField),
            p("/payload_schema", Rule::MissingField),
        ]
    );
}

#[test]
fn tokens_and_capability_ownership() {
    assert_eq!(rejected(&with("intent_kind", json!("Periodic_report.x"))), vec![p("/intent_kind", Rule::BadToken)]);
    assert_eq!(rejected(&with("capability_id", json!("periodic-report"))), vec![p("/capability_id", Rule::BadToken)]);
    assert_eq!(rejected(&with("capability_id", json!(7))), vec![p("/capability_id", Rule::WrongType)]);
    assert_eq!(rejected(&with("intent_kind", json!("a".repeat(129)))), vec![p("/intent_kind", Rule::TooLong)]);
    for foreign in ["other.trigger_evaluation", "periodic_reportx.trigger", "periodic_report", "periodic"] {
        assert_eq!(
            rejected(&with("intent_kind", json!(foreign))),
            vec![p("/intent_kind", Rule::CapabilityMismatch)],
            "{foreign}"
        );
    }
    // A nested capability owns its deeper kinds.
    let mut doc = with("capability_id", json!("periodic"));
    doc["intent_kind"] = json!("periodic.report.trigger");
    assert!(validate_intent_kind_definition(&doc).is_ok());
    // 128 bytes is the token bound.
    let long_kind = format!("periodic_report.{}", "a".repeat(128 - "periodic_report.".len()));
    assert!(validate_intent_kind_definition(&with("intent_kind", json!(long_kind))).is_ok());
}

#[test]
fn operations_bounds() {
    let ops = |n: usize| json!((0..n).map(|i| format!("op_{i}")).collect::<Vec<_>>());
    assert!(validate_intent_kind_definition(&with("operations", ops(1))).is_ok());
    assert!(validate_intent_kind_definition(&with("operations", ops(8))).is_ok());
    assert_eq!(rejected(&with("operations", ops(9))), vec![p("/operations", Rule::TooManyItems)]);
    assert_eq!(rejected(&with("operations", ops(0))), vec![p("/operations", Rule::TooFewItems)]);
    assert_eq!(
        rejected(&with("operations", json!(["a", "Op", "a", 3]))),
        vec![
            p("/operations/2", Rule::DuplicateItem),
            p("/operations/1", Rule::BadToken),
            p("/operations/3", Rule::WrongType)
        ]
    );
    assert_eq!(rejected(&with("operations", json!("a"))), vec![p("/operations", Rule::WrongType)]);
    assert_eq!(
        rejected(&with("operations", json!(["npm_publish"]))),
        vec![p("/operations/0", Rule::CredentialLikeValue)]
    );
}

#[test]
fn every_violation_is_collected() {
    let doc = json!({
        "intent_kind": "other.kind",
        "capability_id": "periodic_report",
        "operations": [],
        "payload_schema": {
            "type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "integer", "minimum": 0}},
            "required": ["a", "b"],
            "additionalProperties": false,
            "title": "x"
        },
        "extra": true
    });
    assert_eq!(
        rejected(&doc),
        vec![
            p("/extra", Rule::UnknownField),
            p("/intent_kind", Rule::CapabilityMismatch),
            p("/operations", Rule::TooFewItems),
            p("/payload_schema", Rule::UnsupportedSchema),
            p("/payload_schema/properties/a", Rule::UnsupportedSchema),
            p("/payload_schema/properties/b", Rule::UnsupportedSchema),
        ]
    );
}

#[test]
fn schema_violations_are_unsupported_schema_under_payload_schema() {
    assert_eq!(rejected(&with("payload_schema", json!("object"))), vec![p("/payload_schema", Rule::UnsupportedSchema)]);
    assert_eq!(
        rejected(&with("payload_schema", json!({"type": "array", "items": {"type": "boolean"}, "maxItems": 1}))),
        vec![p("/payload_schema", Rule::UnsupportedSchema)]
    );
}

#[test]
fn intent_kinds_refuse_a_second_definition() {
    let mut kinds = IntentKinds::new();
    let kind = validate_intent_kind_definition(&rfc_kind()).unwrap();
    assert!(kinds.insert(kind.clone()));
    let mut other = rfc_kind();
    other["operations"] = json!(["other_op"]);
    assert!(!kinds.insert(validate_intent_kind_definition(&other).unwrap()));
    assert_eq!(
        kinds.get("periodic_report.trigger_evaluation").unwrap().definition.operations,
        vec!["evaluate_runtime_trigger"]
    );
    let mut second = with("intent_kind", json!("periodic_report.another"));
    second["operations"] = json!(["x"]);
    assert!(kinds.insert(validate_intent_kind_definition(&second).unwrap()));
    let names: Vec<_> = kinds.iter().map(|k| k.definition.intent_kind.as_str()).collect();
    assert_eq!(names, vec!["periodic_report.another", "periodic_report.trigger_evaluation"]);
    assert!(kinds.get("periodic_report.missing").is_none());
}
