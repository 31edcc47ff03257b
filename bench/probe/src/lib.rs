//! Bench-only probes, built with the package's napi-rs version:
//! - `crossing`: the bare boundary crossing. napi-rs copies the JS string into
//!   a Rust `String` (what every validator does with JSON text before parsing
//!   it) and returns a number. Nothing is parsed or checked.
//! - `Caller.call`: the floor of one dispatch's machinery, doing no work: an
//!   async napi call whose future, on napi-rs's tokio runtime, calls one JS
//!   function through a threadsafe function (as a provider is called) and
//!   resolves the promise with its reply.

use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi::threadsafe_function::ThreadsafeFunction;
use napi_derive::napi;

#[napi]
pub fn crossing(text: String) -> u32 {
    text.len() as u32
}

/// The same shape as the package's provider functions (weak, string in,
/// string or promise of string out).
type JsFn = ThreadsafeFunction<String, Either<Promise<String>, String>, String, Status, false, true>;

#[napi]
pub struct Caller {
    f: Arc<JsFn>,
}

#[napi]
impl Caller {
    #[napi(constructor)]
    pub fn new(f: JsFn) -> Self {
        Caller { f: Arc::new(f) }
    }

    #[napi]
    pub async fn call(&self, text: String) -> String {
        let f = self.f.clone();
        match f.call_async_catch(text).await {
            Ok(Either::A(p)) => p.await.unwrap_or_default(),
            Ok(Either::B(s)) => s,
            Err(_) => String::new(),
        }
    }
}
