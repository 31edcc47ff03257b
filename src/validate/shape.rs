//! Shape checks of contract-v0 sections 1 and 2 over raw JSON. Each records
//! its violations in a `Report` and returns the value only when it is valid,
//! so callers can go on collecting violations elsewhere in the document.

use serde_json::{Map, Value};

use super::grammar::{
    is_credential_like, is_opaque_ref, is_policy_version, is_timestamp, is_token, OPAQUE_REF_MAX, POLICY_VERSION_MAX,
    TOKEN_MAX,
};
use super::report::{child, Report};
use crate::contract::Rule;

/// A string, with the credential check every public-safe string gets.
pub fn string<'a>(r: &mut Report, v: &'a Value, path: &str) -> Option<&'a str> {
    match v {
        Value::String(s) => {
            if is_credential_like(s) {
                r.add(path, Rule::CredentialLikeValue);
                return None;
            }
            Some(s)
        }
        _ => {
            r.add(path, Rule::WrongType);
            None
        }
    }
}

/// A string of a grammar: `too_long` past `max` bytes, else `rule` when the
/// grammar does not match (a dialect's too-short string included).
pub(crate) fn bounded_grammar<'a>(
    r: &mut Report,
    v: &'a Value,
    path: &str,
    max: usize,
    ok: fn(&str) -> bool,
    rule: Rule,
) -> Option<&'a str> {
    let s = string(r, v, path)?;
    if s.len() > max {
        r.add(path, Rule::TooLong);
        None
    } else if !ok(s) {
        r.add(path, rule);
        None
    } else {
        Some(s)
    }
}

/// A token of at most 128 bytes (`too_long` past that, else `bad_token`).
pub fn token<'a>(r: &mut Report, v: &'a Value, path: &str) -> Option<&'a str> {
    bounded_grammar(r, v, path, TOKEN_MAX, is_token, Rule::BadToken)
}

/// An opaque ref of at most 128 bytes (`too_long` past that, else `bad_opaque_ref`).
pub fn opaque_ref<'a>(r: &mut Report, v: &'a Value, path: &str) -> Option<&'a str> {
    bounded_grammar(r, v, path, OPAQUE_REF_MAX, is_opaque_ref, Rule::BadOpaqueRef)
}

pub fn policy_version<'a>(r: &mut Report, v: &'a Value, path: &str) -> Option<&'a str> {
    bounded_grammar(r, v, path, POLICY_VERSION_MAX, is_policy_version, Rule::BadPolicyVersion)
}

pub fn timestamp<'a>(r: &mut Report, v: &'a Value, path: &str) -> Option<&'a str> {
    let s = string(r, v, path)?;
    if is_timestamp(s) {
        Some(s)
    } else {
        r.add(path, Rule::BadTimestamp);
        None
    }
}

/// A digest-shaped id: `prefix` + 64 lowercase hex digits. Anything else is
/// `bad_opaque_ref` (it is an opaque ref whose grammar core fixes).
pub fn digest_id<'a>(r: &mut Report, v: &'a Value, path: &str, prefix: &str) -> Option<&'a str> {
    digest_id_or(r, v, path, prefix, Rule::BadOpaqueRef)
}

/// A recomputed id (contract-v0 section 2): a string that is not `prefix` +
/// 64 lowercase hex cannot equal its digest, so it is `mismatch`, the rule a
/// wrong digest gets.
pub fn recomputed_id<'a>(r: &mut Report, v: &'a Value, path: &str, prefix: &str, mismatch: Rule) -> Option<&'a str> {
    digest_id_or(r, v, path, prefix, mismatch)
}

fn digest_id_or<'a>(r: &mut Report, v: &'a Value, path: &str, prefix: &str, rule: Rule) -> Option<&'a str> {
    let s = string(r, v, path)?;
    let ok = s
        .strip_prefix(prefix)
        .is_some_and(|hex| hex.len() == 64 && hex.bytes().all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c)));
    if ok {
        Some(s)
    } else {
        r.add(path, rule);
        None
    }
}

/// The exact schema_version string of a contract.
pub fn schema_version(r: &mut Report, v: &Value, path: &str, expected: &str) {
    if let Some(s) = string(r, v, path) {
        if s != expected {
            r.add(path, Rule::BadSchemaVersion);
        }
    }
}

