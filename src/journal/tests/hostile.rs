//! Hostile input: a refused SQLite file keeps every byte of its main file,
//! `-wal` and `-journal`; inspecting only reads (on both backends); special
//! files and damaged journals are coded answers; nothing credential-like is
//! stored (on both backends).

use rusqlite::Connection;

use super::*;

both!(
    reading_only_changes_nothing_and_refuses_writes,
    a_read_only_open_of_a_missing_journal_creates_nothing,
    a_reader_reads_a_writers_commits_as_they_land,
    credential_like_tokens_are_never_stored,
    a_checkpoint_whose_request_holds_a_credential_anywhere_is_refused_unwritten
);

/// Copies `from` and its sidecars to `to` while `conn` still holds them
/// open: the copy has an un-checkpointed WAL or a hot rollback journal.
fn snapshot(from: &Path, to: &Path) {
    for suffix in ["", "-wal", "-journal"] {
        let src = PathBuf::from(format!("{}{suffix}", from.display()));
        if src.exists() {
            std::fs::copy(&src, format!("{}{suffix}", to.display())).unwrap();
        }
    }
}

// SQLite only: a foreign SQLite file and its WAL.
#[test]
fn a_foreign_wal_database_with_an_uncheckpointed_wal_is_refused_untouched() {
    let dir = TempDir::new("foreign-wal");
    let live = dir.file("live.db");
    let c = Connection::open(&live).unwrap();
    c.execute_batch(
        "PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0; CREATE TABLE t(x); INSERT INTO t VALUES (1);",
    )
    .unwrap();
    let copy = dir.file("copy.db");
    snapshot(&live, &copy);
    let before = file_hashes(&copy);
    assert!(before[1].is_some(), "the copy has a WAL");
    assert_eq!(open_file(&copy, JournalOptions::default()).unwrap_err(), JournalError::NotAJournal);
    assert_eq!(open_file_read_only(&copy).unwrap_err(), JournalError::NotAJournal);
    assert_eq!(file_hashes(&copy), before);
}

// SQLite only: a foreign SQLite file.
#[test]
fn a_checkpointed_foreign_wal_database_is_refused_without_a_file_beside_it() {
    let dir = TempDir::new("foreign-wal-closed");
    let db = dir.file("app.db");
    let c = Connection::open(&db).unwrap();
    c.execute_batch("PRAGMA journal_mode=WAL; CREATE TABLE t(x); INSERT INTO t VALUES (1);").unwrap();
    drop(c); // the last connection checkpoints and removes -wal and -shm
    let listing = || {
        let mut names: Vec<_> = std::fs::read_dir(dir.file("")).unwrap().map(|e| e.unwrap().file_name()).collect();
        names.sort();
        names
    };
    let (before, files) = (file_hashes(&db), listing());
    assert_eq!(files.len(), 1, "only the main file");
    assert_eq!(open_file(&db, JournalOptions::default()).unwrap_err(), JournalError::NotAJournal);
    assert_eq!(open_file_read_only(&db).unwrap_err(), JournalError::NotAJournal);
    assert_eq!((file_hashes(&db), listing()), (before, files));
}

// SQLite only: SQLite's WAL.
#[test]
fn a_too_new_journal_with_a_wal_is_refused_untouched() {
    let dir = TempDir::new("new-wal");
    let live = dir.file("live.sqlite");
    open(&live).close();
    let c = Connection::open(&live).unwrap();
    c.execute_batch("PRAGMA wal_autocheckpoint=0; PRAGMA user_version=99;").unwrap();
    let copy = dir.file("copy.sqlite");
    snapshot(&live, &copy);
    let before = file_hashes(&copy);
    assert!(before[1].is_some(), "the copy has a WAL");
    let too_new = JournalError::TooNew { found: 99, supported: SCHEMA_VERSION };
    assert_eq!(open_file(&copy, JournalOptions::default()).unwrap_err(), too_new);
    assert_eq!(open_file_read_only(&copy).unwrap_err(), too_new);
    assert_eq!(file_hashes(&copy), before);
}

