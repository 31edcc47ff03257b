//! LoopX's post-writeback hook transaction: one request's JSON text in, the
//! result's JSON text out, evaluated off the JS thread (it may wait for
//! LoopX's receipt locks). `NativeJournal::evaluate_post_writeback_transaction`
//! is the same with the journal kept in step.

use std::sync::Arc;

use napi_derive::napi;

use super::error::{rejection, task_failed, to_napi, Code};
use super::journal::NativeJournal;
use crate::dialect::shipped::transaction::{self, Evaluated, Reason, Rejected};
use crate::error_code::ErrorData;
use crate::journal::Journal;

fn code(reason: Reason) -> Code {
    match reason {
        Reason::Request => Code::TransactionInvalid,
        Reason::Source => Code::TransactionSourceInvalid,
        Reason::TooDeep => Code::TransactionTooDeep,
        Reason::Envelope => Code::TransactionEnvelope,
        Reason::Internal => Code::Internal,
    }
}

async fn evaluate(request_json: String, journal: Option<Arc<Journal>>) -> napi::Result<Evaluated> {
    let refused = |r: Rejected| rejection(to_napi(ErrorData::new(code(r.reason), r.message)));
    match tokio::task::spawn_blocking(move || transaction::evaluate(request_json, journal)).await {
        Ok(answer) => answer.map_err(refused),
        Err(_) => Err(task_failed("the transaction could not be evaluated")),
    }
}

/// Resolves to the result document's JSON text, or rejects with the
/// request's fault: LoopX's message under a stable code.
#[napi]
pub async fn evaluate_post_writeback_transaction(request_json: String) -> napi::Result<String> {
    Ok(evaluate(request_json, None).await?.text)
}

#[napi]
impl NativeJournal {
    /// As `evaluatePostWritebackTransaction`, then each admitted hook's
    /// receipt, as the sidecar folder holds it, is imported into this
    /// journal. Resolves to `{"result": <result document>, "journal": [step]}`.
    #[napi]
    pub async fn evaluate_post_writeback_transaction(&self, request_json: String) -> napi::Result<String> {
        let answer = evaluate(request_json, Some(self.journal.clone())).await?;
        let steps = serde_json::to_string(&answer.journal).map_err(|_| task_failed("value could not be serialized"))?;
        Ok(format!(r#"{{"result":{},"journal":{steps}}}"#, answer.text))
    }
}
