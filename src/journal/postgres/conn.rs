//! One PostgreSQL connection that reconnects, with its prepared statements,
//! and the mapping of driver errors to [`JournalError`]s that carry no text
//! of the server's (messages may quote values) and no connection details.
//!
//! Every wait on the server has a deadline, kept here on the client's side:
//! a server that accepts bytes and answers nothing (stopped, black-holed,
//! behind a stuck proxy) is acknowledged by its kernel, so neither TCP
//! keepalive nor the server's own `statement_timeout` ends the wait. Past a
//! deadline the connection is dropped and the caller gets
//! [`JournalError::Unavailable`].

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use tokio::runtime::Runtime;
use tokio::sync::mpsc;
use tokio_postgres::config::SslMode;
use tokio_postgres::tls::{MakeTlsConnect, TlsConnect};
use tokio_postgres::types::ToSql;
use tokio_postgres::{AsyncMessage, Client, Config, NoTls, Row, Socket, Statement};
use tokio_postgres_rustls::MakeRustlsConnect;

use super::super::{JournalError, Result};

/// How long each kind of wait on the server may take.
#[derive(Clone, Copy, Debug)]
pub(super) struct Bounds {
    /// Establishing a connection: TCP, TLS, startup and authentication, and
    /// the session's setup.
    pub connect: Duration,
    /// One statement's round trip (also the server's `statement_timeout`).
    pub statement: Duration,
}

impl Bounds {
    /// Neither wait longer than a statement: for a caller that must not
    /// block past it (the JS thread).
    pub(super) fn within_statement(self) -> Bounds {
        Bounds { connect: self.connect.min(self.statement), statement: self.statement }
    }
}

/// An open session: the client and the task that drives its socket.
struct Session {
    client: Client,
    driver: tokio::task::JoinHandle<()>,
    /// One message per notification the server sent (only a LISTENer gets any).
    heard: mpsc::UnboundedReceiver<()>,
}

impl Drop for Session {
    fn drop(&mut self) {
        // Closes the socket at once, whatever the server is doing.
        self.driver.abort();
    }
}

/// Waits within the statement bound for the future `$fut` makes of the
/// open client `$c`, dropping the connection when the bound runs out.
macro_rules! on_server {
    ($link:ident, |$c:ident| $fut:expr) => {{
        let out = match $link.parts() {
            Ok((rt, $c, limit)) => wait(rt, limit, $fut),
            Err(e) => return Err(e),
        };
        out.map_err(|w| $link.failed(w))
    }};
}

/// A connection that is (re)opened on demand: after a lost connection or a
/// server restart the next use connects again.
pub(super) struct Link {
    config: Config,
    /// Set when the connection string says `sslmode=require`.
    tls: Option<MakeRustlsConnect>,
    /// Run once per connection: `search_path` to the journal's schema, the
    /// statement timeout, and for readers a read-only default.
    setup: String,
    bounds: Bounds,
    /// The connection's own runtime (current-thread: it runs only while this
    /// link waits), made at the first connect.
    runtime: Option<Runtime>,
    session: Option<Session>,
    /// Prepared once per connection: a statement costs one round trip after.
    statements: HashMap<&'static str, Statement>,
    /// The server refused a statement since [`Link::clear_failed`]: the open
    /// transaction, if any, is aborted until rolled back (to a savepoint).
    pub(super) sql_failed: bool,
    /// The last failure was a deadline: the server may be frozen, so trying
    /// again at once would wait the whole bound again.
    pub(super) timed_out: bool,
    /// A transaction is open on this connection: when it is lost, statements
    /// fail instead of reconnecting, since a new connection would run the
    /// rest of the transaction outside it (each statement committing alone,
    /// and COMMIT a no-op) while what ran before was rolled back.
    pub(super) pinned: bool,
}

/// Why a wait ended without an answer.
enum Waited {
    Driver(tokio_postgres::Error),
    Deadline,
}

impl Link {
    pub(super) fn new(
        config: Config,
        tls: Option<MakeRustlsConnect>,
        schema: &str,
        read_only: bool,
        bounds: Bounds,
    ) -> Link {
        // The application name says whose connection it is (`pg_stat_activity`), naming no secret.
        let mut setup = format!(
            "SET search_path TO \"{schema}\"; SET application_name = 'loopx-hooks:{schema}'; SET statement_timeout = {}",
            millis(bounds.statement)
        );
        if read_only {
            setup += "; SET default_transaction_read_only = on";
        }
        Link {
            config,
            tls,
            setup,
            bounds,
            runtime: None,
            session: None,
            statements: HashMap::new(),
            sql_failed: false,
            timed_out: false,
            pinned: false,
        }
    }

    /// Bounds every lock wait of this connection's statements by the
    /// journal's busy timeout, as SQLite's busy handler does: a row or
    /// advisory lock another host holds past it fails the statement with
    /// 55P03 ([`JournalError::Busy`], which the writer retries). PostgreSQL
    /// reads 0 as "wait forever", SQLite as "do not wait": at least 1 ms.
    pub(super) fn lock_timeout(mut self, busy_timeout_ms: u32) -> Link {
        self.setup += &format!("; SET lock_timeout = {}", busy_timeout_ms.max(1));
        self
    }

