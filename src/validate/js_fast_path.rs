//! The JavaScript fast path of the registration validator, written out by
//! `npm run codegen` as `lib/generated/fast_valid.ts` from the very constants
//! the Rust walk uses (fields, bounds, closed sets, grammars, credential
//! shapes). It answers only "certainly valid" or "don't know": on "don't
//! know" the caller runs the Rust validator, which alone reports violations.
//! So the module may be stricter than Rust, never looser; a differential test
//! (`__test__/fast_valid.spec.ts`) holds it to the Rust verdicts.

use super::grammar::{
    is_credential_like, AWS_KEY_LEN, AWS_KEY_PREFIXES, CREDENTIAL_PREFIXES, JWT_PARTS, JWT_PREFIX, TOKEN_MAX,
};
use super::registration::{BUDGET, FIELDS, INTENT_KINDS_MAX, ISOLATE, ITEMS_MIN};
use crate::contract::{pattern, EventKind, Phase, ReadScope, RegistrationSchemaVersion};

const TEMPLATE: &str = include_str!("js_fast_path.ts.in");

/// The TypeScript source of `lib/generated/fast_valid.ts`; an error when a
/// constant the fast path would accept is itself credential-like (Rust
/// refuses every such string, so no fast path could hold it).
pub fn registration_fast_path() -> Result<String, String> {
    let constant = |s: &str| {
        if is_credential_like(s) {
            Err(format!("the contract constant {s:?} is credential-like"))
        } else {
            Ok(json(s))
        }
    };
    let set = |values: Vec<&str>| -> Result<String, String> {
        let items: Result<Vec<String>, String> = values.into_iter().map(constant).collect();
        Ok(format!("new Set<string>([{}])", items?.join(", ")))
    };
    let budget: Vec<String> = BUDGET.iter().map(|(f, min, max)| format!("[{}, {min}, {max}]", json(f))).collect();
    let fields: Vec<String> = FIELDS.iter().map(|f| json(f)).collect();
    let prefixes: Vec<String> = CREDENTIAL_PREFIXES.iter().map(|p| regex_escape(p)).collect();
    let aws: Vec<String> = AWS_KEY_PREFIXES.iter().map(|p| json(p)).collect();
    let replacements = [
        ("SCHEMA_VERSION", constant(RegistrationSchemaVersion::VALUE)?),
        ("FIELDS", format!("new Set<string>([{}])", fields.join(", "))),
        ("BUDGET", format!("[{}] as const", budget.join(", "))),
        ("PHASES", set(Phase::ALL.iter().map(|p| p.as_str()).collect())?),
        ("EVENT_KINDS", set(EventKind::ALL.iter().map(|k| k.as_str()).collect())?),
        ("EVENT_KINDS_MAX", EventKind::ALL.len().to_string()),
        ("READ_SCOPES", set(ReadScope::ALL.iter().map(|s| s.as_str()).collect())?),
        ("READ_SCOPES_MAX", ReadScope::ALL.len().to_string()),
        ("INTENT_KINDS_MAX", INTENT_KINDS_MAX.to_string()),
        ("ITEMS_MIN", ITEMS_MIN.to_string()),
        ("FAILURE_POLICY", constant(ISOLATE)?),
        ("TOKEN_PATTERN", json(pattern::TOKEN)),
        ("TOKEN_MAX", TOKEN_MAX.to_string()),
        ("CREDENTIAL_PREFIX", json(&format!("^(?:{})", prefixes.join("|")))),
        ("AWS_KEY_PREFIXES", format!("[{}]", aws.join(", "))),
        ("AWS_KEY_LEN", AWS_KEY_LEN.to_string()),
        ("JWT_PREFIX", json(JWT_PREFIX)),
        ("JWT_PARTS", JWT_PARTS.to_string()),
    ];
    let mut out = TEMPLATE.to_owned();
    for (name, value) in replacements {
        let slot = format!("%{name}%");
        if !out.contains(&slot) {
            return Err(format!("the template has no slot {slot}"));
        }
        out = out.replace(&slot, &value);
    }
    match out.find('%') {
        Some(at) => Err(format!("an unfilled slot at byte {at}")),
        None => Ok(out),
    }
}

fn json(s: &str) -> String {
    serde_json::Value::String(s.to_owned()).to_string()
}

/// `s` as a JavaScript regex that matches it literally.
fn regex_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 2);
    for c in s.chars() {
        if "\\^$.*+?()[]{}|/-".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_slot_is_filled_from_the_rust_constants() {
        let ts = registration_fast_path().unwrap();
        assert!(ts.contains(&format!("{:?}", RegistrationSchemaVersion::VALUE)));
        assert!(ts.contains("[\"timeout_ms\", 1, 30000]"));
        assert!(ts.contains("glpat\\\\-"), "prefixes are escaped: {ts}");
        assert!(!ts.contains('%'));
    }

    #[test]
    fn regex_escape_quotes_metacharacters() {
        assert_eq!(regex_escape("a.b-c_"), "a\\.b\\-c_");
    }
}
