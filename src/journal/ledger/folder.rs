//! The ledger folder and its files, opened so that nothing another user or
//! program puts there can redirect, block or feed this process. The folder
//! must be a directory of this user's that nobody else may enter (0700), not
//! a symlink; anything else is refused. Each file is opened without
//! following a symlink and without waiting (a FIFO opens at once), then
//! judged by its descriptor: only a regular file this user owns is read.
//! Everything else in the folder is left alone and counted as skipped.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::path::Path;

use super::slot::SLOT;

/// The most of a ledger file that is read: far more slots than in-flight
/// identities one process ever holds.
const MAX_READ: u64 = 4096 * SLOT;

/// Creates `dir` (0700) when missing, then refuses it unless it is a
/// directory (not a symlink to one) owned by this user with no access for
/// group or others.
#[cfg(unix)]
pub(super) fn own_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let meta = std::fs::symlink_metadata(dir)?;
    if !meta.is_dir() || meta.uid() != euid() || meta.mode() & 0o077 != 0 {
        return Err(io::Error::from(io::ErrorKind::PermissionDenied));
    }
    Ok(())
}

#[cfg(not(unix))]
pub(super) fn own_dir(dir: &Path) -> io::Result<()> {
    match std::fs::create_dir(dir) {
        Err(e) if e.kind() != io::ErrorKind::AlreadyExists => Err(e),
        _ => Ok(()),
    }
}

#[cfg(unix)]
fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Creates a new file (0600) at `path`, never through a symlink.
pub(super) fn create_file(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true).write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600).custom_flags(libc::O_NOFOLLOW);
    }
    options.open(path)
}

/// Opens `path` for reading when it is a regular file this user owns;
/// none for a symlink, a FIFO, a device, a folder or another user's file,
/// and none of these can block the open.
pub(super) fn open_own_file(path: &Path) -> Option<File> {
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    let file = options.open(path).ok()?;
    let meta = file.metadata().ok()?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if meta.uid() != euid() {
            return None;
        }
    }
    meta.is_file().then_some(file)
}

/// A ledger file's bytes, up to a bound.
pub(super) fn read_bounded(file: &File) -> Vec<u8> {
    let mut bytes = Vec::new();
    match file.take(MAX_READ).read_to_end(&mut bytes) {
        Ok(_) => bytes,
        Err(_) => Vec::new(),
    }
}

/// Removes `path` only while it still names the file `file` has open: a
/// file put in its place meanwhile stays.
pub(super) fn remove_if_same(path: &Path, file: &File) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let (Ok(named), Ok(open)) = (std::fs::symlink_metadata(path), file.metadata()) else { return };
        if named.dev() != open.dev() || named.ino() != open.ino() {
            return;
        }
    }
    let _ = std::fs::remove_file(path);
}
