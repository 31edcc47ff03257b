//! The validators, exported to JS. Each takes a JS value or JSON text and
//! returns `{ ok: true, value }` or `{ ok: false, violations }`; none throws
//! on a bad document. Context arguments (a registration, the intent kinds)
//! are the caller's own configuration: misuse there throws with a code.

use napi::bindgen_prelude::*;
use napi::sys;
use napi_derive::napi;
use serde_json::Value;

use super::error::{internal, misuse, with_violations, Code, Result as BindingResult};
use super::js_value::{read_document, Document, JsAny};
use crate::contract::PostWritebackHookRegistration;
use crate::dialect::shipped;
use crate::identity;
use crate::validate::{self, Verdict, Violations};
use serde::Deserialize;

/// The defined intent kinds, validated once at the composition root and
/// reused by every validator call.
#[napi]
pub struct IntentKinds {
    pub(crate) kinds: validate::IntentKinds,
}

#[napi]
impl IntentKinds {
    /// Throws `ERR_LOOPX_INVALID_INTENT_KIND` (with `violations`, paths
    /// prefixed by the definition's index) when a definition is invalid or an
    /// intent_kind is defined twice.
    #[napi(
        constructor,
        ts_args_type = "definitions: ReadonlyArray<IntentKindDefinition | { readonly intent_kind: string } | string>"
    )]
    pub fn new(definitions: Vec<JsAny>) -> Result<Self, Code> {
        let read = definitions.into_iter().map(|d| {
            read_document(d).map(|doc| match doc {
                Document::Text(v) | Document::Object(v) => v,
            })
        });
        match crate::dispatch::intent_kinds(read) {
            Ok(kinds) => Ok(IntentKinds { kinds }),
            Err(violations) => {
                let listed: Vec<String> =
                    violations.iter().map(|v| format!("{} {}", v.path, v.rule.as_str())).collect();
                let message = format!("invalid intent kind definitions: {}", listed.join(", "));
                Err(with_violations(Code::InvalidIntentKind, &message, violations))
            }
        }
    }

    /// The defined intent_kind names, sorted.
    #[napi(getter)]
    pub fn names(&self) -> Vec<String> {
        self.kinds.iter().map(|k| k.definition.intent_kind.clone()).collect()
    }
}

/// Each defined intent_kind followed by its capability_id, in the order of
/// `names`: what the TypeScript layer's registration fast path looks kinds up in.
#[napi]
pub fn intent_kind_owners(kinds: &IntentKinds) -> Vec<String> {
    kinds.kinds.iter().flat_map(|k| [k.definition.intent_kind.clone(), k.definition.capability_id.clone()]).collect()
}

/// `JSON.parse(text)` by V8 itself: one call instead of a napi call per
/// member, which costs several times more than the whole validation. None
/// when it throws (the exception is cleared; the caller falls back).
fn json_parse(text: JsAny) -> Option<sys::napi_value> {
    let env = text.env;
    let mut global = std::ptr::null_mut();
    let mut json = std::ptr::null_mut();
    let mut parse = std::ptr::null_mut();
    let mut out = std::ptr::null_mut();
    let ok = |status: sys::napi_status| status == sys::Status::napi_ok;
    unsafe {
        if ok(sys::napi_get_global(env, &mut global))
            && ok(sys::napi_get_named_property(env, global, c"JSON".as_ptr(), &mut json))
            && ok(sys::napi_get_named_property(env, json, c"parse".as_ptr(), &mut parse))
            && ok(sys::napi_call_function(env, json, parse, 1, &text.value, &mut out))
        {
            return Some(out);
        }
        let mut pending = false;
        sys::napi_is_exception_pending(env, &mut pending);
        if pending {
            let mut ignored = std::ptr::null_mut();
            sys::napi_get_and_clear_last_exception(env, &mut ignored);
        }
    }
    None
}

/// Sets the rejected half of a verdict: `ok: false`, the reported
/// `violations`, and `more` (how many were found past them) when any were.
pub(crate) fn set_rejection(out: &mut Object<'_>, violations: Violations) -> Result<()> {
    out.set("ok", false)?;
    let more = violations.more();
    let list = serde_json::to_value(violations.into_vec()).unwrap_or(Value::Array(Vec::new()));
    out.set("violations", list)?;
    if more > 0 {
        out.set("more", more as f64)?;
    }
    Ok(())
}

