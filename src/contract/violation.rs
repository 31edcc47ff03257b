//! A violation: a JSON Pointer and a stable rule code (contract-v0 section
//! 2). Public documents (failure receipts, turn-start outcomes) carry them,
//! so they are contract types; the validators produce them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// The stable rule codes of contract-v0 section 2. New rules may be added;
/// none is ever renamed.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum Rule {
    UnknownField,
    MissingField,
    WrongType,
    NotJsonValue,
    BadSchemaVersion,
    BadToken,
    BadOpaqueRef,
    BadPolicyVersion,
    BadTimestamp,
    NotAllowedValue,
    OutOfRange,
    TooFewItems,
    TooManyItems,
    TooLong,
    DuplicateItem,
    UnknownEventKind,
    UnknownIntentKind,
    UnknownOperation,
    TransitionMismatch,
    CapabilityMismatch,
    HookMismatch,
    DispatchMismatch,
    DispatchIdMismatch,
    IntentIdMismatch,
    PolicyNotIsolate,
    AuthorityClaimed,
    ResultTooLarge,
    IntentBudgetExceeded,
    UnsupportedSchema,
    CredentialLikeValue,
    // loopx-shipped-v0
    EmptyValue,
    InputTooLarge,
    SourceReceiptMismatch,
    CountMismatch,
}

impl Rule {
    pub fn as_str(self) -> &'static str {
        use Rule::*;
        match self {
            UnknownField => "unknown_field",
            MissingField => "missing_field",
            WrongType => "wrong_type",
            NotJsonValue => "not_json_value",
            BadSchemaVersion => "bad_schema_version",
            BadToken => "bad_token",
            BadOpaqueRef => "bad_opaque_ref",
            BadPolicyVersion => "bad_policy_version",
            BadTimestamp => "bad_timestamp",
            NotAllowedValue => "not_allowed_value",
            OutOfRange => "out_of_range",
            TooFewItems => "too_few_items",
            TooManyItems => "too_many_items",
            TooLong => "too_long",
            DuplicateItem => "duplicate_item",
            UnknownEventKind => "unknown_event_kind",
            UnknownIntentKind => "unknown_intent_kind",
            UnknownOperation => "unknown_operation",
            TransitionMismatch => "transition_mismatch",
            CapabilityMismatch => "capability_mismatch",
            HookMismatch => "hook_mismatch",
            DispatchMismatch => "dispatch_mismatch",
            DispatchIdMismatch => "dispatch_id_mismatch",
            IntentIdMismatch => "intent_id_mismatch",
            PolicyNotIsolate => "policy_not_isolate",
            AuthorityClaimed => "authority_claimed",
            ResultTooLarge => "result_too_large",
            IntentBudgetExceeded => "intent_budget_exceeded",
            UnsupportedSchema => "unsupported_schema",
            CredentialLikeValue => "credential_like_value",
            EmptyValue => "empty_value",
            InputTooLarge => "input_too_large",
            SourceReceiptMismatch => "source_receipt_mismatch",
            CountMismatch => "count_mismatch",
        }
    }
}

/// One violation: `path` is an RFC 6901 JSON Pointer to the offending value
/// (for a missing member, where it would stand; `""` is the whole document).
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Debug, PartialEq, Eq, Hash)]
#[serde(deny_unknown_fields)]
#[ts(export)]
pub struct Violation {
    pub path: String,
    pub rule: Rule,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_codes_match_serde_names() {
        for rule in [Rule::UnknownField, Rule::CredentialLikeValue, Rule::IntentIdMismatch] {
            let json = serde_json::to_value(rule).unwrap();
            assert_eq!(json, serde_json::Value::String(rule.as_str().into()));
        }
    }
}
