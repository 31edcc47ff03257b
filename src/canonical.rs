//! RFC 8785 (JSON Canonicalization Scheme) for `serde_json::Value`.
//!
//! Every identity and every size bound of the contract is computed over this
//! form, so it must match what a JavaScript JCS implementation produces byte
//! for byte: keys sorted by UTF-16 code units, strings escaped minimally, and
//! numbers printed as ECMAScript's `Number.prototype.toString` prints the
//! IEEE 754 double.
use std::cmp::Ordering;

use serde_json::{Map, Number, Value};

/// The canonical JSON text of `value`.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

/// Appends the canonical JSON text of `value` to `out`.
pub fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => out.push_str(ryu_js::Buffer::new().format(number_as_f64(n))),
        Value::String(s) => write_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for_each_sorted(map, |i, key, item| {
                if i > 0 {
                    out.push(',');
                }
                write_string(key, out);
                out.push(':');
                write_canonical(item, out);
            });
            out.push('}');
        }
    }
}

/// One member's value in [`canonical_object`].
#[derive(Clone, Copy)]
pub enum Member<'a> {
    Str(&'a str),
    Json(&'a Value),
}

/// The canonical JSON text of the object with these members (distinct
/// names), written without building it as a `Value`: the identities hash such
/// objects on every dispatch, and a payload need not be cloned into one.
pub fn canonical_object(members: &mut [(&str, Member<'_>)]) -> String {
    members.sort_unstable_by(|a, b| utf16_cmp(a.0, b.0));
    let mut out = String::with_capacity(256);
    out.push('{');
    for (i, (name, value)) in members.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_string(name, &mut out);
        out.push(':');
        match value {
            Member::Str(s) => write_string(s, &mut out),
            Member::Json(v) => write_canonical(v, &mut out),
        }
    }
    out.push('}');
    out
}

/// Byte length of the canonical JSON text of `value`, without building it
/// (result-size budgets are checked on every dispatch).
pub fn canonical_len(value: &Value) -> usize {
    match value {
        Value::Null => 4,
        Value::Bool(true) => 4,
        Value::Bool(false) => 5,
        Value::Number(n) => ryu_js::Buffer::new().format(number_as_f64(n)).len(),
        Value::String(s) => string_len(s),
        // brackets plus one comma between items
        Value::Array(items) => 2 + items.len().saturating_sub(1) + items.iter().map(canonical_len).sum::<usize>(),
        // braces, commas, and a colon per member; order does not change length
        Value::Object(map) => {
            2 + map.len().saturating_sub(1)
                + map.iter().map(|(k, v)| string_len(k) + 1 + canonical_len(v)).sum::<usize>()
        }
    }
}

/// Compares two strings by their UTF-16 code units, as RFC 8785 section 3.2.3
/// requires for member order.
///
/// UTF-8 byte order equals code point order, which equals UTF-16 order except
/// between a supplementary character (UTF-8 lead byte F0..F4, UTF-16 high
/// surrogate D800..DBFF) and a BMP character in U+E000..U+FFFF (lead byte EE
/// or EF): there UTF-16 puts the supplementary one first. So only the first
/// differing byte needs a look, and no string is decoded. A differing
/// continuation byte (80..BF) implies equal lead bytes, where byte order holds.
pub fn utf16_cmp(a: &str, b: &str) -> Ordering {
    let (ab, bb) = (a.as_bytes(), b.as_bytes());
    match ab.iter().zip(bb).position(|(x, y)| x != y) {
        None => ab.len().cmp(&bb.len()),
        Some(i) => {
            let (x, y) = (ab[i], bb[i]);
            let supplementary = |c: u8| c >= 0xF0;
            let high_bmp = |c: u8| c == 0xEE || c == 0xEF;
            if supplementary(x) && high_bmp(y) {
                Ordering::Less
            } else if high_bmp(x) && supplementary(y) {
                Ordering::Greater
            } else {
                x.cmp(&y)
            }
        }
    }
}

/// JCS numbers are IEEE doubles: integers serde_json holds as i64/u64 are
/// rounded to the nearest double first, as JavaScript would have parsed them
/// (9007199254740993 becomes 9007199254740992).
///
/// Without serde_json's `arbitrary_precision` feature (not enabled in this
/// crate) a `Number` is always finite, so `as_f64` never fails; were it to,
/// ryu-js's `format` prints a visible non-JSON "NaN"/"Infinity" rather than
/// panicking inside the addon.
#[inline]
fn number_as_f64(n: &Number) -> f64 {
    let f = n.as_f64().unwrap_or(f64::NAN);
    debug_assert!(f.is_finite(), "serde_json Number is not a finite double");
    // ryu-js already prints -0.0 as "0" (its zero check ignores the sign bit)
    // and integral doubles without a fraction ("56", not "56.0"); the tests pin both.
    f
}

/// Calls `f(index, key, value)` for the members of `map` in UTF-16 key order.
///
/// serde_json's default `Map` is a BTreeMap in UTF-8 byte order, which is
/// already UTF-16 order unless keys mix supplementary and U+E000..U+FFFF
/// characters; the common case is detected in one pass and needs no allocation.
fn for_each_sorted<'a>(map: &'a Map<String, Value>, mut f: impl FnMut(usize, &'a str, &'a Value)) {
    let mut keys = map.keys();
    let sorted = match keys.next() {
        None => true,
        Some(first) => {
            let mut prev = first;
            keys.all(|k| {
                let ok = utf16_cmp(prev, k) == Ordering::Less;
                prev = k;
                ok
            })
        }
    };
    if sorted {
        for (i, (k, v)) in map.iter().enumerate() {
            f(i, k, v);
        }
    } else {
        let mut members: Vec<(&'a String, &'a Value)> = map.iter().collect();
        members.sort_unstable_by(|a, b| utf16_cmp(a.0, b.0));
        for (i, (k, v)) in members.into_iter().enumerate() {
            f(i, k, v);
        }
    }
}

/// The escape JCS (via ECMAScript JSON.stringify) uses for a byte, if any.
/// Only '"', '\\' and U+0000..U+001F are escaped; DEL, U+2028/2029 and all
/// non-ASCII characters stay literal UTF-8.
#[inline]
fn escape(b: u8) -> Option<&'static str> {
    const CONTROL: [&str; 32] = [
        "\\u0000", "\\u0001", "\\u0002", "\\u0003", "\\u0004", "\\u0005", "\\u0006", "\\u0007", "\\b", "\\t", "\\n",
        "\\u000b", "\\f", "\\r", "\\u000e", "\\u000f", "\\u0010", "\\u0011", "\\u0012", "\\u0013", "\\u0014",
        "\\u0015", "\\u0016", "\\u0017", "\\u0018", "\\u0019", "\\u001a", "\\u001b", "\\u001c", "\\u001d", "\\u001e",
        "\\u001f",
    ];
    match b {
        b'"' => Some("\\\""),
        b'\\' => Some("\\\\"),
        0..=0x1F => Some(CONTROL[b as usize]),
        _ => None,
    }
}

fn write_string(s: &str, out: &mut String) {
    out.reserve(s.len() + 2);
    out.push('"');
    let mut start = 0;
    for (i, &b) in s.as_bytes().iter().enumerate() {
        if let Some(esc) = escape(b) {
            // escaped bytes are ASCII, so `i` is a char boundary
            out.push_str(&s[start..i]);
            out.push_str(esc);
            start = i + 1;
        }
    }
    out.push_str(&s[start..]);
    out.push('"');
}

fn string_len(s: &str) -> usize {
    // Most strings escape nothing: count the extra bytes of those that do.
    let extra: usize =
        s.as_bytes().iter().map(|&b| if b < 0x20 || b == b'"' || b == b'\\' { escape_extra(b) } else { 0 }).sum();
    2 + s.len() + extra
}

#[inline]
fn escape_extra(b: u8) -> usize {
    escape(b).map_or(0, |e| e.len() - 1)
}

#[cfg(test)]
mod tests;
