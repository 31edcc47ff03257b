//! One PostgreSQL connection that reconnects, with its prepared statements,
//! and the mapping of driver errors to [`JournalError`]s that carry no text
//! of the server's (messages may quote values) and no connection details.

use std::collections::HashMap;
use std::time::Duration;

use std::sync::Arc;

use postgres::config::SslMode;
use postgres::types::ToSql;
use postgres::{Client, Config, NoTls, Row, Statement};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use tokio_postgres_rustls::MakeRustlsConnect;

use super::super::{JournalError, Result};

/// A connection that is (re)opened on demand: after a lost connection or a
/// server restart the next use connects again.
pub(super) struct Link {
    config: Config,
    /// Set when the connection string says `sslmode=require`.
    tls: Option<MakeRustlsConnect>,
    /// Run once per connection: `search_path` to the journal's schema, and
    /// for readers a read-only default.
    setup: String,
    client: Option<Client>,
    /// Prepared once per connection: a statement costs one round trip after.
    statements: HashMap<&'static str, Statement>,
    /// The server refused a statement since [`Link::clear_failed`]: the open
    /// transaction, if any, is aborted until rolled back (to a savepoint).
    pub(super) sql_failed: bool,
}

impl Link {
    pub(super) fn new(config: Config, tls: Option<MakeRustlsConnect>, schema: &str, read_only: bool) -> Link {
        // The application name says whose connection it is (`pg_stat_activity`), naming no secret.
        let mut setup = format!("SET search_path TO \"{schema}\"; SET application_name = 'loopx-hooks:{schema}'");
        if read_only {
            setup += "; SET default_transaction_read_only = on";
        }
        Link { config, tls, setup, client: None, statements: HashMap::new(), sql_failed: false }
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

    /// The open client, connecting first when there is none or it was lost.
    pub(super) fn client(&mut self) -> Result<&mut Client> {
        if self.client.as_ref().is_some_and(Client::is_closed) {
            self.forget();
        }
        if self.client.is_none() {
            let mut client = match &self.tls {
                Some(tls) => self.config.connect(tls.clone()),
                None => self.config.connect(NoTls),
            }
            .map_err(map)?;
            client.batch_execute(&self.setup).map_err(map)?;
            self.client = Some(client);
        }
        // Just set above when it was missing.
        self.client.as_mut().ok_or(JournalError::Unavailable)
    }

    /// Drops the connection (after an error that may have broken it).
    pub(super) fn forget(&mut self) {
        self.client = None;
        self.statements.clear();
    }

    pub(super) fn is_lost(&self) -> bool {
        self.client.as_ref().is_none_or(Client::is_closed)
    }

    fn statement(&mut self, sql: &'static str) -> Result<(&mut Client, Statement)> {
        self.client()?;
        let client = self.client.as_mut().ok_or(JournalError::Unavailable)?;
        let stmt = match self.statements.get(sql) {
            Some(s) => s.clone(),
            None => {
                let s = client.prepare(sql).map_err(|e| note(&mut self.sql_failed, e))?;
                self.statements.insert(sql, s.clone());
                s
            }
        };
        Ok((client, stmt))
    }

    pub(super) fn query(&mut self, sql: &'static str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>> {
        let (client, stmt) = self.statement(sql)?;
        client.query(&stmt, params).map_err(|e| note(&mut self.sql_failed, e))
    }

    pub(super) fn query_opt(&mut self, sql: &'static str, params: &[&(dyn ToSql + Sync)]) -> Result<Option<Row>> {
        let (client, stmt) = self.statement(sql)?;
        client.query_opt(&stmt, params).map_err(|e| note(&mut self.sql_failed, e))
    }

    pub(super) fn execute(&mut self, sql: &'static str, params: &[&(dyn ToSql + Sync)]) -> Result<u64> {
        let (client, stmt) = self.statement(sql)?;
        client.execute(&stmt, params).map_err(|e| note(&mut self.sql_failed, e))
    }

    /// Statements without parameters, in one round trip (simple protocol).
    pub(super) fn batch(&mut self, sql: &str) -> Result<()> {
        let client = self.client()?;
        let out = client.batch_execute(sql);
        out.map_err(|e| note(&mut self.sql_failed, e))
    }

    /// A query built at run time (filters), prepared each time.
    pub(super) fn query_dynamic(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>> {
        let client = self.client()?;
        let out = client.query(sql, params);
        out.map_err(|e| note(&mut self.sql_failed, e))
    }
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
fn note(sql_failed: &mut bool, e: postgres::Error) -> JournalError {
    if e.code().is_some() {
        *sql_failed = true;
    }
    map(e)
}

/// SQLSTATE of a unique violation: an intent id already recorded.
pub(super) const UNIQUE_VIOLATION: &str = "23505";

/// The driver's error as a code-only [`JournalError`].
pub(super) fn map(e: postgres::Error) -> JournalError {
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
