//! A JS provider function behind the turn-start kernel's `TurnStartProvider`
//! (input JSON text in, a `ProviderReply` back), and the markers by which
//! lib/runtime.ts reports a post-writeback provider call it made itself.

use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi::threadsafe_function::ThreadsafeFunction;

use crate::dispatch::{CallResult, ProviderReply, ReplyFuture};
use crate::turn_start::TurnStartProvider;

/// A provider as the JS wrapper presents it (lib/provider.ts): input JSON
/// text in, result or receipt JSON text (or a `\u0000`-prefixed failure
/// marker) out, possibly via a promise. Weak, so installed providers never
/// keep the process alive by themselves.
pub(crate) type JsProviderFn = ThreadsafeFunction<String, Either<Promise<String>, String>, String, Status, false, true>;

pub(crate) struct JsProvider {
    function: Arc<JsProviderFn>,
}

impl JsProvider {
    pub(crate) fn new(function: JsProviderFn) -> Self {
        JsProvider { function: Arc::new(function) }
    }

    /// One invocation: a throw, a rejection or a failed call is `Threw`.
    fn call(&self, input_json: String) -> ReplyFuture {
        let function = self.function.clone();
        Box::pin(async move {
            match function.call_async_catch(input_json).await {
                Ok(Either::A(promise)) => promise.await.map(parse_reply).unwrap_or(ProviderReply::Threw),
                Ok(Either::B(text)) => parse_reply(text),
                Err(_) => ProviderReply::Threw,
            }
        })
    }
}

/// The wrapper marks its own verdicts with a NUL byte, which JSON text
/// never starts with.
fn parse_reply(text: String) -> ProviderReply {
    match text.strip_prefix('\u{0}') {
        Some("not_json") => ProviderReply::NotJson,
        Some(_) => ProviderReply::Threw,
        None => ProviderReply::Json(text),
    }
}

/// A post-writeback provider call as lib/runtime.ts reports it: the reply
/// text, or a marker for what happened instead.
pub(crate) fn call_result(text: String) -> CallResult {
    match text.strip_prefix('\u{0}') {
        Some("timed_out") => CallResult::TimedOut,
        Some("wall") => CallResult::WallExceeded,
        Some("too_large") => CallResult::TooLarge,
        Some("not_started") => CallResult::NotStarted,
        _ => CallResult::Reply(parse_reply(text)),
    }
}

impl TurnStartProvider for JsProvider {
    fn invoke(&self, input_json: String) -> ReplyFuture {
        self.call(input_json)
    }
}
