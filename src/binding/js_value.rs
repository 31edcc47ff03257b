//! Reading a JS value into JSON without trusting it. A document handed to a
//! validator may hold anything JavaScript can: functions, symbols, BigInts,
//! `undefined`, cycles, getters that throw, Proxies. Each becomes a
//! `not_json_value` violation at its JSON Pointer, never an exception, so the
//! validators keep their promise never to throw.

use std::ptr;

use napi::bindgen_prelude::{FromNapiValue, ToNapiValue, TypeName, ValidateNapiValue};
use napi::sys;
use napi::ValueType as NapiValueType;
use serde_json::{Map, Number, Value};

use crate::validate::{child, index, Report, Rule, Violation, Violations};

/// Deeper nesting than this is not a contract document; refusing it keeps a
/// hostile value from exhausting the native stack. It matches serde_json's
/// recursion limit for JSON text (127 nested arrays or objects parse, 128 do
/// not), and like text, a value nested too deep is `not_json_value` at `""`,
/// so a value and its JSON text always get the same verdict.
pub const MAX_DEPTH: usize = crate::validate::text::MAX_DEPTH;

/// Past this length an array is checked for holes by its own keys, so a
/// sparse `a[4e9] = 1` costs its few elements, not four billion reads.
const SPARSE_CHECK_LEN: u32 = 1 << 16;

/// A raw JS value handed through unchanged, so the binding decides how to read it.
#[derive(Clone, Copy)]
pub struct JsAny {
    pub env: sys::napi_env,
    pub value: sys::napi_value,
}

impl TypeName for JsAny {
    fn type_name() -> &'static str {
        "unknown"
    }
    fn value_type() -> NapiValueType {
        NapiValueType::Unknown
    }
}

impl ValidateNapiValue for JsAny {}

impl FromNapiValue for JsAny {
    unsafe fn from_napi_value(env: sys::napi_env, value: sys::napi_value) -> napi::Result<Self> {
        Ok(JsAny { env, value })
    }
}

impl ToNapiValue for JsAny {
    unsafe fn to_napi_value(_env: sys::napi_env, val: Self) -> napi::Result<sys::napi_value> {
        Ok(val.value)
    }
}

/// A document as received: JSON text (parsed here) or a JS value (walked here).
pub enum Document {
    Text(Value),
    Object(Value),
}

impl Document {
    pub fn value(&self) -> &Value {
        match self {
            Document::Text(v) | Document::Object(v) => v,
        }
    }
}

fn not_json(path: &str) -> Violations {
    vec![Violation { path: path.to_owned(), rule: Rule::NotJsonValue }].into()
}

/// Reads `input`: a string is JSON text, anything else a JS value. Text that
/// is not JSON, or nested past MAX_DEPTH, is `not_json_value` at the root; a
/// number that overflows or a lone surrogate, at its member (as the value).
pub fn read_document(input: JsAny) -> Result<Document, Violations> {
    let walker = Walker { env: input.env };
    if walker.type_of(input.value) == Some(sys::ValueType::napi_string) {
        let text = walker.string(input.value).ok_or_else(|| not_json(""))?;
        return crate::validate::text::parse(&text).map(Document::Text);
    }
    walker.read(input.value).map(Document::Object)
}

/// Reads `input` as a JS value, a string being a JSON string value.
pub fn read_value(input: JsAny) -> Result<Value, Violations> {
    Walker { env: input.env }.read(input.value)
}

struct Walker {
    env: sys::napi_env,
}

/// State of one walk: the objects above the current one (for cycles), what
/// was found, and Object.prototype once looked up.
struct Walk<'v> {
    ancestors: Vec<sys::napi_value>,
    violations: &'v mut Report,
    too_deep: bool,
    object_prototype: Option<sys::napi_value>,
}

impl Walker {
    fn read(&self, value: sys::napi_value) -> Result<Value, Violations> {
        let mut violations = Report::new();
        let mut walk =
            Walk { ancestors: Vec::new(), violations: &mut violations, too_deep: false, object_prototype: None };
        let out = self.walk(value, "", &mut walk);
        if walk.too_deep {
            return Err(not_json(""));
        }
        if violations.is_clean() {
            Ok(out)
        } else {
            Err(violations.into_violations())
        }
    }

