//! One folder per dialect, each one implementation of the engine's one seam
//! (`dispatch::DialectRules`): `contract_v0` (the default) and `shipped`
//! (`loopx-shipped-v0`, the contract LoopX shipped, with its documents,
//! ids, Python-compatible JSON, turn-start contract and sidecar files). The
//! engine names no dialect; what picks one by name lives here.

pub mod contract_v0;
pub mod shipped;

use std::sync::Arc;

use crate::contract::Dialect;
use crate::dispatch::{DialectRules, Dispatcher, NotADispatchRequest, Profile, Source};
use crate::journal::{DispatchRow, Journal, StoredIntent};

/// The rules of `dialect`.
pub fn rules(dialect: Dialect) -> &'static dyn DialectRules {
    match dialect {
        Dialect::ContractV0 => &contract_v0::CONTRACT_V0,
        Dialect::LoopxShippedV0 => &shipped::LOOPX_SHIPPED_V0,
    }
}

/// Fills `row.receipt_json` from the columns (for readers that hand rows
/// out), in the row's dialect: a `loopx-shipped-v0` row's is its sidecar
/// receipt (a `retryable_failure` one too).
pub fn with_receipt(mut row: DispatchRow) -> DispatchRow {
    row.receipt_json = rules(row.dialect).receipt_json(&row);
    row
}

/// Fills `intent.doc_json` with the rebuilt document, in the intent's dialect.
pub fn with_intent_doc(mut intent: StoredIntent) -> StoredIntent {
    intent.doc_json = rules(intent.dialect).intent_doc_json(&intent);
    intent
}

impl Source {
    /// The source in `text`, in `dialect`'s shape. The orchestrator builds
    /// it from its own receipt, so text that is not one is the caller's
    /// misuse: an error, not an outcome. What is inside is admission's and
    /// the input validator's to judge.
    pub fn from_json(dialect: Dialect, text: &str) -> Result<Source, NotADispatchRequest> {
        rules(dialect).parse_source(text)
    }
}

impl Dispatcher {
    /// A dispatcher of the default dialect, `contract-v0`.
    pub fn new(journal: Arc<Journal>, profile: Profile) -> Self {
        Self::in_dialect(journal, profile, Dialect::ContractV0)
    }

    /// A dispatcher whose registrations, sources, inputs, results and
    /// receipts are those of `dialect`; the journal and the engine are the same.
    pub fn in_dialect(journal: Arc<Journal>, profile: Profile, dialect: Dialect) -> Self {
        Self::with_rules(journal, profile, rules(dialect))
    }
}
