//! The grammar of contract-v0 section 1 as plain predicates over strings:
//! tokens, opaque refs, policy versions, timestamps, ownership and what is
//! credential-like. They know nothing of reports, so the report (which
//! redacts credential-like member names) and the shape checks both stand on
//! them.

pub const TOKEN_MAX: usize = 128;
pub const OPAQUE_REF_MAX: usize = 128;
pub const POLICY_VERSION_MAX: usize = 64;

/// The token grammar of `loopx-shipped-v0`: `^[a-z][a-z0-9_.:-]{2,95}$`
/// (3 to 96 characters; hyphen and colon allowed).
pub fn is_shipped_token(s: &str) -> bool {
    let b = s.as_bytes();
    (3..=96).contains(&b.len())
        && b[0].is_ascii_lowercase()
        && b[1..].iter().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, b'_' | b'.' | b':' | b'-'))
}

/// `^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$`, length not checked here.
pub fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.split('.').all(|seg| {
            let b = seg.as_bytes();
            !b.is_empty()
                && b[0].is_ascii_lowercase()
                && b[1..].iter().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'_')
        })
}

/// `^[A-Za-z0-9][A-Za-z0-9_.:-]*$`, length not checked here.
pub fn is_opaque_ref(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_alphanumeric()
        && b[1..].iter().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b':' | b'-'))
}

/// `^[a-z0-9][a-z0-9_.-]*$`, length not checked here.
pub fn is_policy_version(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && (b[0].is_ascii_lowercase() || b[0].is_ascii_digit())
        && b[1..].iter().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, b'_' | b'.' | b'-'))
}

/// `name` starts with `<capability_id>.`: the capability owns it (a hook_id,
/// an intent_kind).
pub fn is_owned_by(name: &str, capability_id: &str) -> bool {
    name.strip_prefix(capability_id).is_some_and(|rest| rest.starts_with('.'))
}

/// RFC 3339 UTC with the contract's grammar, and a real calendar date and time
/// (no leap second: `:60` is rejected, as JavaScript's Date rejects it).
pub fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 20 || *b.last().unwrap() != b'Z' {
        return false;
    }
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    let num = |r: std::ops::Range<usize>| b[r].iter().fold(0u32, |n, d| n * 10 + u32::from(d - b'0'));
    if !(digits(0..4)
        && b[4] == b'-'
        && digits(5..7)
        && b[7] == b'-'
        && digits(8..10)
        && b[10] == b'T'
        && digits(11..13)
        && b[13] == b':'
        && digits(14..16)
        && b[16] == b':'
        && digits(17..19))
    {
        return false;
    }
    // Optional fraction: a dot and 1..=9 digits.
    let frac = &b[19..b.len() - 1];
    let frac_ok = frac.is_empty()
        || (frac[0] == b'.' && (2..=10).contains(&frac.len()) && frac[1..].iter().all(u8::is_ascii_digit));
    if !frac_ok {
        return false;
    }
    let (year, month, day) = (num(0..4), num(5..7), num(8..10));
    let (hour, minute, second) = (num(11..13), num(14..16), num(17..19));
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let days_in_month = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days_in_month).contains(&day) && hour < 24 && minute < 60 && second < 60
}

/// Known credential token prefixes.
pub const CREDENTIAL_PREFIXES: &[&str] = &[
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "glpat-",
    "sk-",
    "sk_live_",
    "sk_test_",
    "rk_live_",
    "xoxb-",
    "xoxp-",
    "xoxa-",
    "xapp-",
    "npm_",
    "AIza",
];

/// An AWS access key id: one of these prefixes, then uppercase
/// letters and digits, `AWS_KEY_LEN` bytes in all.
pub const AWS_KEY_PREFIXES: &[&str] = &["AKIA", "ASIA"];
pub const AWS_KEY_LEN: usize = 20;
/// A JWT: `JWT_PARTS` non-empty base64url parts joined by dots, the first
/// starting with `JWT_PREFIX`.
pub const JWT_PREFIX: &str = "eyJ";
pub const JWT_PARTS: usize = 3;

