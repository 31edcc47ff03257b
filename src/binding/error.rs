//! The one way an error crosses to JavaScript. API misuse (a closed runtime,
//! a context argument that is not what the signature says) and every core
//! failure become an [`ErrorData`] (`{ code, message, violations? }`) carried
//! as JSON in the Error's message after [`MARK`]; lib/errors.ts reads it back
//! into a `LoopxHooksError` at one point. Expected outcomes, such as an
//! invalid document, are returned as values instead. The message is used
//! because napi's async functions can only reject with its own statuses.

use crate::error_code::{Coded, ErrorData};

pub use crate::error_code::ErrorCode as Code;

/// What starts a message that holds an [`ErrorData`]; lib/errors.ts reads the same text.
pub const MARK: &str = "loopx-hooks-error:";

pub type Result<T> = napi::Result<T, Code>;

/// `data` as a napi error; sync and async alike.
pub fn to_napi(data: ErrorData) -> napi::Error<Code> {
    let text = serde_json::to_string(&data).unwrap_or_else(|_| {
        String::from(r#"{"code":"ERR_LOOPX_INTERNAL","message":"an error could not be serialized"}"#)
    });
    napi::Error::new(data.code, format!("{MARK}{text}"))
}

pub fn misuse(code: Code, reason: &str) -> napi::Error<Code> {
    to_napi(ErrorData::new(code, reason))
}

/// A core error with its code (and its violations, where it has them).
pub fn coded(e: impl Coded) -> napi::Error<Code> {
    to_napi(e.data())
}

/// Misuse whose violations say where the caller's document is wrong.
pub fn with_violations(code: Code, message: &str, violations: Vec<crate::validate::Violation>) -> napi::Error<Code> {
    to_napi(ErrorData::with_violations(code, message, violations))
}

/// Wraps an N-API environment error; its reason is napi's own, never user data.
pub fn internal(e: napi::Error) -> napi::Error<Code> {
    misuse(Code::Internal, &e.reason)
}

/// An async function's rejection: the same message, under napi's own status
/// (the only kind an async function may reject with).
pub fn rejection(e: napi::Error<Code>) -> napi::Error {
    napi::Error::new(napi::Status::GenericFailure, e.reason)
}

/// An async failure of one of our own tasks (a join error, a serialization).
pub fn task_failed(what: &str) -> napi::Error {
    rejection(misuse(Code::Internal, what))
}

impl AsRef<str> for Code {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}
