//! The payload-schema subset of contract-v0 section 1: a compiler from raw
//! JSON to [`PayloadSchema`] nodes, and the checker that holds a payload
//! against them (contract-v0 section 2 rules, paths into the payload).
//!
//! Schema choices, each reported as `unsupported_schema` at the JSON Pointer of
//! the schema node that holds the problem (never at the keyword: the contract
//! names the node, and one path per node keeps reports stable):
//! - at most one violation per node, however many problems it has; child nodes
//!   are still walked and report at their own paths;
//! - a node that is not a JSON object (including `true`/`false` schemas and a
//!   non-object `payload_schema`) is a node outside the subset;
//! - no keyword beyond the subset's is accepted: not `$schema`, `$ref`,
//!   `title`, `description`, `pattern`, `oneOf`, and not `minItems` either (the
//!   contract lists only `items`, `maxItems`, `uniqueItems` for arrays; a
//!   lower bound is left to the consumer, so the subset stays closed);
//! - the root must be `type: "object"`; an object or array node deeper than 8
//!   levels (root = 1) is reported and not walked further; scalars do not count
//!   as a level;
//! - object: `properties` (names are tokens, not credential-like), `required`
//!   (strings naming each property exactly once, nothing else) and
//!   `additionalProperties: false` are all required, also for `{}` properties;
//! - array: `items`, `maxItems` in 0..=32; `uniqueItems` optional boolean;
//! - integer: `minimum` and `maximum` required, safe integers, min <= max;
//! - string: exactly one of `enum` (1+ unique tokens, none credential-like,
//!   since no payload string could match one) or `format: "opaque_ref"`;
//! - an integral float (`2.0`) is the integer it denotes, as in payloads.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use super::report::{child, index, Report};
use super::{grammar, shape};
use crate::contract::{
    PayloadArraySchema, PayloadBooleanSchema, PayloadEnumSchema, PayloadIntegerSchema, PayloadObjectSchema,
    PayloadOpaqueRefSchema, PayloadSchema, Rule, MAX_SAFE_INTEGER, PAYLOAD_MAX_ITEMS, PAYLOAD_SCHEMA_MAX_DEPTH,
};

/// Compiles the payload schema at `path`, recording one `unsupported_schema`
/// per offending node. Returns the schema only when no violation was found.
pub fn compile_payload_schema(r: &mut Report, v: &Value, path: &str) -> Option<PayloadObjectSchema> {
    match node(r, v, path, 1, true)? {
        PayloadSchema::Object(root) => Some(root),
        // `node` marks a non-object root, so this is unreachable; stay total.
        _ => {
            r.add(path, Rule::UnsupportedSchema);
            None
        }
    }
}

/// A token usable as a property name or enum value inside a schema.
fn schema_token(s: &str) -> bool {
    s.len() <= grammar::TOKEN_MAX && grammar::is_token(s) && !grammar::is_credential_like(s)
}

/// An integral number in `min..=max`, without reporting (the caller reports
/// `unsupported_schema` at the node instead).
fn bound(v: Option<&Value>, min: i64, max: i64) -> Option<i64> {
    shape::integer(&mut Report::new(), v?, "", min, max)
}

fn only_keys(m: &Map<String, Value>, allowed: &[&str]) -> bool {
    m.keys().all(|k| allowed.contains(&k.as_str()))
}

