//! Every stable `ERR_LOOPX_*` code, the one mapping from each core error to
//! its code, and the one shape an error crosses to JavaScript in
//! ([`ErrorData`]). The TypeScript union `LoopxHooksErrorCode` is generated
//! from [`ErrorCode`], so the two cannot drift; docs/errors.md says what to
//! do about each code.

use serde::Serialize;
use ts_rs::TS;

use crate::contract::{Rule, Violation};
use crate::journal::JournalError;
use crate::options::OptionError;
use crate::turn_start::inbox::InboxError;
use crate::turn_start::SessionError;

macro_rules! codes {
    ($($(#[$doc:meta])* $name:ident = $text:literal,)*) => {
        /// A stable error code. Branch on it, never on a message. Some are
        /// raised only by the TypeScript layer (lib/); they are listed here
        /// so the union has one source.
        #[derive(Serialize, TS, Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[ts(export, rename = "LoopxHooksErrorCode")]
        pub enum ErrorCode {
            $($(#[$doc])* #[serde(rename = $text)] $name,)*
        }

        impl ErrorCode {
            /// Every code, in declaration order.
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$name,)*];

            pub fn as_str(self) -> &'static str {
                match self {
                    $(ErrorCode::$name => $text,)*
                }
            }
        }
    };
}

codes! {
    /// lib: a runtime's in-flight limit is reached and the caller chose not to wait.
    Backpressure = "ERR_LOOPX_BACKPRESSURE",
    BudgetExhausted = "ERR_LOOPX_BUDGET_EXHAUSTED",
    CredentialLikeValue = "ERR_LOOPX_CREDENTIAL_LIKE_VALUE",
    DuplicateIntent = "ERR_LOOPX_DUPLICATE_INTENT",
    InboxBusy = "ERR_LOOPX_INBOX_BUSY",
    InboxClosed = "ERR_LOOPX_INBOX_CLOSED",
    /// A fault of the inbox's own, where SQLite reported no result code.
    InboxInternal = "ERR_LOOPX_INBOX_INTERNAL",
    InboxIo = "ERR_LOOPX_INBOX_IO",
    InboxReadonly = "ERR_LOOPX_INBOX_READONLY",
    InboxSqlite = "ERR_LOOPX_INBOX_SQLITE",
    InboxTooNew = "ERR_LOOPX_INBOX_TOO_NEW",
    IntentKindRejected = "ERR_LOOPX_INTENT_KIND_REJECTED",
    /// A failure of the N-API environment or of this package itself.
    Internal = "ERR_LOOPX_INTERNAL",
    InvalidArgument = "ERR_LOOPX_INVALID_ARGUMENT",
    InvalidIntentKind = "ERR_LOOPX_INVALID_INTENT_KIND",
    JournalBusy = "ERR_LOOPX_JOURNAL_BUSY",
    JournalClosed = "ERR_LOOPX_JOURNAL_CLOSED",
    JournalInternal = "ERR_LOOPX_JOURNAL_INTERNAL",
    JournalIo = "ERR_LOOPX_JOURNAL_IO",
    JournalNeedsRecovery = "ERR_LOOPX_JOURNAL_NEEDS_RECOVERY",
    JournalReadonly = "ERR_LOOPX_JOURNAL_READONLY",
    JournalSqlite = "ERR_LOOPX_JOURNAL_SQLITE",
    JournalUnavailable = "ERR_LOOPX_JOURNAL_UNAVAILABLE",
    JournalPostgres = "ERR_LOOPX_JOURNAL_POSTGRES",
    JournalTooNew = "ERR_LOOPX_JOURNAL_TOO_NEW",
    LeaseExpired = "ERR_LOOPX_LEASE_EXPIRED",
    LeaseNotHeld = "ERR_LOOPX_LEASE_NOT_HELD",
    /// lib: the loader found the platform's binary package missing.
    NativeBindingMissing = "ERR_LOOPX_NATIVE_BINDING_MISSING",
    NotAnInbox = "ERR_LOOPX_NOT_AN_INBOX",
    NotAFile = "ERR_LOOPX_NOT_A_FILE",
    NotAJournal = "ERR_LOOPX_NOT_A_JOURNAL",
    /// lib: a file that is not a periodic-report trigger store.
    NotATriggerStore = "ERR_LOOPX_NOT_A_TRIGGER_STORE",
    /// lib: a file that is not the reference orchestrator's turn journal.
    NotATurnJournal = "ERR_LOOPX_NOT_A_TURN_JOURNAL",
    NotJsonValue = "ERR_LOOPX_NOT_JSON_VALUE",
    /// lib: an optional peer dependency is not installed.
    PeerMissing = "ERR_LOOPX_PEER_MISSING",
    /// lib: a dispatch started from inside a provider of the same runtime.
    ReentrantDispatch = "ERR_LOOPX_REENTRANT_DISPATCH",
    RegistrationRejected = "ERR_LOOPX_REGISTRATION_REJECTED",
    ScopeNotGranted = "ERR_LOOPX_SCOPE_NOT_GRANTED",
    /// lib: a `serve --stdio` request line that is not a request.
    ServeBadRequest = "ERR_LOOPX_SERVE_BAD_REQUEST",
    /// lib: a `serve --stdio` request id already in flight.
    ServeInFlight = "ERR_LOOPX_SERVE_IN_FLIGHT",
    SessionClosed = "ERR_LOOPX_SESSION_CLOSED",
    /// lib: a test crash point fired.
    SimulatedCrash = "ERR_LOOPX_SIMULATED_CRASH",
    /// A LoopX transaction's answer could exceed LoopX's transport envelope.
    TransactionEnvelope = "ERR_LOOPX_TRANSACTION_ENVELOPE",
    /// A LoopX transaction request that breaks the transaction protocol.
    TransactionInvalid = "ERR_LOOPX_TRANSACTION_INVALID",
    /// A LoopX transaction whose source breaks the source contract.
    TransactionSourceInvalid = "ERR_LOOPX_TRANSACTION_SOURCE_INVALID",
    /// A LoopX transaction request nested deeper than the package walks.
    TransactionTooDeep = "ERR_LOOPX_TRANSACTION_TOO_DEEP",
    /// lib: the periodic-report trigger store is closed.
    TriggerStoreClosed = "ERR_LOOPX_TRIGGER_STORE_CLOSED",
    /// lib: the reference orchestrator's turn journal is closed.
    TurnJournalClosed = "ERR_LOOPX_TURN_JOURNAL_CLOSED",
    UnknownDialect = "ERR_LOOPX_UNKNOWN_DIALECT",
    UnknownDispatch = "ERR_LOOPX_UNKNOWN_DISPATCH",
    /// lib: the reference orchestrator's turn journal holds no committed receipt with that id.
    UnknownReceipt = "ERR_LOOPX_UNKNOWN_RECEIPT",
    /// lib: no native binary is published for this platform.
    UnsupportedPlatform = "ERR_LOOPX_UNSUPPORTED_PLATFORM",
}

/// An error as it crosses to JavaScript: lib/errors.ts turns it into a
/// `LoopxHooksError` at one point. `message` names no path, value,
/// connection string or provider text.
#[derive(Serialize, TS, Clone, Debug, PartialEq, Eq)]
#[ts(export, rename = "NativeErrorData")]
pub struct ErrorData {
    pub code: ErrorCode,
    pub message: String,
    /// A rejected document's violations (path and rule), for the codes that carry them.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub violations: Option<Vec<Violation>>,
}

impl ErrorData {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ErrorData { code, message: message.into(), violations: None }
    }

    pub fn with_violations(code: ErrorCode, message: impl Into<String>, violations: Vec<Violation>) -> Self {
        ErrorData { code, message: message.into(), violations: Some(violations) }
    }
}

