//! API misuse (a closed runtime, a context argument that is not what the
//! signature says) is an Error with a stable `code`; expected outcomes, such as
//! an invalid document, are returned as values instead.

use crate::journal::JournalError;

/// The stable codes a thrown Error can carry.
#[derive(Clone, Copy, Debug)]
pub enum Code {
    InvalidArgument,
    InvalidIntentKind,
    NotJsonValue,
    /// A failure of the N-API environment itself (out of memory, a closing env).
    Internal,
    /// A journal failure: its JS code (see [`journal_error`]).
    Journal(&'static str),
}

impl AsRef<str> for Code {
    fn as_ref(&self) -> &str {
        match self {
            Code::InvalidArgument => "ERR_LOOPX_INVALID_ARGUMENT",
            Code::InvalidIntentKind => "ERR_LOOPX_INVALID_INTENT_KIND",
            Code::NotJsonValue => "ERR_LOOPX_NOT_JSON_VALUE",
            Code::Internal => "ERR_LOOPX_INTERNAL",
            Code::Journal(code) => code,
        }
    }
}

/// The JS code of a journal error's stable [`JournalError::code`]: one arm
/// per variant and no fallback, so a new variant does not build until it has
/// its code.
pub(crate) fn journal_code(e: &JournalError) -> &'static str {
    match e {
        JournalError::NotAJournal => "ERR_LOOPX_NOT_A_JOURNAL",
        JournalError::TooNew { .. } => "ERR_LOOPX_JOURNAL_TOO_NEW",
        JournalError::NotAFile => "ERR_LOOPX_NOT_A_FILE",
        JournalError::ReadOnly => "ERR_LOOPX_JOURNAL_READONLY",
        JournalError::NeedsRecovery => "ERR_LOOPX_JOURNAL_NEEDS_RECOVERY",
        JournalError::CredentialLike { .. } => "ERR_LOOPX_CREDENTIAL_LIKE_VALUE",
        JournalError::LeaseNotHeld => "ERR_LOOPX_LEASE_NOT_HELD",
        JournalError::LeaseExpired => "ERR_LOOPX_LEASE_EXPIRED",
        JournalError::Closed => "ERR_LOOPX_JOURNAL_CLOSED",
        JournalError::Busy => "ERR_LOOPX_JOURNAL_BUSY",
        JournalError::Io { .. } => "ERR_LOOPX_JOURNAL_IO",
        JournalError::Sqlite { .. } => "ERR_LOOPX_JOURNAL_SQLITE",
        JournalError::Unavailable => "ERR_LOOPX_JOURNAL_UNAVAILABLE",
        JournalError::Postgres { .. } => "ERR_LOOPX_JOURNAL_POSTGRES",
        JournalError::InvalidArgument { .. } => "ERR_LOOPX_INVALID_ARGUMENT",
        JournalError::UnknownDispatch => "ERR_LOOPX_UNKNOWN_DISPATCH",
        JournalError::DuplicateIntent => "ERR_LOOPX_DUPLICATE_INTENT",
        JournalError::Internal { .. } => "ERR_LOOPX_JOURNAL_INTERNAL",
    }
}

/// A journal error as a thrown Error: its JS code and its message (which
/// names no path, connection string or stored value).
pub(crate) fn journal_error(e: JournalError) -> napi::Error<Code> {
    misuse(Code::Journal(journal_code(&e)), &e.to_string())
}

pub type Result<T> = napi::Result<T, Code>;

pub fn misuse(code: Code, reason: &str) -> napi::Error<Code> {
    napi::Error::new(code, reason)
}

/// Wraps an N-API environment error; its reason is napi's own, never user data.
pub fn internal(e: napi::Error) -> napi::Error<Code> {
    napi::Error::new(Code::Internal, e.reason.clone())
}

/// Async functions can only reject with napi's own status codes, so their
/// stable code travels at the head of the reason (`CODE|message`); the
/// TypeScript layer turns it back into `error.code`.
pub fn async_error(e: napi::Error<Code>) -> napi::Error {
    napi::Error::new(napi::Status::GenericFailure, format!("{}|{}", e.status.as_ref(), e.reason))
}

/// Throws an Error that carries `code` and the `violations` themselves (napi's
/// own errors hold only a code and a message), and returns the Rust error the
/// caller propagates; napi rethrows the pending exception as it is.
pub fn throw_with_violations(
    env: &napi::Env,
    code: Code,
    message: &str,
    violations: &[crate::validate::Violation],
) -> napi::Error<Code> {
    use napi::bindgen_prelude::ToNapiValue;
    use napi::sys;
    let raw = env.raw();
    let list = serde_json::to_value(violations).unwrap_or_default();
    // SAFETY: called on the JS thread with a live env; every handle is fresh.
    unsafe {
        let mut code_value = std::ptr::null_mut();
        let mut message_value = std::ptr::null_mut();
        let mut error = std::ptr::null_mut();
        let code_text = code.as_ref();
        let ok =
            sys::napi_create_string_utf8(raw, code_text.as_ptr().cast(), code_text.len() as isize, &mut code_value)
                == sys::Status::napi_ok
                && sys::napi_create_string_utf8(
                    raw,
                    message.as_ptr().cast(),
                    message.len() as isize,
                    &mut message_value,
                ) == sys::Status::napi_ok
                && sys::napi_create_error(raw, code_value, message_value, &mut error) == sys::Status::napi_ok;
        if ok {
            if let Ok(list_value) = <serde_json::Value as ToNapiValue>::to_napi_value(raw, list) {
                sys::napi_set_named_property(raw, error, c"violations".as_ptr(), list_value);
            }
            sys::napi_throw(raw, error);
        }
    }
    napi::Error::new(code, message)
}
