//! What judging a provider's reply comes to, in the engine's terms: an
//! accepted result with what recording needs, or a failure with its code.
//! A dialect builds them (`DialectRules::accept`); the engine records them.

use crate::contract::{FailureCode, ResultStatus};
use crate::dialect::shipped::{FailureCode as ShippedCode, Intent as ShippedIntent};
use crate::journal::IntentRow;
use crate::validate::{public_pointer, Rule, Violation};

pub struct Failure {
    pub code: FailureCode,
    pub rule: Option<Rule>,
    /// Where `rule` was broken: a JSON Pointer into the document, with every
    /// member name that is not a plain short token redacted (`public_pointer`).
    pub pointer: Option<String>,
    /// The shipped code where it is not the shipped dialect's reading of `code`.
    pub shipped: Option<ShippedCode>,
}

impl Failure {
    pub fn new(code: FailureCode, rule: Option<Rule>) -> Self {
        Failure { code, rule, pointer: None, shipped: None }
    }

    /// A document refused for its first violation: the rule and where.
    pub fn rejected(code: FailureCode, first: Option<&Violation>) -> Self {
        Failure { code, rule: first.map(|v| v.rule), pointer: first.map(|v| public_pointer(&v.path)), shipped: None }
    }

    /// A later hook of one shipped dispatch reused an earlier hook's
    /// `idempotency_key`.
    pub fn intent_key_conflict() -> Self {
        Failure {
            code: FailureCode::IntentConflict,
            rule: None,
            pointer: None,
            shipped: Some(ShippedCode::IntentKeyConflict),
        }
    }
}

/// An accepted result with what recording needs, whatever its dialect.
pub struct Accepted {
    pub status: ResultStatus,
    /// The journal rows of its intents, in result order.
    pub intents: Vec<IntentRow>,
    /// The intent document of a shipped result, for its receipt.
    pub shipped_intent: Option<ShippedIntent>,
    pub digest: String,
    /// Length of the result's canonical JSON.
    pub bytes: usize,
}