/// A core error's code: one arm per variant and no fallback, so a new
/// variant does not build until it has its code.
pub trait Coded: std::fmt::Display {
    fn error_code(&self) -> ErrorCode;

    /// Violations the error carries, where its code promises them.
    fn violations(&self) -> Option<Vec<Violation>> {
        None
    }

    fn data(&self) -> ErrorData {
        ErrorData { code: self.error_code(), message: self.to_string(), violations: self.violations() }
    }
}

impl Coded for JournalError {
    fn error_code(&self) -> ErrorCode {
        use ErrorCode as C;
        match self {
            JournalError::NotAJournal => C::NotAJournal,
            JournalError::TooNew { .. } => C::JournalTooNew,
            JournalError::NotAFile => C::NotAFile,
            JournalError::ReadOnly => C::JournalReadonly,
            JournalError::NeedsRecovery => C::JournalNeedsRecovery,
            JournalError::CredentialLike { .. } => C::CredentialLikeValue,
            JournalError::LeaseNotHeld => C::LeaseNotHeld,
            JournalError::LeaseExpired => C::LeaseExpired,
            JournalError::Closed => C::JournalClosed,
            JournalError::Busy => C::JournalBusy,
            JournalError::Io { .. } => C::JournalIo,
            JournalError::Sqlite { .. } => C::JournalSqlite,
            JournalError::Unavailable => C::JournalUnavailable,
            JournalError::Postgres { .. } => C::JournalPostgres,
            JournalError::InvalidArgument { .. } => C::InvalidArgument,
            JournalError::UnknownDispatch => C::UnknownDispatch,
            JournalError::DuplicateIntent => C::DuplicateIntent,
            JournalError::Internal { .. } => C::JournalInternal,
        }
    }