/// A value from a closed set (`not_allowed_value` outside it).
pub fn one_of<T>(r: &mut Report, v: &Value, path: &str, parse: fn(&str) -> Option<T>) -> Option<T> {
    let s = string(r, v, path)?;
    let parsed = parse(s);
    if parsed.is_none() {
        r.add(path, Rule::NotAllowedValue);
    }
    parsed
}

/// An integer in `min..=max`. Non-integral numbers are `wrong_type`; an
/// integral float such as `1.0` is the integer it denotes, as in JSON Schema.
pub fn integer(r: &mut Report, v: &Value, path: &str, min: i64, max: i64) -> Option<i64> {
    let Value::Number(n) = v else {
        r.add(path, Rule::WrongType);
        return None;
    };
    let value = if let Some(i) = n.as_i64() {
        i as f64
    } else if let Some(u) = n.as_u64() {
        u as f64
    } else {
        n.as_f64().unwrap_or(f64::NAN)
    };
    if !value.is_finite() || value.fract() != 0.0 {
        r.add(path, Rule::WrongType);
        return None;
    }
    if value < min as f64 || value > max as f64 {
        r.add(path, Rule::OutOfRange);
        return None;
    }
    Some(value as i64)
}

pub fn boolean(r: &mut Report, v: &Value, path: &str) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        _ => {
            r.add(path, Rule::WrongType);
            None
        }
    }
}

/// An object with exactly `fields`: `unknown_field` at each extra member,
/// `missing_field` where each absent one would stand.
pub fn object<'a>(r: &mut Report, v: &'a Value, path: &str, fields: &[&str]) -> Option<&'a Map<String, Value>> {
    let Value::Object(map) = v else {
        r.add(path, Rule::WrongType);
        return None;
    };
    let mut known = 0;
    for key in map.keys() {
        if fields.contains(&key.as_str()) {
            known += 1;
        } else {
            unknown_member(r, path, key);
        }
    }
    // Map keys are distinct: as many of them among `fields` as `fields` has
    // entries means none is missing, so only otherwise is each looked up.
    if known < fields.len() {
        for field in fields {
            if !map.contains_key(*field) {
                r.add(&child(path, field), Rule::MissingField);
            }
        }
    }
    Some(map)
}

/// A member the contract does not define: `unknown_field`, or, when its name
/// is credential-like, `credential_like_value` at the redacted path
/// (`.../~0redacted~0`), so no report repeats the name.
pub fn unknown_member(r: &mut Report, path: &str, key: &str) {
    let rule = if is_credential_like(key) { Rule::CredentialLikeValue } else { Rule::UnknownField };
    r.add(&child(path, key), rule);
}

/// An array of `min..=max` items (`too_few_items` / `too_many_items` at the
/// array). The items are returned even when the count is off, so each item is
/// still checked.
pub fn array<'a>(r: &mut Report, v: &'a Value, path: &str, min: usize, max: usize) -> Option<&'a [Value]> {
    let Value::Array(items) = v else {
        r.add(path, Rule::WrongType);
        return None;
    };
    if items.len() < min {
        r.add(path, Rule::TooFewItems);
    } else if items.len() > max {
        r.add(path, Rule::TooManyItems);
    }
    Some(items)
}

/// Marks every repeat of an earlier string item `duplicate_item`, at the repeat.
/// Linear (a set of the strings seen), since an over-long provider array is
/// still walked item by item.
pub fn unique_strings(r: &mut Report, items: &[Value], path: &str) {
    // The contract's arrays hold at most 32 items: comparing them pairwise is
    // cheaper than hashing.
    if items.len() <= 32 {
        for (i, item) in items.iter().enumerate() {
            if let Value::String(s) = item {
                if items[..i].iter().any(|earlier| earlier.as_str() == Some(s)) {
                    r.add(&super::report::index(path, i), Rule::DuplicateItem);
                }
            }
        }
        return;
    }
    let mut seen = std::collections::HashSet::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        if let Value::String(s) = item {
            if !seen.insert(s.as_str()) {
                r.add(&super::report::index(path, i), Rule::DuplicateItem);
            }
        }
    }
}

