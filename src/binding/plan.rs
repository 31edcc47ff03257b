//! The declared type of a plan's JSON text (`crate::dispatch::plan_json`
//! writes it; `prepare` returns it): declared here so the addon's typings
//! carry it, and never built in Rust.

use napi_derive::napi;

/// `done` (the outcome), `wait` (the ticket to wait for, then prepare
/// again) or `calls` to make before `complete(ticket, replies)`: the shape of
/// the JSON text `prepare` returns.
#[allow(dead_code)]
#[napi(object, object_to_js = false, object_from_js = false)]
pub struct NativePlan {
    pub ticket: i64,
    /// The outcome (a `DispatchOutcome`, with `shipped` beside it in the shipped dialect).
    #[napi(ts_type = "unknown")]
    pub done: Option<serde_json::Value>,
    /// `done` is every hook's final receipt replayed: the same request text
    /// gets it again until a hook or an intent kind is added.
    pub replayed: bool,
    pub wait: Option<i64>,
    pub calls: Option<Vec<NativeCall>>,
}

/// One provider call the caller makes, in hook_id order.
#[allow(dead_code)]
#[napi(object, object_to_js = false, object_from_js = false)]
pub struct NativeCall {
    pub slot: u32,
    pub hook_id: String,
    pub dispatch_id: String,
    /// The attempt this call counts as (0 for a verify-mode replay).
    pub attempt: u32,
    /// A reply text longer than this is `result_too_large` without crossing.
    pub max_reply_length: u32,
    /// The projected, public-safe input the provider receives.
    #[napi(ts_type = "unknown")]
    pub input: serde_json::Value,
}
