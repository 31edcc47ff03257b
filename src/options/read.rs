//! How an options member is read, and what is said when it is not what its
//! declaration says: the member's path and what it must be, never its value.

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::contract::Dialect;
use crate::dispatch::{Profile, ProfileOptions};

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
    let Value::Object(members) = value else { return Err(OptionError::invalid(at, "a JSON object")) };
    if let Some(fault) = member_fault::<Profile>(at, &members, "what Profile declares for it") {
        return Err(fault);
    }
    ProfileOptions::read(Value::Object(members))
        .ok_or_else(|| OptionError::invalid(at, "a Profile (known members of their types)"))
}

/// A key as a message may repeat it: it is the caller's own, but a key can be
/// anything (a secret pasted in its place), so only a short plain identifier
/// is shown.
fn shown_key(key: &str) -> Option<&str> {
    let mut chars = key.chars();
    let first = chars.next()?;
    let plain = (first.is_ascii_alphabetic() || first == '_' || first == '$')
        && key.len() <= 64
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    plain.then_some(key)
}

/// The first member of `given` that `T` (a struct read with serde, every
/// member defaulted) does not take, as the error that names it: a name `T`
/// does not have (shown only when it is a plain identifier), or a known name
/// whose value is not of its type (`expected` says what it must be). `None`
/// when each member alone is taken. Never the value.
pub fn member_fault<T: Serialize + DeserializeOwned + Default>(
    at: &str,
    given: &Map<String, Value>,
    expected: &'static str,
) -> Option<OptionError> {
    let Ok(Value::Object(defaults)) = serde_json::to_value(T::default()) else { return None };
    let known: Vec<&str> = defaults.keys().map(String::as_str).collect();
    given.iter().find_map(|(key, value)| {
        if !known.contains(&key.as_str()) {
            return Some(OptionError::Unknown {
                at: at.to_owned(),
                named: shown_key(key).map_or_else(String::new, |k| format!(" '{k}'")),
                expected: known.join(", "),
            });
        }
        let alone = Value::Object(Map::from_iter([(key.clone(), value.clone())]));
        serde_json::from_value::<T>(alone)
            .is_err()
            .then(|| OptionError::Invalid { at: format!("{at}.{key}"), expected })
    })
}

#[cfg(test)]
mod member_fault_tests {
    use serde_json::{json, Value};

    use super::{member_fault, profile};
    use crate::turn_start::TurnStartProfile;

    fn profile_error(value: Value) -> String {
        profile("options.profile", value).unwrap_err().to_string()
    }

    /// A profile with a misspelt or mistyped member names that member, and
    /// never its value.
    #[test]
    fn a_profile_names_its_unknown_or_mistyped_member() {
        let unknown = profile_error(json!({ "enable": true }));
        assert!(unknown.starts_with("options.profile: unknown option 'enable' (expected one of: "), "{unknown}");
        assert!(unknown.contains("enabled") && unknown.contains("maxInFlight"), "{unknown}");
        assert_eq!(
            profile_error(json!({ "enabled": "secret-value" })),
            "options.profile.enabled must be what Profile declares for it"
        );
        assert_eq!(
            profile_error(json!({ "maxInFlight": -1 })),
            "options.profile.maxInFlight must be what Profile declares for it"
        );
        assert!(profile("options.profile", json!({ "enabled": true, "maxInFlight": 3 })).is_ok());
    }

    /// A key that is not a short plain identifier may be anything: it is not repeated.
    #[test]
    fn a_key_that_is_not_a_plain_identifier_is_not_repeated() {
        for key in ["sk-live 123", "a.b", "1abc", "", &"k".repeat(65)] {
            let message = profile_error(json!({ key: true }));
            assert!(message.starts_with("options.profile: unknown option (expected one of: "), "{key}: {message}");
            assert!(key.is_empty() || !message.contains(key), "{message}");
        }
        assert!(profile_error(json!({ "$x_1": 1 })).contains("'$x_1'"));
    }

    /// The turn-start kernel's profile is read by the same rule.
    #[test]
    fn a_turn_start_profile_names_its_member() {
        let read = |text: &str| TurnStartProfile::parse("profile", text).map_err(|e| e.to_string());
        assert_eq!(
            read(r#"{"enable":true}"#).unwrap_err(),
            "profile: unknown option 'enable' (expected one of: allowlist, enabled)"
        );
        assert_eq!(
            read(r#"{"allowlist":"h"}"#).unwrap_err(),
            "profile.allowlist must be what TurnStartProfile declares for it"
        );
        assert_eq!(read("[]").unwrap_err(), "profile must be a JSON object");
        assert!(read(r#"{"enabled":true,"allowlist":["h"]}"#).unwrap().enabled);
        let empty: Value = json!({});
        assert!(member_fault::<TurnStartProfile>("p", empty.as_object().unwrap(), "x").is_none());
    }
}