    /// Holds the session-level advisory lock `key` for the life of each
    /// connection, taken again on every reconnect: while it is granted,
    /// other hosts know the process that counted an attempt under `key` is
    /// alive (`read.rs`). A lost connection lets it go, and another host then
    /// treats that process's attempts as ended, which spends a new attempt
    /// instead of sharing it, so the bound on attempts still holds.
    pub(super) fn holding(mut self, key: Option<i64>) -> Link {
        if let Some(key) = key {
            self.setup += &format!("; SELECT pg_advisory_lock({key})");
        }
        self
    }

    /// Connects when there is no connection or it was lost.
    pub(super) fn client(&mut self) -> Result<&Client> {
        if self.session.as_ref().is_some_and(|s| s.client.is_closed()) {
            self.forget();
        }
        if self.session.is_none() {
            if self.pinned {
                return Err(JournalError::Unavailable);
            }
            self.timed_out = false;
            let runtime = match self.runtime.take() {
                Some(rt) => rt,
                None => tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|_| JournalError::Unavailable)?,
            };
            let hosts = u32::try_from(self.config.get_hosts().len().max(1)).unwrap_or(u32::MAX);
            let bound = self.bounds.connect.saturating_mul(hosts);
            let session = match &self.tls {
                Some(tls) => wait(&runtime, bound, establish(&self.config, tls.clone(), &self.setup)),
                None => wait(&runtime, bound, establish(&self.config, NoTls, &self.setup)),
            };
            self.runtime = Some(runtime);
            match session {
                Ok(s) => self.session = Some(s),
                Err(w) => return Err(self.failed(w)),
            }
        }
        self.session.as_ref().map(|s| &s.client).ok_or(JournalError::Unavailable)
    }

    /// Drops the connection (after an error that may have broken it).
    pub(super) fn forget(&mut self) {
        self.session = None;
        self.statements.clear();
    }

    pub(super) fn is_lost(&self) -> bool {
        self.session.as_ref().is_none_or(|s| s.client.is_closed())
    }

    /// Maps a failed wait, dropping the connection after a deadline.
    fn failed(&mut self, w: Waited) -> JournalError {
        match w {
            Waited::Driver(e) => note(&mut self.sql_failed, e),
            Waited::Deadline => {
                self.forget();
                self.timed_out = true;
                JournalError::Unavailable
            }
        }
    }

    /// The runtime and client of the open connection (connecting first),
    /// and how long a statement may take on it.
    fn parts(&mut self) -> Result<(&Runtime, &Client, Duration)> {
        self.client()?;
        match (self.runtime.as_ref(), self.session.as_ref()) {
            (Some(rt), Some(session)) => Ok((rt, &session.client, self.bounds.statement)),
            _ => Err(JournalError::Unavailable),
        }
    }

    fn statement(&mut self, sql: &'static str) -> Result<Statement> {
        if let Some(s) = self.statements.get(sql) {
            if !self.is_lost() {
                return Ok(s.clone());
            }
        }
        let s = on_server!(self, |c| c.prepare(sql))?;
        self.statements.insert(sql, s.clone());
        Ok(s)
    }

    pub(super) fn query(&mut self, sql: &'static str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>> {
        let stmt = self.statement(sql)?;
        on_server!(self, |c| c.query(&stmt, params))
    }

    pub(super) fn query_opt(&mut self, sql: &'static str, params: &[&(dyn ToSql + Sync)]) -> Result<Option<Row>> {
        let stmt = self.statement(sql)?;
        on_server!(self, |c| c.query_opt(&stmt, params))
    }

    pub(super) fn execute(&mut self, sql: &'static str, params: &[&(dyn ToSql + Sync)]) -> Result<u64> {
        let stmt = self.statement(sql)?;
        on_server!(self, |c| c.execute(&stmt, params))
    }

    /// Statements without parameters, in one round trip (simple protocol).
    pub(super) fn batch(&mut self, sql: &str) -> Result<()> {
        on_server!(self, |c| c.batch_execute(sql))
    }

    /// A query built at run time (filters), prepared each time.
    pub(super) fn query_dynamic(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>> {
        on_server!(self, |c| c.query(sql, params))
    }

    /// Waits up to `limit` for notifications: `Ok(true)` when at least one
    /// came (all that came are taken), `Ok(false)` when none did.
    pub(super) fn heard(&mut self, limit: Duration) -> Result<bool> {
        self.client()?;
        let (Some(rt), Some(session)) = (self.runtime.as_ref(), self.session.as_mut()) else {
            return Err(JournalError::Unavailable);
        };
        let got = rt.block_on(async { tokio::time::timeout(limit, session.heard.recv()).await });
        match got {
            Ok(Some(())) => {
                while session.heard.try_recv().is_ok() {}
                Ok(true)
            }
            Ok(None) => {
                // The driver ended: the connection is gone.
                self.forget();
                Err(JournalError::Unavailable)
            }
            Err(_) => Ok(false),
        }
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        // The session's task belongs to the runtime: end it first.
        self.session = None;
        if let Some(rt) = self.runtime.take() {
            // Never blocks, and is allowed on an async runtime's thread.
            rt.shutdown_background();
        }
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}

/// Polls `fut` on `rt` for at most `limit`.
fn wait<T>(
    rt: &Runtime,
    limit: Duration,
    fut: impl Future<Output = std::result::Result<T, tokio_postgres::Error>>,
) -> std::result::Result<T, Waited> {
    match rt.block_on(async { tokio::time::timeout(limit, fut).await }) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(Waited::Driver(e)),
        Err(_) => Err(Waited::Deadline),
    }
}

