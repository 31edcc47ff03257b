//! The public documents of the post-writeback hook contract (RFC sections 6-9,
//! contract-v0 sections 1-3), as serde + ts-rs + schemars types.
//!
//! These types describe the *shape* of a valid document. They are not the
//! acceptance policy: `validate` checks raw JSON against contract-v0 and reports
//! every violation; only a document it accepts is deserialized into these.

mod dialect;
mod enums;
mod input;
mod intent_kind;
pub(crate) mod macros;
mod payload_schema;
mod receipt;
mod registration;
mod result;
mod violation;

pub use dialect::Dialect;
pub use enums::*;
pub use input::*;
pub use intent_kind::*;
pub use payload_schema::*;
pub use receipt::*;
pub use registration::*;
pub use result::*;
pub use violation::{Rule, Violation};

pub(crate) use receipt::require_every_property;

/// Grammar patterns of contract-v0 section 1, shared by schemas and validators.
pub mod pattern {
    pub const TOKEN: &str = r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$";
    pub const OPAQUE_REF: &str = r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$";
    pub const POLICY_VERSION: &str = r"^[a-z0-9][a-z0-9_.-]{0,63}$";
    pub const TIMESTAMP: &str = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$";
    pub const DISPATCH_ID: &str = r"^pwh_[0-9a-f]{64}$";
    pub const INTENT_ID: &str = r"^pwi_[0-9a-f]{64}$";
    pub const SHA256_HEX: &str = r"^[0-9a-f]{64}$";
}