    fn type_of(&self, value: sys::napi_value) -> Option<i32> {
        let mut t = 0;
        let status = unsafe { sys::napi_typeof(self.env, value, &mut t) };
        (status == sys::Status::napi_ok).then_some(t)
    }

    /// Clears an exception a getter, trap or coercion left pending, so it
    /// never escapes to the caller.
    fn clear_exception(&self) {
        let mut pending = false;
        unsafe {
            sys::napi_is_exception_pending(self.env, &mut pending);
            if pending {
                let mut ignored = ptr::null_mut();
                sys::napi_get_and_clear_last_exception(self.env, &mut ignored);
            }
        }
    }

    fn ok(&self, status: sys::napi_status) -> bool {
        if status == sys::Status::napi_ok {
            true
        } else {
            self.clear_exception();
            false
        }
    }

    fn string(&self, value: sys::napi_value) -> Option<String> {
        let mut len = 0usize;
        if !self.ok(unsafe { sys::napi_get_value_string_utf8(self.env, value, ptr::null_mut(), 0, &mut len) }) {
            return None;
        }
        let mut buf = vec![0u8; len + 1];
        let mut written = 0usize;
        if !self.ok(unsafe {
            sys::napi_get_value_string_utf8(self.env, value, buf.as_mut_ptr().cast(), buf.len(), &mut written)
        }) {
            return None;
        }
        buf.truncate(written);
        let text = String::from_utf8(buf).ok()?;
        // N-API turns a lone surrogate into U+FFFD; JSON text cannot carry
        // one (RFC 8785, I-JSON), so look closer only when U+FFFD appears.
        if text.contains('\u{FFFD}') && self.has_lone_surrogate(value) {
            return None;
        }
        Some(text)
    }

    fn has_lone_surrogate(&self, value: sys::napi_value) -> bool {
        let mut len = 0usize;
        if !self.ok(unsafe { sys::napi_get_value_string_utf16(self.env, value, ptr::null_mut(), 0, &mut len) }) {
            return true;
        }
        let mut units = vec![0u16; len + 1];
        let mut written = 0usize;
        if !self.ok(unsafe {
            sys::napi_get_value_string_utf16(self.env, value, units.as_mut_ptr(), units.len(), &mut written)
        }) {
            return true;
        }
        char::decode_utf16(units[..written].iter().copied()).any(|c| c.is_err())
    }

    /// Only plain objects hold their data in own enumerable properties: a
    /// Map, Set, RegExp, boxed primitive or class instance would be silently
    /// emptied or mangled, so it is refused instead.
    fn is_plain_object(&self, value: sys::napi_value, walk: &mut Walk<'_>) -> bool {
        let mut proto = ptr::null_mut();
        if !self.ok(unsafe { sys::napi_get_prototype(self.env, value, &mut proto) }) {
            return false;
        }
        if self.type_of(proto) == Some(sys::ValueType::napi_null) {
            return true;
        }
        let object_prototype = match walk.object_prototype {
            Some(p) => p,
            None => match self.object_prototype() {
                Some(p) => {
                    walk.object_prototype = Some(p);
                    p
                }
                None => return false,
            },
        };
        self.strict_equals(proto, object_prototype)
    }

    fn object_prototype(&self) -> Option<sys::napi_value> {
        let mut global = ptr::null_mut();
        let mut object = ptr::null_mut();
        let mut proto = ptr::null_mut();
        let ok = self.ok(unsafe { sys::napi_get_global(self.env, &mut global) })
            && self.ok(unsafe { sys::napi_get_named_property(self.env, global, c"Object".as_ptr(), &mut object) })
            && self.ok(unsafe { sys::napi_get_named_property(self.env, object, c"prototype".as_ptr(), &mut proto) });
        ok.then_some(proto)
    }

    fn is(
        &self,
        f: unsafe fn(sys::napi_env, sys::napi_value, *mut bool) -> sys::napi_status,
        value: sys::napi_value,
    ) -> bool {
        let mut result = false;
        self.ok(unsafe { f(self.env, value, &mut result) }) && result
    }