// SQLite only: SQLite's rollback journal.
#[test]
fn a_too_new_journal_with_a_hot_rollback_journal_is_refused_untouched() {
    let dir = TempDir::new("new-hot");
    let live = dir.file("live.sqlite");
    open(&live).close();
    let c = Connection::open(&live).unwrap();
    c.execute_batch("PRAGMA journal_mode=DELETE; PRAGMA user_version=99; PRAGMA cache_size=1;").unwrap();
    // A big open transaction spills pages into the main file: a hot journal.
    c.execute_batch(
        "BEGIN; CREATE TABLE filler(x); WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200) \
         INSERT INTO filler SELECT zeroblob(2000) FROM n;",
    )
    .unwrap();
    let copy = dir.file("copy.sqlite");
    snapshot(&live, &copy);
    let before = file_hashes(&copy);
    assert!(before[2].is_some(), "the copy has a rollback journal");
    let too_new = JournalError::TooNew { found: 99, supported: SCHEMA_VERSION };
    assert_eq!(open_file(&copy, JournalOptions::default()).unwrap_err(), too_new);
    assert_eq!(open_file_read_only(&copy).unwrap_err(), too_new);
    assert_eq!(file_hashes(&copy), before);
}

fn reading_only_changes_nothing_and_refuses_writes(b: &Backend) {
    let j = b.open();
    j.checkpoint(checkpoint("a")).wait().unwrap();
    j.record_final(proposed("a", 1, "r", &["i1"])).wait().unwrap();
    j.close();
    if let Backend::Sqlite { .. } = b {
        // A DELETE-mode journal stays in DELETE mode when only read.
        b.execute("PRAGMA journal_mode=DELETE");
    }
    let before = b.fingerprint();
    let r = b.open_read_only().unwrap();
    assert!(r.get_dispatch(&dispatch_id("a")).unwrap().is_some());
    assert_eq!(r.list_intents(&IntentFilter::default()).unwrap().items.len(), 1);
    assert!(r.integrity().unwrap().ok);
    assert_eq!(r.decide(&intent_id("i1"), "executor.x", Decision::Admit, "ok").wait(), Err(JournalError::ReadOnly));
    assert_eq!(r.checkpoint(checkpoint("b")).wait().unwrap_err(), JournalError::ReadOnly);
    r.close();
    assert_eq!(b.fingerprint(), before);
}

/// Reading never creates: a missing journal is not one, and stays missing.
fn a_read_only_open_of_a_missing_journal_creates_nothing(b: &Backend) {
    assert_eq!(b.open_read_only().unwrap_err(), JournalError::NotAJournal);
    assert!(!b.exists());
}

// SQLite only: a foreign SQLite file.
#[test]
fn an_sqlite_file_with_no_tables_is_not_a_journal_to_a_reader_and_stays_empty() {
    let dir = TempDir::new("blank");
    let blank = dir.file("blank.db");
    Connection::open(&blank).unwrap().execute_batch("VACUUM").unwrap();
    let before = file_hashes(&blank);
    assert_eq!(open_file_read_only(&blank).unwrap_err(), JournalError::NotAJournal);
    assert_eq!(file_hashes(&blank), before);
}

/// A read-only journal opened beside a writer reads each of its commits
/// once committed, and goes on reading after the writer closed.
fn a_reader_reads_a_writers_commits_as_they_land(b: &Backend) {
    let w = b.open();
    w.checkpoint(checkpoint("a")).wait().unwrap();
    let r = b.open_read_only().unwrap();
    assert_eq!(r.stats().unwrap().checkpointed, 1);
    assert_eq!(r.get_dispatch(&dispatch_id("b")).unwrap(), None);
    w.checkpoint(checkpoint("b")).wait().unwrap();
    w.record_final(proposed("b", 1, "r", &["b1"])).wait().unwrap();
    assert_eq!(r.get_dispatch(&dispatch_id("b")).unwrap().unwrap().state, DispatchState::Proposed);
    assert_eq!(r.list_intents(&IntentFilter::default()).unwrap().items.len(), 1);
    w.close();
    let s = r.stats().unwrap();
    assert_eq!((s.checkpointed, s.proposed), (1, 1));
    r.close();
}

// SQLite only: quiet reads of SQLite files.
#[test]
fn a_read_only_open_creates_nothing_beside_a_quiet_journal_and_follows_a_writer() {
    let dir = TempDir::new("quiet");
    let path = dir.file("j.sqlite");
    let j = open(&path);
    j.checkpoint(checkpoint("a")).wait().unwrap();
    j.close();
    let names = || {
        let mut n: Vec<_> = std::fs::read_dir(&dir.0).unwrap().map(|e| e.unwrap().file_name()).collect();
        n.sort();
        n
    };
    assert_eq!(names(), vec![std::ffi::OsString::from("j.sqlite")], "closed cleanly: no -wal");
    let before = file_hashes(&path);
    let r = open_file_read_only(&path).unwrap();
    assert!(r.get_dispatch(&dispatch_id("a")).unwrap().is_some());
    assert_eq!(r.stats().unwrap().checkpointed, 1);
    assert_eq!(names(), vec![std::ffi::OsString::from("j.sqlite")], "no -wal or -shm created");
    assert_eq!(file_hashes(&path), before);
    // Once a writer has the file, its commits are read live.
    let w = open(&path);
    w.checkpoint(checkpoint("b")).wait().unwrap();
    assert!(r.get_dispatch(&dispatch_id("b")).unwrap().is_some());
    w.close();
    assert_eq!(r.stats().unwrap().checkpointed, 2);
    r.close();
}

