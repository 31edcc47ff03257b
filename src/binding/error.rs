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
                "busy" => "ERR_LOOPX_JOURNAL_BUSY",
                "io" => "ERR_LOOPX_JOURNAL_IO",
                "invalid_argument" => "ERR_LOOPX_INVALID_ARGUMENT",
                "unknown_dispatch" => "ERR_LOOPX_UNKNOWN_DISPATCH",
                "duplicate_intent" => "ERR_LOOPX_DUPLICATE_INTENT",
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