/// Connects, starts the task that drives the socket (passing notifications
/// on) and runs the session's setup.
async fn establish<T>(config: &Config, tls: T, setup: &str) -> std::result::Result<Session, tokio_postgres::Error>
where
    T: MakeTlsConnect<Socket>,
    T::Stream: Send + 'static,
    T::TlsConnect: Send,
    <T::TlsConnect as TlsConnect<Socket>>::Future: Send,
{
    let (client, mut connection) = config.connect(tls).await?;
    let (tell, heard) = mpsc::unbounded_channel();
    let driver = tokio::spawn(async move {
        while let Some(Ok(message)) = std::future::poll_fn(|cx| connection.poll_message(cx)).await {
            if let AsyncMessage::Notification(_) = message {
                let _ = tell.send(());
            }
        }
    });
    let session = Session { client, driver, heard };
    session.client.batch_execute(setup).await?;
    Ok(session)
}

/// The TLS connector for `sslmode=require`: rustls (ring), verifying the
/// server's certificate and host name against the Mozilla roots, or against
/// the PEM certificates of `ca_file` when given. Other modes connect without
/// TLS: an unverified TLS session (libpq's `prefer`/`require`) is not offered.
pub(super) fn tls(config: &Config, ca_file: Option<&std::path::Path>) -> Result<Option<MakeRustlsConnect>> {
    if config.get_ssl_mode() != SslMode::Require {
        return Ok(None);
    }
    let mut roots = rustls::RootCertStore::empty();
    match ca_file {
        Some(path) => {
            let pem = std::fs::read(path).map_err(|_| JournalError::InvalidArgument { what: "caFile" })?;
            for cert in CertificateDer::pem_slice_iter(&pem) {
                let cert = cert.map_err(|_| JournalError::InvalidArgument { what: "caFile" })?;
                roots.add(cert).map_err(|_| JournalError::InvalidArgument { what: "caFile" })?;
            }
            if roots.is_empty() {
                return Err(JournalError::InvalidArgument { what: "caFile" });
            }
        }
        None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let client = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|_| JournalError::InvalidArgument { what: "tls" })?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Some(MakeRustlsConnect::new(client)))
}

/// Maps `e`, noting whether the server refused a statement (which aborts the
/// open transaction) rather than the connection failing.
fn note(sql_failed: &mut bool, e: tokio_postgres::Error) -> JournalError {
    if e.code().is_some() {
        *sql_failed = true;
    }
    map(e)
}

/// SQLSTATE of a unique violation: an intent id already recorded.
pub(super) const UNIQUE_VIOLATION: &str = "23505";

/// The driver's error as a code-only [`JournalError`].
pub(super) fn map(e: tokio_postgres::Error) -> JournalError {
    let Some(state) = e.code() else {
        // No SQLSTATE: the connection is gone, refused, or timed out.
        return JournalError::Unavailable;
    };
    match state.code() {
        // Serialization failure, deadlock, lock not available: retry the batch.
        "40001" | "40P01" | "55P03" => JournalError::Busy,
        // Connection exceptions; admin/crash shutdown; cannot connect now.
        c if c.starts_with("08") => JournalError::Unavailable,
        "57P01" | "57P02" | "57P03" => JournalError::Unavailable,
        // The statement ran past the journal's statement bound.
        "57014" => JournalError::Unavailable,
        "25006" => JournalError::ReadOnly,
        // The journal's tables or schema are not there.
        "42P01" | "3F000" => JournalError::NotAJournal,
        c => JournalError::Postgres { sqlstate: c.to_owned() },
    }
}

/// Backoff before the next try of something that failed with `e` after
/// `tries` retries; `None`: give up. Transient errors only.
pub(super) fn backoff(e: &JournalError, tries: u32) -> Option<Duration> {
    match e {
        // About 15 s in all: a server restart or a failover fits.
        JournalError::Unavailable if tries < 12 => Some(Duration::from_millis((50u64 << tries.min(5)).min(2_000))),
        JournalError::Busy if tries < 8 => Some(Duration::from_millis(5 << tries.min(6))),
        _ => None,
    }
}

pub(super) fn to_i32(n: u32, what: &'static str) -> Result<i32> {
    i32::try_from(n).map_err(|_| JournalError::InvalidArgument { what })
}

pub(super) fn to_u32(n: i32) -> u32 {
    u32::try_from(n).unwrap_or_default()
}
