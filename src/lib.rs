//! loopx-hooks: the core of LoopX's provider-neutral capability hooks.
//!
//! Plain Rust modules own every rule; `binding` is the only `#[napi]` code and
//! merely converts values and forwards.

pub mod builder;
pub mod canonical;
pub mod contract;
pub mod dialect;
pub mod dispatch;
pub mod error_code;
pub mod identity;
pub mod journal;
pub mod journal_export;
pub mod options;
pub mod turn_start;
pub mod validate;

// The napi layer is only linked into the addon; a test build has no JS to
// call its exports, so it is left out there instead of warning them unused.
#[cfg(not(test))]
mod binding;
mod provider_reply;
mod sqlite_file;
