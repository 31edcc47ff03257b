//! Validator tests: each file holds one document's cases, against the shared
//! RFC fixtures in `super::fixtures`. Every case asserts the exact, sorted
//! `(path, rule)` list, so a missing or extra violation fails.

mod hostile;
mod input;
mod intent;
mod read_scope;
mod receipt;
mod registration;
mod result;
