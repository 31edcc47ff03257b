//! Finding the receipt files of a runtime root: every
//! `goals/<goal_id>/post_writeback_hooks/pwh_<64 hex>.json`, in name order.
//! Other names are not LoopX's receipts and are ignored; a symlink or a
//! non-regular file where a receipt (or a folder on the way) should be is
//! refused and listed, never followed out of the root.

use std::fs;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use super::{is_receipt_name, Reason, Rejected, RECEIPT_DIR};
use crate::dialect::shipped::grammar::is_goal_id;

/// Bytes a receipt file may hold: far above what a valid receipt needs
/// (its intent fits in a result of at most 64 KiB), so only a file that
/// cannot be one is refused unread.
pub const MAX_RECEIPT_BYTES: u64 = 1 << 20;

/// A receipt file read whole, not yet judged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    /// Relative to the runtime root.
    pub file: String,
    pub goal_id: String,
    /// The file name without `.json`.
    pub stem: String,
    pub bytes: Vec<u8>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Entry {
    Found(Found),
    Rejected(Rejected),
}

/// The receipt files under `runtime_root`. A root without a `goals`
/// folder holds none; a root that cannot be listed is the caller's error.
pub fn scan(runtime_root: &Path) -> std::io::Result<Vec<Entry>> {
    let goals = runtime_root.join("goals");
    let meta = match fs::symlink_metadata(&goals) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    if !meta.is_dir() {
        return Ok(vec![rejected("goals".into(), Reason::NotARegularFile)]);
    }
    let mut out = Vec::new();
    for goal in sorted_names(&goals)? {
        let rel = format!("goals/{}", shown(&goal));
        let goal_dir = goals.join(&goal);
        let Ok(meta) = fs::symlink_metadata(&goal_dir) else { continue };
        if meta.file_type().is_symlink() {
            out.push(rejected(rel, Reason::NotARegularFile));
            continue;
        }
        if !meta.is_dir() {
            continue;
        }
        let dir = goal_dir.join(RECEIPT_DIR);
        let rel = format!("{rel}/{RECEIPT_DIR}");
        match fs::symlink_metadata(&dir) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                out.push(rejected(rel, Reason::NotARegularFile));
                continue;
            }
            Err(_) => continue,
        }
        let Some(goal_id) = goal.to_str().filter(|g| is_goal_id(g)) else {
            out.push(rejected(rel, Reason::BadGoalId));
            continue;
        };
        let names = match sorted_names(&dir) {
            Ok(names) => names,
            Err(_) => {
                out.push(rejected(rel, Reason::Unreadable));
                continue;
            }
        };
        for name in names {
            let Some(name) = name.to_str().filter(|n| is_receipt_name(n)) else { continue };
            let file = format!("{rel}/{name}");
            let stem = name.trim_end_matches(".json").to_owned();
            out.push(match read_receipt(&dir.join(name)) {
                Ok(bytes) => Entry::Found(Found { file, goal_id: goal_id.to_owned(), stem, bytes }),
                Err(reason) => rejected(file, reason),
            });
        }
    }
    Ok(out)
}

fn rejected(file: String, reason: Reason) -> Entry {
    Entry::Rejected(Rejected { file, reason, code: None })
}

fn sorted_names(dir: &Path) -> std::io::Result<Vec<std::ffi::OsString>> {
    let mut names = fs::read_dir(dir)?.filter_map(|e| e.ok().map(|e| e.file_name())).collect::<Vec<_>>();
    names.sort();
    Ok(names)
}

/// A folder name as a report shows it: control characters (which a
/// terminal would act on) as `?`.
fn shown(name: &std::ffi::OsStr) -> String {
    name.to_string_lossy().chars().map(|c| if c.is_control() { '?' } else { c }).collect()
}

/// The file's bytes; a symlink is refused by the open itself, so one
/// swapped in after the listing is not followed either.
fn read_receipt(path: &Path) -> Result<Vec<u8>, Reason> {
    let file = fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK).open(path).map_err(
        |e| match e.raw_os_error() {
            Some(libc::ELOOP) => Reason::NotARegularFile,
            _ => Reason::Unreadable,
        },
    )?;
    let meta = file.metadata().map_err(|_| Reason::Unreadable)?;
    if !meta.is_file() {
        return Err(Reason::NotARegularFile);
    }
    if meta.len() > MAX_RECEIPT_BYTES {
        return Err(Reason::TooLarge);
    }
    let mut bytes = Vec::new();
    file.take(MAX_RECEIPT_BYTES + 1).read_to_end(&mut bytes).map_err(|_| Reason::Unreadable)?;
    if bytes.len() as u64 > MAX_RECEIPT_BYTES {
        return Err(Reason::TooLarge);
    }
    Ok(bytes)
}
