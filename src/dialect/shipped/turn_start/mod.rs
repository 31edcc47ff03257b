//! The turn-start hook of the `loopx-shipped-v0` dialect: registration v0 and
//! v1 (with its `required_read`), the provider's result and the dispatch v1
//! document with its `required_reads`, validated over raw JSON with the
//! crate's violations, and the dispatch itself. It shares nothing with the
//! RFC kernel beyond the phase name: the shipped contract has no request, no
//! session, no inbox and no lane, only provider-reported results.
//! Facts: `shared/design/loopx-shipped-v0.md`; where it is silent, what
//! LoopX's own validator and dispatcher do, as each function says.

mod contract;
mod dispatch;
mod document;
mod registration;
mod result;
mod text;

pub use contract::*;
pub use dispatch::{dispatch_v1, plan, ShippedCall, ShippedPlan, CALL_LIMIT_MS};
pub use document::validate_dispatch;
pub use registration::{descriptor_bytes, validate_registration};
pub use result::{validate_invocation, validate_result};
pub use text::{is_token, js_trim};

#[cfg(test)]
mod tests;
