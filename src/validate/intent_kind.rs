//! Intent kind definitions (contract-v0 section 1): defined at the composition
//! root, never by a provider at dispatch time. The payload-schema subset and
//! the payload checker live in `super::payload_schema`.
use std::collections::BTreeMap;

use serde_json::Value;

use super::payload_schema::{check_payload, compile_payload_schema};
use super::{grammar, shape, Report, Rule, Verdict};
use crate::contract::{IntentKindDefinition, PayloadObjectSchema};

/// Most operations one intent kind may name.
pub const OPERATIONS_MAX: usize = 8;

const FIELDS: &[&str] = &["intent_kind", "capability_id", "operations", "payload_schema"];

/// A validated intent kind with its payload schema compiled for checking.
#[derive(Clone, Debug)]
pub struct CompiledIntentKind {
    pub definition: IntentKindDefinition,
    schema: PayloadObjectSchema,
}

impl CompiledIntentKind {
    /// The payload schema, as the typed subset (the root is always an object).
    pub fn payload_schema(&self) -> &PayloadObjectSchema {
        &self.schema
    }

    /// Records every violation of `payload` against this kind's schema,
    /// with paths under `path` (e.g. `/intents/0/payload`).
    pub fn check_payload(&self, r: &mut Report, payload: &Value, path: &str) {
        check_payload(&self.schema, r, payload, path);
    }
}

/// Validates one definition and reports every violation: exact fields;
/// `intent_kind` and `capability_id` tokens, the kind starting with
/// `<capability_id>.` (`capability_mismatch` at `/intent_kind`, checked only
/// when both are valid tokens); 1..=8 unique operation tokens; and the schema
/// subset (`unsupported_schema` at each offending schema node).
pub fn validate_intent_kind_definition(doc: &Value) -> Verdict<CompiledIntentKind> {
    let mut r = Report::new();
    let Some(map) = shape::object(&mut r, doc, "", FIELDS) else {
        return Err(r.into_violations());
    };
    let intent_kind = map.get("intent_kind").and_then(|v| shape::token(&mut r, v, "/intent_kind"));
    let capability_id = map.get("capability_id").and_then(|v| shape::token(&mut r, v, "/capability_id"));
    if let (Some(kind), Some(capability)) = (intent_kind, capability_id) {
        if !grammar::is_owned_by(kind, capability) {
            r.add("/intent_kind", Rule::CapabilityMismatch);
        }
    }
    if let Some(ops) = map.get("operations") {
        shape::token_array(&mut r, ops, "/operations", 1, OPERATIONS_MAX);
    }
    let schema = map.get("payload_schema").and_then(|v| compile_payload_schema(&mut r, v, "/payload_schema"));
    // Integral floats in schema bounds (`32.0`) are stored as integers, so the
    // definition and its compiled schema serialize alike.
    let definition: IntentKindDefinition = r.finish(&shape::integral_numbers(doc))?;
    // A clean report means the compiler returned the schema; stay total anyway.
    let schema = schema
        .ok_or_else(|| vec![super::Violation { path: "/payload_schema".into(), rule: Rule::UnsupportedSchema }])?;
    Ok(CompiledIntentKind { definition, schema })
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
    /// Adds a kind; returns false (and changes nothing) when it is already
    /// defined: a kind is defined once, so a second definition cannot
    /// silently replace the schema payloads were checked against.
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
    /// The kinds in byte order of intent_kind.
    pub fn iter(&self) -> impl Iterator<Item = &CompiledIntentKind> {
        self.kinds.values()
    }
}

#[cfg(test)]
mod tests;
