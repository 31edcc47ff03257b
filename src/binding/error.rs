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
}

impl AsRef<str> for Code {
    fn as_ref(&self) -> &str {
        match self {
            Code::InvalidArgument => "ERR_LOOPX_INVALID_ARGUMENT",
            Code::InvalidIntentKind => "ERR_LOOPX_INVALID_INTENT_KIND",
            Code::NotJsonValue => "ERR_LOOPX_NOT_JSON_VALUE",
            Code::Internal => "ERR_LOOPX_INTERNAL",
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
