//! The turn-start room (RFC "Provider-Neutral Turn-Start Inbox Hook v0",
//! contract-v0 section 6): its public documents and their validators. It
//! shares contract-v0's grammar primitives and rule codes with the
//! post-writeback side and knows nothing of post-writeback dispatch.

pub mod contract;
mod validate;

pub use contract::*;
pub use validate::{command, is_command_word, validate_turn_start_receipt, validate_turn_start_registration};

#[cfg(test)]
mod tests;
