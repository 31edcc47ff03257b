//! The dispatcher's rules for callers outside a dispatch (the reference
//! orchestrator, the dispatch steps' driver in lib/flights.ts): the would-be
//! hook input of a request, quota eligibility, and when a failed `prepare`
//! is tried again. Each converts and forwards to `crate::dispatch`.

use napi::bindgen_prelude::*;
use napi_derive::napi;

use super::context::HookContext;
use super::error::{internal, Code};
use super::js_value::{read_document, read_value, JsAny};
use super::validators::set_rejection;
use crate::dispatch;
use crate::error_code::Coded;

/// The input a hook of `context`'s registration would get for `request` (a
/// `DispatchRequest`-shaped document whose members may be anything), judged
/// by the hook-input validator: `{ ok: true, value }` or `{ ok: false,
/// violations }` at paths in the input.
#[napi(
    ts_args_type = "request: unknown, context: HookContext",
    ts_return_type = "ValidationResult<PostWritebackHookInput>"
)]
pub fn project_hook_input<'e>(env: &'e Env, request: JsAny, context: &HookContext) -> Result<Object<'e>, Code> {
    let verdict = read_document(request)
        .map_err(|v| v.into_vec())
        .and_then(|doc| dispatch::project_document(doc.value(), &context.registration, &context.digest));
    let build = || -> Result<Object<'e>> {
        let mut out = Object::new(env)?;
        match verdict {
            Ok(input) => {
                out.set("ok", true)?;
                out.set("value", input)?;
            }
            Err(violations) => set_rejection(&mut out, violations.into())?,
        }
        Ok(out)
    };
    build().map_err(internal)
}

/// Whether the settlement spends its quota (RFC 5.2): a pure function of the
/// primary receipt and its settlement.
#[napi(ts_args_type = "receipt: WritebackReceipt, settlement: SettlementIdentity")]
pub fn quota_spend_eligible(receipt: JsAny, settlement: JsAny) -> bool {
    match (read_value(receipt), read_value(settlement)) {
        (Ok(receipt), Ok(settlement)) => dispatch::quota_spend_eligible(&receipt, &settlement),
        _ => false,
    }
}

/// Milliseconds to wait before trying again a `prepare` that threw `code`,
/// `tries` retries in; null when the failure is final.
#[napi]
pub fn prepare_retry_delay_ms(code: String, tries: u32) -> Option<u32> {
    let error = dispatch::PREPARE_RETRYABLE.iter().find(|e| e.error_code().as_str() == code)?;
    dispatch::prepare_retry_after(error, tries).map(|wait| u32::try_from(wait.as_millis()).unwrap_or(u32::MAX))
}
