//! Collecting violations while a validator walks a document, and the JSON
//! Pointers they carry (contract-v0 section 2).

use super::grammar::is_credential_like;
use crate::contract::{Rule, Violation};

/// At most this many violations are reported; past it a validator only counts
/// (`Violations::more`), so a hostile document of a million faults costs a
/// counter, not a million reports.
pub const MAX_REPORTED: usize = 100;

/// The violations of a rejected document: the first `MAX_REPORTED` found, and
/// how many more were found past them (0 when the list is complete).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Violations {
    list: Vec<Violation>,
    more: usize,
}

impl Violations {
    pub fn new(list: Vec<Violation>, more: usize) -> Self {
        Self { list, more }
    }

    /// How many violations were found past the reported ones.
    pub fn more(&self) -> usize {
        self.more
    }

    pub fn into_vec(self) -> Vec<Violation> {
        self.list
    }

    /// Every path with `prefix` in front (a definition's index in a list).
    pub fn prefixed(self, prefix: &str) -> Self {
        let list =
            self.list.into_iter().map(|v| Violation { path: format!("{prefix}{}", v.path), rule: v.rule }).collect();
        Self { list, more: self.more }
    }
}

impl std::ops::Deref for Violations {
    type Target = Vec<Violation>;
    fn deref(&self) -> &Vec<Violation> {
        &self.list
    }
}

impl From<Vec<Violation>> for Violations {
    fn from(list: Vec<Violation>) -> Self {
        Self { list, more: 0 }
    }
}

/// Callers that keep only a list (a dispatch's failure rule, a refused
/// turn-start request) take the reported violations.
impl From<Violations> for Vec<Violation> {
    fn from(v: Violations) -> Self {
        v.list
    }
}

impl PartialEq<Vec<Violation>> for Violations {
    fn eq(&self, other: &Vec<Violation>) -> bool {
        self.more == 0 && self.list == *other
    }
}

impl IntoIterator for Violations {
    type Item = Violation;
    type IntoIter = std::vec::IntoIter<Violation>;
    fn into_iter(self) -> Self::IntoIter {
        self.list.into_iter()
    }
}

impl<'a> IntoIterator for &'a Violations {
    type Item = &'a Violation;
    type IntoIter = std::slice::Iter<'a, Violation>;
    fn into_iter(self) -> Self::IntoIter {
        self.list.iter()
    }
}

/// The verdict of a validator: the typed document, or the violations found.
pub type Verdict<T> = Result<T, Violations>;

/// Collects violations while a validator walks a document: the first
/// `MAX_REPORTED`, then only a count.
#[derive(Default, Debug)]
pub struct Report {
    violations: Vec<Violation>,
    more: usize,
}

impl Report {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn add(&mut self, path: &str, rule: Rule) {
        if self.violations.len() < MAX_REPORTED {
            self.violations.push(Violation { path: path.to_owned(), rule });
        } else {
            self.more += 1;
        }
    }

    /// Counts `n` violations past the reported ones without building them
    /// (the holes of a huge sparse array).
    pub fn add_count(&mut self, n: usize) {
        self.more = self.more.saturating_add(n);
    }

    /// The list is full: further violations are only counted.
    pub fn is_full(&self) -> bool {
        self.violations.len() >= MAX_REPORTED
    }

    pub fn is_clean(&self) -> bool {
        self.violations.is_empty()
    }

    /// How many violations were found (reported and counted).
    pub fn len(&self) -> usize {
        self.violations.len() + self.more
    }

    pub fn is_empty(&self) -> bool {
        self.violations.is_empty()
    }

    pub fn violations(&self) -> &[Violation] {
        &self.violations
    }

    pub fn into_violations(self) -> Violations {
        Violations { list: self.violations, more: self.more }
    }

    /// Finish without building the typed document (a caller that keeps its own).
    pub fn into_result(self) -> Result<(), Violations> {
        if self.violations.is_empty() {
            Ok(())
        } else {
            Err(self.into_violations())
        }
    }

    /// Finish: deserialize the accepted document into its contract type.
    pub fn finish<T: serde::de::DeserializeOwned>(self, doc: &serde_json::Value) -> Verdict<T> {
        if !self.violations.is_empty() {
            return Err(self.into_violations());
        }
        // The walk accepted the document, so the shape matches the type; a
        // failure here is a bug in the validator, reported rather than panicked.
        T::deserialize(doc).map_err(|_| vec![Violation { path: String::new(), rule: Rule::WrongType }].into())
    }
}

/// The reference token that stands for a credential-like member name, so no
/// report ever repeats the name: the member name `~redacted~`, escaped as
/// RFC 6901 says, so every path stays a JSON Pointer.
pub const REDACTED: &str = "~0redacted~0";

/// `base` + `/` + the escaped reference token (RFC 6901: `~` -> `~0`, `/` -> `~1`);
/// a credential-like name becomes `~0redacted~0` (the name `~redacted~`).
pub fn child(base: &str, token: &str) -> String {
    let mut out = String::with_capacity(base.len() + token.len() + 1);
    out.push_str(base);
    push_token(&mut out, token);
    out
}

