//! The arguments of an inbox or session operation as JSON text from the JS
//! side. `JSON.stringify` writes a lone UTF-16 surrogate (a truncated emoji
//! from a real provider) as a `\udXXX` escape that no UTF-8 string can hold;
//! the text keeps its message with U+FFFD in its place. Where a lone
//! surrogate would change an identity (a route or message id, a cursor
//! value, a ref), replacing it could merge two messages into one, so it is
//! refused, naming the argument as the caller spells it.

use serde_json::Value;

use super::InboxError;

/// Members whose value is private text or an identity compared for the self
/// filter only: a lone surrogate there becomes U+FFFD (an identity holding
/// U+FFFD never matches, so the self filter fails open).
const LOSSY: &[&str] = &["payload", "verifiedIdentity"];

/// The argument names an error can carry (camelCase, as the caller spells them).
const NAMES: &[&str] = &[
    "routeId",
    "providerMessageId",
    "readRef",
    "scope",
    "kind",
    "token",
    "value",
    "read",
    "collectorId",
    "effectReceiptId",
    "disposition",
    "result",
    "source",
    "attention",
    "sender",
    "input",
    "message",
];

fn name_of(key: &str) -> &'static str {
    NAMES.iter().copied().find(|n| *n == key).unwrap_or("arguments")
}

enum Frame {
    /// An object, its current key (raw JSON text) and whether a key comes next.
    Object {
        key: String,
        expect_key: bool,
    },
    Array,
}

/// Parses `text`, replacing lone surrogates in private text and refusing
/// them elsewhere (`invalid argument: <name>`).
pub fn parse_args(text: &str) -> Result<Value, InboxError> {
    let repaired = repair(text)?;
    serde_json::from_str(&repaired).map_err(|_| InboxError::InvalidArgument { what: "arguments" })
}

fn hex4(b: &[u8]) -> Option<u16> {
    let s = std::str::from_utf8(b.get(..4)?).ok()?;
    u16::from_str_radix(s, 16).ok()
}

/// Rewrites each lone-surrogate escape as `\ufffd` where that is lossless
/// enough (under a [`LOSSY`] member), else refuses it.
fn repair(text: &str) -> Result<std::borrow::Cow<'_, str>, InboxError> {
    if !text.contains("\\u") {
        return Ok(text.into());
    }
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut stack: Vec<Frame> = Vec::new();
    let mut copied = 0;
    let mut i = 0;
    let mut changed = false;
    while i < b.len() {
        match b[i] {
            b'{' => stack.push(Frame::Object { key: String::new(), expect_key: true }),
            b'[' => stack.push(Frame::Array),
            b'}' | b']' => {
                stack.pop();
            }
            b',' => {
                if let Some(Frame::Object { expect_key, .. }) = stack.last_mut() {
                    *expect_key = true;
                }
            }
            b':' => {
                if let Some(Frame::Object { expect_key, .. }) = stack.last_mut() {
                    *expect_key = false;
                }
            }
            b'"' => {
                let start = i + 1;
                let mut j = start;
                let mut lone = Vec::new();
                while j < b.len() && b[j] != b'"' {
                    if b[j] != b'\\' {
                        j += 1;
                        continue;
                    }
                    if b.get(j + 1) != Some(&b'u') {
                        j += 2;
                        continue;
                    }
                    let unit = hex4(&b[j + 2..]).unwrap_or(0);
                    let pairs = (0xD800..0xDC00).contains(&unit)
                        && b.get(j + 6) == Some(&b'\\')
                        && b.get(j + 7) == Some(&b'u')
                        && hex4(&b[(j + 8).min(b.len())..]).is_some_and(|low| (0xDC00..0xE000).contains(&low));
                    if pairs {
                        j += 12;
                    } else {
                        if (0xD800..0xE000).contains(&unit) {
                            lone.push(j);
                        }
                        j += 6;
                    }
                }
                let end = j.min(b.len());
                let is_key = matches!(stack.last(), Some(Frame::Object { expect_key: true, .. }));
                if !lone.is_empty() {
                    let lossy = !is_key
                        && stack
                            .iter()
                            .any(|f| matches!(f, Frame::Object { key, .. } if LOSSY.contains(&key.as_str())));
                    let under_payload =
                        stack.iter().any(|f| matches!(f, Frame::Object { key, .. } if key == "payload"));
                    if !(lossy || under_payload) {
                        let innermost = stack.iter().rev().find_map(|f| match f {
                            Frame::Object { key, .. } if name_of(key) != "arguments" => Some(name_of(key)),
                            _ => None,
                        });
                        return Err(InboxError::InvalidArgument { what: innermost.unwrap_or("arguments") });
                    }
                    for at in lone {
                        out.push_str(&text[copied..at]);
                        out.push_str("\\ufffd");
                        copied = at + 6;
                    }
                    changed = true;
                }
                if is_key {
                    if let Some(Frame::Object { key, .. }) = stack.last_mut() {
                        *key = text[start..end].to_owned();
                    }
                }
                i = end;
            }
            _ => {}
        }
        i += 1;
    }
    if !changed {
        return Ok(text.into());
    }
    out.push_str(&text[copied..]);
    Ok(out.into())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_lone_surrogate_in_private_text_becomes_the_replacement_character() {
        let text =
            r#"{"input":{"routeId":"r","payload":{"text":"cut \ud83d","ok":"\ud83d\ude00","key \udc00":["\udbff"]}}}"#;
        let v = parse_args(text).unwrap();
        assert_eq!(v["input"]["payload"]["text"], json!("cut \u{FFFD}"));
        assert_eq!(v["input"]["payload"]["ok"], json!("\u{1F600}"));
        assert_eq!(v["input"]["payload"]["key \u{FFFD}"], json!(["\u{FFFD}"]));
        let identity = parse_args(r#"{"input":{"sender":{"kind":"human","verifiedIdentity":"U\ud800"}}}"#).unwrap();
        assert_eq!(identity["input"]["sender"]["verifiedIdentity"], json!("U\u{FFFD}"));
    }

    #[test]
    fn a_lone_surrogate_in_an_identity_is_refused_by_name() {
        for (text, what) in [
            (r#"{"input":{"routeId":"r\ud800","payload":1}}"#, "routeId"),
            (r#"{"input":{"payload":{"a":1},"providerMessageId":"\udc00"}}"#, "providerMessageId"),
            (r#"{"message":{"routeId":"r","providerMessageId":"m\ud83d"}}"#, "providerMessageId"),
            (r#"{"readRef":"\ud800x"}"#, "readRef"),
            (r#"{"read":[{"routeId":"\ud800"}]}"#, "routeId"),
            (r#"{"other":"\ud800"}"#, "arguments"),
        ] {
            assert_eq!(parse_args(text), Err(InboxError::InvalidArgument { what }), "{text}");
        }
    }

    #[test]
    fn escapes_that_are_not_surrogates_are_left_alone() {
        let text = r#"{"input":{"payload":"a \\ud800 \" \u00e9 \\"}}"#;
        assert_eq!(parse_args(text).unwrap()["input"]["payload"], json!("a \\ud800 \" é \\"));
    }
}
