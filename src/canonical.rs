//! RFC 8785 (JCS) canonical JSON. STUB: owned by the canonical/identity helper.
use serde_json::Value;

/// The canonical JSON text of `value`.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

/// Appends the canonical JSON text of `value` to `out`.
pub fn write_canonical(value: &Value, out: &mut String) {
    out.push_str(&value.to_string());
}
