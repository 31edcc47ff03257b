//! Recognising an SQLite file by its first bytes, with plain file I/O, before
//! SQLite is given it. The journal and the turn-start inbox both refuse a
//! non-empty file that does not start like an SQLite database, so SQLite
//! never opens (and never changes) a foreign file.

use std::io::Read;
use std::path::Path;

const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";
const SQLITE_HEADER_LEN: usize = 100;

/// True when `path` is missing, empty, or starts with a whole SQLite header
/// (100 bytes beginning with the magic string); false for anything else.
pub(crate) fn is_sqlite_or_empty(path: &Path) -> std::io::Result<bool> {
    let mut file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(true),
        Err(e) => return Err(e),
    };
    let mut head = [0u8; SQLITE_HEADER_LEN];
    let mut n = 0;
    while n < head.len() {
        match file.read(&mut head[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n == 0 || (n == SQLITE_HEADER_LEN && head.starts_with(SQLITE_MAGIC)))
}
