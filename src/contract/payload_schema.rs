//! The payload-schema subset of contract-v0 section 1 as a typed, recursive
//! JSON shape, for TypeScript (ts-rs) and JSON Schema (schemars).
//!
//! The shape is exact except for what a type cannot say: the depth limit (8
//! levels of object/array nesting), `required` naming every property, and
//! `minimum <= maximum`. `validate::payload_schema` enforces those and builds
//! these values from raw JSON (so an integral float such as `2.0` in a bound is
//! accepted there even though serde would refuse it here).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// JavaScript's `Number.MAX_SAFE_INTEGER`: integer bounds stay exact in JS.
pub const MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;
/// The largest `maxItems` a payload array may declare.
pub const PAYLOAD_MAX_ITEMS: u32 = 32;
/// Levels of object/array nesting a payload schema may have; the root is one.
pub const PAYLOAD_SCHEMA_MAX_DEPTH: usize = 8;

/// Any node of a payload schema. Untagged: each variant carries its own
/// literal `type` (and strings are told apart by `enum` vs `format`), which
/// serde, ts-rs and schemars all handle, and TypeScript narrows on `type`.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Debug, PartialEq, Eq)]
#[serde(untagged)]
#[ts(export)]
pub enum PayloadSchema {
    Object(PayloadObjectSchema),
    Array(PayloadArraySchema),
    Integer(PayloadIntegerSchema),
    Boolean(PayloadBooleanSchema),
    Enum(PayloadEnumSchema),
    OpaqueRef(PayloadOpaqueRefSchema),
}

/// An object node; the root of every payload schema is one. Closed: every
/// property is required and no other member is allowed.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
#[ts(export)]
pub struct PayloadObjectSchema {
    #[ts(type = "\"object\"")]
    pub r#type: ObjectType,
    /// Property names are tokens.
    #[schemars(extend("propertyNames" = { "pattern": super::pattern::TOKEN, "maxLength": 128 }))]
    pub properties: BTreeMap<String, PayloadSchema>,
    /// Exactly the property names.
    #[schemars(extend("uniqueItems" = true))]
    pub required: Vec<String>,
    #[serde(rename = "additionalProperties")]
    #[ts(type = "false")]
    #[schemars(extend("const" = false))]
    pub additional_properties: bool,
}

/// An array node. `maxItems` is required (0..=32) so every payload is bounded;
/// `minItems` is not part of the subset.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
#[ts(export)]
pub struct PayloadArraySchema {
    #[ts(type = "\"array\"")]
    pub r#type: ArrayType,
    pub items: Box<PayloadSchema>,
    #[serde(rename = "maxItems")]
    #[ts(type = "number")]
    #[schemars(range(max = 32))]
    pub max_items: u32,
    #[serde(rename = "uniqueItems", default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    #[schemars(with = "bool")]
    pub unique_items: Option<bool>,
}

/// An integer node with both bounds, each a safe integer.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
#[ts(export)]
pub struct PayloadIntegerSchema {
    #[ts(type = "\"integer\"")]
    pub r#type: IntegerType,
    #[ts(type = "number")]
    #[schemars(range(min = -9_007_199_254_740_991i64, max = 9_007_199_254_740_991i64))]
    pub minimum: i64,
    #[ts(type = "number")]
    #[schemars(range(min = -9_007_199_254_740_991i64, max = 9_007_199_254_740_991i64))]
    pub maximum: i64,
}

/// A boolean node.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
#[ts(export)]
pub struct PayloadBooleanSchema {
    #[ts(type = "\"boolean\"")]
    pub r#type: BooleanType,
}

/// A string node restricted to a set of tokens.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
#[ts(export)]
pub struct PayloadEnumSchema {
    #[ts(type = "\"string\"")]
    pub r#type: StringType,
    #[serde(rename = "enum")]
    #[schemars(length(min = 1), extend("uniqueItems" = true), inner(regex(pattern = super::pattern::TOKEN), length(min = 1, max = 128)))]
    pub values: Vec<String>,
}

/// A string node holding an opaque ref (no path, URL, mail address or prose fits).
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
#[ts(export)]
pub struct PayloadOpaqueRefSchema {
    #[ts(type = "\"string\"")]
    pub r#type: StringType,
    #[ts(type = "\"opaque_ref\"")]
    pub format: OpaqueRefFormat,
}

macro_rules! literal {
    ($(#[$doc:meta])* $name:ident, $variant:ident, $text:literal) => {
        $(#[$doc])*
        #[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq, Default)]
        #[schemars(inline)]
        pub enum $name {
            #[default]
            #[serde(rename = $text)]
            $variant,
        }
    };
}

literal!(
    /// The literal `"object"`.
    ObjectType, Object, "object");
literal!(
    /// The literal `"array"`.
    ArrayType, Array, "array");
literal!(
    /// The literal `"integer"`.
    IntegerType, Integer, "integer");
literal!(
    /// The literal `"boolean"`.
    BooleanType, Boolean, "boolean");
literal!(
    /// The literal `"string"`.
    StringType, String, "string");
literal!(
    /// The literal `"opaque_ref"`, the only string format.
    OpaqueRefFormat, OpaqueRef, "opaque_ref");

#[cfg(test)]
mod tests {
    use super::*;

    /// The JSON Schema of the subset names every node kind and says exactly
    /// what the validator accepts for the optional and literal members.
    #[test]
    fn json_schema_of_the_subset() {
        let schema = serde_json::to_value(schemars::schema_for!(PayloadSchema)).unwrap();
        let defs = schema["$defs"].as_object().unwrap();
        let names: Vec<&str> = defs.keys().map(String::as_str).collect();
        assert_eq!(
            names,
            [
                "PayloadArraySchema",
                "PayloadBooleanSchema",
                "PayloadEnumSchema",
                "PayloadIntegerSchema",
                "PayloadObjectSchema",
                "PayloadOpaqueRefSchema"
            ]
        );
        let array = &defs["PayloadArraySchema"];
        assert_eq!(array["properties"]["uniqueItems"], serde_json::json!({"type": "boolean"}));
        assert_eq!(array["required"], serde_json::json!(["type", "items", "maxItems"]));
        assert_eq!(array["properties"]["maxItems"]["maximum"], 32);
        assert_eq!(defs["PayloadObjectSchema"]["properties"]["additionalProperties"]["const"], false);
        assert_eq!(defs["PayloadIntegerSchema"]["properties"]["minimum"]["minimum"], -MAX_SAFE_INTEGER);
        assert_eq!(defs["PayloadOpaqueRefSchema"]["properties"]["format"]["enum"], serde_json::json!(["opaque_ref"]));
    }
}
