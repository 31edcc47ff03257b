use serde_json::{json, Value};

use super::*;

const U: Rule = Rule::UnsupportedSchema;
const SAFE: i64 = (1 << 53) - 1;

fn p(path: &str, rule: Rule) -> (String, Rule) {
    (path.to_owned(), rule)
}

fn compile(schema: &Value) -> (Option<PayloadObjectSchema>, Vec<(String, Rule)>) {
    let mut r = Report::new();
    let compiled = compile_payload_schema(&mut r, schema, "/payload_schema");
    let found: Vec<_> = r.into_violations().into_iter().map(|v| (v.path, v.rule)).collect();
    assert_eq!(compiled.is_some(), found.is_empty(), "compiled iff clean: {found:?}");
    (compiled, found)
}

fn accepted(schema: &Value) -> PayloadObjectSchema {
    let (compiled, found) = compile(schema);
    assert!(found.is_empty(), "{schema}: {found:?}");
    compiled.unwrap()
}

fn rejected(schema: &Value) -> Vec<(String, Rule)> {
    compile(schema).1
}

/// An object schema requiring every property of `props`.
fn obj(props: Value) -> Value {
    let required: Vec<String> = props.as_object().unwrap().keys().cloned().collect();
    json!({"type": "object", "properties": props, "required": required, "additionalProperties": false})
}

/// A root holding `node` at property `a`.
fn root(node: Value) -> Value {
    obj(json!({"a": node}))
}

const AT_A: &str = "/payload_schema/properties/a";

fn opaque() -> Value {
    json!({"type": "string", "format": "opaque_ref"})
}

fn int(min: Value, max: Value) -> Value {
    json!({"type": "integer", "minimum": min, "maximum": max})
}

/// `levels` nested object schemas (root included), each holding the next at `a`.
fn nested_objects(levels: usize) -> Value {
    let mut node = obj(json!({"leaf": {"type": "boolean"}}));
    for _ in 1..levels {
        node = root(node);
    }
    node
}

/// The pointer of the object at `level` (1 = root) in `nested_objects`.
fn level_path(level: usize) -> String {
    format!("/payload_schema{}", "/properties/a".repeat(level - 1))
}

// ---- the subset: accepted shapes ----

#[test]
fn every_node_kind_is_accepted_and_round_trips_through_the_typed_form() {
    let schema = obj(json!({
        "flag": {"type": "boolean"},
        "count": int(json!(0), json!(10)),
        "mode": {"type": "string", "enum": ["fast", "slow.v2"]},
        "ref": opaque(),
        "refs": {"type": "array", "items": opaque(), "maxItems": 32, "uniqueItems": false},
        "grid": {"type": "array", "items": {"type": "array", "items": {"type": "boolean"}, "maxItems": 0}, "maxItems": 2},
        "empty": obj(json!({}))
    }));
    let compiled = accepted(&schema);
    assert_eq!(serde_json::to_value(&compiled).unwrap(), schema);
    let typed: PayloadSchema = serde_json::from_value(schema.clone()).unwrap();
    assert_eq!(typed, PayloadSchema::Object(compiled));
}

