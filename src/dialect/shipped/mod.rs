//! The `loopx-shipped-v0` dialect, all of it: the post-writeback contract
//! LoopX shipped, beside the RFC dialect of `crate::contract` (the default).
//! Its documents are typed here (exported to TypeScript as `Shipped...`)
//! and validated over raw JSON with the crate's `Violation`s: every
//! violation at its JSON Pointer, credential-like strings anywhere refused
//! and never echoed. Facts: `shared/design/loopx-shipped-v0.md`; where it
//! is silent, what LoopX's own boundary does, as each validator says.
//!
//! Beside the documents: `rules` (the engine's questions, answered),
//! `engine` (the shipped half of a dispatch: ids, stored records,
//! receipts, the dispatch result), `batch` (LoopX's transport envelope as
//! the admission of a dispatch), `ids` (LoopX's `pwr_`/`pwh_` ids),
//! `pyjson` (Python's `json.dumps`, which those ids hash), `turn_start`
//! (the shipped turn-start contract) and `sidecar` (LoopX's receipt files).

pub mod batch;
mod dispatch;
mod documents;
pub mod engine;
mod enums;
pub mod grammar;
pub mod ids;
mod input;
mod macros;
pub mod pyjson;
mod receipt;
mod records;
mod registration;
mod result;
mod rules;
pub mod sidecar;
mod source;
pub mod transaction;
pub mod turn_start;

pub use dispatch::validate_dispatch_result;
pub use documents::*;
pub use enums::*;
pub use input::{hook_input, validate_hook_input};
pub use receipt::validate_receipt;
pub use records::*;
pub use registration::validate_registration;
pub use result::{validate_result, ResultContext};
pub use rules::{LoopxShippedV0, LOOPX_SHIPPED_V0};
pub use source::validate_source;

/// A `retryable_failure` is retried until its receipt's `attempt_count`
/// reaches this; past it the hook is isolated before its provider runs.
pub const MAX_ATTEMPT_COUNT: u32 = 10_000;

/// How deep a result may nest on a runtime's dispatch path (LoopX's own
/// transaction, `transaction`, walks deeper on a stack of its own).
pub const MAX_RESULT_DEPTH: usize = crate::validate::text::MAX_NESTED_DEPTH;

/// The dialect's name, as `--dialect` and `{ dialect }` spell it.
pub const DIALECT: &str = "loopx-shipped-v0";

/// The grammars as patterns, for the JSON Schemas.
pub mod pattern {
    pub const TOKEN: &str = r"^[a-z][a-z0-9_.:-]{2,95}$";
    pub const POLICY_VERSION: &str = r"^[a-z0-9][a-z0-9_.:-]{1,95}$";
    pub const GOAL_ID: &str = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$";
    pub const DISPATCH_ID: &str = r"^pwh_[0-9a-f]{64}$";
}

#[cfg(test)]
mod tests;
