//! The shipped dialect's turn-start, exported to JS: its validators (a JS
//! value or JSON text in, a verdict out, never a throw on a bad document) and
//! the dispatch's two steps, between which lib/turn_start_shipped.ts calls
//! the providers.

use napi::bindgen_prelude::*;
use napi_derive::napi;
use serde_json::Value;

use super::error::{misuse, Code};
use super::js_provider::turn_start_call_result;
use super::js_value::JsAny;
use super::validators::run;
use crate::dialect::shipped::turn_start::{self as shipped, ShippedPlan};

#[napi(ts_args_type = "doc: unknown", ts_return_type = "ValidationResult<ShippedTurnStartRegistration>")]
pub fn validate_shipped_turn_start_registration<'e>(env: &'e Env, doc: JsAny) -> Result<Object<'e>, Code> {
    run(env, doc, shipped::validate_registration)
}

/// Judges `{registration, result}`; an admitted one's `value` is its
/// `result`, as LoopX's `validateTurnStartHookInvocation` returns it.
#[napi(ts_args_type = "doc: unknown", ts_return_type = "ValidationResult<ShippedTurnStartResult>")]
pub fn validate_shipped_turn_start_invocation<'e>(env: &'e Env, doc: JsAny) -> Result<Object<'e>, Code> {
    let mut out = run(env, doc, shipped::validate_invocation)?;
    let result = (|| -> napi::Result<()> {
        if out.get::<bool>("ok")? == Some(true) {
            if let Some(value) = out.get::<Object>("value")? {
                let member: Option<Unknown> = value.get("result")?;
                if let Some(member) = member {
                    out.set("value", member)?;
                }
            }
        }
        Ok(())
    })();
    result.map_err(super::error::internal)?;
    Ok(out)
}

#[napi(ts_args_type = "doc: unknown", ts_return_type = "ValidationResult<ShippedTurnStartDispatch>")]
pub fn validate_shipped_turn_start_dispatch<'e>(env: &'e Env, doc: JsAny) -> Result<Object<'e>, Code> {
    run(env, doc, shipped::validate_dispatch)
}

/// One provider call of a planned dispatch, in hook_id order.
#[napi(object)]
pub struct NativeShippedTurnStartCall {
    /// The registration's index in the list the plan was made from.
    pub index: u32,
    pub hook_id: String,
    /// The registration as admitted, as JSON text.
    pub registration_json: String,
    /// A reply text longer than this is over the hook's budget and need not cross.
    pub max_reply_length: u32,
    /// Milliseconds from the call after which the provider has failed.
    pub limit_ms: u32,
}

/// A planned shipped turn-start dispatch.
#[napi]
pub struct NativeShippedTurnStartPlan {
    plan: ShippedPlan,
}

#[napi]
impl NativeShippedTurnStartPlan {
    /// Plans a dispatch from the registrations as a JSON array text (an
    /// item JSON cannot hold is `null` there, and is rejected as a registration).
    #[napi(factory)]
    pub fn prepare(registrations_json: String) -> Result<Self, Code> {
        let registrations: Vec<Value> = serde_json::from_str(&registrations_json)
            .map_err(|_| misuse(Code::InvalidArgument, "registrations are not a JSON array"))?;
        Ok(NativeShippedTurnStartPlan { plan: shipped::plan(&registrations) })
    }

    #[napi(getter)]
    pub fn calls(&self) -> Vec<NativeShippedTurnStartCall> {
        self.plan
            .calls()
            .map(|c| NativeShippedTurnStartCall {
                index: u32::try_from(c.index).unwrap_or(u32::MAX),
                hook_id: c.registration.hook_id().to_owned(),
                registration_json: serde_json::to_string(&c.registration).unwrap_or_default(),
                max_reply_length: u32::try_from(c.max_reply_length()).unwrap_or(u32::MAX),
                limit_ms: shipped::CALL_LIMIT_MS,
            })
            .collect()
    }

    /// The calls' replies (text, or a `\u0000` marker), in call order; the
    /// `ShippedTurnStartDispatch` as JSON text.
    #[napi]
    pub fn complete(&self, replies: Vec<String>) -> Result<String, Code> {
        let answers = replies.into_iter().map(turn_start_call_result).collect();
        serde_json::to_string(&self.plan.complete(answers))
            .map_err(|_| misuse(Code::Internal, "dispatch could not be serialized"))
    }
}
