//! The two backends a journal test runs on: an SQLite file in a temporary
//! directory, or a fresh schema on the PostgreSQL server `LOOPX_TEST_PG_URL`
//! names (`npm test` starts a throwaway one; see CONTRIBUTING.md). Every open of a
//! journal in the tests goes through here, so a change of the open API is a
//! change of this file only. [`both!`] runs one test body on each backend as
//! two tests, `<name>::sqlite` and `<name>::postgres`, so a failure names
//! its backend.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::thread::JoinHandle;

use super::super::postgres::PG_SCHEMA_VERSION;
use super::super::*;
use super::TempDir;
use crate::identity::sha256_hex;

/// The test server's URL; without it the PostgreSQL tests fail (they must
/// never pass silently where no server runs).
pub(crate) fn url() -> String {
    std::env::var("LOOPX_TEST_PG_URL").expect(
        "LOOPX_TEST_PG_URL must name a PostgreSQL server for these tests: run them through `npm test`, \
         which starts a throwaway one (scripts/pg-server.mjs), or export the URL of a server you run",
    )
}

/// Runs `f` on a connection of its own to the test server, `search_path`
/// set to `schema`, on a plain thread: the sync client must not run on an
/// async runtime's thread.
fn on_server<T: Send>(schema: &str, f: impl FnOnce(&mut ::postgres::Client) -> T + Send) -> T {
    let setup = format!("SET search_path TO \"{schema}\"");
    std::thread::scope(|t| {
        t.spawn(|| {
            let mut client = ::postgres::Client::connect(&url(), ::postgres::NoTls).unwrap();
            client.batch_execute(&setup).unwrap();
            f(&mut client)
        })
        .join()
        .unwrap()
    })
}

/// A fresh schema name, dropped (with everything in it) when this drops.
pub(crate) struct Schema {
    pub(crate) target: PgTarget,
}

impl Schema {
    pub(crate) fn new(tag: &str) -> Schema {
        static N: AtomicU64 = AtomicU64::new(0);
        // Schema names are short lowercase tokens; a test name is only a hint.
        let tag: String = tag.chars().take(16).map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
        let schema = format!("t_{}_{}_{}", tag.to_lowercase(), std::process::id(), N.fetch_add(1, Ordering::Relaxed));
        Schema { target: PgTarget { connection_string: url(), schema, ca_file: None, limits: Default::default() } }
    }

    pub(crate) fn open(&self) -> Journal {
        self.open_with(JournalOptions::default()).expect("open postgres journal")
    }

    pub(crate) fn open_with(&self, options: JournalOptions) -> Result<Journal> {
        open_target(&self.target, options)
    }

    pub(crate) fn open_read_only(&self) -> Result<Journal> {
        open_target_read_only(&self.target)
    }

    /// Runs the query `sql` on a connection of its own.
    pub(crate) fn sql(&self, sql: &str) -> Vec<::postgres::Row> {
        on_server(&self.target.schema, |c| c.query(sql, &[]).unwrap())
    }

    /// Runs the statements `sql` on a connection of its own.
    pub(crate) fn batch(&self, sql: &str) {
        on_server(&self.target.schema, |c| c.batch_execute(sql).unwrap())
    }

    /// Every row of every table, as text: what a secrecy scan or a
    /// before/after comparison needs.
    pub(crate) fn dump(&self) -> String {
        let schema = &self.target.schema;
        let tables =
            self.sql(&format!("SELECT tablename::text FROM pg_tables WHERE schemaname = '{schema}' ORDER BY 1"));
        let mut out = String::new();
        for table in tables.iter().map(|r| r.get::<_, String>(0)) {
            out += &format!("[{table}]\n");
            for r in self.sql(&format!("SELECT t::text FROM \"{schema}\".\"{table}\" t ORDER BY 1")) {
                out += &r.get::<_, String>(0);
                out.push('\n');
            }
        }
        out
    }
}

impl Drop for Schema {
    fn drop(&mut self) {
        let drop = format!("DROP SCHEMA IF EXISTS \"{}\" CASCADE", self.target.schema);
        let _ = std::thread::spawn(move || {
            if let Ok(mut c) = ::postgres::Client::connect(&url(), ::postgres::NoTls) {
                let _ = c.batch_execute(&drop);
            }
        })
        .join();
    }
}

