//! The only `#[napi]` code: converts JS values to core inputs and core
//! outputs to JS values, and forwards. No acceptance rule lives here.

mod context;
mod dispatch;
mod error;
mod identities;
mod inbox;
mod journal;
mod js_provider;
mod js_value;
mod runtime;
mod sidecar;
mod sqlite_probe;
mod transaction;
mod turn_start;
mod turn_start_session;
mod turn_start_shipped;
mod validators;
