//! RFC 8785 test vectors, the RFC's number table, and properties over random values.
use super::*;
use proptest::prelude::*;
use serde_json::json;

fn jcs(input: &str) -> String {
    let value: Value = serde_json::from_str(input).expect("test input parses");
    let out = canonical_json(&value);
    assert_eq!(canonical_len(&value), out.len(), "canonical_len of {input}");
    out
}

// RFC 8785 / cyberphone json-canonicalization testdata, input -> output.

#[test]
fn rfc_arrays() {
    let input = r#"[
  56,
  {
"d": true,
"10": null,
"1": [ ]
  }
]"#;
    assert_eq!(jcs(input), r#"[56,{"1":[],"10":null,"d":true}]"#);
}

#[test]
fn rfc_french() {
    let input = r#"{
  "peach": "This sorting order",
  "péché": "is wrong according to French",
  "pêche": "but canonicalization MUST",
  "sin":   "ignore locale"
}"#;
    assert_eq!(
        jcs(input),
        r#"{"peach":"This sorting order","péché":"is wrong according to French","pêche":"but canonicalization MUST","sin":"ignore locale"}"#
    );
}

#[test]
fn rfc_structures() {
    let input = r#"{
  "1": {"f": {"f": "hi","F": 5} ,"\n": 56.0},
  "10": { },
  "": "empty",
  "a": { },
  "111": [ {"e": "yes","E": "no" } ],
  "A": { }
}"#;
    assert_eq!(
        jcs(input),
        r#"{"":"empty","1":{"\n":56,"f":{"F":5,"f":"hi"}},"10":{},"111":[{"E":"no","e":"yes"}],"A":{},"a":{}}"#
    );
}

#[test]
fn rfc_unicode() {
    let input = r#"{
  "Unnormalized Unicode":"A\u030a"
}"#;
    // no normalization: A followed by U+030A COMBINING RING ABOVE
    assert_eq!(jcs(input), "{\"Unnormalized Unicode\":\"A\u{30a}\"}");
}

#[test]
#[allow(clippy::excessive_precision)] // the RFC's own spelling of the input
fn rfc_values() {
    // The numbers are given as Rust f64 literals (correctly rounded), not
    // through serde_json's text parser: see `serde_json_parses_floats_exactly`.
    let input = r#"{
  "numbers": [],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}"#;
    let mut value: Value = serde_json::from_str(input).unwrap();
    value["numbers"] = json!([333333333.33333329f64, 1E30f64, 4.50f64, 2e-3f64, 0.000000000000000000000000001f64]);
    let out = canonical_json(&value);
    assert_eq!(canonical_len(&value), out.len());
    assert_eq!(
        out,
        r#"{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}"#
    );
}

/// serde_json's default float parser is not correctly rounded (it is
/// without the `float_roundtrip` feature): "333333333.33333329" parses one
/// ULP low and canonicalizes as 333333333.33333325, unlike JavaScript.
/// Canonicalization itself is exact for the double it is given; this test
/// pins the parser and passes once `float_roundtrip` is enabled.
#[test]
fn serde_json_parses_floats_exactly() {
    assert_eq!(jcs("333333333.33333329"), "333333333.3333333");
    assert_eq!(jcs("-9.844103643675809e+194"), "-9.844103643675809e+194");
}

#[test]
fn rfc_weird() {
    let input = r#"{
  "\u20ac": "Euro Sign",
  "\r": "Carriage Return",
  "\u000a": "Newline",
  "1": "One",
  "\u0080": "Control\u007f",
  "\ud83d\ude02": "Smiley",
  "\u00f6": "Latin Small Letter O With Diaeresis",
  "\ufb33": "Hebrew Letter Dalet With Dagesh",
  "</script>": "Browser Challenge"
}"#;
    let expected = "{\"\\n\":\"Newline\",\"\\r\":\"Carriage Return\",\"1\":\"One\",\
\"</script>\":\"Browser Challenge\",\"\u{80}\":\"Control\u{7f}\",\
\"\u{f6}\":\"Latin Small Letter O With Diaeresis\",\"\u{20ac}\":\"Euro Sign\",\
\"\u{1f602}\":\"Smiley\",\"\u{fb33}\":\"Hebrew Letter Dalet With Dagesh\"}";
    assert_eq!(jcs(input), expected);
    // the RFC's hex dump (testdata/outhex/weird.txt), to be sure of the bytes themselves
    let hex: String = jcs(input).bytes().map(|b| format!("{b:02x}")).collect();
    let expected_hex = concat!(
        "7b225c6e223a224e65776c696e65222c225c72223a2243617272696167652052657475726e222c2231223a224f6e6522",
        "2c223c2f7363726970743e223a2242726f77736572204368616c6c656e6765222c22c280223a22436f6e74726f6c7f22",
        "2c22c3b6223a224c6174696e20536d616c6c204c6574746572204f205769746820446961657265736973222c22e282ac",
        "223a224575726f205369676e222c22f09f9882223a22536d696c6579222c22efacb3223a22486562726577204c657474",
        "65722044616c6574205769746820446167657368227d",
    );
    assert_eq!(hex, expected_hex);
}