    /// A refused credential-like token names its field, never its value.
    fn violations(&self) -> Option<Vec<Violation>> {
        match self {
            JournalError::CredentialLike { what } => {
                Some(vec![Violation { path: format!("/{what}"), rule: Rule::CredentialLikeValue }])
            }
            _ => None,
        }
    }
}

impl Coded for InboxError {
    fn error_code(&self) -> ErrorCode {
        use ErrorCode as C;
        match self {
            InboxError::NotAnInbox => C::NotAnInbox,
            InboxError::TooNew { .. } => C::InboxTooNew,
            InboxError::NotAFile => C::NotAFile,
            InboxError::ReadOnly => C::InboxReadonly,
            InboxError::Closed => C::InboxClosed,
            InboxError::Busy => C::InboxBusy,
            InboxError::Io { .. } => C::InboxIo,
            InboxError::Sqlite { .. } => C::InboxSqlite,
            InboxError::InvalidArgument { .. } => C::InvalidArgument,
            InboxError::Internal { .. } => C::InboxInternal,
        }
    }
}

impl Coded for SessionError {
    fn error_code(&self) -> ErrorCode {
        match self {
            SessionError::ScopeNotGranted(_) | SessionError::CollectorCapture => ErrorCode::ScopeNotGranted,
            SessionError::BudgetExhausted(_) => ErrorCode::BudgetExhausted,
            SessionError::Closed => ErrorCode::SessionClosed,
            SessionError::Inbox(e) => e.error_code(),
        }
    }
}

impl Coded for OptionError {
    fn error_code(&self) -> ErrorCode {
        match self {
            OptionError::UnknownDialect { .. } => ErrorCode::UnknownDialect,
            OptionError::Invalid { .. } | OptionError::Unknown { .. } => ErrorCode::InvalidArgument,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_serializes_as_its_text_and_is_unique() {
        let mut seen = std::collections::BTreeSet::new();
        for code in ErrorCode::ALL {
            let json = serde_json::to_value(code).unwrap();
            assert_eq!(json, serde_json::Value::String(code.as_str().into()));
            assert!(code.as_str().starts_with("ERR_LOOPX_"));
            assert!(seen.insert(code.as_str()), "{} twice", code.as_str());
        }
    }

    #[test]
    fn a_credential_refusal_carries_its_field_as_a_violation() {
        let data = JournalError::CredentialLike { what: "reasonCode" }.data();
        assert_eq!(data.code, ErrorCode::CredentialLikeValue);
        let list = data.violations.unwrap();
        assert_eq!(list, vec![Violation { path: "/reasonCode".into(), rule: Rule::CredentialLikeValue }]);
    }

    #[test]
    fn a_session_error_over_the_inbox_keeps_the_inbox_code() {
        assert_eq!(SessionError::Inbox(InboxError::Closed).error_code(), ErrorCode::InboxClosed);
        assert_eq!(SessionError::Closed.error_code(), ErrorCode::SessionClosed);
    }
}