/// An array of valid tokens, bounded and duplicate-free; returns the valid ones.
pub fn token_array<'a>(r: &mut Report, v: &'a Value, path: &str, min: usize, max: usize) -> Vec<&'a str> {
    let Some(items) = array(r, v, path, min, max) else { return Vec::new() };
    unique_strings(r, items, path);
    items.iter().enumerate().filter_map(|(i, item)| token(r, item, &super::report::index(path, i))).collect()
}

/// A bounded array whose string items must be unique, each item paired with
/// its pointer, so callers can apply their own item rule (a token, a closed
/// set, a digest id) and still report at `/path/i`.
pub fn unique_array<'a>(r: &mut Report, v: &'a Value, path: &str, min: usize, max: usize) -> Vec<(String, &'a Value)> {
    let Some(items) = array(r, v, path, min, max) else { return Vec::new() };
    unique_strings(r, items, path);
    items.iter().enumerate().map(|(i, item)| (super::report::index(path, i), item)).collect()
}

/// `v` with every integral float (`1.0`) written as the integer it denotes.
/// `integer` accepts such floats, as JSON Schema does, but serde will not
/// deserialize `1.0` into a `u32`; an accepted document goes through this
/// before `Report::finish`. Borrowed when there is nothing to rewrite.
pub fn integral_numbers(v: &Value) -> std::borrow::Cow<'_, Value> {
    fn has_integral_float(v: &Value) -> bool {
        match v {
            Value::Number(n) => {
                n.is_f64() && n.as_f64().is_some_and(|f| f.fract() == 0.0 && f.abs() <= 9_007_199_254_740_991.0)
            }
            Value::Array(items) => items.iter().any(has_integral_float),
            Value::Object(map) => map.values().any(has_integral_float),
            _ => false,
        }
    }
    fn rewrite(v: &mut Value) {
        match v {
            Value::Number(n) => {
                if let Some(f) =
                    n.as_f64().filter(|f| n.is_f64() && f.fract() == 0.0 && f.abs() <= 9_007_199_254_740_991.0)
                {
                    *v = Value::from(f as i64);
                }
            }
            Value::Array(items) => items.iter_mut().for_each(rewrite),
            Value::Object(map) => map.values_mut().for_each(rewrite),
            _ => {}
        }
    }
    if !has_integral_float(v) {
        return std::borrow::Cow::Borrowed(v);
    }
    let mut owned = v.clone();
    rewrite(&mut owned);
    std::borrow::Cow::Owned(owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tokens_are_bounded() {
        let mut r = Report::new();
        assert!(token(&mut r, &json!("a".repeat(128)), "").is_some());
        assert!(token(&mut r, &json!("a".repeat(129)), "/x").is_none());
        assert_eq!(r.violations()[0].rule, Rule::TooLong);
    }

    #[test]
    fn unique_array_and_integral_numbers() {
        let mut r = Report::new();
        let doc = json!(["a", "b", "a"]);
        let items = unique_array(&mut r, &doc, "/x", 1, 2);
        assert_eq!(items.iter().map(|(p, _)| p.as_str()).collect::<Vec<_>>(), ["/x/0", "/x/1", "/x/2"]);
        let rules: Vec<_> = r.violations().iter().map(|v| (v.path.as_str(), v.rule)).collect();
        assert_eq!(rules, vec![("/x", Rule::TooManyItems), ("/x/2", Rule::DuplicateItem)]);
        let floats = json!({"a": [1.0, 1.5], "b": 2});
        assert_eq!(*integral_numbers(&floats), json!({"a": [1, 1.5], "b": 2}));
        assert!(matches!(integral_numbers(&json!({"b": 2})), std::borrow::Cow::Borrowed(_)));
    }

    #[test]
    fn integers() {
        let mut r = Report::new();
        assert_eq!(integer(&mut r, &json!(1.0), "", 1, 4), Some(1));
        assert_eq!(integer(&mut r, &json!(1.5), "/a", 1, 4), None);
        assert_eq!(integer(&mut r, &json!(5), "/b", 1, 4), None);
        assert_eq!(integer(&mut r, &json!("1"), "/c", 1, 4), None);
        let rules: Vec<_> = r.violations().iter().map(|v| (v.path.as_str(), v.rule)).collect();
        assert_eq!(rules, vec![("/a", Rule::WrongType), ("/b", Rule::OutOfRange), ("/c", Rule::WrongType)]);
    }
}
