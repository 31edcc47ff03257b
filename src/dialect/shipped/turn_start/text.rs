//! The string rules of the shipped turn-start contract: its token grammar,
//! JavaScript's `trim()` (LoopX's TypeScript trims the required read with it),
//! control characters, and the credential check over every part of a command.

use serde_json::Value;

use crate::validate::grammar::is_credential_like;
use crate::validate::{shape, Report, Rule};

pub const TOKEN_MAX: usize = 96;

/// `^[a-z][a-z0-9_.:-]{2,95}$`.
pub fn is_token(s: &str) -> bool {
    let b = s.as_bytes();
    (3..=TOKEN_MAX).contains(&b.len())
        && b[0].is_ascii_lowercase()
        && b[1..].iter().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, b'_' | b'.' | b':' | b'-'))
}

/// A shipped token: `too_long` past 96 bytes, else `bad_token` off the grammar.
pub fn token<'a>(r: &mut Report, v: &'a Value, path: &str) -> Option<&'a str> {
    let s = shape::string(r, v, path)?;
    if s.len() > TOKEN_MAX {
        r.add(path, Rule::TooLong);
        None
    } else if !is_token(s) {
        r.add(path, Rule::BadToken);
        None
    } else {
        Some(s)
    }
}

/// What `String.prototype.trim` removes: ECMAScript WhiteSpace and
/// LineTerminator. Unlike Rust's `trim`, U+FEFF is in and U+0085 is out.
fn is_js_whitespace(c: char) -> bool {
    matches!(
        c,
        '\u{9}'..='\u{d}'
            | ' '
            | '\u{a0}'
            | '\u{1680}'
            | '\u{2000}'..='\u{200a}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{202f}'
            | '\u{205f}'
            | '\u{3000}'
            | '\u{feff}'
    )
}

pub fn js_trim(s: &str) -> &str {
    s.trim_matches(is_js_whitespace)
}

/// `/[\u0000-\u001f\u007f]/`.
pub fn has_control(s: &str) -> bool {
    s.chars().any(|c| c <= '\u{1f}' || c == '\u{7f}')
}

/// A credential anywhere in free text: the whole string, any whitespace-separated
/// word, or any part of a word split at `=`, `:`, `/` or `,` (`--token=ghp_...`,
/// `/abs/sk-...`). The whole-string check alone would let a command by whose
/// credential is not its first word.
pub fn holds_credential(s: &str) -> bool {
    is_credential_like(s)
        || s.split(char::is_whitespace).any(|word| {
            let word = word.trim_start_matches('-');
            is_credential_like(word) || word.split(['=', ':', '/', ',']).any(is_credential_like)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_tokens() {
        for ok in ["periodic-report", "lark.inbox:drain", "abc", &"a".repeat(96)] {
            assert!(is_token(ok), "{ok}");
        }
        for bad in ["ab", "Abc", "1ab", "a b", "a/b", "é", &"a".repeat(97)] {
            assert!(!is_token(bad), "{bad}");
        }
    }

    #[test]
    fn trim_is_javascripts() {
        assert_eq!(js_trim("\u{feff} x \u{3000}"), "x");
        assert_eq!(js_trim("\u{85}x"), "\u{85}x");
        assert!(has_control("a\u{7f}") && has_control("a\tb") && !has_control("a\u{85}"));
        assert!(holds_credential("loopx --token=ghp_abc drain") && holds_credential("cat /x/sk-live"));
        assert!(!holds_credential("loopx --registry /abs/registry.json lark-inbox drain --goal-id G"));
    }
}
