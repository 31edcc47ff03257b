//! The shipped dialect's turn-start, exported to JS: its validators (a JS
//! value or JSON text in, a verdict out, never a throw on a bad document) and
//! the dispatch on core's kernel, in two steps between which
//! lib/shipped/turn_start.ts calls the providers.

use napi::bindgen_prelude::*;
use napi_derive::napi;
use serde_json::Value;

use super::error::{misuse, Code};
use super::inbox::NativeInboxStore;
use super::js_provider::turn_start_call_result;
use super::js_value::JsAny;
use super::turn_start_session::NativeTurnStartSession;
use super::validators::run;
use crate::dialect::shipped::turn_start::{self as shipped, ShippedRun, ShippedTurnStartKernel};

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
    /// The call's inbox session, when the runtime has an inbox.
    pub session: Option<String>,
}

/// Shipped turn-start hooks on core's kernel: the inbox its sessions grant
/// and the call limit; a dispatch is `prepare`, the calls, `complete`.
#[napi]
pub struct NativeShippedTurnStart {
    kernel: ShippedTurnStartKernel,
}

/// A planned shipped turn-start dispatch with its sessions.
#[napi]
pub struct NativeShippedTurnStartRun {
    run: ShippedRun,
    limit_ms: u32,
}

#[napi]
impl NativeShippedTurnStartRun {
    /// The calls to make, in order.
    #[napi(getter)]
    pub fn calls(&self) -> Vec<NativeShippedTurnStartCall> {
        self.run
            .calls
            .iter()
            .map(|c| NativeShippedTurnStartCall {
                index: u32::try_from(c.call.index).unwrap_or(u32::MAX),
                hook_id: c.call.registration.hook_id().to_owned(),
                registration_json: serde_json::to_string(&c.call.registration).unwrap_or_default(),
                max_reply_length: u32::try_from(c.call.max_reply_length()).unwrap_or(u32::MAX),
                limit_ms: self.limit_ms,
                session: c.session.as_ref().map(|(token, _)| token.clone()),
            })
            .collect()
    }
}

#[napi]
impl NativeShippedTurnStart {
    /// `callLimitMs`: an integer 1..=30,000 (default 30,000).
    #[napi(constructor)]
    pub fn new(call_limit_ms: Option<f64>) -> Result<Self, Code> {
        ShippedTurnStartKernel::new(call_limit_ms)
            .map(|kernel| NativeShippedTurnStart { kernel })
            .ok_or_else(|| misuse(Code::InvalidArgument, "invalid argument: callLimitMs (an integer 1..=30000)"))
    }

    /// Attaches core's owner-private inbox: each call gets a session of it.
    #[napi]
    pub fn use_inbox(&self, inbox: &NativeInboxStore) {
        self.kernel.sessions().use_inbox(inbox.store.clone());
    }

    /// The session `token` names, for its provider; refused once its call is over.
    #[napi]
    pub fn session(&self, token: String) -> NativeTurnStartSession {
        NativeTurnStartSession { sessions: self.kernel.sessions().clone(), token }
    }

    /// Plans a dispatch from the registrations as a JSON array text (an
    /// item JSON cannot hold is `null` there, and is rejected as a registration).
    #[napi]
    pub fn prepare(&self, registrations_json: String) -> Result<NativeShippedTurnStartRun, Code> {
        let registrations: Vec<Value> = serde_json::from_str(&registrations_json)
            .map_err(|_| misuse(Code::InvalidArgument, "registrations are not a JSON array"))?;
        Ok(NativeShippedTurnStartRun {
            run: self.kernel.prepare(&registrations),
            limit_ms: self.kernel.call_limit_ms(),
        })
    }

    /// Ends call `index`'s session the moment that call has ended.
    #[napi]
    pub fn end_call(&self, run: &NativeShippedTurnStartRun, index: u32) {
        self.kernel.end_call(&run.run, index as usize);
    }

    /// The calls' replies (text, or a `\u0000` marker), in call order; the
    /// `ShippedTurnStartOutcome` as JSON text.
    #[napi]
    pub fn complete(&self, run: &NativeShippedTurnStartRun, replies: Vec<String>) -> Result<String, Code> {
        let answers = replies.into_iter().map(turn_start_call_result).collect();
        serde_json::to_string(&self.kernel.complete(&run.run, answers))
            .map_err(|_| misuse(Code::Internal, "dispatch could not be serialized"))
    }
}