#[test]
fn integral_floats_are_integers_in_bounds() {
    let compiled = accepted(&root(json!({"type": "array", "items": int(json!(-1.0), json!(2.0)), "maxItems": 3.0})));
    let PayloadSchema::Array(a) = &compiled.properties["a"] else { panic!() };
    assert_eq!(a.max_items, 3);
    assert_eq!(
        *a.items,
        PayloadSchema::Integer(PayloadIntegerSchema { r#type: Default::default(), minimum: -1, maximum: 2 })
    );
}

// ---- bounds: just inside and just outside ----

#[test]
fn depth_eight_is_accepted_nine_is_not() {
    accepted(&nested_objects(8));
    assert_eq!(rejected(&nested_objects(9)), vec![p(&level_path(9), U)]);
    assert_eq!(rejected(&nested_objects(12)), vec![p(&level_path(9), U)]);
    // Arrays count as levels too: 7 objects + 1 array of booleans is 8 ...
    let mut eight = json!({"type": "array", "items": {"type": "boolean"}, "maxItems": 1});
    for _ in 1..8 {
        eight = root(eight);
    }
    accepted(&eight);
    // ... and an array whose items are an object at level 9 is too deep.
    let mut nine = json!({"type": "array", "items": obj(json!({})), "maxItems": 1});
    for _ in 1..8 {
        nine = root(nine);
    }
    assert_eq!(rejected(&nine), vec![p(&format!("{}/items", level_path(8)), U)]);
}

#[test]
fn max_items_is_required_and_at_most_32() {
    let arr = |max: Value| root(json!({"type": "array", "items": opaque(), "maxItems": max}));
    accepted(&arr(json!(32)));
    accepted(&arr(json!(0)));
    for bad in [json!(33), json!(-1), json!(1.5), json!("3"), json!(null)] {
        assert_eq!(rejected(&arr(bad.clone())), vec![p(AT_A, U)], "{bad}");
    }
    assert_eq!(rejected(&root(json!({"type": "array", "items": opaque()}))), vec![p(AT_A, U)]);
    assert_eq!(rejected(&root(json!({"type": "array", "maxItems": 1}))), vec![p(AT_A, U)]);
}

#[test]
fn min_items_is_outside_the_subset() {
    assert_eq!(
        rejected(&root(json!({"type": "array", "items": opaque(), "maxItems": 2, "minItems": 1}))),
        vec![p(AT_A, U)]
    );
}

#[test]
fn unique_items_is_an_optional_boolean() {
    accepted(&root(json!({"type": "array", "items": opaque(), "maxItems": 2, "uniqueItems": true})));
    assert_eq!(
        rejected(&root(json!({"type": "array", "items": opaque(), "maxItems": 2, "uniqueItems": "yes"}))),
        vec![p(AT_A, U)]
    );
}

#[test]
fn integer_bounds_are_safe_integers() {
    accepted(&root(int(json!(-SAFE), json!(SAFE))));
    accepted(&root(int(json!(5), json!(5))));
    for (min, max) in [
        (json!(-SAFE - 1), json!(0)),
        (json!(0), json!(SAFE + 1)),
        (json!(-9_007_199_254_740_992.0), json!(0)),
        (json!(u64::MAX), json!(u64::MAX)),
        (json!(2), json!(1)),
        (json!(0.5), json!(1)),
        (json!("0"), json!(1)),
    ] {
        assert_eq!(rejected(&root(int(min.clone(), max.clone()))), vec![p(AT_A, U)], "{min}..{max}");
    }
    assert_eq!(rejected(&root(json!({"type": "integer", "minimum": 0}))), vec![p(AT_A, U)]);
    assert_eq!(rejected(&root(json!({"type": "integer", "maximum": 0}))), vec![p(AT_A, U)]);
}

#[test]
fn string_enum_holds_unique_tokens() {
    let e = |values: Value| root(json!({"type": "string", "enum": values}));
    accepted(&e(json!(["a"])));
    accepted(&e(json!(["fast", "slow.v2", "a".repeat(128)])));
    for bad in [
        json!(["Fast"]),
        json!(["fast", "SLOW"]),
        json!([]),
        json!(["a", "a"]),
        json!([1]),
        json!(["a b"]),
        json!(["a".repeat(129)]),
        json!(["npm_token"]),
        json!("fast"),
    ] {
        assert_eq!(rejected(&e(bad.clone())), vec![p(AT_A, U)], "{bad}");
    }
}

#[test]
fn string_needs_exactly_one_of_enum_or_opaque_ref_format() {
    accepted(&root(opaque()));
    for bad in [
        json!({"type": "string"}),
        json!({"type": "string", "format": "uri"}),
        json!({"type": "string", "format": "opaque_ref", "enum": ["a"]}),
        json!({"type": "string", "format": "opaque_ref", "maxLength": 8}),
        json!({"type": "string", "pattern": "^[a-z]+$"}),
    ] {
        assert_eq!(rejected(&root(bad.clone())), vec![p(AT_A, U)], "{bad}");
    }
}

#[test]
fn keywords_and_types_outside_the_subset() {
    for bad in [
        json!({"$ref": "#/$defs/x"}),
        json!({"type": "boolean", "description": "prose"}),
        json!({"type": "boolean", "title": "t"}),
        json!({"oneOf": [{"type": "boolean"}]}),
        json!({"type": "number"}),
        json!({"type": "null"}),
        json!({"type": ["string", "null"]}),
        json!({"type": "integer", "minimum": 0, "maximum": 1, "multipleOf": 1}),
        json!({}),
        json!(true),
        json!(null),
    ] {
        assert_eq!(rejected(&root(bad.clone())), vec![p(AT_A, U)], "{bad}");
    }
}

#[test]
fn root_must_be_an_object_schema() {
    for bad in [
        json!("object"),
        json!(true),
        json!({"type": "array", "items": {"type": "boolean"}, "maxItems": 1}),
        json!({"type": "boolean"}),
        json!({"type": "string", "format": "opaque_ref"}),
    ] {
        assert_eq!(rejected(&bad), vec![p("/payload_schema", U)], "{bad}");
    }
    let mut with_meta = root(json!({"type": "boolean"}));
    with_meta["$schema"] = json!("https://json-schema.org/draft/2020-12/schema");
    assert_eq!(rejected(&with_meta), vec![p("/payload_schema", U)]);
}

#[test]
fn object_nodes_are_closed_and_require_every_property() {
    let base = || root(obj(json!({"x": {"type": "boolean"}, "y": {"type": "boolean"}})));
    accepted(&base());
    let edits: Vec<(&str, Value)> = vec![
        ("required", json!(["x"])),
        ("required", json!(["x", "y", "z"])),
        ("required", json!(["x", "x", "y"])),
        ("required", json!(["x", 1])),
        ("required", json!("x")),
        ("additionalProperties", json!(true)),
        ("additionalProperties", json!({})),
        ("properties", json!([])),
    ];
    for (keyword, value) in edits {
        let mut schema = base();
        schema["properties"]["a"][keyword] = value.clone();
        assert_eq!(rejected(&schema), vec![p(AT_A, U)], "{keyword}: {value}");
    }
    for missing in ["required", "additionalProperties", "properties"] {
        let mut schema = base();
        schema["properties"]["a"].as_object_mut().unwrap().remove(missing);
        assert_eq!(rejected(&schema), vec![p(AT_A, U)], "{missing}");
    }
    // Order of `required` is free.
    let mut reordered = base();
    reordered["properties"]["a"]["required"] = json!(["y", "x"]);
    accepted(&reordered);
}

#[test]
fn property_names_are_tokens_and_children_are_still_walked() {
    // The bad name is the object node's problem; the child reports at its own
    // (escaped) pointer.
    let schema = json!({
        "type": "object",
        "properties": {"a/b": {"type": "number"}, "Ok": {"type": "boolean"}, "npm_x": {"type": "boolean"}},
        "required": ["a/b", "Ok", "npm_x"],
        "additionalProperties": false
    });
    // A credential-like name is no schema token; its node's path is redacted.
    assert_eq!(rejected(&schema), vec![p("/payload_schema", U), p("/payload_schema/properties/a~1b", U)]);
    let mut bad_child = schema.clone();
    bad_child["properties"]["npm_x"] = json!({"type": "number"});
    assert_eq!(
        rejected(&bad_child),
        vec![
            p("/payload_schema", U),
            p("/payload_schema/properties/a~1b", U),
            p("/payload_schema/properties/~0redacted~0", U)
        ]
    );
}

#[test]
fn one_violation_per_node_and_every_node_reported() {
    let schema = json!({
        "type": "object",
        "properties": {
            "a": {"type": "integer", "minimum": 2, "maximum": 1, "description": "d", "format": "x"},
            "b": {"type": "array", "items": {"type": "string", "pattern": "x"}, "maxItems": 99, "minItems": 1},
            "c": {"type": "boolean"}
        },
        "required": ["a"],
        "additionalProperties": true,
        "title": "t"
    });
    assert_eq!(
        rejected(&schema),
        vec![
            p("/payload_schema", U),
            p("/payload_schema/properties/a", U),
            p("/payload_schema/properties/b", U),
            p("/payload_schema/properties/b/items", U),
        ]
    );
}

// ---- payloads ----

fn rich() -> PayloadObjectSchema {
    accepted(&obj(json!({
        "flag": {"type": "boolean"},
        "count": int(json!(0), json!(10)),
        "mode": {"type": "string", "enum": ["fast", "slow"]},
        "ref": opaque(),
        "refs": {"type": "array", "items": opaque(), "maxItems": 2, "uniqueItems": true},
        "nums": {"type": "array", "items": int(json!(-5), json!(5)), "maxItems": 4, "uniqueItems": true},
        "any": {"type": "array", "items": int(json!(0), json!(9)), "maxItems": 4},
        "nested": obj(json!({"inner": {"type": "boolean"}})),
        "pairs": {"type": "array", "items": obj(json!({"k": opaque()})), "maxItems": 3, "uniqueItems": true}
    })))
}

fn good() -> Value {
    json!({
        "flag": true,
        "count": 10,
        "mode": "slow",
        "ref": "segment_opaque",
        "refs": ["r1", "r2"],
        "nums": [-5, 0, 5],
        "any": [1, 1],
        "nested": {"inner": false},
        "pairs": [{"k": "a"}, {"k": "b"}]
    })
}

const BASE: &str = "/intents/0/payload";

fn check(payload: &Value) -> Vec<(String, Rule)> {
    let mut r = Report::new();
    check_payload(&rich(), &mut r, payload, BASE);
    r.into_violations().into_iter().map(|v| (v.path, v.rule)).collect()
}

fn at(rel: &str, rule: Rule) -> (String, Rule) {
    p(&format!("{BASE}{rel}"), rule)
}

fn edit(field: &str, value: Value) -> Value {
    let mut v = good();
    v[field] = value;
    v
}

#[test]
fn a_valid_payload_passes() {
    assert_eq!(check(&good()), vec![]);
    assert_eq!(check(&edit("count", json!(2.0))), vec![]);
    assert_eq!(check(&edit("count", json!(0))), vec![]);
    assert_eq!(check(&edit("refs", json!([]))), vec![]);
}

#[test]
fn missing_and_unknown_members() {
    assert_eq!(check(&json!([])), vec![p(BASE, Rule::WrongType)]);
    let mut v = good();
    v.as_object_mut().unwrap().remove("mode");
    v["nested"] = json!({"inner": true, "outer": 1});
    v["zz_extra"] = json!("x");
    v["Extra/1"] = json!(1);
    assert_eq!(
        check(&v),
        vec![
            at("/Extra~11", Rule::UnknownField),
            at("/zz_extra", Rule::UnknownField),
            at("/mode", Rule::MissingField),
            at("/nested/outer", Rule::UnknownField),
        ]
    );
    assert_eq!(check(&edit("nested", json!({}))), vec![at("/nested/inner", Rule::MissingField)]);
}

#[test]
fn wrong_types() {
    let v = json!({
        "flag": "true",
        "count": "1",
        "mode": 1,
        "ref": null,
        "refs": "r1",
        "nums": [true],
        "any": {},
        "nested": [],
        "pairs": [["k"]]
    });
    assert_eq!(
        check(&v),
        vec![
            at("/any", Rule::WrongType),
            at("/count", Rule::WrongType),
            at("/flag", Rule::WrongType),
            at("/mode", Rule::WrongType),
            at("/nested", Rule::WrongType),
            at("/nums/0", Rule::WrongType),
            at("/pairs/0", Rule::WrongType),
            at("/ref", Rule::WrongType),
            at("/refs", Rule::WrongType),
        ]
    );
}

#[test]
fn non_integral_and_out_of_range() {
    assert_eq!(check(&edit("count", json!(1.5))), vec![at("/count", Rule::WrongType)]);
    assert_eq!(check(&edit("count", json!(11))), vec![at("/count", Rule::OutOfRange)]);
    assert_eq!(check(&edit("count", json!(-1))), vec![at("/count", Rule::OutOfRange)]);
    assert_eq!(check(&edit("count", json!(u64::MAX))), vec![at("/count", Rule::OutOfRange)]);
    assert_eq!(
        check(&edit("nums", json!([-6, 6, 0.5]))),
        vec![at("/nums/0", Rule::OutOfRange), at("/nums/1", Rule::OutOfRange), at("/nums/2", Rule::WrongType)]
    );
}

#[test]
fn array_bounds_and_duplicates() {
    assert_eq!(
        check(&edit("refs", json!(["x", "y", "x"]))),
        vec![at("/refs", Rule::TooManyItems), at("/refs/2", Rule::DuplicateItem)]
    );
    // JSON equality: 1 and 1.0 are the same value; every repeat is reported.
    assert_eq!(
        check(&edit("nums", json!([1, 1.0, 2, 1]))),
        vec![at("/nums/1", Rule::DuplicateItem), at("/nums/3", Rule::DuplicateItem)]
    );
    assert_eq!(
        check(&edit("pairs", json!([{"k": "a"}, {"k": "b"}, {"k": "a"}]))),
        vec![at("/pairs/2", Rule::DuplicateItem)]
    );
    // Past the bound only the first maxItems + 1 items are compared.
    assert_eq!(
        check(&edit("refs", json!(["x", "y", "y", "x", "x"]))),
        vec![at("/refs", Rule::TooManyItems), at("/refs/2", Rule::DuplicateItem)]
    );
    // Without uniqueItems repeats are fine; the bound still holds.
    assert_eq!(check(&edit("any", json!([1, 1, 1, 1, 1]))), vec![at("/any", Rule::TooManyItems)]);
}

#[test]
fn enum_values() {
    assert_eq!(check(&edit("mode", json!("medium"))), vec![at("/mode", Rule::NotAllowedValue)]);
    assert_eq!(check(&edit("mode", json!("FAST"))), vec![at("/mode", Rule::NotAllowedValue)]);
    assert_eq!(check(&edit("mode", json!("ghp_x"))), vec![at("/mode", Rule::CredentialLikeValue)]);
}

#[test]
fn opaque_refs_reject_paths_urls_mail_and_credentials() {
    for bad in ["/a/b", "https://x", "a@b", "a b", "", "100%"] {
        assert_eq!(check(&edit("ref", json!(bad))), vec![at("/ref", Rule::BadOpaqueRef)], "{bad}");
    }
    assert_eq!(check(&edit("ref", json!("ghp_x"))), vec![at("/ref", Rule::CredentialLikeValue)]);
    assert_eq!(check(&edit("ref", json!("AKIAIOSFODNN7EXAMPLE"))), vec![at("/ref", Rule::CredentialLikeValue)]);
    assert_eq!(check(&edit("ref", json!("a".repeat(128)))), vec![]);
    assert_eq!(check(&edit("ref", json!("a".repeat(129)))), vec![at("/ref", Rule::TooLong)]);
    assert_eq!(
        check(&edit("pairs", json!([{"k": "https://x"}, {"k": "sk-live"}]))),
        vec![at("/pairs/0/k", Rule::BadOpaqueRef), at("/pairs/1/k", Rule::CredentialLikeValue)]
    );
}

#[test]
fn json_equality_is_by_value() {
    assert!(json_eq(&json!(1), &json!(1.0)));
    assert!(json_eq(&json!(-0.0), &json!(0)));
    assert!(json_eq(&json!({"a": [1, {"b": null}], "c": "x"}), &json!({"c": "x", "a": [1.0, {"b": null}]})));
    assert!(!json_eq(&json!([1, 2]), &json!([1, 2, 3])));
    assert!(!json_eq(&json!({"a": 1}), &json!({"b": 1})));
    assert!(!json_eq(&json!(-1), &json!(u64::MAX)));
    assert!(json_eq(&json!(u64::MAX), &json!(u64::MAX)));
    assert!(!json_eq(&json!("1"), &json!(1)));
    assert!(!json_eq(&json!(null), &json!(false)));
}
