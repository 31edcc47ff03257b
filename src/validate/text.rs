//! JSON text in, the same verdict as the JS value it denotes. serde_json
//! stops at the first fault and says where in the *text*; a JS value with
//! `Infinity` or a lone surrogate is `not_json_value` at the *member*. When
//! the fast parse fails, one linear scan finds every such member by its JSON
//! Pointer, so `1e400` in text and `Infinity` as a value get the same
//! violation; anything else wrong with the text is `not_json_value` at `""`.

use serde_json::Value;

use super::report::{child, index, Report, Violations};
use crate::contract::{Rule, Violation};

/// serde_json parses 127 nested arrays or objects and refuses 128; the JS
/// walker uses the same bound (binding::js_value::MAX_DEPTH).
pub const MAX_DEPTH: usize = 127;

/// The deepest document a dialect stores (loopx-shipped-v0's results; LoopX
/// pins 2,000 levels, and its V8 gives up near 4,500). Every walk of such a
/// document (parse, validation, digest, serialization, drop) must fit the
/// smallest stack it may run on, a 2 MiB worker thread's, with room to spare.
pub const MAX_NESTED_DEPTH: usize = 2_048;

/// Whether JSON text nests at most `max` arrays and objects deep: one pass
/// over the bytes, skipping strings, with no recursion.
pub fn depth_within(text: &[u8], max: usize) -> bool {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for &b in text {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return false;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    true
}

/// JSON text of at most `max_depth` levels, deserialized past serde_json's
/// own limit of [`MAX_DEPTH`]: for a dialect whose documents nest deeper,
/// on a stack that holds `max_depth` levels of the caller's walks.
pub fn from_str_nested<T: serde::de::DeserializeOwned>(text: &str, max_depth: usize) -> Option<T> {
    if max_depth <= MAX_DEPTH {
        return serde_json::from_str(text).ok();
    }
    if !depth_within(text.as_bytes(), max_depth) {
        return None;
    }
    let mut de = serde_json::Deserializer::from_str(text);
    de.disable_recursion_limit();
    let value = T::deserialize(&mut de).ok()?;
    de.end().ok()?;
    Some(value)
}

fn at_root() -> Violations {
    vec![Violation { path: String::new(), rule: Rule::NotJsonValue }].into()
}

/// Parses JSON text; a value JSON cannot hold is `not_json_value` at its path.
pub fn parse(text: &str) -> Result<Value, Violations> {
    match serde_json::from_str(text) {
        Ok(value) => Ok(value),
        Err(_) => {
            let mut scan = Scan { b: text.as_bytes(), i: 0, report: Report::new(), muted: false };
            let complete = scan.value("", 0).and_then(|()| {
                scan.ws();
                (scan.i == scan.b.len()).then_some(())
            });
            // A syntax error, or a fault the scan cannot place (it should
            // not happen), is about the text as a whole.
            if complete.is_none() || scan.report.is_clean() {
                return Err(at_root());
            }
            Err(scan.report.into_violations())
        }
    }
}

struct Scan<'a> {
    b: &'a [u8],
    i: usize,
    report: Report,
    /// Inside the value of a member whose name JSON cannot hold: the JS
    /// walker skips such a member, so nothing in it is reported.
    muted: bool,
}