/// Opens (creating on first use) the SQLite journal at `path`.
pub(crate) fn open(path: &Path) -> Journal {
    open_file(path, JournalOptions::default()).expect("open journal")
}

/// Opens the SQLite journal at `path`: for tests about files themselves.
pub(crate) fn open_file(path: impl AsRef<Path>, options: JournalOptions) -> Result<Journal> {
    Journal::open(path.as_ref(), options, OpenMode::ReadWrite)
}

pub(crate) fn open_file_read_only(path: impl AsRef<Path>) -> Result<Journal> {
    Journal::open(path.as_ref(), JournalOptions::default(), OpenMode::ReadOnly)
}

/// Opens the PostgreSQL journal `target` names: for tests about targets.
pub(crate) fn open_target(target: &PgTarget, options: JournalOptions) -> Result<Journal> {
    Journal::open(target, options, OpenMode::ReadWrite)
}

pub(crate) fn open_target_read_only(target: &PgTarget) -> Result<Journal> {
    Journal::open(target, JournalOptions::default(), OpenMode::ReadOnly)
}

/// Where one test's journal lives.
pub(crate) enum Backend {
    /// `j.sqlite` in a directory of its own (removed with `_dir`).
    Sqlite {
        _dir: TempDir,
        path: PathBuf,
    },
    Postgres(Schema),
}

impl Backend {
    pub(crate) fn sqlite(tag: &str) -> Backend {
        let dir = TempDir::new(tag);
        let path = dir.file("j.sqlite");
        Backend::Sqlite { _dir: dir, path }
    }

    pub(crate) fn postgres(tag: &str) -> Backend {
        Backend::Postgres(Schema::new(tag))
    }

    /// The SQLite file, for a test about SQLite files.
    pub(crate) fn path(&self) -> &Path {
        match self {
            Backend::Sqlite { path, .. } => path,
            Backend::Postgres(_) => panic!("a PostgreSQL journal has no file"),
        }
    }

    /// Opens (creating on first use) the journal with the default options;
    /// each call is another handle on the same journal, as another process
    /// or host would hold.
    pub(crate) fn open(&self) -> Journal {
        self.open_with(JournalOptions::default()).expect("open journal")
    }

    pub(crate) fn open_with(&self, options: JournalOptions) -> Result<Journal> {
        match self {
            Backend::Sqlite { path, .. } => open_file(path, options),
            Backend::Postgres(s) => s.open_with(options),
        }
    }

    pub(crate) fn open_read_only(&self) -> Result<Journal> {
        match self {
            Backend::Sqlite { path, .. } => open_file_read_only(path),
            Backend::Postgres(s) => s.open_read_only(),
        }
    }

    /// Whether anything exists where the journal would be: the file, or the schema.
    pub(crate) fn exists(&self) -> bool {
        match self {
            Backend::Sqlite { path, .. } => path.exists(),
            Backend::Postgres(s) => {
                let sql = format!("SELECT count(*) FROM pg_namespace WHERE nspname = '{}'", s.target.schema);
                s.sql(&sql)[0].get::<_, i64>(0) > 0
            }
        }
    }

    /// What names where the journal lives, private to the host: the file's
    /// path and folder, or the connection string and the server's address.
    pub(crate) fn private_names(&self) -> Vec<String> {
        match self {
            Backend::Sqlite { path, .. } => {
                let folder = path.parent().and_then(Path::file_name).unwrap().to_string_lossy().into_owned();
                vec![path.display().to_string(), folder]
            }
            Backend::Postgres(s) => {
                let url = s.target.connection_string.clone();
                let address = url.rsplit('@').next().and_then(|rest| rest.split('/').next()).unwrap().to_owned();
                vec![url, address]
            }
        }
    }

    /// The folder of a file journal's attempt ledgers (a PostgreSQL journal
    /// has none: its server counts attempts).
    pub(crate) fn ledger_dir(&self) -> PathBuf {
        crate::journal::sqlite::ledger_dir(self.path()).unwrap()
    }

    /// Runs the statements `sql` (written in the dialect both understand)
    /// on a connection of its own.
    pub(crate) fn execute(&self, sql: &str) {
        match self {
            Backend::Sqlite { path, .. } => rusqlite::Connection::open(path).unwrap().execute_batch(sql).unwrap(),
            Backend::Postgres(s) => s.batch(sql),
        }
    }