/// Builds the verdict object. An accepted JS value is handed back as the
/// very object given (no copy); accepted JSON text comes back parsed.
fn verdict_to_js<T>(env: &Env, input: JsAny, doc: Option<Document>, verdict: Verdict<T>) -> Result<Object<'_>> {
    let mut out = Object::new(env)?;
    match verdict {
        Ok(_) => {
            out.set("ok", true)?;
            match doc {
                Some(Document::Text(value)) => match json_parse(input) {
                    Some(parsed) => out.set("value", JsAny { env: input.env, value: parsed })?,
                    None => out.set("value", value)?,
                },
                _ => out.set("value", input)?,
            }
        }
        Err(violations) => set_rejection(&mut out, violations)?,
    }
    Ok(out)
}

/// Reads `input` (a JS value or JSON text), validates it with `check`, and
/// builds the verdict object; every exported validator goes through this.
pub(crate) fn run<'e, T>(
    env: &'e Env,
    input: JsAny,
    check: impl FnOnce(&Value) -> Verdict<T>,
) -> Result<Object<'e>, Code> {
    let out = match read_document(input) {
        Ok(doc) => {
            let verdict = check(doc.value());
            verdict_to_js(env, input, Some(doc), verdict)
        }
        Err(violations) => verdict_to_js::<()>(env, input, None, Err(violations)),
    };
    out.map_err(internal)
}

/// A context registration: the caller's own, so a malformed one is misuse.
pub(crate) fn context_registration(registration: JsAny) -> BindingResult<(PostWritebackHookRegistration, String)> {
    let (parsed, doc) = read_registration(registration)?;
    let digest = identity::registration_digest(doc.value());
    Ok((parsed, digest))
}

fn read_registration(registration: JsAny) -> BindingResult<(PostWritebackHookRegistration, Document)> {
    let doc =
        read_document(registration).map_err(|_| misuse(Code::InvalidArgument, "registration is not a JSON value"))?;
    let parsed = PostWritebackHookRegistration::deserialize(doc.value())
        .map_err(|_| misuse(Code::InvalidArgument, "registration does not have the registration contract's shape"))?;
    Ok((parsed, doc))
}

#[napi(
    ts_args_type = "doc: unknown, kinds: IntentKinds",
    ts_return_type = "ValidationResult<PostWritebackHookRegistration>"
)]
pub fn validate_registration<'e>(env: &'e Env, doc: JsAny, kinds: &IntentKinds) -> Result<Object<'e>, Code> {
    run(env, doc, |v| validate::validate_registration(v, &kinds.kinds))
}

#[napi(
    ts_args_type = "doc: unknown, registration: PostWritebackHookRegistration | string",
    ts_return_type = "ValidationResult<PostWritebackHookInput>"
)]
pub fn validate_hook_input<'e>(env: &'e Env, doc: JsAny, registration: JsAny) -> Result<Object<'e>, Code> {
    let (registration, digest) = context_registration(registration)?;
    run(env, doc, |v| validate::validate_hook_input(v, &registration, &digest))
}

#[napi(
    ts_args_type = "doc: unknown, registration: PostWritebackHookRegistration | string, dispatchId: string, kinds: IntentKinds",
    ts_return_type = "ValidationResult<PostWritebackHookResult>"
)]
pub fn validate_hook_result<'e>(
    env: &'e Env,
    doc: JsAny,
    registration: JsAny,
    dispatch_id: String,
    kinds: &IntentKinds,
) -> Result<Object<'e>, Code> {
    // The result check does not need the registration's digest: skip its hashing.
    let (registration, _) = read_registration(registration)?;
    let ctx = validate::ResultContext { registration: &registration, dispatch_id: &dispatch_id, kinds: &kinds.kinds };
    run(env, doc, |v| validate::validate_hook_result(v, &ctx))
}

