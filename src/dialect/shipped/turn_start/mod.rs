//! The turn-start hook of the `loopx-shipped-v0` dialect: registration v0 and
//! v1 (with its `required_read`), the provider's result and the dispatch v1
//! document with its `required_reads`, validated over raw JSON with the
//! crate's violations, and the dispatch itself, run on core's inbox sessions,
//! settling, fail-closed read and lane (`kernel.rs`): the shipped documents
//! have no room for them, so they ride on the package's object around the
//! dispatch document (`outcome.rs`).
//! Facts: `shared/design/loopx-shipped-v0.md`; where it is silent, what
//! LoopX's own validator and dispatcher do, as each function says.

mod contract;
mod dispatch;
mod document;
mod kernel;
mod outcome;
mod registration;
mod result;
mod text;

pub use contract::*;
pub use dispatch::{dispatch_v1, plan, ShippedCall, ShippedPlan, CALL_LIMIT_MS};
pub use document::validate_dispatch;
pub use kernel::{ShippedRun, ShippedRunCall, ShippedTurnStartKernel};
pub use outcome::*;
pub use registration::{descriptor_bytes, validate_registration};
pub use result::{validate_invocation, validate_result};
pub use text::{is_token, js_trim};

#[cfg(test)]
mod tests;
