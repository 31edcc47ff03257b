//! The shipped dialect's grammars as checks over raw JSON, on top of the
//! crate's `shape` walkers (which give every string the credential check).
//! The shipped token differs from contract-v0's: 3 to 96 characters, and
//! hyphens and colons allowed (`periodic-report`).

use serde_json::{Map, Value};

use crate::contract::Rule;
use crate::dialect::shipped::pyjson::py_strip;
use crate::validate::grammar::is_credential_like;
use crate::validate::{child, index, shape, Report};

pub const TOKEN_MAX: usize = 96;
pub const POLICY_VERSION_MAX: usize = 96;
pub const GOAL_ID_MAX: usize = 200;

fn tail_ok(c: &u8) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, b'_' | b'.' | b':' | b'-')
}

/// `^[a-z][a-z0-9_.:-]{2,95}$` (the journal checks stored ids with it too).
pub fn is_token(s: &str) -> bool {
    crate::validate::grammar::is_shipped_token(s)
}

/// `^[a-z0-9][a-z0-9_.:-]{1,95}$`.
pub fn is_policy_version(s: &str) -> bool {
    let b = s.as_bytes();
    (2..=POLICY_VERSION_MAX).contains(&b.len())
        && (b[0].is_ascii_lowercase() || b[0].is_ascii_digit())
        && b[1..].iter().all(tail_ok)
}

/// `^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$`: a goal id names a folder.
pub fn is_goal_id(s: &str) -> bool {
    let b = s.as_bytes();
    (1..=GOAL_ID_MAX).contains(&b.len())
        && b[0].is_ascii_alphanumeric()
        && b[1..].iter().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-'))
}

pub fn token<'a>(r: &mut Report, v: &'a Value, path: &str) -> Option<&'a str> {
    shape::bounded_grammar(r, v, path, TOKEN_MAX, is_token, Rule::BadToken)
}

pub fn policy_version<'a>(r: &mut Report, v: &'a Value, path: &str) -> Option<&'a str> {
    shape::bounded_grammar(r, v, path, POLICY_VERSION_MAX, is_policy_version, Rule::BadPolicyVersion)
}

/// A token that must equal the admitted `expected` (`mismatch` otherwise).
pub fn bound_token(r: &mut Report, v: &Value, path: &str, expected: &str, mismatch: Rule) {
    if token(r, v, path).is_some_and(|s| s != expected) {
        r.add(path, mismatch);
    }
}

/// A duplicate-free array of `min..=max` tokens; returns the valid ones.
pub fn token_array<'a>(r: &mut Report, v: &'a Value, path: &str, min: usize, max: usize) -> Vec<&'a str> {
    shape::unique_array(r, v, path, min, max).into_iter().filter_map(|(p, item)| token(r, item, &p)).collect()
}

/// A write scope: a token array of at most 8, which must be empty, so each
/// item is a scope the dialect does not admit (`not_allowed_value`).
pub fn empty_write_scope(r: &mut Report, v: &Value, path: &str) {
    for (p, item) in shape::unique_array(r, v, path, 0, 8) {
        if token(r, item, &p).is_some() {
            r.add(&p, Rule::NotAllowedValue);
        }
    }
}

/// A string that is not empty once Python's `str.strip()` is applied;
/// returns the stripped value (`empty_value` when nothing is left).
pub fn stripped<'a>(r: &mut Report, v: &'a Value, path: &str) -> Option<&'a str> {
    let s = py_strip(shape::string(r, v, path)?);
    if s.is_empty() {
        r.add(path, Rule::EmptyValue);
        return None;
    }
    Some(s)
}