#[napi(ts_args_type = "doc: unknown", ts_return_type = "ValidationResult<IntentKindDefinition>")]
pub fn validate_intent_kind_definition<'e>(env: &'e Env, doc: JsAny) -> Result<Object<'e>, Code> {
    run(env, doc, |v| validate::validate_intent_kind_definition(v).map(|k| k.definition))
}

#[napi(ts_args_type = "doc: unknown", ts_return_type = "ValidationResult<DispatchReceipt>")]
pub fn validate_dispatch_receipt<'e>(env: &'e Env, doc: JsAny) -> Result<Object<'e>, Code> {
    run(env, doc, validate::validate_dispatch_receipt)
}

#[napi(ts_args_type = "doc: unknown", ts_return_type = "ValidationResult<FailureReceipt>")]
pub fn validate_failure_receipt<'e>(env: &'e Env, doc: JsAny) -> Result<Object<'e>, Code> {
    run(env, doc, validate::validate_failure_receipt)
}

/// A shipped-dialect context registration: the caller's own, so one the
/// shipped validator rejects is misuse (its violations on the error).
fn shipped_registration(registration: JsAny) -> BindingResult<shipped::Registration> {
    let doc =
        read_document(registration).map_err(|_| misuse(Code::InvalidArgument, "registration is not a JSON value"))?;
    shipped::validate_registration(doc.value()).map_err(|violations| {
        let message = "registration is not a valid loopx-shipped-v0 registration";
        with_violations(Code::InvalidArgument, message, violations.into())
    })
}

#[napi(ts_args_type = "doc: unknown", ts_return_type = "ValidationResult<ShippedRegistration>")]
pub fn validate_shipped_registration<'e>(env: &'e Env, doc: JsAny) -> Result<Object<'e>, Code> {
    run(env, doc, shipped::validate_registration)
}

/// An accepted source comes back as core reads it, every string stripped
/// (not as the very object given, as the other validators return it).
#[napi(ts_args_type = "doc: unknown", ts_return_type = "ValidationResult<ShippedSource>")]
pub fn validate_shipped_source<'e>(env: &'e Env, doc: JsAny) -> Result<Object<'e>, Code> {
    let verdict = read_document(doc).and_then(|doc| shipped::validate_source(doc.value()));
    let mut out = Object::new(env).map_err(internal)?;
    match verdict {
        Ok(source) => {
            let value = serde_json::to_value(source).map_err(|_| misuse(Code::Internal, "source serialization"))?;
            out.set("ok", true).and_then(|()| out.set("value", value)).map_err(internal)?;
        }
        Err(violations) => set_rejection(&mut out, violations).map_err(internal)?,
    }
    Ok(out)
}

#[napi(
    ts_args_type = "doc: unknown, registration: ShippedRegistration | string",
    ts_return_type = "ValidationResult<ShippedHookInput>"
)]
pub fn validate_shipped_hook_input<'e>(env: &'e Env, doc: JsAny, registration: JsAny) -> Result<Object<'e>, Code> {
    let registration = shipped_registration(registration)?;
    run(env, doc, |v| shipped::validate_hook_input(v, &registration))
}

#[napi(
    ts_args_type = "doc: unknown, registration: ShippedRegistration | string, eventId: string",
    ts_return_type = "ValidationResult<ShippedHookResult>"
)]
pub fn validate_shipped_result<'e>(
    env: &'e Env,
    doc: JsAny,
    registration: JsAny,
    event_id: String,
) -> Result<Object<'e>, Code> {
    let registration = shipped_registration(registration)?;
    let ctx = shipped::ResultContext { registration: &registration, event_id: &event_id };
    run(env, doc, |v| shipped::validate_result(v, &ctx))
}

#[napi(ts_args_type = "doc: unknown", ts_return_type = "ValidationResult<ShippedSidecarReceipt>")]
pub fn validate_shipped_receipt<'e>(env: &'e Env, doc: JsAny) -> Result<Object<'e>, Code> {
    run(env, doc, shipped::validate_receipt)
}

#[napi(ts_args_type = "doc: unknown", ts_return_type = "ValidationResult<ShippedDispatchResult>")]
pub fn validate_shipped_dispatch_result<'e>(env: &'e Env, doc: JsAny) -> Result<Object<'e>, Code> {
    run(env, doc, shipped::validate_dispatch_result)
}
