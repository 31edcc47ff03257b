//! The options objects of the JavaScript API, each declared once: its
//! public member names, their TypeScript types (generated into `bindings/`
//! by ts-rs), how each member is read, and the name list lib/ is generated
//! from. An options object arrives as JSON text; a member that is not what
//! its declaration says, and a member the object does not have, are refused
//! with a message that names the member and never repeats its value.

use serde_json::{Map, Value};
use ts_rs::TS;

use crate::contract::Dialect;
use crate::dispatch::{Profile, ProfileOptions};
use crate::journal::{JournalOptions, JournalTarget, PgLimits, PgTarget, DEFAULT_SCHEMA};

mod read;
#[cfg(test)]
mod tests;

use read::{boolean, dialect, integer, non_empty, object, only_known, optional, profile, synchronous};
pub use read::{member_fault, OptionError};

/// Declares an options object: a struct of what core takes, its TS type, and
/// `MEMBERS`, the public names in declaration order. Each member line is
/// `"jsName" => field: RustType = reader;`, where the reader turns the
/// member's JSON (`null` when absent) into the field; a `#[ts(as = ...)]` or
/// `#[ts(type = ...)]` gives the TS type where core's type is not the JS one.
macro_rules! options {
    (
        $(#[$meta:meta])*
        $name:ident {
            $( $(#[$fmeta:meta])* $js:literal => $field:ident : $ty:ty = $read:expr ; )*
        }
    ) => {
        #[derive(TS, Debug, Clone, PartialEq)]
        $(#[$meta])*
        pub struct $name {
            $( $(#[$fmeta])* #[ts(rename = $js)] pub $field: $ty, )*
        }

        impl $name {
            /// The public member names, in declaration order.
            pub const MEMBERS: &'static [&'static str] = &[$($js),*];

            /// Reads the object at `at` (a path such as `options.journal`).
            pub fn read(at: &str, value: Value) -> Result<Self, OptionError> {
                let mut map: Map<String, Value> = object(at, value)?;
                only_known(at, &map, Self::MEMBERS)?;
                Ok($name {
                    $( $field: ($read)(&format!("{at}.{}", $js), map.remove($js).unwrap_or(Value::Null))?, )*
                })
            }
        }
    };
}

options! {
    /// The journal on PostgreSQL: a schema (default `loopx_hooks`) created on first use.
    #[ts(export, rename = "PostgresJournalTarget")]
    PostgresOptions {
        /// A libpq-style URL or key=value string; never echoed in errors or output.
        "connectionString" => connection_string: String = non_empty;
        /// `[a-z_][a-z0-9_]*`, at most 48 bytes; default `loopx_hooks`.
        #[ts(optional)]
        "schema" => schema: Option<String> = optional(non_empty);
        /// PEM certificates that verify the server when the connection string
        /// says `sslmode=require` (TLS by rustls); default: the Mozilla root store.
        #[ts(optional)]
        "caFile" => ca_file: Option<String> = optional(non_empty);
        /// The bound of one statement's round trip, ms (default 5000): the
        /// session's `statement_timeout`, and how long the client waits for a
        /// server that stopped answering. A read past it rejects
        /// `ERR_LOOPX_JOURNAL_UNAVAILABLE`. Connecting is bounded by the
        /// connection string's `connect_timeout` (seconds, default 5), which
        /// covers TCP, TLS, startup and authentication.
        #[ts(optional)]
        "statementTimeoutMs" => statement_timeout_ms: Option<u32> = optional(integer);
        /// How long a write retries a lost or unreachable server, ms (default
        /// 15000), before it rejects `ERR_LOOPX_JOURNAL_UNAVAILABLE`.
        #[ts(optional)]
        "writeRetryMs" => write_retry_ms: Option<u32> = optional(integer);
    }
}

impl From<PostgresOptions> for PgTarget {
    fn from(pg: PostgresOptions) -> Self {
        let limits = PgLimits::default();
        PgTarget {
            connection_string: pg.connection_string,
            schema: pg.schema.unwrap_or_else(|| DEFAULT_SCHEMA.to_owned()),
            ca_file: pg.ca_file.map(Into::into),
            limits: PgLimits {
                statement_timeout_ms: pg.statement_timeout_ms.unwrap_or(limits.statement_timeout_ms),
                write_retry_ms: pg.write_retry_ms.unwrap_or(limits.write_retry_ms),
            },
        }
    }
}

/// Where a journal lives: a SQLite file path, a `postgres://` or
/// `postgresql://` URL (default schema), `{ path }`, or `{ postgres }`.
/// Only its TypeScript type is used; [`journal_target`] reads the value.
#[derive(TS)]
#[ts(export, rename = "JournalTarget", untagged)]
pub enum JournalTargetType {
    Text(String),
    Path { path: String },
    Postgres { postgres: PostgresOptions },
}

const TARGET_MEMBERS: &[&str] = &["path", "postgres"];
const TARGET_SHAPE: &str = "a path, a postgres:// URL, { path } or { postgres: { connectionString } }";
/// SQLite's name for a private in-memory database.
const SQLITE_MEMORY: &str = ":memory:";
/// Why `:memory:` is refused: opened as a path it would make files of that
/// name, and an in-memory journal would keep neither its records past the
/// process nor the attempt ledger that other processes read.
const NOT_MEMORY: &str = "a file path or a postgres:// URL, not :memory: (a journal is durable: \
     use a file in a temporary folder for tests)";

/// Whether a journal given as a string is a PostgreSQL URL rather than a path.
pub fn is_postgres_url(text: &str) -> bool {
    text.starts_with("postgres://") || text.starts_with("postgresql://")
}

/// A `JournalTarget` value: a `postgres://` string goes to PostgreSQL, never
/// to a file of that name.
pub fn journal_target(at: &str, value: Value) -> Result<JournalTarget, OptionError> {
    let invalid = || OptionError::invalid(at, TARGET_SHAPE);
    match value {
        Value::String(text) if text.is_empty() => Err(invalid()),
        Value::String(text) if text == SQLITE_MEMORY => Err(OptionError::invalid(at, NOT_MEMORY)),
        Value::String(text) if is_postgres_url(&text) => {
            Ok(JournalTarget::Postgres(PostgresOptions { connection_string: text, ..PostgresOptions::empty() }.into()))
        }
        Value::String(text) => Ok(JournalTarget::File(text.into())),
        Value::Object(map) => {
            only_known(at, &map, TARGET_MEMBERS)?;
            match (map.get("path"), map.get("postgres")) {
                (Some(Value::String(path)), None) if path == SQLITE_MEMORY => {
                    Err(OptionError::invalid(&format!("{at}.path"), NOT_MEMORY))
                }
                (Some(Value::String(path)), None) if !path.is_empty() => Ok(JournalTarget::File(path.into())),
                (None, Some(pg)) if pg.is_object() => {
                    Ok(JournalTarget::Postgres(PostgresOptions::read(&format!("{at}.postgres"), pg.clone())?.into()))
                }
                _ => Err(invalid()),
            }
        }
        _ => Err(invalid()),
    }
}

impl PostgresOptions {
    fn empty() -> Self {
        PostgresOptions {
            connection_string: String::new(),
            schema: None,
            ca_file: None,
            statement_timeout_ms: None,
            write_retry_ms: None,
        }
    }
}

options! {
    /// `HookRuntime.open`'s options (see `HookRuntimeOptions` and
    /// `ShippedHookRuntimeOptions` in lib/runtime.ts for the per-dialect forms).
    #[ts(export, rename = "RuntimeOptions")]
    RuntimeOptions {
        /// A SQLite file path (created on first use), a `postgres://` or
        /// `postgresql://` URL, `{ path }`, or `{ postgres: { connectionString, ... } }`.
        #[ts(as = "JournalTargetType")]
        "journal" => journal: JournalTarget = journal_target;
        /// The members given, over the dialect's defaults: phase disabled, all
        /// hooks, `return` replays, 60 s per dispatch, 256 in flight; and for
        /// contract-v0 16 hooks, 64 intents and 256 KiB of results per
        /// dispatch, where `loopx-shipped-v0` has none (LoopX's envelope bounds it).
        #[ts(optional, as = "Option<Profile>")]
        "profile" => profile: Option<ProfileOptions> = optional(profile);
        /// `'full'` (default) fsyncs each group commit of final records;
        /// `'normal'` survives a process crash, not a power cut.
        #[ts(optional, type = "'full' | 'normal'")]
        "synchronous" => synchronous_full: Option<bool> = optional(synchronous);
        /// How long to wait for another process's write lock. Default 5000.
        #[ts(optional)]
        "busyTimeoutMs" => busy_timeout_ms: Option<u32> = optional(integer);
        /// Note each invocation in this process's attempt ledger before its
        /// provider runs, so it counts even if the process ends before its
        /// checkpoint commits (docs/durability.md, "Dispatch"). `false` saves a
        /// `pwrite` per invocation and gives up that guarantee; the bench uses
        /// it to show the cost. Default true.
        #[ts(optional)]
        "attemptLedger" => attempt_ledger: Option<bool> = optional(boolean);
        /// Commit a dispatch's checkpoint and records on the calling thread
        /// when it is the only dispatch of this runtime in flight and the
        /// journal's writer has nothing queued and no batch open, instead of
        /// handing them to the writer thread: a dispatch whose providers answer
        /// synchronously then settles without an event-loop turn or a thread
        /// wake-up, but the event loop waits for the commit (its fsync, and
        /// another process's write lock up to `busyTimeoutMs`). It pays at 1 in
        /// flight and costs under load (docs/benchmark.md). A SQLite journal
        /// only: with PostgreSQL, every commit would hold the event loop for a
        /// network round trip. Default false.
        #[ts(optional)]
        "inlineCommit" => inline_commit: Option<bool> = optional(boolean);
        /// The contract the runtime speaks: `'contract-v0'` (the default) or `'loopx-shipped-v0'`.
        #[ts(optional)]
        "dialect" => dialect: Option<Dialect> = optional(dialect);
        /// A LoopX runtime root where each settled dispatch's receipts are also
        /// written as LoopX's sidecar files, so LoopX's consumer of that folder
        /// keeps working during a migration (`loopx-shipped-v0` only).
        #[ts(optional)]
        "sidecarMirror" => sidecar_mirror: Option<String> = optional(non_empty);
    }
}

impl RuntimeOptions {
    /// The options as JSON text, members and their one cross-member rule checked.
    pub fn parse(at: &str, text: &str) -> Result<Self, OptionError> {
        let value = serde_json::from_str(text).map_err(|_| OptionError::invalid(at, "a JSON object"))?;
        let options = Self::read(at, value)?;
        if options.sidecar_mirror.is_some() && options.dialect != Some(Dialect::LoopxShippedV0) {
            return Err(OptionError::invalid(&format!("{at}.sidecarMirror"), "used with dialect 'loopx-shipped-v0'"));
        }
        Ok(options)
    }

    /// The profile these name, over the defaults of their dialect.
    pub fn profile(&self) -> Profile {
        let defaults = Profile::defaults_for(self.dialect.unwrap_or_default());
        self.profile.as_ref().map_or_else(|| defaults.clone(), |given| given.over(defaults.clone()))
    }

    /// The journal options these name, the rest at their defaults.
    pub fn journal_options(&self) -> JournalOptions {
        let defaults = JournalOptions::default();
        JournalOptions {
            synchronous_full: self.synchronous_full.unwrap_or(defaults.synchronous_full),
            busy_timeout_ms: self.busy_timeout_ms.unwrap_or(defaults.busy_timeout_ms),
            attempt_ledger: self.attempt_ledger.unwrap_or(defaults.attempt_ledger),
            inline_commit: self.inline_commit.unwrap_or(defaults.inline_commit),
        }
    }
}

options! {
    /// How `HookJournal.open` and `HookJournal.openReadOnly` open the journal.
    #[ts(export, rename = "JournalOpenOptions")]
    JournalOpenOptions {
        /// How long a read or write waits for another process's lock before
        /// `ERR_LOOPX_JOURNAL_BUSY`: SQLite's busy timeout, PostgreSQL's
        /// `lock_timeout`. Default 5000.
        #[ts(optional)]
        "busyTimeoutMs" => busy_timeout_ms: Option<u32> = optional(integer);
    }
}

impl JournalOpenOptions {
    pub fn journal_options(&self) -> JournalOptions {
        let defaults = JournalOptions::default();
        JournalOptions { busy_timeout_ms: self.busy_timeout_ms.unwrap_or(defaults.busy_timeout_ms), ..defaults }
    }
}
