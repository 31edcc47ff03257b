//! Recognition, creation, migrations, and what errors may say.

use std::sync::Barrier;

use rusqlite::Connection;

use super::super::sqlite::open::{in_read_txn, upgrade};
use super::super::sqlite::schema::{migrate, Migration, MIGRATIONS};
use super::*;

both!(
    creates_then_reopens,
    a_newer_journal_is_refused_and_left_unchanged,
    reopening_a_current_journal_changes_nothing,
    concurrent_creation_of_one_journal_is_safe,
    a_journal_and_its_closed_errors_name_nothing_private
);

fn header(path: &Path) -> (i32, i32, String) {
    let c = Connection::open(path).unwrap();
    let app: i32 = c.pragma_query_value(None, "application_id", |r| r.get(0)).unwrap();
    let ver: i32 = c.pragma_query_value(None, "user_version", |r| r.get(0)).unwrap();
    let mode: String = c.pragma_query_value(None, "journal_mode", |r| r.get(0)).unwrap();
    (app, ver, mode)
}

fn pseudo_random(n: usize, mut x: u64) -> Vec<u8> {
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn creates_then_reopens(b: &Backend) {
    let j = b.open();
    assert_eq!(j.checkpoint(checkpoint("a")).wait().unwrap(), CheckpointState::Fresh);
    j.close();
    match b {
        Backend::Sqlite { path, .. } => assert_eq!(header(path), (APPLICATION_ID, b.schema_version(), "wal".into())),
        Backend::Postgres(s) => {
            let meta = s.sql("SELECT application_id, version FROM meta");
            assert_eq!(meta.len(), 1);
            assert_eq!((meta[0].get::<_, i32>(0), meta[0].get::<_, i32>(1)), (APPLICATION_ID, b.schema_version()));
        }
    }
    let j = b.open();
    assert_eq!(j.checkpoint(checkpoint("a")).wait().unwrap(), CheckpointState::Pending { attempts_used: 1 });
    assert!(j.integrity_check().unwrap());
}

// SQLite only: an empty file.
#[test]
fn an_empty_file_becomes_a_journal() {
    let dir = TempDir::new("empty");
    let path = dir.file("j.sqlite");
    std::fs::write(&path, b"").unwrap();
    open(&path).close();
    assert_eq!(header(&path).0, APPLICATION_ID);
}

/// Every refused file keeps its exact bytes.
// SQLite only: foreign files (a foreign schema: `postgres/tests.rs`).
#[test]
fn foreign_files_are_refused_and_left_unchanged() {
    let dir = TempDir::new("foreign");

    let text = dir.file("notes.txt");
    std::fs::write(&text, "hello, this is not a database\n".repeat(20)).unwrap();

    let binary = dir.file("random.bin");
    std::fs::write(&binary, pseudo_random(8192, 0x9E37_79B9_7F4A_7C15)).unwrap();

    let fake = dir.file("fake-header.bin");
    let mut bytes = b"SQLite format 3\0".to_vec();
    bytes.extend(pseudo_random(4080, 7));
    std::fs::write(&fake, bytes).unwrap();

    let tiny = dir.file("tiny.bin");
    std::fs::write(&tiny, b"SQLite format 3\0").unwrap();

    let foreign_db = dir.file("foreign.sqlite");
    {
        let c = Connection::open(&foreign_db).unwrap();
        c.execute_batch(
            "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes (body) VALUES ('x');",
        )
        .unwrap();
    }

    let foreign_app = dir.file("foreign-app.sqlite");
    {
        let c = Connection::open(&foreign_app).unwrap();
        c.pragma_update(None, "application_id", 0x1234_5678).unwrap();
    }

    let ours_plus = dir.file("ours-with-nothing.sqlite");
    {
        let c = Connection::open(&ours_plus).unwrap();
        c.pragma_update(None, "application_id", APPLICATION_ID).unwrap();
        c.pragma_update(None, "user_version", SCHEMA_VERSION).unwrap();
        c.execute_batch("CREATE TABLE other (x)").unwrap();
    }

    for path in [&text, &binary, &fake, &tiny, &foreign_db, &foreign_app, &ours_plus] {
        let before = file_hash(path);
        let err = open_file(path, JournalOptions::default()).unwrap_err();
        assert_eq!(err, JournalError::NotAJournal, "{}", path.display());
        assert_eq!(err.code(), "not_a_journal");
        assert_eq!(file_hash(path), before, "{} changed", path.display());
    }
}

fn a_newer_journal_is_refused_and_left_unchanged(b: &Backend) {
    let j = b.open();
    j.checkpoint(checkpoint("a")).wait().unwrap();
    j.close();
    b.stamp_version(99);
    let before = b.fingerprint();
    let err = b.open_with(JournalOptions::default()).unwrap_err();
    assert_eq!(err, JournalError::TooNew { found: 99, supported: b.schema_version() });
    assert_eq!(err.code(), "journal_too_new");
    assert_eq!(b.open_read_only().unwrap_err(), err);
    assert_eq!(b.fingerprint(), before);
}

fn reopening_a_current_journal_changes_nothing(b: &Backend) {
    let j = b.open();
    j.checkpoint(checkpoint("a")).wait().unwrap();
    j.record_final(proposed("a", 1, "r", &["a1"])).wait().unwrap();
    j.close();
    let before = b.fingerprint();
    let j = b.open();
    assert!(j.get_dispatch(&dispatch_id("a")).unwrap().is_some());
    j.close();
    assert_eq!(b.fingerprint(), before);
}

// SQLite only: SQLite's migration steps.
#[test]
fn migrations_run_in_order_from_the_current_version() {
    let dir = TempDir::new("migrate");
    let path = dir.file("j.sqlite");
    open(&path).close();
    let c = Connection::open(&path).unwrap();
    let steps = [Migration { to: 1, sql: MIGRATIONS[0].sql }, Migration { to: 2, sql: "CREATE TABLE v2_extra (x);" }];
    c.execute_batch("BEGIN IMMEDIATE").unwrap();
    // From 1: only the v2 step runs (re-running v1 would fail on existing tables).
    assert_eq!(migrate(&c, 1, &steps).unwrap(), 2);
    c.execute_batch("COMMIT").unwrap();
    assert_eq!(header(&path).1, 2);
}

// SQLite only: SQLite's migration steps.
#[test]
fn a_failing_migration_leaves_the_file_untouched() {
    let dir = TempDir::new("migrate-fail");
    let path = dir.file("j.sqlite");
    let c = Connection::open(&path).unwrap();
    let steps =
        [Migration { to: 1, sql: MIGRATIONS[0].sql }, Migration { to: 2, sql: "CREATE TABLE v2 (x); NOT SQL;" }];
    assert!(upgrade(&c, &steps).is_err());
    assert!(c.is_autocommit());
    let objects: i64 =
        in_read_txn(&c, |c| Ok(c.query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get(0))?)).unwrap();
    assert_eq!(objects, 0, "v1 tables of the failed upgrade were rolled back too");
    drop(c);
    assert_eq!((header(&path).0, header(&path).1), (0, 0));
    // And the real list still creates it afterwards.
    open(&path).close();
    assert_eq!(header(&path).1, SCHEMA_VERSION);
}