/// RFC 8785 appendix B: IEEE 754 bit patterns and their expected text
/// (cross-checked against node's JSON.stringify).
#[test]
fn rfc_number_table() {
    let table: &[(u64, &str)] = &[
        (0x0000000000000000, "0"),
        (0x8000000000000000, "0"),
        (0x0000000000000001, "5e-324"),
        (0x8000000000000001, "-5e-324"),
        (0x7fefffffffffffff, "1.7976931348623157e+308"),
        (0xffefffffffffffff, "-1.7976931348623157e+308"),
        (0x4340000000000000, "9007199254740992"),
        (0xc340000000000000, "-9007199254740992"),
        (0x4430000000000000, "295147905179352830000"),
        (0x44b52d02c7e14af5, "9.999999999999997e+22"),
        (0x44b52d02c7e14af6, "1e+23"),
        (0x44b52d02c7e14af7, "1.0000000000000001e+23"),
        (0x444b1ae4d6e2ef4e, "999999999999999700000"),
        (0x444b1ae4d6e2ef4f, "999999999999999900000"),
        (0x444b1ae4d6e2ef50, "1e+21"),
        (0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"),
        (0x3eb0c6f7a0b5ed8d, "0.000001"),
        (0x41b3de4355555553, "333333333.3333332"),
        (0x41b3de4355555554, "333333333.33333325"),
        (0x41b3de4355555555, "333333333.3333333"),
        (0x41b3de4355555556, "333333333.3333334"),
        (0x41b3de4355555557, "333333333.33333343"),
        (0xbecbf647612f3696, "-0.0000033333333333333333"),
        (0x43143ff3c1cb0959, "1424953923781206.2"),
    ];
    for &(bits, expected) in table {
        let value = Value::from(f64::from_bits(bits));
        assert_eq!(canonical_json(&value), expected, "bits {bits:016x}");
        assert_eq!(canonical_len(&value), expected.len());
    }
}

#[test]
fn numbers_from_text_and_integers() {
    let cases: &[(&str, &str)] = &[
        ("1e-7", "1e-7"),
        ("333333333.3333333", "333333333.3333333"),
        ("1e+21", "1e+21"),
        ("1e21", "1e+21"),
        ("1e20", "100000000000000000000"),
        ("0.000001", "0.000001"),
        ("-0", "0"),
        ("-0.0", "0"),
        ("0.0", "0"),
        ("56.0", "56"),
        ("-1.0", "-1"),
        ("5e-324", "5e-324"),
        ("1.7976931348623157e308", "1.7976931348623157e+308"),
        // held by serde_json as u64 / i64, still printed through f64
        ("9007199254740993", "9007199254740992"),
        ("-9007199254740993", "-9007199254740992"),
        ("18446744073709551615", "18446744073709552000"),
        ("1000000000000000000000", "1e+21"),
        ("123", "123"),
        ("-123", "-123"),
    ];
    for &(input, expected) in cases {
        assert_eq!(jcs(input), expected, "input {input}");
    }
    assert_eq!(canonical_json(&json!(u64::MAX)), "18446744073709552000");
    assert_eq!(canonical_json(&json!(i64::MIN)), "-9223372036854776000");
    assert_eq!(canonical_json(&json!(-0.0f64)), "0");
}

#[test]
fn string_escapes() {
    let s: String =
        (0u32..0x20).filter_map(char::from_u32).collect::<String>() + "\"\\/\u{7f}\u{2028}\u{2029}\u{e9}\u{1f600}";
    let expected = "\"\\u0000\\u0001\\u0002\\u0003\\u0004\\u0005\\u0006\\u0007\\b\\t\\n\\u000b\\f\\r\
\\u000e\\u000f\\u0010\\u0011\\u0012\\u0013\\u0014\\u0015\\u0016\\u0017\\u0018\\u0019\\u001a\\u001b\
\\u001c\\u001d\\u001e\\u001f\\\"\\\\/\u{7f}\u{2028}\u{2029}\u{e9}\u{1f600}\"";
    let value = Value::String(s);
    assert_eq!(canonical_json(&value), expected);
    assert_eq!(canonical_len(&value), expected.len());
}

#[test]
fn utf16_order_differs_from_utf8_order() {
    // In UTF-16, U+1F600 is D83D DE00: after U+E9 but before U+E000..U+FFFF,
    // whereas its UTF-8 lead byte F0 sorts after all of them.
    let value = json!({"\u{fb33}": 1, "\u{1f600}": 2, "\u{e9}": 3, "\u{e000}": 4, "\u{ffff}": 5, "z": 6});
    assert_eq!(
        canonical_json(&value),
        "{\"z\":6,\"\u{e9}\":3,\"\u{1f600}\":2,\"\u{e000}\":4,\"\u{fb33}\":1,\"\u{ffff}\":5}"
    );
    assert_eq!(utf16_cmp("\u{1f600}", "\u{e000}"), Ordering::Less);
    assert_eq!(utf16_cmp("\u{e000}", "\u{1f600}"), Ordering::Greater);
    assert_eq!(utf16_cmp("a\u{10ffff}", "a\u{ffff}"), Ordering::Less);
    assert_eq!(utf16_cmp("\u{d7ff}", "\u{10000}"), Ordering::Less);
    assert_eq!(utf16_cmp("ab", "abc"), Ordering::Less);
    assert_eq!(utf16_cmp("abc", "abc"), Ordering::Equal);
}

#[test]
fn empty_and_nested() {
    assert_eq!(jcs("{}"), "{}");
    assert_eq!(jcs("[]"), "[]");
    assert_eq!(jcs("\"\""), "\"\"");
    assert_eq!(
        jcs(r#"{ "b" : [ 1 , { "d":[], "c" : null } ], "a" : false }"#),
        r#"{"a":false,"b":[1,{"c":null,"d":[]}]}"#
    );
}

// ---- property tests -------------------------------------------------

/// A strict parser for canonical output: no whitespace, only the JCS
/// escapes, object keys strictly increasing in UTF-16 order, and numbers
/// read with Rust's correctly rounded `f64` parser (serde_json's default
/// one is not, see `serde_json_parses_floats_exactly`).
fn parse_strict(text: &str) -> Result<Value, String> {
    struct P<'a> {
        s: &'a str,
        i: usize,
    }
    impl P<'_> {
        fn peek(&self) -> Option<u8> {
            self.s.as_bytes().get(self.i).copied()
        }
        fn eat(&mut self, lit: &str) -> Result<(), String> {
            if self.s[self.i..].starts_with(lit) {
                self.i += lit.len();
                Ok(())
            } else {
                Err(format!("expected {lit:?} at {}", self.i))
            }
        }
        fn value(&mut self) -> Result<Value, String> {
            match self.peek().ok_or("unexpected end")? {
                b'n' => self.eat("null").map(|_| Value::Null),
                b't' => self.eat("true").map(|_| Value::Bool(true)),
                b'f' => self.eat("false").map(|_| Value::Bool(false)),
                b'"' => self.string().map(Value::String),
                b'[' => {
                    self.i += 1;
                    let mut items = Vec::new();
                    if self.peek() == Some(b']') {
                        self.i += 1;
                        return Ok(Value::Array(items));
                    }
                    loop {
                        items.push(self.value()?);
                        match self.peek() {
                            Some(b',') => self.i += 1,
                            Some(b']') => {
                                self.i += 1;
                                return Ok(Value::Array(items));
                            }
                            _ => return Err(format!("bad array at {}", self.i)),
                        }
                    }
                }
                b'{' => {
                    self.i += 1;
                    let mut map = Map::new();
                    if self.peek() == Some(b'}') {
                        self.i += 1;
                        return Ok(Value::Object(map));
                    }
                    let mut prev: Option<String> = None;
                    loop {
                        let key = self.string()?;
                        if let Some(p) = &prev {
                            if p.encode_utf16().cmp(key.encode_utf16()) != Ordering::Less {
                                return Err(format!("key {key:?} not after {p:?} in UTF-16 order"));
                            }
                        }
                        self.eat(":")?;
                        let v = self.value()?;
                        map.insert(key.clone(), v);
                        prev = Some(key);
                        match self.peek() {
                            Some(b',') => self.i += 1,
                            Some(b'}') => {
                                self.i += 1;
                                return Ok(Value::Object(map));
                            }
                            _ => return Err(format!("bad object at {}", self.i)),
                        }
                    }
                }
                _ => {
                    let len = self.s[self.i..]
                        .find(|c: char| !matches!(c, '-' | '+' | '.' | 'e' | '0'..='9'))
                        .unwrap_or(self.s.len() - self.i);
                    let text = &self.s[self.i..self.i + len];
                    self.i += len;
                    let f: f64 = text.parse().map_err(|_| format!("bad number {text:?}"))?;
                    Ok(Value::from(f))
                }
            }
        }
        fn string(&mut self) -> Result<String, String> {
            self.eat("\"")?;
            let mut out = String::new();
            loop {
                let c = self.s[self.i..].chars().next().ok_or("unterminated string")?;
                self.i += c.len_utf8();
                match c {
                    '"' => return Ok(out),
                    '\\' => {
                        let e = self.peek().ok_or("unterminated escape")?;
                        self.i += 1;
                        out.push(match e {
                            b'"' => '"',
                            b'\\' => '\\',
                            b'b' => '\u{8}',
                            b'f' => '\u{c}',
                            b'n' => '\n',
                            b'r' => '\r',
                            b't' => '\t',
                            b'u' => {
                                let hex = &self.s[self.i..self.i + 4];
                                self.i += 4;
                                let code = u8::from_str_radix(hex.strip_prefix("00").ok_or("\\u above 00ff")?, 16)
                                    .map_err(|_| "bad \\u")?;
                                let short = matches!(code, 0x08 | 0x09 | 0x0a | 0x0c | 0x0d);
                                if code >= 0x20 || short || hex != hex.to_ascii_lowercase() {
                                    return Err(format!("non-JCS escape \\u{hex}"));
                                }
                                code as char
                            }
                            _ => return Err(format!("bad escape {e}")),
                        });
                    }
                    c if (c as u32) < 0x20 => return Err("raw control character".into()),
                    c => out.push(c),
                }
            }
        }
    }
    let mut p = P { s: text, i: 0 };
    let v = p.value()?;
    if p.i != text.len() {
        return Err(format!("trailing text at {}", p.i));
    }
    Ok(v)
}