/// Whether nothing is left of `s` once JavaScript's `String.prototype.trim`
/// is applied: LoopX's TypeScript boundary checks that on top of Python's
/// strip, and the two sets differ (JavaScript's holds U+FEFF, Python's
/// U+001C..U+001F and U+0085).
pub fn js_blank(s: &str) -> bool {
    s.chars().all(|c| {
        matches!(c, '\u{9}'..='\u{d}' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'..='\u{200a}')
            || matches!(c, '\u{2028}' | '\u{2029}' | '\u{202f}' | '\u{205f}' | '\u{3000}' | '\u{feff}')
    })
}

/// A stripped goal id of the folder grammar.
pub fn goal_id<'a>(r: &mut Report, v: &'a Value, path: &str) -> Option<&'a str> {
    let s = stripped(r, v, path)?;
    if s.len() > GOAL_ID_MAX {
        r.add(path, Rule::TooLong);
        None
    } else if !is_goal_id(s) {
        r.add(path, Rule::BadOpaqueRef);
        None
    } else {
        Some(s)
    }
}

/// `true`, the only value the field admits (`not_allowed_value` for `false`).
pub fn must_be(r: &mut Report, v: &Value, path: &str, expected: bool) {
    if shape::boolean(r, v, path).is_some_and(|b| b != expected) {
        r.add(path, Rule::NotAllowedValue);
    }
}

/// An object with every `required` member and any of `optional`, nothing else.
pub fn object<'a>(
    r: &mut Report,
    v: &'a Value,
    path: &str,
    required: &[&str],
    optional: &[&str],
) -> Option<&'a Map<String, Value>> {
    let Value::Object(map) = v else {
        r.add(path, Rule::WrongType);
        return None;
    };
    for key in map.keys() {
        if !required.contains(&key.as_str()) && !optional.contains(&key.as_str()) {
            shape::unknown_member(r, path, key);
        }
    }
    for field in required {
        if !map.contains_key(*field) {
            r.add(&child(path, field), Rule::MissingField);
        }
    }
    Some(map)
}

/// A free-form value (a projection, a payload): core checks no schema, but
/// no string in it, member name or value, may be credential-like. Walked
/// with an explicit stack, so a deep value cannot exhaust the thread's.
pub fn credential_free(r: &mut Report, v: &Value, path: &str) {
    let mut stack = vec![(path.to_owned(), v)];
    while let Some((at, value)) = stack.pop() {
        if r.is_full() {
            // Past the reported ones only a count is kept: finish counting
            // cheaply without building pointers.
            r.add_count(count_credentials(value));
            continue;
        }
        match value {
            Value::String(s) if is_credential_like(s) => r.add(&at, Rule::CredentialLikeValue),
            Value::Array(items) => {
                stack.extend(items.iter().enumerate().rev().map(|(i, item)| (index(&at, i), item)));
            }
            Value::Object(map) => {
                for (key, item) in map.iter().rev() {
                    let member = child(&at, key);
                    if is_credential_like(key) {
                        r.add(&member, Rule::CredentialLikeValue);
                    }
                    stack.push((member, item));
                }
            }
            _ => {}
        }
    }
}

fn count_credentials(v: &Value) -> usize {
    let mut n = 0;
    let mut stack = vec![v];
    while let Some(value) = stack.pop() {
        match value {
            Value::String(s) => n += usize::from(is_credential_like(s)),
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => {
                n += map.keys().filter(|k| is_credential_like(k)).count();
                stack.extend(map.values());
            }
            _ => {}
        }
    }
    n
}

/// A free-form object: `wrong_type` unless an object, then `credential_free`.
pub fn free_object<'a>(r: &mut Report, v: &'a Value, path: &str) -> Option<&'a Map<String, Value>> {
    let Value::Object(map) = v else {
        r.add(path, Rule::WrongType);
        return None;
    };
    credential_free(r, v, path);
    Some(map)
}

/// The size rule of the shipped dialect: the UTF-8 length of the compact
/// `JSON.stringify` text of the document as received. RFC 8785's text has
/// the same length (it only orders members), so the crate's
/// `canonical_len` measures it.
pub fn json_len(v: &Value) -> usize {
    crate::canonical::canonical_len(v)
}