fn concurrent_creation_of_one_journal_is_safe(b: &Backend) {
    let barrier = Barrier::new(8);
    let states: Vec<_> = std::thread::scope(|t| {
        let threads: Vec<_> = (0..8)
            .map(|i| {
                let barrier = &barrier;
                t.spawn(move || {
                    barrier.wait();
                    let j = b.open();
                    j.checkpoint(checkpoint(&format!("t{i}"))).wait().unwrap()
                })
            })
            .collect();
        threads.into_iter().map(|t| t.join().unwrap()).collect()
    });
    assert_eq!(states, vec![CheckpointState::Fresh; 8]);
    let j = b.open();
    assert_eq!(j.stats().unwrap().checkpointed, 8);
    assert!(j.integrity_check().unwrap());
}

/// Where a journal lives is private to the host: neither an open journal's
/// debug text nor the errors of a closed one show it.
fn a_journal_and_its_closed_errors_name_nothing_private(b: &Backend) {
    let j = b.open();
    let mut shown = vec![format!("{j:?}")];
    j.close();
    let errors = [j.checkpoint(checkpoint("a")).wait().unwrap_err(), j.get_dispatch(&dispatch_id("a")).unwrap_err()];
    for e in errors {
        assert_eq!(e.code(), "journal_closed");
        shown.push(format!("{e} {e:?}"));
    }
    let private = b.private_names();
    assert!(private.iter().all(|p| p.len() > 8), "{private:?}");
    for text in &shown {
        assert!(private.iter().all(|p| !text.contains(p.as_str())), "{text}");
    }
}

/// The journal's path is private to the host: no error opening it holds it.
// SQLite only: paths (a connection string: `postgres/tests.rs`).
#[test]
fn errors_never_show_the_path() {
    let dir = TempDir::new("secret-name-x7");
    let secret = "secret-name-x7";
    let text = dir.file("notes.txt");
    std::fs::write(&text, "plain text").unwrap();
    let errors = [
        open_file(dir.file("missing-dir/j.sqlite"), JournalOptions::default()).unwrap_err(),
        open_file(&dir.0, JournalOptions::default()).unwrap_err(),
        open_file(&text, JournalOptions::default()).unwrap_err(),
        open_file_read_only(dir.file("missing")).unwrap_err(),
        JournalError::TooNew { found: 99, supported: 1 },
    ];
    for e in &errors {
        assert!(!e.to_string().contains(secret), "{e}");
        assert!(!format!("{e:?}").contains(secret), "{e:?}");
        assert!(!e.to_string().contains(&*std::env::temp_dir().to_string_lossy()), "{e}");
    }
}
