//! LoopX's post-writeback hook transaction: one request's JSON text in, the
//! result's JSON text out, evaluated off the JS thread (it may wait for
//! LoopX's receipt locks).

use napi_derive::napi;

use super::error::{rejection, task_failed, to_napi, Code};
use crate::dialect::shipped::transaction::{self, Reason};
use crate::error_code::ErrorData;

fn code(reason: Reason) -> Code {
    match reason {
        Reason::Request => Code::TransactionInvalid,
        Reason::Source => Code::TransactionSourceInvalid,
        Reason::TooDeep => Code::TransactionTooDeep,
        Reason::Envelope => Code::TransactionEnvelope,
        Reason::Internal => Code::Internal,
    }
}

/// Resolves to the result document's JSON text, or rejects with the
/// request's fault: LoopX's message under a stable code.
#[napi]
pub async fn evaluate_post_writeback_transaction(request_json: String) -> napi::Result<String> {
    match tokio::task::spawn_blocking(move || transaction::evaluate(request_json)).await {
        Ok(Ok(text)) => Ok(text),
        Ok(Err(refused)) => Err(rejection(to_napi(ErrorData::new(code(refused.reason), refused.message)))),
        Err(_) => Err(task_failed("the transaction could not be evaluated")),
    }
}