/// Structural equality with numbers compared as the doubles JCS prints.
fn same_as_f64(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_as_f64(p, q)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same_as_f64(v, w)))
        }
        _ => a == b,
    }
}

/// Strings weighted toward the characters that make JCS hard: controls,
/// quotes, DEL, U+2028, and both sides of the UTF-16/UTF-8 order split.
fn tricky_string() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[a-c\\x00-\\x1f\"\\\\\\x7f\u{e9}\u{2028}\u{e000}\u{fb33}\u{ffff}\u{10000}\u{1f600}\u{10ffff}]{0,5}",
        1 => any::<String>(),
    ]
}

fn finite_f64() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<f64>().prop_filter("finite", |f| f.is_finite()),
        (-1_000_000i64..1_000_000).prop_map(|i| i as f64 / 8.0),
        Just(-0.0),
        Just(5e-324),
        Just(1e21),
        Just(9007199254740993.0),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        finite_f64().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        tricky_string().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            prop::collection::vec((tricky_string(), inner), 0..8)
                .prop_map(|members| Value::Object(members.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn roundtrip_idempotent_sorted(value in json_value()) {
        let text = canonical_json(&value);
        prop_assert_eq!(canonical_len(&value), text.len());
        // valid JSON for any parser
        let loose: Value = serde_json::from_str(&text).expect("canonical output is JSON");
        prop_assert_eq!(loose.to_string().is_empty(), false);
        // exact re-parse (also checks UTF-16 key order and escapes)
        let reparsed = parse_strict(&text).map_err(TestCaseError::fail)?;
        prop_assert!(same_as_f64(&value, &reparsed), "reparse differs: {} vs {}", value, reparsed);
        prop_assert_eq!(canonical_json(&reparsed), text.as_str());
    }

    #[test]
    fn utf16_cmp_matches_encode_utf16(a in tricky_string(), b in tricky_string()) {
        prop_assert_eq!(utf16_cmp(&a, &b), a.encode_utf16().cmp(b.encode_utf16()));
    }

    #[test]
    fn numbers_reparse_to_same_double(f in finite_f64()) {
        let text = canonical_json(&Value::from(f));
        let back: f64 = text.parse().expect("number text parses");
        prop_assert_eq!(back, f);
    }
}

#[test]
fn an_object_written_member_by_member_is_the_canonical_form_of_the_same_object() {
    let payload = serde_json::json!({"z": [1.0, 1e21, -0.0], "a\u{1}": {"\u{10000}": "\"", "\u{ffff}": null}});
    let names = ["domain", "b", "B", "é", "\u{10000}", "\u{ffff}", "a\"b", "payload"];
    let mut members: Vec<(&str, Member<'_>)> = names.iter().map(|n| (*n, Member::Str("v\n\u{7}"))).collect();
    members[7].1 = Member::Json(&payload);
    let mut object = serde_json::Map::new();
    for (name, value) in &members {
        let v = match value {
            Member::Str(s) => Value::String((*s).to_owned()),
            Member::Json(v) => (*v).clone(),
        };
        object.insert((*name).to_owned(), v);
    }
    assert_eq!(canonical_object(&mut members), canonical_json(&Value::Object(object)));
}
