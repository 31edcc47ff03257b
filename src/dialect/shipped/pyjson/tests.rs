use serde_json::{json, Map, Value};

use super::testkit::{python, Rng, PRELUDE};
use super::*;

/// Python's answers for a corpus: `json.dumps` of every value and `strip()`
/// of every string.
fn python_answers(values: &[Value], strings: &[String]) -> (Vec<String>, Vec<String>) {
    let script = format!(
        "{PRELUDE}print(json.dumps({{'dumps': [dumps(v) for v in data['values']], \
         'strip': [s.strip() for s in data['strings']]}}))"
    );
    let answers = python(&script, &json!({"values": values, "strings": strings}));
    let list = |key: &str| -> Vec<String> {
        answers[key].as_array().expect("a list").iter().map(|v| v.as_str().expect("a string").to_owned()).collect()
    };
    (list("dumps"), list("strip"))
}

fn assert_all_equal(values: &[Value], strings: &[String]) {
    let (dumped, stripped) = python_answers(values, strings);
    assert_eq!(dumped.len(), values.len());
    assert_eq!(stripped.len(), strings.len());
    for (v, expected) in values.iter().zip(&dumped) {
        assert_eq!(&dumps(v), expected, "dumps of {v:?}");
    }
    for (s, expected) in strings.iter().zip(&stripped) {
        assert_eq!(py_strip(s), expected, "strip of {s:?}");
    }
}

/// Keys whose code point order and UTF-16 order disagree: U+E000 and U+FFFF
/// sort before U+10000 and U+1F600 by code point, after them by UTF-16 unit.
fn astral_keyed_object() -> Value {
    let mut inner = Map::new();
    for key in ["\u{1f600}", "\u{e000}", "\u{10000}", "\u{ffff}", "z", "", "\u{7f}", "A"] {
        inner.insert(key.to_owned(), json!(key));
    }
    json!({"\u{10ffff}": [inner.clone(), {}], "\u{fffd}": {"b": inner, "a": []}, "a": {}})
}

#[test]
fn fixed_corpus_matches_python() {
    let mut strings: Vec<String> = Vec::new();
    // every character through U+3000 (all C0 controls, U+007F, U+0080..U+009F,
    // U+00A0, and every whitespace character Python knows), alone and padded
    for c in (0u32..=0x3000).filter_map(char::from_u32) {
        strings.push(c.to_string());
        strings.push(format!("{c}x{c}{c}"));
    }
    for c in ['\u{feff}', '\u{200b}', '\u{d7ff}', '\u{e000}', '\u{fffd}', '\u{ffff}', '\u{10000}', '\u{1f600}'] {
        strings.push(c.to_string());
        strings.push(format!(" {c} "));
    }
    strings.push("\u{10ffff}".to_owned());
    strings.push("q\"u\\o/te\u{1f600}\u{10ffff}\u{2028}\u{2029}".to_owned());
    strings.push(String::new());
    strings.push(" \t\n\u{1c}\u{1d}\u{1e}\u{1f}\u{85}\u{a0}\u{3000} ".to_owned());
    strings.push("\u{feff} id \u{feff}".to_owned());
    strings.push("\u{200b}id\u{200b}".to_owned());

    let mut values: Vec<Value> = strings.iter().map(|s| json!(s)).collect();
    values.extend([
        json!(null),
        json!(true),
        json!(false),
        json!([]),
        json!({}),
        json!([[], {}, [[]], {"": {}}]),
        json!({"b": [true, false, null], "a": {"d": null, "c": "x"}}),
        astral_keyed_object(),
        json!({"\u{0}": "nul key", "\u{1f}": 1, "\"": 2, "\\": 3}),
    ]);
    assert_all_equal(&values, &strings);
}

#[test]
fn generated_corpus_matches_python() {
    let mut rng = Rng::new(0x5eed_0019);
    let strings: Vec<String> = (0..4000).map(|_| rng.string()).collect();
    let mut values: Vec<Value> = strings.iter().map(|s| json!(s)).collect();
    // objects keyed by generated strings, nested two deep, with scalar leaves
    for _ in 0..400 {
        let mut outer = Map::new();
        for _ in 0..rng.below(6) {
            let mut inner = Map::new();
            for _ in 0..rng.below(5) {
                let leaf = match rng.below(4) {
                    0 => json!(null),
                    1 => json!(rng.below(2) == 0),
                    2 => json!([rng.string(), {}]),
                    _ => json!(rng.string()),
                };
                inner.insert(rng.string(), leaf);
            }
            outer.insert(rng.string(), Value::Object(inner));
        }
        values.push(Value::Object(outer));
    }
    assert_all_equal(&values, &strings);
}

#[test]
fn numbers_match_python() {
    let mut values = vec![
        json!(0),
        json!(-1),
        json!(i64::MIN),
        json!(i64::MAX),
        json!(u64::MAX),
        json!(0.0),
        json!(-0.0),
        json!(1.0),
        json!(-2.5),
        json!(0.1),
        json!(1e-4),
        json!(1e-5),
        json!(1.5e-5),
        json!(1e15),
        json!(9_999_999_999_999_998.0),
        json!(1e16),
        json!(1.234_567_890_123_456_8e17),
        json!(5e-324),
        json!(f64::MIN_POSITIVE),
        json!(f64::MAX),
        json!(f64::MIN),
    ];
    let mut rng = Rng::new(7);
    for _ in 0..2000 {
        let f = f64::from_bits(rng.next());
        if f.is_finite() {
            values.push(json!(f));
        }
        // decimal-looking floats, the ones that print positionally
        values.push(json!((rng.below(2_000_000) as f64 - 1e6) / 10f64.powi(rng.below(8) as i32)));
        values.push(json!(rng.next() as i64));
    }
    assert_all_equal(&values, &[]);
}

/// Python computes the set itself: every code point whose one-character
/// string strips to nothing.
#[test]
fn whitespace_set_is_pythons() {
    let script = format!("{PRELUDE}print(json.dumps([c for c in range(0x110000) if chr(c).strip() == '']))");
    let python_set: Vec<u32> = serde_json::from_value(python(&script, &json!(null))).expect("code points");
    let ours: Vec<u32> = (0u32..=0x10ffff).filter(|&c| char::from_u32(c).is_some_and(is_py_whitespace)).collect();
    assert_eq!(ours, python_set);
    assert_eq!(ours.len(), 29);
}

#[test]
fn strip_differs_from_rust_trim_where_python_does() {
    assert_eq!(py_strip("\u{1c}\u{1d}id\u{1e}\u{1f}"), "id");
    assert_eq!("\u{1c}id\u{1f}".trim(), "\u{1c}id\u{1f}");
    assert_eq!(py_strip("\u{feff}id\u{200b}"), "\u{feff}id\u{200b}");
    assert_eq!(py_strip("\u{85}\u{a0}\u{3000}"), "");
}

/// Pinned by hand, so a wrong escape shows even with python3 broken.
#[test]
fn escapes_by_hand() {
    let v = json!({"\u{1f600}": "\u{7f}\u{85}\u{feff}\u{10ffff}", "\u{ffff}": "\"\\\u{8}\u{c}\n\r\t\u{0}/", "a": [true, null]});
    assert_eq!(
        dumps(&v),
        r#"{"a":[true,null],"\uffff":"\"\\\b\f\n\r\t\u0000/","\ud83d\ude00":"\u007f\u0085\ufeff\udbff\udfff"}"#
    );
}
