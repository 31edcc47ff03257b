//! API misuse (a closed runtime, a context argument that is not what the
//! signature says) is an Error with a stable `code`; expected outcomes, such as
//! an invalid document, are returned as values instead.

/// The stable codes a thrown Error can carry.
#[derive(Clone, Copy, Debug)]
pub enum Code {
    InvalidArgument,
    InvalidIntentKind,
    NotJsonValue,
    /// A failure of the N-API environment itself (out of memory, a closing env).
    Internal,
    /// A journal failure, by `JournalError::code()`.
    Journal(&'static str),
}

impl AsRef<str> for Code {
    fn as_ref(&self) -> &str {
        match self {
            Code::InvalidArgument => "ERR_LOOPX_INVALID_ARGUMENT",
            Code::InvalidIntentKind => "ERR_LOOPX_INVALID_INTENT_KIND",
            Code::NotJsonValue => "ERR_LOOPX_NOT_JSON_VALUE",
            Code::Internal => "ERR_LOOPX_INTERNAL",
            Code::Journal(code) => match *code {
                "not_a_journal" => "ERR_LOOPX_NOT_A_JOURNAL",
                "journal_too_new" => "ERR_LOOPX_JOURNAL_TOO_NEW",
                "journal_closed" => "ERR_LOOPX_JOURNAL_CLOSED",
                "not_a_file" => "ERR_LOOPX_NOT_A_FILE",
                "journal_read_only" => "ERR_LOOPX_JOURNAL_READONLY",
                "journal_needs_recovery" => "ERR_LOOPX_JOURNAL_NEEDS_RECOVERY",
                "credential_like_value" => "ERR_LOOPX_CREDENTIAL_LIKE_VALUE",
                "lease_not_held" => "ERR_LOOPX_LEASE_NOT_HELD",
                "lease_expired" => "ERR_LOOPX_LEASE_EXPIRED",
                "busy" => "ERR_LOOPX_JOURNAL_BUSY",
                "io" => "ERR_LOOPX_JOURNAL_IO",
                "invalid_argument" => "ERR_LOOPX_INVALID_ARGUMENT",
                "unknown_dispatch" => "ERR_LOOPX_UNKNOWN_DISPATCH",
                "duplicate_intent" => "ERR_LOOPX_DUPLICATE_INTENT",
                "journal_unavailable" => "ERR_LOOPX_JOURNAL_UNAVAILABLE",
                "postgres" => "ERR_LOOPX_JOURNAL_POSTGRES",
                "journal_internal" => "ERR_LOOPX_JOURNAL_INTERNAL",
                _ => "ERR_LOOPX_JOURNAL_SQLITE",
            },
        }
    }
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
