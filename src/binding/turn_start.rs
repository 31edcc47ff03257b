//! The turn-start room, exported to JS: the validators (like `validators.rs`:
//! a JS value or JSON text in, `{ ok: true, value }` or `{ ok: false,
//! violations }` out, never a throw on a bad document) and the kernel's two
//! synchronous steps, between which lib/turn_start.ts calls the providers.

use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi_derive::napi;

use super::error::{coded, internal, misuse, Code};
use super::inbox::NativeInboxStore;
use super::js_provider::turn_start_call_result;
use super::js_value::{read_document, JsAny};
use super::turn_start_session::NativeTurnStartSession;
use super::validators::run;
use crate::turn_start::{self, Registered, TurnStartKernel, TurnStartPlan, TurnStartPrepared, TurnStartProfile};

#[napi(ts_args_type = "doc: unknown", ts_return_type = "ValidationResult<TurnStartHookRegistration>")]
pub fn validate_turn_start_registration<'e>(env: &'e Env, doc: JsAny) -> Result<Object<'e>, Code> {
    run(env, doc, turn_start::validate_turn_start_registration)
}

#[napi(ts_args_type = "doc: unknown", ts_return_type = "ValidationResult<TurnStartReceipt>")]
pub fn validate_turn_start_receipt<'e>(env: &'e Env, doc: JsAny) -> Result<Object<'e>, Code> {
    run(env, doc, turn_start::validate_turn_start_receipt)
}

/// The turn-start kernel: hooks installed at the composition root, one
/// `dispatchTurnStart` per Turn before status and quota projection.
#[napi]
pub struct NativeTurnStartKernel {
    kernel: Arc<TurnStartKernel>,
}

#[napi]
impl NativeTurnStartKernel {
    /// `profileJson`: a `TurnStartProfile` as JSON text (default: phase disabled).
    #[napi(constructor)]
    pub fn new(profile_json: Option<String>) -> Result<Self, Code> {
        let profile: TurnStartProfile = match profile_json.as_deref() {
            Some(text) => TurnStartProfile::parse("profile", text).map_err(coded)?,
            None => TurnStartProfile::default(),
        };
        Ok(NativeTurnStartKernel { kernel: Arc::new(TurnStartKernel::new(profile)) })
    }

    /// Installs `registration`, whose provider the TypeScript layer calls.
    /// The same identity twice is accepted once (`alreadyInstalled: true`:
    /// the caller keeps the first provider).
    #[napi(
        ts_args_type = "registration: unknown",
        ts_return_type = "{ ok: true; alreadyInstalled: boolean } | { ok: false; violations: Violation[] }"
    )]
    pub fn register<'e>(&self, env: &'e Env, registration: JsAny) -> Result<Object<'e>, Code> {
        let result = read_document(registration).and_then(|doc| self.kernel.register_external(doc.value()));
        let build = || -> Result<Object<'e>> {
            let mut out = Object::new(env)?;
            match result {
                Ok(registered) => {
                    out.set("ok", true)?;
                    out.set("alreadyInstalled", registered == Registered::AlreadyInstalled)?;
                }
                Err(violations) => super::validators::set_rejection(&mut out, violations)?,
            }
            Ok(out)
        };
        build().map_err(internal)
    }

    /// Attaches the owner-private inbox store, which core counts pending
    /// material in itself when a hook fails.
    #[napi]
    pub fn use_inbox(&self, inbox: &NativeInboxStore) {
        self.kernel.use_inbox(inbox.store.clone());
    }

    /// The session of the invocation `token` names, for its provider (see
    /// `NativeTurnStartSession`); it refuses every call once that invocation is over.
    #[napi]
    pub fn session(&self, token: String) -> NativeTurnStartSession {
        NativeTurnStartSession { sessions: self.kernel.sessions().clone(), token }
    }

    /// The installed hook_ids, in dispatch order.
    #[napi(getter)]
    pub fn hook_ids(&self) -> Vec<String> {
        self.kernel.hook_ids()
    }

    /// Step 1 of a turn-start dispatch (the request as JSON text): the plan.
    /// Text that is not JSON is a refused request (`not_json_value` at the root).
    #[napi]
    pub fn prepare_turn_start(&self, request_json: String) -> Result<NativeTurnStartPlan, Code> {
        Ok(match self.kernel.prepare_text(&request_json) {
            TurnStartPrepared::Done(outcome) => NativeTurnStartPlan { done: Some(to_json(&outcome)?), plan: None },
            TurnStartPrepared::Run(plan) => NativeTurnStartPlan { done: None, plan: Some(plan) },
        })
    }

    /// Ends call `index`'s session the moment that call has ended (answered,
    /// thrown, timed out or past its wall budget), before the next call runs.
    #[napi]
    pub fn end_turn_start_call(&self, plan: &NativeTurnStartPlan, index: u32) {
        if let Some(p) = &plan.plan {
            self.kernel.end_call(p, index as usize);
        }
    }

    /// Step 2: the calls' replies (text, or a `\u0000` marker), in plan order;
    /// the `TurnStartOutcome` as JSON text.
    #[napi]
    pub fn complete_turn_start(&self, plan: &NativeTurnStartPlan, replies: Vec<String>) -> Result<String, Code> {
        let Some(p) = &plan.plan else { return Err(misuse(Code::InvalidArgument, "the plan has nothing to complete")) };
        let results = replies.into_iter().map(turn_start_call_result).collect();
        to_json(&self.kernel.complete(p, results))
    }
}

fn to_json<T: serde::Serialize>(value: &T) -> napi::Result<String, Code> {
    serde_json::to_string(value).map_err(|_| misuse(Code::Internal, "outcome could not be serialized"))
}

/// A prepared turn-start dispatch: `done` when nothing is to be called,
/// else `calls` to make before `completeTurnStart(plan, replies)`.
#[napi]
pub struct NativeTurnStartPlan {
    done: Option<String>,
    plan: Option<TurnStartPlan>,
}

/// One provider call: its hook, its input and its limit from the call.
#[napi(object)]
pub struct NativeTurnStartCall {
    pub hook_id: String,
    pub input_json: String,
    pub timeout_ms: u32,
    /// A reply text longer than this is `result_too_large` without crossing.
    pub max_reply_length: u32,
}

#[napi]
impl NativeTurnStartPlan {
    #[napi(getter)]
    pub fn done(&self) -> Option<String> {
        self.done.clone()
    }

    #[napi(getter)]
    pub fn calls(&self) -> Vec<NativeTurnStartCall> {
        self.plan.as_ref().map_or_else(Vec::new, |p| {
            p.calls
                .iter()
                .map(|c| NativeTurnStartCall {
                    hook_id: c.hook.registration.hook_id.clone(),
                    input_json: c.input_json.clone(),
                    timeout_ms: c.timeout_ms(),
                    max_reply_length: u32::try_from(c.max_reply_length()).unwrap_or(u32::MAX),
                })
                .collect()
        })
    }
}
