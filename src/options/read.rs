//! How an options member is read, and what is said when it is not what its
//! declaration says: the member's path and what it must be, never its value.

use serde_json::{Map, Value};

use crate::contract::Dialect;
use crate::dispatch::ProfileOptions;

/// An options member that is not what its declaration says.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OptionError {
    #[error("{at} must be {expected}")]
    Invalid { at: String, expected: &'static str },
    /// A member the object does not have: refused, never ignored. `named` is
    /// the name given when it is a near miss of a known one, else empty.
    #[error("{at}: unknown option{named} (expected one of: {expected})")]
    Unknown { at: String, named: String, expected: String },
    #[error("{at}: unknown dialect (expected one of: contract-v0, loopx-shipped-v0)")]
    UnknownDialect { at: String },
}

impl OptionError {
    pub fn invalid(at: &str, expected: &'static str) -> Self {
        OptionError::Invalid { at: at.to_owned(), expected }
    }
}

pub(super) fn object(at: &str, value: Value) -> Result<Map<String, Value>, OptionError> {
    match value {
        Value::Object(map) => Ok(map),
        _ => Err(OptionError::invalid(at, "an object")),
    }
}

/// Refuses a member not in `known`. The message lists the known names, and
/// repeats the one given only when it is a misspelling of one of them: a key
/// far from every name may be anything, a secret included.
pub(super) fn only_known(at: &str, map: &Map<String, Value>, known: &[&str]) -> Result<(), OptionError> {
    let Some(key) = map.keys().find(|k| !known.contains(&k.as_str())) else { return Ok(()) };
    let near = known.iter().any(|name| near_miss(key, name));
    Err(OptionError::Unknown {
        at: at.to_owned(),
        named: if near { format!(" '{key}'") } else { String::new() },
        expected: known.join(", "),
    })
}

/// Within two edits of `name`, ignoring case: a misspelling of it.
fn near_miss(key: &str, name: &str) -> bool {
    let (a, b): (Vec<char>, Vec<char>) = (key.to_lowercase().chars().collect(), name.to_lowercase().chars().collect());
    if a.len().abs_diff(b.len()) > 2 || a.len() > 64 {
        return false;
    }
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let here = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != cb)).min(row[j] + 1).min(here + 1);
            prev = here;
        }
    }
    row[b.len()] <= 2
}

/// `read` for a member that may be left out (`null` or absent).
pub(super) fn optional<T>(
    read: impl Fn(&str, Value) -> Result<T, OptionError>,
) -> impl Fn(&str, Value) -> Result<Option<T>, OptionError> {
    move |at, value| if value.is_null() { Ok(None) } else { read(at, value).map(Some) }
}

pub(super) fn non_empty(at: &str, value: Value) -> Result<String, OptionError> {
    match value {
        Value::String(s) if !s.is_empty() => Ok(s),
        _ => Err(OptionError::invalid(at, "a non-empty string")),
    }
}

pub(super) fn integer(at: &str, value: Value) -> Result<u32, OptionError> {
    value
        .as_u64()
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| OptionError::invalid(at, "an integer from 0 to 4294967295"))
}

pub(super) fn boolean(at: &str, value: Value) -> Result<bool, OptionError> {
    value.as_bool().ok_or_else(|| OptionError::invalid(at, "a boolean"))
}

/// `'full'` is true (synchronous=FULL), `'normal'` false.
pub(super) fn synchronous(at: &str, value: Value) -> Result<bool, OptionError> {
    match value.as_str() {
        Some("full") => Ok(true),
        Some("normal") => Ok(false),
        _ => Err(OptionError::invalid(at, "'full' or 'normal'")),
    }
}

pub(super) fn dialect(at: &str, value: Value) -> Result<Dialect, OptionError> {
    value.as_str().and_then(Dialect::parse).ok_or_else(|| OptionError::UnknownDialect { at: at.to_owned() })
}

pub(super) fn profile(at: &str, value: Value) -> Result<ProfileOptions, OptionError> {
    if !value.is_object() {
        return Err(OptionError::invalid(at, "a JSON object"));
    }
    ProfileOptions::read(value).ok_or_else(|| OptionError::invalid(at, "a Profile (known members of their types)"))
}
