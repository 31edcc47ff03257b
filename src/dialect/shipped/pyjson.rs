//! Python's canonical JSON and Python's whitespace, for the identities of the
//! `loopx-shipped-v0` dialect.
//!
//! LoopX hashes its post-writeback identities over
//! `json.dumps(v, sort_keys=True, separators=(",", ":"))` (default
//! `ensure_ascii=True`) and strips every id with `str.strip()`. Both differ
//! from their Rust and RFC 8785 look-alikes: keys sort by code point (not
//! UTF-16 units), every non-ASCII character is a `\uXXXX` escape, and
//! `strip()` also removes U+001C..U+001F, which `char::is_whitespace` keeps.
//! An id this crate derives must equal the one LoopX already stored, so the
//! output here is byte for byte Python's.
//!
//! Value classes: strings, booleans, null, arrays and objects are what the
//! contract hashes and are exact. Integers (`i64`/`u64`) are printed exactly
//! as Python prints an `int`. Floats are printed as Python's `repr(float)`
//! (shortest round-trip digits, exponent form below 1e-4 and from 1e16 on).
//! A `serde_json::Value` holds no NaN, infinity or lone surrogate, so there
//! is nothing to refuse and the writer never fails. Integers beyond `u64`
//! never reach here as integers: serde_json parses them as floats, so such a
//! value prints as Python prints that float, not as that integer. Nesting
//! is written recursively, as serde_json's own serializer does; parsed
//! documents are bounded by serde_json's depth limit.
use std::fmt::Write as _;

use serde_json::{Number, Value};

/// `json.dumps(v, sort_keys=True, separators=(",", ":"))` with `ensure_ascii=True`.
pub fn dumps(v: &Value) -> String {
    let mut out = String::new();
    write_value(v, &mut out);
    out
}

/// `s.strip()`: `s` without the leading and trailing characters for which
/// Python's `str.isspace()` is true.
pub fn py_strip(s: &str) -> &str {
    s.trim_matches(is_py_whitespace)
}

/// Python 3's `str.isspace()` for one character: the 29 characters of
/// bidirectional class WS, B or S, or of category Zs. Unlike
/// `char::is_whitespace` it includes U+001C..U+001F; like it, it excludes
/// U+200B and U+FEFF.
pub fn is_py_whitespace(c: char) -> bool {
    matches!(
        c,
        '\u{09}'..='\u{0d}'
            | '\u{1c}'..='\u{20}'
            | '\u{85}'
            | '\u{a0}'
            | '\u{1680}'
            | '\u{2000}'..='\u{200a}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{202f}'
            | '\u{205f}'
            | '\u{3000}'
    )
}

fn write_value(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => write_number(n, out),
        Value::String(s) => write_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            // `str` orders by UTF-8 bytes, which is code point order, which is
            // Python's; sorting here keeps that true whatever map order
            // serde_json was built with.
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(key, out);
                out.push(':');
                write_value(item, out);
            }
            out.push('}');
        }
    }
}

fn write_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    // writing to a String cannot fail
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
        }
    }
    out.push('"');
}

fn write_number(n: &Number, out: &mut String) {
    if let Some(i) = n.as_i64() {
        let _ = write!(out, "{i}");
    } else if let Some(u) = n.as_u64() {
        let _ = write!(out, "{u}");
    } else if let Some(f) = n.as_f64() {
        write_float_repr(f, out);
    }
}

/// Python's `repr(float)` of a finite double. Rust's `{:e}` yields the same
/// shortest round-trip digits Python picks; only the layout differs.
fn write_float_repr(f: f64, out: &mut String) {
    let sci = format!("{:e}", f.abs());
    let (mantissa, exponent) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    if f.is_sign_negative() {
        out.push('-');
    }
    // Python's threshold (`float_repr_style` "short"): positional while the
    // decimal point lies after at most 16 digits and before at most 3 zeros.
    let point = exponent + 1;
    let n = digits.len() as i32;
    if (-3..=16).contains(&point) {
        if point <= 0 {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', (-point) as usize));
            out.push_str(&digits);
        } else if point < n {
            out.push_str(&digits[..point as usize]);
            out.push('.');
            out.push_str(&digits[point as usize..]);
        } else {
            out.push_str(&digits);
            out.extend(std::iter::repeat_n('0', (point - n) as usize));
            out.push_str(".0");
        }
    } else {
        out.push_str(&digits[..1]);
        if n > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let sign = if exponent < 0 { '-' } else { '+' };
        let _ = write!(out, "e{sign}{:02}", exponent.abs());
    }
}

#[cfg(test)]
pub(crate) mod testkit;
#[cfg(test)]
mod tests;
