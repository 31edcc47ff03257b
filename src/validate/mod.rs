//! The acceptance policy of contract-v0: every validator walks raw JSON and
//! returns the typed document or *all* violations, each with a JSON Pointer.

pub mod grammar;
mod report;
pub mod shape;

pub use crate::contract::{Rule, Violation};
pub use report::{child, index, public_pointer, Report, Verdict, Violations, MAX_REPORTED, REDACTED};
pub mod intent_kind;
pub mod js_fast_path;
pub mod payload_schema;
pub mod text;

pub use intent_kind::{validate_intent_kind_definition, CompiledIntentKind, IntentKinds};

pub(crate) mod input;
mod receipt;
mod registration;
mod result;

pub use input::{check_hook_input, validate_hook_input};
pub use receipt::{validate_dispatch_receipt, validate_failure_receipt};
pub use registration::{check_registration, validate_registration};
pub use result::{check_hook_result, validate_hook_result, ResultContext};

#[cfg(test)]
pub(crate) mod fixtures;
#[cfg(test)]
mod tests;