/// Every byte a credential-like string can start with, from the lists above.
const CREDENTIAL_FIRST_BYTES: [bool; 256] = {
    let mut table = [false; 256];
    let mut i = 0;
    while i < CREDENTIAL_PREFIXES.len() {
        table[CREDENTIAL_PREFIXES[i].as_bytes()[0] as usize] = true;
        i += 1;
    }
    let mut i = 0;
    while i < AWS_KEY_PREFIXES.len() {
        table[AWS_KEY_PREFIXES[i].as_bytes()[0] as usize] = true;
        i += 1;
    }
    table[JWT_PREFIX.as_bytes()[0] as usize] = true;
    table
};

/// Credential-like per contract-v0 section 1: a known token prefix, an AWS
/// access key id, or a JWT (three base64url parts, the first starting `eyJ`).
pub fn is_credential_like(s: &str) -> bool {
    // Most strings are refused on their first byte, before any prefix is tried.
    if !s.as_bytes().first().is_some_and(|&b| CREDENTIAL_FIRST_BYTES[b as usize]) {
        return false;
    }
    if CREDENTIAL_PREFIXES.iter().any(|p| s.starts_with(p)) {
        return true;
    }
    let b = s.as_bytes();
    let aws = AWS_KEY_PREFIXES.iter().find(|p| s.starts_with(**p));
    if b.len() == AWS_KEY_LEN
        && aws.is_some_and(|p| b[p.len()..].iter().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit()))
    {
        return true;
    }
    if s.starts_with(JWT_PREFIX) {
        let parts: Vec<&str> = s.split('.').collect();
        let base64url =
            |p: &&str| !p.is_empty() && p.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_');
        return parts.len() == JWT_PARTS && parts.iter().all(base64url);
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens() {
        assert!(is_token("periodic_report.runtime_trigger"));
        assert!(is_token("a"));
        for bad in ["", "A", "1a", "a..b", "a.", ".a", "a-b", "a b", "a.1b", "é"] {
            assert!(!is_token(bad), "{bad}");
        }
    }

    #[test]
    fn every_credential_form_passes_the_first_byte_filter() {
        for p in CREDENTIAL_PREFIXES {
            assert!(is_credential_like(&format!("{p}0123456789abcdef")), "{p}");
        }
        for p in AWS_KEY_PREFIXES {
            assert!(is_credential_like(&format!("{p}{}", "A".repeat(AWS_KEY_LEN - p.len()))), "{p}");
        }
        assert!(is_credential_like(&format!("{JWT_PREFIX}a.b.c")));
        for plain in ["", "schema_version", "zz_top", "\u{0}"] {
            assert!(!is_credential_like(plain), "{plain}");
        }
    }

    #[test]
    fn opaque_refs_exclude_paths_urls_and_mail() {
        assert!(is_opaque_ref("receipt_opaque"));
        assert!(is_opaque_ref("a:b.c-d_e"));
        for bad in ["", "/etc/passwd", "https://x.y", "me@x.y", "a b", "a%20", "-a", "_a", "a/b"] {
            assert!(!is_opaque_ref(bad), "{bad}");
        }
    }

    #[test]
    fn timestamps_are_real() {
        for ok in ["2026-08-26T00:00:00Z", "2024-02-29T23:59:59.123456789Z", "2000-02-29T00:00:00Z"] {
            assert!(is_timestamp(ok), "{ok}");
        }
        for bad in [
            "2026-08-26T00:00:00",
            "2026-08-26 00:00:00Z",
            "2023-02-29T00:00:00Z",
            "1900-02-29T00:00:00Z",
            "2026-13-01T00:00:00Z",
            "2026-04-31T00:00:00Z",
            "2026-01-01T24:00:00Z",
            "2026-01-01T00:60:00Z",
            "2026-01-01T00:00:60Z",
            "2026-01-01T00:00:00.Z",
            "2026-01-01T00:00:00.1234567890Z",
            "2026-01-01T00:00:00+00:00",
        ] {
            assert!(!is_timestamp(bad), "{bad}");
        }
    }

    #[test]
    fn credentials() {
        for c in [
            "ghp_abc",
            "github_pat_x",
            "sk-live",
            "xoxb-1",
            "AIzaSy",
            "AKIAIOSFODNN7EXAMPLE",
            "eyJhbGc.eyJzdWIi.sig-_x",
            "npm_x",
        ] {
            assert!(is_credential_like(c), "{c}");
        }
        for c in ["receipt_opaque", "AKIA", "AKIAIOSFODNN7EXAMPL", "eyJ.a", "eyJa.b.c.d", "skeleton"] {
            assert!(!is_credential_like(c), "{c}");
        }
    }
}
