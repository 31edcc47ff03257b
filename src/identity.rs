//! Content-derived identities of contract-v0 section 3. STUB: owned by the
//! canonical/identity helper.
use serde_json::Value;

/// Lowercase hex SHA-256.
pub fn sha256_hex(_bytes: &[u8]) -> String {
    String::new()
}

/// sha256(JCS(registration)), lowercase hex, no prefix.
pub fn registration_digest(_registration: &Value) -> String {
    String::new()
}

/// The inputs of a dispatch identity (contract-v0 section 3).
#[derive(Clone, Copy, Debug)]
pub struct DispatchIdentity<'a> {
    pub receipt_id: &'a str,
    pub effect_id: &'a str,
    pub hook_id: &'a str,
    pub capability_id: &'a str,
    pub registration_digest: &'a str,
    pub registration_schema_version: &'a str,
    pub event_kind: &'a str,
}

/// "pwh_" + sha256(JCS({domain, ...identity})).
pub fn dispatch_id(_identity: &DispatchIdentity<'_>) -> String {
    String::new()
}

/// "pwi_" + sha256(JCS({domain, dispatch_id, intent_kind, policy_version, payload})).
pub fn intent_id(_dispatch_id: &str, _intent_kind: &str, _policy_version: &str, _payload: &Value) -> String {
    String::new()
}