    /// Objects that only pretend to be JSON objects (their data is not in own
    /// enumerable properties) are refused rather than silently emptied.
    fn is_exotic(&self, value: sys::napi_value) -> bool {
        self.is(sys::napi_is_date, value)
            || self.is(sys::napi_is_promise, value)
            || self.is(sys::napi_is_typedarray, value)
            || self.is(sys::napi_is_arraybuffer, value)
            || self.is(sys::napi_is_dataview, value)
            || self.is(sys::napi_is_buffer, value)
    }

    fn strict_equals(&self, a: sys::napi_value, b: sys::napi_value) -> bool {
        let mut eq = false;
        self.ok(unsafe { sys::napi_strict_equals(self.env, a, b, &mut eq) }) && eq
    }

    fn walk(&self, value: sys::napi_value, path: &str, walk: &mut Walk<'_>) -> Value {
        let bad = |walk: &mut Walk<'_>| {
            walk.violations.add(path, Rule::NotJsonValue);
            Value::Null
        };
        let Some(t) = self.type_of(value) else { return bad(walk) };
        match t {
            sys::ValueType::napi_null => Value::Null,
            sys::ValueType::napi_boolean => {
                let mut b = false;
                if self.ok(unsafe { sys::napi_get_value_bool(self.env, value, &mut b) }) {
                    Value::Bool(b)
                } else {
                    bad(walk)
                }
            }
            sys::ValueType::napi_number => {
                let mut n = 0f64;
                if !self.ok(unsafe { sys::napi_get_value_double(self.env, value, &mut n) }) {
                    return bad(walk);
                }
                number(n).unwrap_or_else(|| bad(walk))
            }
            sys::ValueType::napi_string => match self.string(value) {
                Some(s) => Value::String(s),
                None => bad(walk),
            },
            sys::ValueType::napi_object => {
                if walk.ancestors.len() >= MAX_DEPTH {
                    walk.too_deep = true;
                    return Value::Null;
                }
                if walk.ancestors.iter().any(|a| self.strict_equals(*a, value)) || self.is_exotic(value) {
                    return bad(walk);
                }
                let is_array = self.is(sys::napi_is_array, value);
                if !is_array && !self.is_plain_object(value, walk) {
                    return bad(walk);
                }
                walk.ancestors.push(value);
                let out =
                    if is_array { self.walk_array(value, path, walk) } else { self.walk_object(value, path, walk) };
                walk.ancestors.pop();
                out
            }
            // undefined, symbol, function, external, bigint
            _ => bad(walk),
        }
    }

    fn walk_array(&self, array: sys::napi_value, path: &str, walk: &mut Walk<'_>) -> Value {
        let mut len = 0u32;
        if !self.ok(unsafe { sys::napi_get_array_length(self.env, array, &mut len) }) {
            walk.violations.add(path, Rule::NotJsonValue);
            return Value::Null;
        }
        if len > SPARSE_CHECK_LEN {
            if let Some(indices) = self.sparse_indices(array, len) {
                self.walk_sparse(array, path, len, &indices, walk);
                return Value::Null;
            }
        }
        let mut items = Vec::with_capacity(len.min(4096) as usize);
        for i in 0..len {
            if walk.too_deep {
                break;
            }
            let item_path = index(path, i as usize);
            let mut item = ptr::null_mut();
            if self.ok(unsafe { sys::napi_get_element(self.env, array, i, &mut item) }) {
                items.push(self.walk(item, &item_path, walk));
            } else {
                walk.violations.add(&item_path, Rule::NotJsonValue);
            }
        }
        Value::Array(items)
    }

    /// The own element indices of a long array, ascending, when it has holes
    /// (fewer own indices than its length); None when it is dense.
    fn sparse_indices(&self, array: sys::napi_value, len: u32) -> Option<Vec<u32>> {
        let mut keys = ptr::null_mut();
        let mut count = 0u32;
        let listed = self.ok(unsafe {
            sys::napi_get_all_property_names(
                self.env,
                array,
                sys::KeyCollectionMode::own_only,
                sys::KeyFilter::enumerable | sys::KeyFilter::skip_symbols,
                sys::KeyConversion::keep_numbers,
                &mut keys,
            )
        }) && self.ok(unsafe { sys::napi_get_array_length(self.env, keys, &mut count) });
        if !listed || count >= len {
            return None;
        }
        let mut indices = Vec::with_capacity(count as usize);
        for k in 0..count {
            let mut key = ptr::null_mut();
            let mut i = 0u32;
            // Named properties (`a.foo`) come back as strings and are not elements.
            if self.ok(unsafe { sys::napi_get_element(self.env, keys, k, &mut key) })
                && self.type_of(key) == Some(sys::ValueType::napi_number)
                && self.ok(unsafe { sys::napi_get_value_uint32(self.env, key, &mut i) })
                && i < len
            {
                indices.push(i);
            }
        }
        indices.sort_unstable();
        Some(indices)
    }

    /// A holey array is refused: each hole is `not_json_value` at its index,
    /// the first ones listed and the rest counted without visiting them, and
    /// the present elements are walked for their own violations.
    fn walk_sparse(&self, array: sys::napi_value, path: &str, len: u32, indices: &[u32], walk: &mut Walk<'_>) {
        let holes = |walk: &mut Walk<'_>, from: u32, to: u32| {
            for h in from..to {
                if walk.violations.is_full() {
                    walk.violations.add_count((to - h) as usize);
                    return;
                }
                walk.violations.add(&index(path, h as usize), Rule::NotJsonValue);
            }
        };
        let mut next = 0u32;
        for &i in indices {
            if walk.too_deep {
                return;
            }
            holes(walk, next, i);
            let mut item = ptr::null_mut();
            let item_path = index(path, i as usize);
            if self.ok(unsafe { sys::napi_get_element(self.env, array, i, &mut item) }) {
                self.walk(item, &item_path, walk);
            } else {
                walk.violations.add(&item_path, Rule::NotJsonValue);
            }
            next = i + 1;
        }
        holes(walk, next, len);
    }

    fn walk_object(&self, object: sys::napi_value, path: &str, walk: &mut Walk<'_>) -> Value {
        // Object.keys semantics: own, enumerable, string-keyed.
        let mut keys = ptr::null_mut();
        let mut len = 0u32;
        if !self.ok(unsafe {
            sys::napi_get_all_property_names(
                self.env,
                object,
                sys::KeyCollectionMode::own_only,
                sys::KeyFilter::enumerable | sys::KeyFilter::skip_symbols,
                sys::KeyConversion::numbers_to_strings,
                &mut keys,
            )
        }) || !self.ok(unsafe { sys::napi_get_array_length(self.env, keys, &mut len) })
        {
            walk.violations.add(path, Rule::NotJsonValue);
            return Value::Null;
        }
        let mut map = Map::new();
        for i in 0..len {
            if walk.too_deep {
                break;
            }
            let mut key = ptr::null_mut();
            let name = if self.ok(unsafe { sys::napi_get_element(self.env, keys, i, &mut key) }) {
                self.string(key)
            } else {
                None
            };
            let Some(name) = name else {
                walk.violations.add(path, Rule::NotJsonValue);
                continue;
            };
            let member_path = child(path, &name);
            let mut member = ptr::null_mut();
            if self.ok(unsafe { sys::napi_get_property(self.env, object, key, &mut member) }) {
                let v = self.walk(member, &member_path, walk);
                map.insert(name, v);
            } else {
                walk.violations.add(&member_path, Rule::NotJsonValue);
            }
        }
        Value::Object(map)
    }
}

/// A finite JS number as JSON: integral values within i64 stay integers so
/// they print without a fraction; NaN and the infinities are not JSON.
fn number(n: f64) -> Option<Value> {
    if !n.is_finite() {
        return None;
    }
    if n.fract() == 0.0 && n.abs() < 9.2e18 {
        return Some(Value::Number(Number::from(n as i64)));
    }
    Number::from_f64(n).map(Value::Number)
}