fn node(r: &mut Report, v: &Value, path: &str, depth: usize, root: bool) -> Option<PayloadSchema> {
    let Value::Object(m) = v else {
        r.add(path, Rule::UnsupportedSchema);
        return None;
    };
    let ty = m.get("type").and_then(Value::as_str);
    let container = matches!(ty, Some("object" | "array"));
    if container && depth > PAYLOAD_SCHEMA_MAX_DEPTH {
        r.add(path, Rule::UnsupportedSchema);
        return None;
    }
    // Node-level checks first, so a node's violation precedes its children's.
    let mut bad = root && ty != Some("object");
    let scalar = match ty {
        Some("object") => return object(r, m, path, depth, bad),
        Some("array") => return array(r, m, path, depth, bad),
        Some("integer") => {
            bad |= !only_keys(m, &["type", "minimum", "maximum"]);
            let minimum = bound(m.get("minimum"), -MAX_SAFE_INTEGER, MAX_SAFE_INTEGER);
            let maximum = bound(m.get("maximum"), -MAX_SAFE_INTEGER, MAX_SAFE_INTEGER);
            match (minimum, maximum) {
                (Some(minimum), Some(maximum)) if minimum <= maximum => {
                    Some(PayloadSchema::Integer(PayloadIntegerSchema { r#type: Default::default(), minimum, maximum }))
                }
                _ => None,
            }
        }
        Some("boolean") => Some(PayloadSchema::Boolean(PayloadBooleanSchema { r#type: Default::default() }))
            .filter(|_| only_keys(m, &["type"])),
        Some("string") => {
            bad |= !only_keys(m, &["type", "enum", "format"]);
            match (m.get("enum"), m.get("format")) {
                (Some(values), None) => enum_values(values)
                    .map(|values| PayloadSchema::Enum(PayloadEnumSchema { r#type: Default::default(), values })),
                (None, Some(Value::String(f))) if f == "opaque_ref" => {
                    Some(PayloadSchema::OpaqueRef(PayloadOpaqueRefSchema {
                        r#type: Default::default(),
                        format: Default::default(),
                    }))
                }
                _ => None,
            }
        }
        // No type, or one outside the subset (`null`, `number`, a list...).
        _ => None,
    };
    bad |= scalar.is_none();
    if bad {
        r.add(path, Rule::UnsupportedSchema);
        return None;
    }
    scalar
}

/// `enum`: 1+ unique schema tokens.
fn enum_values(v: &Value) -> Option<Vec<String>> {
    let Value::Array(items) = v else { return None };
    let mut seen = BTreeSet::new();
    let mut values: Vec<String> = Vec::with_capacity(items.len());
    for item in items {
        let s = item.as_str().filter(|s| schema_token(s))?;
        if !seen.insert(s) {
            return None;
        }
        values.push(s.to_owned());
    }
    (!values.is_empty()).then_some(values)
}

fn object(r: &mut Report, m: &Map<String, Value>, path: &str, depth: usize, mut bad: bool) -> Option<PayloadSchema> {
    bad |= !only_keys(m, &["type", "properties", "required", "additionalProperties"]);
    bad |= m.get("additionalProperties") != Some(&Value::Bool(false));
    let props = m.get("properties").and_then(Value::as_object);
    bad |= props.is_none_or(|p| !p.keys().all(|k| schema_token(k)));
    let mut required = Vec::new();
    match (m.get("required"), props) {
        (Some(Value::Array(names)), Some(p)) => {
            let mut seen = BTreeSet::new();
            for name in names {
                match name.as_str() {
                    Some(s) if p.contains_key(s) && seen.insert(s) => required.push(s.to_owned()),
                    _ => bad = true,
                }
            }
            bad |= required.len() != p.len();
        }
        (Some(Value::Array(_)), None) => {}
        _ => bad = true,
    }
    if bad {
        r.add(path, Rule::UnsupportedSchema);
    }
    let mut properties = BTreeMap::new();
    let mut clean = !bad;
    if let Some(p) = props {
        let base = child(path, "properties");
        for (name, sub) in p {
            match node(r, sub, &child(&base, name), depth + 1, false) {
                Some(n) => {
                    properties.insert(name.clone(), n);
                }
                None => clean = false,
            }
        }
    }
    clean.then(|| {
        PayloadSchema::Object(PayloadObjectSchema {
            r#type: Default::default(),
            properties,
            required,
            additional_properties: false,
        })
    })
}

fn array(r: &mut Report, m: &Map<String, Value>, path: &str, depth: usize, mut bad: bool) -> Option<PayloadSchema> {
    bad |= !only_keys(m, &["type", "items", "maxItems", "uniqueItems"]);
    let max_items = bound(m.get("maxItems"), 0, i64::from(PAYLOAD_MAX_ITEMS));
    bad |= max_items.is_none();
    let unique_items = match m.get("uniqueItems") {
        None => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => {
            bad = true;
            None
        }
    };
    let items = m.get("items");
    bad |= items.is_none();
    if bad {
        r.add(path, Rule::UnsupportedSchema);
    }
    let items = node(r, items?, &child(path, "items"), depth + 1, false);
    if bad {
        return None;
    }
    Some(PayloadSchema::Array(PayloadArraySchema {
        r#type: Default::default(),
        items: Box::new(items?),
        max_items: u32::try_from(max_items?).ok()?,
        unique_items,
    }))
}

/// Records every violation of `v` against an object schema, with paths under
/// `path`. Unknown members are reported first (in the payload's key order),
/// then each property in name order.
pub fn check_payload(schema: &PayloadObjectSchema, r: &mut Report, v: &Value, path: &str) {
    check_object(schema, r, v, path);
}

fn check_object(schema: &PayloadObjectSchema, r: &mut Report, v: &Value, path: &str) {
    let Value::Object(m) = v else {
        r.add(path, Rule::WrongType);
        return;
    };
    for key in m.keys() {
        if !schema.properties.contains_key(key) {
            shape::unknown_member(r, path, key);
        }
    }
    for (name, sub) in &schema.properties {
        let at = child(path, name);
        match m.get(name) {
            Some(value) => check(sub, r, value, &at),
            None => r.add(&at, Rule::MissingField),
        }
    }
}

fn check(schema: &PayloadSchema, r: &mut Report, v: &Value, path: &str) {
    match schema {
        PayloadSchema::Object(o) => check_object(o, r, v, path),
        PayloadSchema::Array(a) => {
            // `too_many_items` at the array; items are still each checked.
            let Some(items) = shape::array(r, v, path, 0, a.max_items as usize) else { return };
            if a.unique_items == Some(true) {
                // Only the first maxItems + 1 items are compared: past that the
                // array is already rejected, and comparing every pair of an
                // unbounded array would be quadratic in provider input.
                let compared = &items[..items.len().min(a.max_items as usize + 1)];
                for (i, item) in compared.iter().enumerate() {
                    if compared[..i].iter().any(|earlier| json_eq(earlier, item)) {
                        r.add(&index(path, i), Rule::DuplicateItem);
                    }
                }
            }
            for (i, item) in items.iter().enumerate() {
                check(&a.items, r, item, &index(path, i));
            }
        }
        PayloadSchema::Integer(n) => {
            shape::integer(r, v, path, n.minimum, n.maximum);
        }
        PayloadSchema::Boolean(_) => {
            shape::boolean(r, v, path);
        }
        PayloadSchema::Enum(e) => {
            if let Some(s) = shape::string(r, v, path) {
                if !e.values.iter().any(|allowed| allowed == s) {
                    r.add(path, Rule::NotAllowedValue);
                }
            }
        }
        PayloadSchema::OpaqueRef(_) => {
            shape::opaque_ref(r, v, path);
        }
    }
}

/// JSON equality (numbers by value, so `1 == 1.0`). Iterative, so a deeply
/// nested payload item cannot exhaust the stack.
pub fn json_eq(a: &Value, b: &Value) -> bool {
    let mut pending = vec![(a, b)];
    while let Some((a, b)) = pending.pop() {
        let same = match (a, b) {
            (Value::Null, Value::Null) => true,
            (Value::Bool(x), Value::Bool(y)) => x == y,
            (Value::String(x), Value::String(y)) => x == y,
            (Value::Number(x), Value::Number(y)) => number_eq(x, y),
            (Value::Array(x), Value::Array(y)) => {
                pending.extend(x.iter().zip(y));
                x.len() == y.len()
            }
            (Value::Object(x), Value::Object(y)) => {
                x.len() == y.len()
                    && x.iter().all(|(k, xv)| match y.get(k) {
                        Some(yv) => {
                            pending.push((xv, yv));
                            true
                        }
                        None => false,
                    })
            }
            _ => false,
        };
        if !same {
            return false;
        }
    }
    true
}

fn number_eq(x: &serde_json::Number, y: &serde_json::Number) -> bool {
    if x.is_f64() || y.is_f64() {
        return x.as_f64() == y.as_f64();
    }
    match (x.as_i64(), y.as_i64()) {
        (Some(a), Some(b)) => a == b,
        // Past i64: equal only as the same u64 (a negative never equals one).
        _ => x.as_u64().is_some() && x.as_u64() == y.as_u64(),
    }
}

#[cfg(test)]
mod tests;