fn push_token(out: &mut String, token: &str) {
    out.push('/');
    if is_credential_like(token) {
        out.push_str(REDACTED);
    } else if !token.bytes().any(|b| b == b'~' || b == b'/') {
        out.push_str(token);
    } else {
        for c in token.chars() {
            match c {
                '~' => out.push_str("~0"),
                '/' => out.push_str("~1"),
                c => out.push(c),
            }
        }
    }
}

/// The pointers to the members of one object, written in turn into one
/// buffer: a walk over an object's members allocates once, not per member.
pub struct Members {
    buf: String,
    base: usize,
}

impl Members {
    pub fn new(base: &str) -> Self {
        let mut buf = String::with_capacity(base.len() + 32);
        buf.push_str(base);
        Self { buf, base: base.len() }
    }

    /// `child(base, token)`, valid until the next call.
    pub fn at(&mut self, token: &str) -> &str {
        self.buf.truncate(self.base);
        push_token(&mut self.buf, token);
        &self.buf
    }
}

/// How many reference tokens a pointer keeps when it travels beyond the
/// validator's report (a deeper one names its ancestor at this depth).
pub const PUBLIC_POINTER_DEPTH: usize = 32;
/// The longest member name a public pointer repeats.
pub const PUBLIC_TOKEN_LEN: usize = 40;

/// `pointer` fit to leave the validator on an outcome or a stored failure.
/// Its member names are the provider's own keys, so only plain short names
/// (ASCII letters, digits and `_`, not credential-like) and array indices
/// are kept; every other token becomes [`REDACTED`], so the result is still a
/// JSON Pointer and says where even when it cannot say what.
pub fn public_pointer(pointer: &str) -> String {
    let mut out = String::with_capacity(pointer.len().min(256));
    for token in pointer.split('/').skip(1).take(PUBLIC_POINTER_DEPTH) {
        out.push('/');
        let plain = !token.is_empty()
            && token.len() <= PUBLIC_TOKEN_LEN
            && token.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_')
            && !is_credential_like(token);
        out.push_str(if plain { token } else { REDACTED });
    }
    out
}

/// `base` + `/` + an array index.
pub fn index(base: &str, i: usize) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(base.len() + 8);
    out.push_str(base);
    // Writing into a String cannot fail.
    let _ = write!(out, "/{i}");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointer_tokens_are_escaped() {
        assert_eq!(child("", "a/b~c"), "/a~1b~0c");
        assert_eq!(child("/a", "plain_name"), "/a/plain_name");
        assert_eq!(child("/a", "é/"), "/a/é~1");
        assert_eq!(index("/x", 3), "/x/3");
        for i in [0, 9, 10, 1_234_567_890, usize::MAX] {
            assert_eq!(index("/x", i), format!("/x/{i}"));
        }
        assert_eq!(child("/a", "sk_live_0123"), "/a/~0redacted~0");
        let mut m = Members::new("/intents/0");
        for token in ["payload", "a/b~c", "sk_live_0123", "x"] {
            assert_eq!(m.at(token), child("/intents/0", token));
        }
    }

    #[test]
    fn public_pointers_keep_plain_names_and_indices_and_redact_the_rest() {
        assert_eq!(public_pointer(""), "");
        assert_eq!(public_pointer("/intents/0/payload/count"), "/intents/0/payload/count");
        // Credential-like names, already redacted or not, never travel.
        for secret in ["sk_live_0123456789", "ghp_abc", "AKIAABCDEFGHIJKLMNOP", "eyJa.eyJb.c"] {
            assert_eq!(public_pointer(&child("/payload", secret)), "/payload/~0redacted~0", "{secret}");
            assert_eq!(public_pointer(&format!("/payload/{secret}/x")), "/payload/~0redacted~0/x", "{secret}");
        }
        // Anything not a plain short token may be private text.
        for private in ["john.doe@example.com", "a b", "a~1b", "~0x", "Grüße", "x-y", &"a".repeat(41)] {
            assert_eq!(public_pointer(&format!("/p/{private}/1")), "/p/~0redacted~0/1", "{private}");
        }
        assert_eq!(public_pointer("/p//q"), "/p/~0redacted~0/q");
        let deep = "/a".repeat(PUBLIC_POINTER_DEPTH + 5);
        assert_eq!(public_pointer(&deep), "/a".repeat(PUBLIC_POINTER_DEPTH));
    }

    #[test]
    fn reports_are_capped_and_count_the_rest() {
        let mut r = Report::new();
        for i in 0..MAX_REPORTED + 7 {
            r.add(&index("", i), Rule::WrongType);
        }
        r.add_count(3);
        assert!(r.is_full());
        assert_eq!(r.len(), MAX_REPORTED + 10);
        let v = r.into_violations();
        assert_eq!(v.len(), MAX_REPORTED);
        assert_eq!(v.more(), 10);
        assert_eq!(v[99].path, "/99");
    }
}
