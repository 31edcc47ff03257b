//! Test support: asks the real python3 for its answers, and draws seeded
//! pseudo-random strings from every character class the escaping and the
//! stripping treat differently.
use std::io::Write as _;
use std::process::Command;

use serde_json::Value;

/// Runs `script` under `python3 -c` with the path of a file holding `input`
/// (JSON, UTF-8) as `sys.argv[1]`, and parses what it prints as JSON.
///
/// A missing python3 fails the test: the vectors exist only because Python
/// computes them, so a run without it has proven nothing.
pub(crate) fn python(script: &str, input: &Value) -> Value {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    let path = std::env::temp_dir().join(format!("loopx-pyjson-{}-{nanos}.json", std::process::id()));
    let mut file = std::fs::File::create(&path).expect("create the corpus file");
    file.write_all(serde_json::to_string(input).expect("corpus serializes").as_bytes()).expect("write the corpus");
    drop(file);
    let output = Command::new("python3").arg("-c").arg(script).arg(&path).output();
    let _ = std::fs::remove_file(&path);
    let output = match output {
        Ok(output) => output,
        Err(e) => {
            panic!("python3 could not be run ({e}): these tests compare against Python itself and need python3 on PATH")
        }
    };
    assert!(output.status.success(), "python3 failed: {}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).expect("python3 printed JSON")
}

/// Python prologue every script starts with: `data` is the parsed input and
/// `dumps` the canonical form under test.
pub(crate) const PRELUDE: &str = r#"
import hashlib, json, sys
with open(sys.argv[1], encoding="utf-8") as f:
    data = json.load(f)
def dumps(v):
    return json.dumps(v, sort_keys=True, separators=(",", ":"))
"#;

/// SplitMix64: small, seeded, and identical on every platform.
pub(crate) struct Rng(u64);

/// Characters that each exercise a different branch: short escapes, other
/// controls, U+007F..U+009F (incl. U+0085), Python whitespace, look-alikes
/// that are not whitespace (U+200B, U+FEFF), the edges of the BMP and astral
/// planes, and the pair of private-use/astral characters that sort one way
/// by code point and the other by UTF-16 unit.
const SPECIAL: &[char] = &[
    '"',
    '\\',
    '/',
    '\u{08}',
    '\u{0c}',
    '\n',
    '\r',
    '\t',
    '\u{00}',
    '\u{01}',
    '\u{0b}',
    '\u{1b}',
    '\u{1c}',
    '\u{1f}',
    ' ',
    '~',
    '\u{7f}',
    '\u{80}',
    '\u{85}',
    '\u{9f}',
    '\u{a0}',
    '\u{ff}',
    '\u{1680}',
    '\u{2000}',
    '\u{200a}',
    '\u{200b}',
    '\u{2028}',
    '\u{2029}',
    '\u{202f}',
    '\u{205f}',
    '\u{3000}',
    '\u{d7ff}',
    '\u{e000}',
    '\u{feff}',
    '\u{fffd}',
    '\u{ffff}',
    '\u{10000}',
    '\u{1f600}',
    '\u{10ffff}',
];

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// One character from a class picked at random.
    pub(crate) fn char(&mut self) -> char {
        let pick = |lo: u32, hi: u32, r: u64| char::from_u32(lo + (r % u64::from(hi - lo + 1)) as u32);
        let r = self.next();
        let c = match self.below(7) {
            0 => pick(0x20, 0x7e, r),
            1 => pick(0x00, 0x1f, r),
            2 => pick(0x7f, 0xa0, r),
            3 => Some(SPECIAL[(r % SPECIAL.len() as u64) as usize]),
            4 => pick(0xa1, 0xd7ff, r),
            5 => pick(0xe000, 0xffff, r),
            _ => pick(0x10000, 0x10ffff, r),
        };
        c.unwrap_or('?')
    }

    /// A string of 0..12 characters, often padded with whitespace and
    /// non-whitespace look-alikes so `strip()` has edges to cut.
    pub(crate) fn string(&mut self) -> String {
        let mut s = String::new();
        let pad = |rng: &mut Rng, s: &mut String| {
            for _ in 0..rng.below(3) {
                s.push(SPECIAL[(rng.below(SPECIAL.len() as u64)) as usize]);
            }
        };
        pad(self, &mut s);
        for _ in 0..self.below(12) {
            s.push(self.char());
        }
        pad(self, &mut s);
        s
    }
}