impl Scan<'_> {
    fn fault(&mut self, path: &str) {
        if !self.muted {
            self.report.add(path, Rule::NotJsonValue);
        }
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        self.ws();
        (self.peek() == Some(c)).then(|| self.i += 1)
    }

    /// One value at `path`; `depth` counts the arrays and objects around it.
    /// None on a syntax error.
    fn value(&mut self, path: &str, depth: usize) -> Option<()> {
        self.ws();
        match self.peek()? {
            b'{' | b'[' if depth >= MAX_DEPTH => None,
            b'{' => self.object(path, depth + 1),
            b'[' => self.array(path, depth + 1),
            b'"' => {
                if self.string()?.is_none() {
                    self.fault(path);
                }
                Some(())
            }
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            _ => self.number(path),
        }
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        self.b[self.i..].starts_with(word).then(|| self.i += word.len())
    }

    fn object(&mut self, path: &str, depth: usize) -> Option<()> {
        self.i += 1;
        if self.eat(b'}').is_some() {
            return Some(());
        }
        loop {
            self.ws();
            if self.peek()? != b'"' {
                return None;
            }
            let name = self.string()?;
            // A name JSON cannot hold: at the object, as the JS walker says,
            // and its value unreported, as the walker skips it.
            if name.is_none() {
                self.fault(path);
            }
            let member = name.as_ref().map_or_else(|| path.to_owned(), |n| child(path, n));
            self.eat(b':')?;
            let outer = self.muted;
            self.muted |= name.is_none();
            let scanned = self.value(&member, depth);
            self.muted = outer;
            scanned?;
            if self.eat(b',').is_none() {
                return self.eat(b'}');
            }
        }
    }

    fn array(&mut self, path: &str, depth: usize) -> Option<()> {
        self.i += 1;
        if self.eat(b']').is_some() {
            return Some(());
        }
        let mut n = 0;
        loop {
            self.value(&index(path, n), depth)?;
            n += 1;
            if self.eat(b',').is_none() {
                return self.eat(b']');
            }
        }
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`; one that overflows
    /// an f64 (`1e400`, 400 digits) is the JS value Infinity: `not_json_value`.
    fn number(&mut self, path: &str) -> Option<()> {
        let start = self.i;
        let digits = |s: &mut Self| {
            let from = s.i;
            while s.peek().is_some_and(|c| c.is_ascii_digit()) {
                s.i += 1;
            }
            s.i > from
        };
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        if self.peek() == Some(b'0') {
            self.i += 1;
        } else if !digits(self) {
            return None;
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            if !digits(self) {
                return None;
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.i += 1;
            }
            if !digits(self) {
                return None;
            }
        }
        let text = std::str::from_utf8(&self.b[start..self.i]).ok()?;
        if !text.parse::<f64>().ok()?.is_finite() {
            self.fault(path);
        }
        Some(())
    }

    /// A string token: None on a syntax error, `Some(None)` for a string
    /// JSON text cannot carry as text (a lone surrogate), else its value.
    fn string(&mut self) -> Option<Option<String>> {
        self.i += 1;
        let mut out = String::new();
        let mut lone = false;
        loop {
            let c = self.peek()?;
            self.i += 1;
            match c {
                b'"' => return Some((!lone).then_some(out)),
                b'\\' => {
                    let e = self.peek()?;
                    self.i += 1;
                    match e {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => {
                            let unit = self.hex4()?;
                            match unit {
                                0xD800..=0xDBFF if self.b[self.i..].starts_with(b"\\u") => {
                                    let save = self.i;
                                    self.i += 2;
                                    let low = self.hex4()?;
                                    if (0xDC00..=0xDFFF).contains(&low) {
                                        let code = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
                                        out.push(char::from_u32(code)?);
                                    } else {
                                        lone = true;
                                        self.i = save;
                                    }
                                }
                                0xD800..=0xDFFF => lone = true,
                                _ => out.push(char::from_u32(unit)?),
                            }
                        }
                        _ => return None,
                    }
                }
                0x00..=0x1F => return None,
                _ => {
                    // Copy the whole UTF-8 sequence (the text is a &str).
                    let start = self.i - 1;
                    while self.peek().is_some_and(|c| c & 0xC0 == 0x80) {
                        self.i += 1;
                    }
                    out.push_str(std::str::from_utf8(&self.b[start..self.i]).ok()?);
                }
            }
        }
    }

    fn hex4(&mut self) -> Option<u32> {
        let digits = self.b.get(self.i..self.i + 4)?;
        let text = std::str::from_utf8(digits).ok()?;
        let unit = u32::from_str_radix(text, 16).ok()?;
        if !digits.iter().all(u8::is_ascii_hexdigit) {
            return None;
        }
        self.i += 4;
        Some(unit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_text_is_read_to_its_bound_and_refused_past_it_without_recursing_first() {
        let nest = |n: usize| format!("{}1{}", "[".repeat(n), "]".repeat(n));
        let read = |n: usize, max: usize| {
            let text = nest(n);
            // The walks of a deep value recurse; the test's own thread is small in debug.
            std::thread::Builder::new()
                .stack_size(64 << 20)
                .spawn(move || from_str_nested::<Value>(&text, max).is_some())
                .unwrap()
                .join()
                .unwrap()
        };
        assert!(read(MAX_NESTED_DEPTH, MAX_NESTED_DEPTH));
        assert!(!read(MAX_NESTED_DEPTH + 1, MAX_NESTED_DEPTH));
        assert!(!read(MAX_DEPTH + 1, MAX_DEPTH), "serde_json's own limit is kept below it");
        assert!(depth_within(br#"["[[[[", {"a": "]]]"}]"#, 2), "brackets inside strings do not count");
        assert!(!depth_within(b"[[[]]]", 2));
    }

    fn paths(text: &str) -> Vec<(String, Rule)> {
        parse(text).unwrap_err().iter().map(|v| (v.path.clone(), v.rule)).collect()
    }

    #[test]
    fn valid_text_parses() {
        assert_eq!(parse(r#"{"a":[1,"\ud83d\ude00",true,null]}"#).unwrap()["a"][1], "\u{1F600}");
    }

    #[test]
    fn an_overflowing_number_is_placed_at_its_member() {
        let p = |s: &str| (s.to_owned(), Rule::NotJsonValue);
        assert_eq!(paths(r#"{"budget":{"timeout_ms":1e400}}"#), vec![p("/budget/timeout_ms")]);
        assert_eq!(paths(r#"[0,-1E+400,{"a/b":1e999}]"#), vec![p("/1"), p("/2/a~1b")]);
        assert_eq!(paths(&format!("[{}]", "9".repeat(400))), vec![p("/0")]);
        assert_eq!(paths(r#"{"x":"\ud800","y":"\udc00x"}"#), vec![p("/x"), p("/y")]);
        assert_eq!(paths(r#"{"\ud800":1}"#), vec![p("")]);
        assert_eq!(paths(r#"{"\ud800":["\ud800",1e400],"a":1e400}"#), vec![p(""), p("/a")]);
        assert_eq!(paths(r#"{"sk_live_abc":1e400}"#), vec![p("/~0redacted~0")]);
    }

    #[test]
    fn anything_else_is_the_root() {
        let root = vec![(String::new(), Rule::NotJsonValue)];
        for bad in
            ["", "[1e400", "[1e400,]", "{\"a\":1e400} x", "[01]", "[1.]", "[\"\u{1}\"]", "[1e400,\"\\x\"]", "nul"]
        {
            assert_eq!(paths(bad), root, "{bad:?}");
        }
        let deep = format!("{}1e400{}", "[".repeat(128), "]".repeat(128));
        assert_eq!(paths(&deep), root);
        let ok_depth = format!("{}1e400{}", "[".repeat(127), "]".repeat(127));
        assert_eq!(paths(&ok_depth)[0].0, "/0".repeat(127));
    }

    #[test]
    fn a_million_faults_are_counted_not_listed() {
        let text = format!("[{}1]", "1e400,".repeat(1_000_000));
        let v = parse(&text).unwrap_err();
        assert_eq!(v.len(), super::super::report::MAX_REPORTED);
        assert_eq!(v.more(), 1_000_000 - v.len());
    }
}
