//! Hostile files (issue 9) for the inbox store, as for the journal.

use std::path::PathBuf;

use super::*;

/// A unique directory under the system temp dir, removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
        let path = std::env::temp_dir().join(format!("loopx-inbox-{name}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&path).unwrap();
        Dir(path)
    }
    fn file(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Issue 9: a special file is refused at open without blocking; a foreign
/// WAL database with an un-checkpointed WAL, and a hook journal, keep every
/// byte of their main file and `-wal`; a `file:` name is a file name.
#[test]
fn hostile_files_are_refused_untouched_and_names_are_only_names() {
    let dir = Dir::new("hostile");
    let fifo = dir.file("fifo");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    assert_eq!(InboxStore::open(&fifo, InboxOptions::default()).unwrap_err(), InboxError::NotAFile);
    assert_eq!(InboxStore::open(&dir.0, InboxOptions::default()).unwrap_err(), InboxError::NotAFile);

    let hashes = |p: &std::path::Path| -> Vec<Option<Vec<u8>>> {
        ["", "-wal", "-journal"].iter().map(|s| std::fs::read(format!("{}{s}", p.display())).ok()).collect()
    };
    let live = dir.file("live.db");
    let c = rusqlite::Connection::open(&live).unwrap();
    c.execute_batch(
        "PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0; CREATE TABLE t(x); INSERT INTO t VALUES (1);",
    )
    .unwrap();
    let copy = dir.file("copy.db");
    for s in ["", "-wal"] {
        std::fs::copy(format!("{}{s}", live.display()), format!("{}{s}", copy.display())).unwrap();
    }
    let before = hashes(&copy);
    assert!(before[1].is_some());
    assert_eq!(InboxStore::open(&copy, InboxOptions::default()).unwrap_err(), InboxError::NotAnInbox);
    assert_eq!(hashes(&copy), before);

    let journal = dir.file("journal.sqlite");
    crate::journal::Journal::open(&journal, crate::journal::JournalOptions::default()).unwrap().close();
    let before = hashes(&journal);
    assert_eq!(InboxStore::open(&journal, InboxOptions::default()).unwrap_err(), InboxError::NotAnInbox);
    assert_eq!(hashes(&journal), before);

    let named = dir.file("file:inbox.sqlite?mode=memory");
    InboxStore::open(&named, InboxOptions::default()).unwrap().close();
    assert!(named.is_file());
}
