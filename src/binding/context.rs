//! Compiled validator context and the text entry points.
//! A registration is parsed and digested once into a `HookContext`; a
//! document the TypeScript layer has already checked crosses as one JSON text
//! and comes back as `null` (accepted: the caller keeps its own object) or
//! the rejection, so an accepted document is never rebuilt in JS.

use napi::bindgen_prelude::*;
use napi_derive::napi;

use super::error::{internal, Code};
use super::js_value::JsAny;
use super::validators::{context_registration, run, set_rejection, IntentKinds};
use crate::contract::PostWritebackHookRegistration;
use crate::validate;

/// A registration parsed and digested once, for the validators that judge
/// documents against it.
#[napi]
pub struct HookContext {
    pub(crate) registration: PostWritebackHookRegistration,
    pub(crate) digest: String,
}

#[napi]
impl HookContext {
    /// Throws `ERR_LOOPX_INVALID_ARGUMENT` when `registration` (the caller's
    /// own configuration) does not have the registration contract's shape.
    #[napi(constructor, ts_args_type = "registration: PostWritebackHookRegistration | string")]
    pub fn new(registration: JsAny) -> Result<Self, Code> {
        let (registration, digest) = context_registration(registration)?;
        Ok(HookContext { registration, digest })
    }

    /// The registration's digest (`registration_digest` of contract-v0 section 3).
    #[napi(getter)]
    pub fn registration_digest(&self) -> String {
        self.digest.clone()
    }
}

/// `null` when accepted, else `{ ok: false, violations, more? }`.
fn rejection<'e>(
    env: &'e Env,
    text: &str,
    check: impl FnOnce(&serde_json::Value) -> std::result::Result<(), validate::Violations>,
) -> Result<Option<Object<'e>>, Code> {
    let verdict = validate::text::parse(text).and_then(|doc| check(&doc));
    match verdict {
        Ok(()) => Ok(None),
        Err(violations) => {
            let mut out = Object::new(env).map_err(internal)?;
            set_rejection(&mut out, violations).map_err(internal)?;
            Ok(Some(out))
        }
    }
}

/// A registration as JSON text: `null` when accepted, else the rejection.
#[napi(
    ts_args_type = "text: string, kinds: IntentKinds",
    ts_return_type = "null | { ok: false; violations: Violation[]; more?: number }"
)]
pub fn check_registration_text<'e>(
    env: &'e Env,
    text: String,
    kinds: &IntentKinds,
) -> Result<Option<Object<'e>>, Code> {
    rejection(env, &text, |v| validate::check_registration(v, &kinds.kinds))
}

/// A hook input as JSON text, against a compiled context.
#[napi(
    ts_args_type = "text: string, context: HookContext",
    ts_return_type = "null | { ok: false; violations: Violation[]; more?: number }"
)]
pub fn check_hook_input_text<'e>(
    env: &'e Env,
    text: String,
    context: &HookContext,
) -> Result<Option<Object<'e>>, Code> {
    rejection(env, &text, |v| validate::check_hook_input(v, &context.registration, &context.digest))
}

/// A hook result as JSON text, against a compiled context and core's dispatch id.
#[napi(
    ts_args_type = "text: string, context: HookContext, dispatchId: string, kinds: IntentKinds",
    ts_return_type = "null | { ok: false; violations: Violation[]; more?: number }"
)]
pub fn check_hook_result_text<'e>(
    env: &'e Env,
    text: String,
    context: &HookContext,
    dispatch_id: String,
    kinds: &IntentKinds,
) -> Result<Option<Object<'e>>, Code> {
    let ctx =
        validate::ResultContext { registration: &context.registration, dispatch_id: &dispatch_id, kinds: &kinds.kinds };
    rejection(env, &text, |v| validate::check_hook_result(v, &ctx))
}

/// `validateHookInput` against a compiled context: the exact walk for a JS
/// value, or JSON text, with the full verdict.
#[napi(
    ts_args_type = "doc: unknown, context: HookContext",
    ts_return_type = "ValidationResult<PostWritebackHookInput>"
)]
pub fn validate_hook_input_in<'e>(env: &'e Env, doc: JsAny, context: &HookContext) -> Result<Object<'e>, Code> {
    run(env, doc, |v| validate::validate_hook_input(v, &context.registration, &context.digest))
}

/// `validateHookResult` against a compiled context, as `validateHookInputIn`.
#[napi(
    ts_args_type = "doc: unknown, context: HookContext, dispatchId: string, kinds: IntentKinds",
    ts_return_type = "ValidationResult<PostWritebackHookResult>"
)]
pub fn validate_hook_result_in<'e>(
    env: &'e Env,
    doc: JsAny,
    context: &HookContext,
    dispatch_id: String,
    kinds: &IntentKinds,
) -> Result<Object<'e>, Code> {
    let ctx =
        validate::ResultContext { registration: &context.registration, dispatch_id: &dispatch_id, kinds: &kinds.kinds };
    run(env, doc, |v| validate::validate_hook_result(v, &ctx))
}
