//! Intent kind definitions and their payload-schema subset (contract-v0
//! section 1). STUB: owned by the payload-schema helper.
use std::collections::BTreeMap;

use serde_json::Value;

use super::{Report, Verdict};
use crate::contract::IntentKindDefinition;

/// A validated intent kind with its payload schema compiled for checking.
#[derive(Clone, Debug)]
pub struct CompiledIntentKind {
    pub definition: IntentKindDefinition,
}

impl CompiledIntentKind {
    /// Records every violation of `payload` against this kind's schema,
    /// with paths under `path` (e.g. `/intents/0/payload`).
    pub fn check_payload(&self, _r: &mut Report, _payload: &Value, _path: &str) {}
}

/// Validates one definition: exact fields, grammars, and the schema subset
/// (`unsupported_schema` at each offending schema node).
pub fn validate_intent_kind_definition(doc: &Value) -> Verdict<CompiledIntentKind> {
    let r = Report::new();
    r.finish::<IntentKindDefinition>(doc).map(|definition| CompiledIntentKind { definition })
}

/// The defined intent kinds, by intent_kind.
#[derive(Clone, Debug, Default)]
pub struct IntentKinds {
    kinds: BTreeMap<String, CompiledIntentKind>,
}

impl IntentKinds {
    pub fn new() -> Self {
        Self::default()
    }
    /// Adds a kind; returns false (and changes nothing) when it is already defined.
    pub fn insert(&mut self, kind: CompiledIntentKind) -> bool {
        if self.kinds.contains_key(&kind.definition.intent_kind) {
            return false;
        }
        self.kinds.insert(kind.definition.intent_kind.clone(), kind);
        true
    }
    pub fn get(&self, intent_kind: &str) -> Option<&CompiledIntentKind> {
        self.kinds.get(intent_kind)
    }
    pub fn iter(&self) -> impl Iterator<Item = &CompiledIntentKind> {
        self.kinds.values()
    }
}
