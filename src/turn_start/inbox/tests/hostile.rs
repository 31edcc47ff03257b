//! Hostile files for the inbox store, as for the journal.

use std::path::PathBuf;

use crate::turn_start::inbox::*;

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
    crate::journal::Journal::open(
        &journal,
        crate::journal::JournalOptions::default(),
        crate::journal::OpenMode::ReadWrite,
    )
    .unwrap()
    .close();
    let before = hashes(&journal);
    assert_eq!(InboxStore::open(&journal, InboxOptions::default()).unwrap_err(), InboxError::NotAnInbox);
    assert_eq!(hashes(&journal), before);

    let named = dir.file("file:inbox.sqlite?mode=memory");
    InboxStore::open(&named, InboxOptions::default()).unwrap().close();
    assert!(named.is_file());
}

/// "unresolved identity fails open to capture": a sender identity or a
/// configured identity that cannot match exactly (empty, over 512 bytes, or
/// holding U+FFFD, what a lone surrogate becomes on its way in) never
/// filters and never refuses the message.
#[test]
fn an_identity_that_cannot_match_fails_open_to_capture() {
    let dir = Dir::new("identity");
    let path = dir.file("inbox.sqlite");
    let long = "U".repeat(MAX_ID_BYTES + 1);
    let cut = "U_SELF\u{FFFD}".to_owned();
    for own in [Some("U_SELF".to_owned()), Some(String::new()), Some(long.clone()), Some(cut.clone())] {
        let filtered_self = own.as_deref() == Some("U_SELF");
        let s = InboxStore::open(&path, InboxOptions { self_identity: own.clone(), ..Default::default() }).unwrap();
        for (i, sender) in [String::new(), long.clone(), cut.clone(), "U_SELF".to_owned()].into_iter().enumerate() {
            let outcome = s
                .capture(&CaptureInput {
                    route_id: "r".into(),
                    provider_message_id: format!("{}-{i}-{}", own.as_deref().map_or(0, str::len), sender.len()),
                    source: CaptureSource::Collector,
                    sender: Sender { kind: SenderKind::Human, verified_identity: Some(sender.clone()) },
                    attention: Attention::Ordinary,
                    payload: serde_json::json!({"text": "hello"}),
                })
                .unwrap();
            let expected = if filtered_self && sender == "U_SELF" {
                CaptureOutcome::SelfFiltered
            } else {
                CaptureOutcome::Captured
            };
            assert_eq!(outcome, expected, "own {:?} sender {:?}", own.as_deref().map(str::len), sender.len());
        }
        s.close();
    }
}