    /// Stamps the journal as written by a newer build (schema `version`).
    pub(crate) fn stamp_version(&self, version: i32) {
        match self {
            Backend::Sqlite { .. } => self.execute(&format!("PRAGMA user_version = {version}")),
            Backend::Postgres(_) => self.execute(&format!("UPDATE meta SET version = {version}")),
        }
    }

    /// The schema version this build writes on this backend.
    pub(crate) fn schema_version(&self) -> i32 {
        match self {
            Backend::Sqlite { .. } => SCHEMA_VERSION,
            Backend::Postgres(_) => PG_SCHEMA_VERSION,
        }
    }

    /// Everything the journal keeps, as comparable text: the hashes of the
    /// file and its sidecars, or every row of the schema.
    pub(crate) fn fingerprint(&self) -> String {
        match self {
            Backend::Sqlite { path, .. } => format!("{:?}", file_hashes(path)),
            Backend::Postgres(s) => s.dump(),
        }
    }

    /// Everything the journal stored, as text to scan for what it must not
    /// store: the bytes of the file and its WAL, or every row of the schema.
    pub(crate) fn stored_text(&self) -> String {
        match self {
            Backend::Sqlite { path, .. } => ["", "-wal"]
                .iter()
                .filter_map(|suffix| std::fs::read(format!("{}{suffix}", path.display())).ok())
                .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
                .collect(),
            Backend::Postgres(s) => s.dump(),
        }
    }

    /// Holds the write lock from a foreign connection until dropped: SQLite's
    /// database lock, or an EXCLUSIVE lock on `dispatches` (which blocks
    /// every write to it and no read).
    pub(crate) fn write_lock(&self) -> WriteLock {
        match self {
            Backend::Sqlite { path, .. } => {
                let c = rusqlite::Connection::open(path).unwrap();
                c.execute_batch("BEGIN IMMEDIATE").unwrap();
                WriteLock::Sqlite(c)
            }
            Backend::Postgres(s) => {
                let setup = format!("SET search_path TO \"{}\"", s.target.schema);
                let (locked_tx, locked) = mpsc::channel();
                let (release, released) = mpsc::channel::<()>();
                let holder = std::thread::spawn(move || {
                    let mut c = ::postgres::Client::connect(&url(), ::postgres::NoTls).unwrap();
                    c.batch_execute(&setup).unwrap();
                    c.batch_execute("BEGIN; LOCK TABLE dispatches IN EXCLUSIVE MODE").unwrap();
                    locked_tx.send(()).unwrap();
                    let _ = released.recv();
                    c.batch_execute("ROLLBACK").unwrap();
                });
                locked.recv().expect("the lock holder took the lock");
                WriteLock::Postgres { release: Some(release), holder: Some(holder) }
            }
        }
    }
}

/// See [`Backend::write_lock`].
pub(crate) enum WriteLock {
    Sqlite(rusqlite::Connection),
    Postgres { release: Option<mpsc::Sender<()>>, holder: Option<JoinHandle<()>> },
}

impl Drop for WriteLock {
    fn drop(&mut self) {
        match self {
            WriteLock::Sqlite(c) => c.execute_batch("ROLLBACK").unwrap(),
            WriteLock::Postgres { release, holder } => {
                drop(release.take());
                holder.take().unwrap().join().unwrap();
            }
        }
    }
}

/// sha256 of the main file, its `-wal` and its `-journal` (None when absent).
pub(crate) fn file_hashes(path: &Path) -> Vec<Option<String>> {
    ["", "-wal", "-journal"]
        .iter()
        .map(|suffix| {
            let p = PathBuf::from(format!("{}{suffix}", path.display()));
            std::fs::read(p).ok().map(|b| sha256_hex(&b))
        })
        .collect()
}

/// Runs each named test body `fn name(b: &Backend)` on both backends, as the
/// tests `name::sqlite` and `name::postgres` (a module beside the function:
/// they live in different namespaces). A body left out of the list is dead
/// code, which the lints refuse.
macro_rules! both {
    ($($name:ident),+ $(,)?) => {$(
        mod $name {
            #[test]
            fn sqlite() {
                super::$name(&super::Backend::sqlite(stringify!($name)))
            }

            #[test]
            fn postgres() {
                super::$name(&super::Backend::postgres(stringify!($name)))
            }
        }
    )+};
}
pub(crate) use both;
