//! The turn-start validators, exported to JS. Like `validators.rs`: each takes
//! a JS value or JSON text and returns `{ ok: true, value }` or
//! `{ ok: false, violations }`, and never throws on a bad document.

use napi::bindgen_prelude::*;
use napi_derive::napi;
use serde_json::Value;

use super::error::{internal, Code};
use super::js_value::{read_document, Document, JsAny};
use crate::turn_start;
use crate::validate::Verdict;

/// Reads `input`, validates it, and builds the verdict object: an accepted
/// JS value is handed back as the very object given, accepted text parsed.
/// (`validators.rs` has the same helper, private to it.)
fn run<'e, T>(env: &'e Env, input: JsAny, check: impl FnOnce(&Value) -> Verdict<T>) -> Result<Object<'e>, Code> {
    let build = || -> Result<Object<'e>> {
        let mut out = Object::new(env)?;
        let (doc, verdict) = match read_document(input) {
            Ok(doc) => {
                let verdict = check(doc.value()).map(|_| ());
                (Some(doc), verdict)
            }
            Err(violations) => (None, Err(violations)),
        };
        match verdict {
            Ok(()) => {
                out.set("ok", true)?;
                match doc {
                    Some(Document::Text(value)) => out.set("value", value)?,
                    _ => out.set("value", input)?,
                }
            }
            Err(violations) => {
                out.set("ok", false)?;
                out.set("violations", serde_json::to_value(violations).unwrap_or(Value::Array(Vec::new())))?;
            }
        }
        Ok(out)
    };
    build().map_err(internal)
}

#[napi(ts_args_type = "doc: unknown", ts_return_type = "ValidationResult<TurnStartHookRegistration>")]
pub fn validate_turn_start_registration<'e>(env: &'e Env, doc: JsAny) -> Result<Object<'e>, Code> {
    run(env, doc, turn_start::validate_turn_start_registration)
}

#[napi(ts_args_type = "doc: unknown", ts_return_type = "ValidationResult<TurnStartReceipt>")]
pub fn validate_turn_start_receipt<'e>(env: &'e Env, doc: JsAny) -> Result<Object<'e>, Code> {
    run(env, doc, turn_start::validate_turn_start_receipt)
}
