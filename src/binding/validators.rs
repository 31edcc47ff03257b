//! The validators, exported to JS. Each takes a JS value or JSON text and
//! returns `{ ok: true, value }` or `{ ok: false, violations }`; none throws
//! on a bad document. Context arguments (a registration, the intent kinds)
//! are the caller's own configuration: misuse there throws with a code.

use napi::bindgen_prelude::*;
use napi_derive::napi;
use serde_json::Value;

use super::error::{internal, misuse, Code, Result as BindingResult};
use super::js_value::{read_document, Document, JsAny};
use crate::contract::PostWritebackHookRegistration;
use crate::identity;
use serde::Deserialize;
use crate::validate::{self, Verdict, Violation};

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
    #[napi(constructor, ts_args_type = "definitions: Array<IntentKindDefinition | string>")]
    pub fn new(definitions: Vec<JsAny>) -> Result<Self, Code> {
        let mut kinds = validate::IntentKinds::new();
        let mut violations: Vec<Violation> = Vec::new();
        for (i, definition) in definitions.into_iter().enumerate() {
            let prefix = format!("/{i}");
            let verdict = read_document(definition).and_then(|doc| validate::validate_intent_kind_definition(doc.value()));
            match verdict {
                Ok(kind) => {
                    if !kinds.insert(kind) {
                        violations.push(Violation { path: format!("{prefix}/intent_kind"), rule: validate::Rule::DuplicateItem });
                    }
                }
                Err(found) => violations.extend(found.into_iter().map(|v| Violation { path: format!("{prefix}{}", v.path), rule: v.rule })),
            }
        }
        if violations.is_empty() {
            Ok(IntentKinds { kinds })
        } else {
            let listed: Vec<String> = violations.iter().map(|v| format!("{} {}", v.path, v.rule.as_str())).collect();
            Err(misuse(Code::InvalidIntentKind, &format!("invalid intent kind definitions: {}", listed.join(", "))))
        }
    }

    /// The defined intent_kind names, sorted.
    #[napi(getter)]
    pub fn names(&self) -> Vec<String> {
        self.kinds.iter().map(|k| k.definition.intent_kind.clone()).collect()
    }
}

/// Builds the verdict object. An accepted JS value is handed back as the
/// very object given (no copy); accepted JSON text comes back parsed.
fn verdict_to_js<T>(env: &Env, input: JsAny, doc: Option<Document>, verdict: Verdict<T>) -> Result<Object<'_>> {
    let mut out = Object::new(env)?;
    match verdict {
        Ok(_) => {
            out.set("ok", true)?;
            match doc {
                Some(Document::Text(value)) => out.set("value", value)?,
                _ => out.set("value", input)?,
            }
        }
        Err(violations) => {
            out.set("ok", false)?;
            let list = serde_json::to_value(violations).unwrap_or(Value::Array(Vec::new()));
            out.set("violations", list)?;
        }
    }
    Ok(out)
}

fn run<'e, T>(env: &'e Env, input: JsAny, check: impl FnOnce(&Value) -> Verdict<T>) -> Result<Object<'e>, Code> {
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
    let doc = read_document(registration).map_err(|_| misuse(Code::InvalidArgument, "registration is not a JSON value"))?;
    let parsed = PostWritebackHookRegistration::deserialize(doc.value())
        .map_err(|_| misuse(Code::InvalidArgument, "registration does not have the registration contract's shape"))?;
    let digest = identity::registration_digest(doc.value());
    Ok((parsed, digest))
}

#[napi(ts_args_type = "doc: unknown, kinds: IntentKinds", ts_return_type = "ValidationResult<PostWritebackHookRegistration>")]
pub fn validate_registration<'e>(env: &'e Env, doc: JsAny, kinds: &IntentKinds) -> Result<Object<'e>, Code> {
    run(env, doc, |v| validate::validate_registration(v, &kinds.kinds))
}

#[napi(ts_args_type = "doc: unknown, registration: PostWritebackHookRegistration | string", ts_return_type = "ValidationResult<PostWritebackHookInput>")]
pub fn validate_hook_input<'e>(env: &'e Env, doc: JsAny, registration: JsAny) -> Result<Object<'e>, Code> {
    let (registration, digest) = context_registration(registration)?;
    run(env, doc, |v| validate::validate_hook_input(v, &registration, &digest))
}

#[napi(
    ts_args_type = "doc: unknown, registration: PostWritebackHookRegistration | string, dispatchId: string, kinds: IntentKinds",
    ts_return_type = "ValidationResult<PostWritebackHookResult>"
)]
pub fn validate_hook_result<'e>(env: &'e Env, doc: JsAny, registration: JsAny, dispatch_id: String, kinds: &IntentKinds) -> Result<Object<'e>, Code> {
    let (registration, _) = context_registration(registration)?;
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