// SQLite only: FIFOs and folders.
#[test]
fn special_files_are_refused_at_open_without_blocking() {
    let dir = TempDir::new("special");
    let fifo = dir.file("fifo");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    assert_eq!(open_file(&fifo, JournalOptions::default()).unwrap_err(), JournalError::NotAFile);
    assert_eq!(open_file_read_only(&fifo).unwrap_err(), JournalError::NotAFile);
    let folder = dir.file("folder");
    std::fs::create_dir(&folder).unwrap();
    assert_eq!(open_file(&folder, JournalOptions::default()).unwrap_err(), JournalError::NotAFile);
}

// SQLite only: file names.
#[test]
fn a_uri_like_name_is_a_file_name() {
    let dir = TempDir::new("uri");
    let path = dir.file("file:x.sqlite?mode=memory");
    let j = open(&path);
    j.checkpoint(checkpoint("a")).wait().unwrap();
    assert!(j.get_dispatch(&dispatch_id("a")).unwrap().is_some(), "readers see the writer's file");
    j.close();
    assert!(path.is_file());
    let names: Vec<_> = std::fs::read_dir(&dir.0).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, vec![std::ffi::OsString::from("file:x.sqlite?mode=memory")]);
}

// SQLite only: damaged SQLite pages.
#[test]
fn a_damaged_journal_is_a_failed_verdict_with_sqlites_messages() {
    let dir = TempDir::new("damaged");
    let path = dir.file("j.sqlite");
    let j = open(&path);
    for n in 0..300 {
        j.checkpoint(checkpoint(&format!("d{n}"))).wait().unwrap();
    }
    j.close();
    let mut bytes = std::fs::read(&path).unwrap();
    let pages = bytes.len() / 4096;
    assert!(pages > 8, "{pages} pages");
    let middle = (pages / 2) * 4096;
    let noise: Vec<u8> = (0..4096u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    bytes[middle..middle + 4096].copy_from_slice(&noise);
    std::fs::write(&path, &bytes).unwrap();
    let r = open_file_read_only(&path).unwrap();
    let verdict = r.integrity().unwrap();
    assert!(!verdict.ok);
    assert!(!verdict.messages.is_empty());
    assert!(!r.integrity_check().unwrap());
}

fn credential_like_tokens_are_never_stored(b: &Backend) {
    let j = b.open();
    j.checkpoint(checkpoint("a")).wait().unwrap();
    j.record_final(proposed("a", 1, "r", &["i1"])).wait().unwrap();
    let i1 = intent_id("i1");
    assert_eq!(
        j.decide(&i1, "executor.x", Decision::Admit, "sk_live_abcdef123").wait(),
        Err(JournalError::CredentialLike { what: "reasonCode" })
    );
    assert_eq!(
        j.decide(&i1, "ghp_abcdef", Decision::Admit, "ok").wait(),
        Err(JournalError::CredentialLike { what: "executorId" })
    );
    assert_eq!(j.mark_done(&i1, "npm_token").wait(), Err(JournalError::CredentialLike { what: "executorId" }));
    let err = JournalError::CredentialLike { what: "reasonCode" };
    assert_eq!(err.code(), "credential_like_value");
    assert!(!err.to_string().contains("sk_"));
    let stored = j.list_intents(&IntentFilter::default()).unwrap().items;
    assert!(stored.iter().all(|i| i.decision.is_none()));
}

// SQLite only: SQLite's rollback journal.
#[test]
fn our_own_hot_rollback_journal_needs_a_writer_and_the_writer_recovers_it() {
    let dir = TempDir::new("own-hot");
    let live = dir.file("live.sqlite");
    let j = open(&live);
    j.checkpoint(checkpoint("a")).wait().unwrap();
    j.close();
    let c = Connection::open(&live).unwrap();
    c.execute_batch("PRAGMA journal_mode=DELETE; PRAGMA cache_size=1;").unwrap();
    c.execute_batch(
        "BEGIN; CREATE TABLE filler(x); WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200) \
         INSERT INTO filler SELECT zeroblob(2000) FROM n;",
    )
    .unwrap();
    let copy = dir.file("copy.sqlite");
    snapshot(&live, &copy);
    let before = file_hashes(&copy);
    assert!(before[2].is_some(), "the copy has a rollback journal");
    assert_eq!(open_file_read_only(&copy).unwrap_err(), JournalError::NeedsRecovery);
    assert_eq!(file_hashes(&copy), before, "a reader rolls nothing back");
    let j = open(&copy);
    assert!(j.get_dispatch(&dispatch_id("a")).unwrap().is_some());
    assert!(j.integrity().unwrap().ok);
}

/// The request scan reads the document as JSON text: a credential written
/// with escapes, or nested deep in arrays and keys, is found as decoded; text
/// that is not one JSON document is refused as malformed, wherever a
/// credential-like string stands in it.
#[test]
fn the_request_scan_decodes_escapes_walks_every_level_and_refuses_malformed_text() {
    use crate::journal::arg::public_json;
    let credential = Err(JournalError::CredentialLike { what: "request" });
    let malformed = Err(JournalError::InvalidArgument { what: "request" });
    assert_eq!(public_json(r#"{"a":[1,2.5,true,null,{"b":"fact"}],"c":-3}"#, "request"), Ok(()));
    assert_eq!(public_json(r#"{"a":"\u0067hp_0123456789abcdefABCDEF0123456789"}"#, "request"), credential);
    assert_eq!(public_json(r#"[[[[{"x":["AKIAABCDEFGHIJKLMNOP"]}]]]]"#, "request"), credential);
    assert_eq!(public_json(r#"{"ok":1,"sk-live0123456789":{}}"#, "request"), credential);
    assert_eq!(public_json(r#"{"a":"fact","a":"npm_0123"}"#, "request"), credential);
    for bad in [r#"{"a":1} x"#, r#"["npm_0123", "#, "", r#"{"a":}"#, "{\"a\":\"\\u12\"}"] {
        assert_eq!(public_json(bad, "request"), malformed, "{bad}");
    }
}

/// RFC section 9: the journal "does not store ... credentials". The request
/// a checkpoint keeps is scanned as a whole, so a credential-like value in
/// any member (one no hook reads included) is refused before anything is
/// written, on every path that writes a checkpoint.
fn a_checkpoint_whose_request_holds_a_credential_anywhere_is_refused_unwritten(b: &Backend) {
    let j = b.open();
    for (i, planted) in [
        "ghp_0123456789abcdefABCDEF0123456789",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl",
        "AKIAABCDEFGHIJKLMNOP",
    ]
    .iter()
    .enumerate()
    {
        let mut c = checkpoint(&format!("cred{i}"));
        c.request_json = c.request_json.replace(&format!("\"fact_cred{i}\""), &format!("\"{planted}\""));
        assert!(c.request_json.contains(planted));
        assert_eq!(j.checkpoint(c.clone()).wait().unwrap_err(), JournalError::CredentialLike { what: "request" });
        let mut deferred = c.clone();
        deferred.attempt = 0;
        let refused = j.record_many(vec![RecordCommand::Defer(deferred)], Box::new(|_| {}));
        assert_eq!(refused.unwrap_err(), JournalError::CredentialLike { what: "request" });
        assert_eq!(
            j.checkpoint_then(c.clone(), Box::new(|_| {})).unwrap_err(),
            JournalError::CredentialLike { what: "request" }
        );
        assert_eq!(j.get_dispatch(&c.dispatch_id).unwrap(), None);
    }
    let mut key = checkpoint("credkey");
    key.request_json = key.request_json.replace("\"fact_refs\"", "\"sk-live0123456789\"");
    assert_eq!(j.checkpoint(key).wait().unwrap_err(), JournalError::CredentialLike { what: "request" });
    let mut receipt = checkpoint("credreceipt");
    receipt.receipt_id = "ghp_0123456789abcdefABCDEF0123456789".into();
    assert_eq!(j.checkpoint(receipt).wait().unwrap_err(), JournalError::CredentialLike { what: "receipt_id" });
    // What was accepted is found by the same scan.
    j.checkpoint(checkpoint("control")).wait().unwrap();
    j.close();
    let stored = b.stored_text();
    assert!(stored.contains("receipt_control"));
    assert!(!stored.contains("ghp_") && !stored.contains("eyJhbGci") && !stored.contains("AKIA"));
}
