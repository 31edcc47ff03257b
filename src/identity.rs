//! Content-derived identities of contract-v0 section 3.
//!
//! Each id is the lowercase hex SHA-256 of the RFC 8785 canonical form of a
//! domain-separated object, so any JCS implementation (the TypeScript provider
//! helper, a replaying journal) derives the same id from the same inputs, and
//! an id of one kind can never collide with another kind's.
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::canonical::{canonical_json, canonical_object, Member};

/// Domain of dispatch ids; part of the hashed object, never to change in v0.
pub const DISPATCH_DOMAIN: &str = "loopx_post_writeback_dispatch_v0";
/// Domain of intent ids; part of the hashed object, never to change in v0.
pub const INTENT_DOMAIN: &str = "loopx_post_writeback_intent_v0";
/// Prefix of dispatch ids, so an id says what it names.
pub const DISPATCH_ID_PREFIX: &str = "pwh_";
/// Prefix of intent ids.
pub const INTENT_ID_PREFIX: &str = "pwi_";

/// Lowercase hex SHA-256.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(64);
    push_sha256_hex(bytes, &mut out);
    out
}

/// sha256(JCS(registration)), lowercase hex, no prefix.
pub fn registration_digest(registration: &Value) -> String {
    sha256_hex(canonical_json(registration).as_bytes())
}

/// sha256(JCS(result)), lowercase hex: the journal compares a replayed
/// result with the recorded one by this digest.
pub fn result_digest(result: &Value) -> String {
    sha256_hex(canonical_json(result).as_bytes())
}

/// [`result_digest`] and the canonical text's byte length (the result-size
/// budget's measure), from one canonical serialization.
pub fn result_digest_and_len(result: &Value) -> (String, usize) {
    let canonical = canonical_json(result);
    (sha256_hex(canonical.as_bytes()), canonical.len())
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
pub fn dispatch_id(identity: &DispatchIdentity<'_>) -> String {
    let i = identity;
    prefixed_digest(
        DISPATCH_ID_PREFIX,
        &mut [
            ("domain", Member::Str(DISPATCH_DOMAIN)),
            ("receipt_id", Member::Str(i.receipt_id)),
            ("effect_id", Member::Str(i.effect_id)),
            ("hook_id", Member::Str(i.hook_id)),
            ("capability_id", Member::Str(i.capability_id)),
            ("registration_digest", Member::Str(i.registration_digest)),
            ("registration_schema_version", Member::Str(i.registration_schema_version)),
            ("event_kind", Member::Str(i.event_kind)),
        ],
    )
}

/// "pwi_" + sha256(JCS({domain, dispatch_id, intent_kind, policy_version, payload})).
///
/// The domain object is written as canonical text member by member, the
/// payload in place, so it is never cloned into a `Value`.
pub fn intent_id(dispatch_id: &str, intent_kind: &str, policy_version: &str, payload: &Value) -> String {
    prefixed_digest(
        INTENT_ID_PREFIX,
        &mut [
            ("domain", Member::Str(INTENT_DOMAIN)),
            ("dispatch_id", Member::Str(dispatch_id)),
            ("intent_kind", Member::Str(intent_kind)),
            ("policy_version", Member::Str(policy_version)),
            ("payload", Member::Json(payload)),
        ],
    )
}

fn prefixed_digest(prefix: &str, domain_object: &mut [(&str, Member<'_>)]) -> String {
    let mut out = String::with_capacity(prefix.len() + 64);
    out.push_str(prefix);
    push_sha256_hex(canonical_object(domain_object).as_bytes(), &mut out);
    out
}

/// sha2 0.11 returns a hybrid-array `Array`, which has no hex formatting of
/// its own; a lookup table avoids a `format!` per byte.
fn push_sha256_hex(bytes: &[u8], out: &mut String) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digest = Sha256::digest(bytes);
    for &b in digest.iter() {
        out.push(HEX[usize::from(b >> 4)] as char);
        out.push(HEX[usize::from(b & 0x0f)] as char);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// The RFC's section 6 example registration.
    fn rfc_registration() -> Value {
        serde_json::from_str(
            r#"{
  "schema_version": "loopx_post_writeback_capability_hook_registration_v0",
  "hook_id": "periodic_report.runtime_trigger",
  "capability_id": "periodic_report",
  "phase": "post_writeback",
  "event_kinds": ["todo_completed", "replan_recorded"],
  "intent_kinds": ["periodic_report.trigger_evaluation"],
  "requested_read_scope": ["settlement_identity", "bounded_event_projection"],
  "budget": {
    "max_invocations_per_dispatch": 1,
    "max_intents_per_dispatch": 1,
    "max_result_bytes": 16384,
    "timeout_ms": 1000
  },
  "failure_policy": "isolate"
}"#,
        )
        .unwrap()
    }

    /// Its canonical form, written by hand.
    const RFC_REGISTRATION_JCS: &str = concat!(
        r#"{"budget":{"max_intents_per_dispatch":1,"max_invocations_per_dispatch":1,"#,
        r#""max_result_bytes":16384,"timeout_ms":1000},"capability_id":"periodic_report","#,
        r#""event_kinds":["todo_completed","replan_recorded"],"failure_policy":"isolate","#,
        r#""hook_id":"periodic_report.runtime_trigger","#,
        r#""intent_kinds":["periodic_report.trigger_evaluation"],"phase":"post_writeback","#,
        r#""requested_read_scope":["settlement_identity","bounded_event_projection"],"#,
        r#""schema_version":"loopx_post_writeback_capability_hook_registration_v0"}"#,
    );

    fn sample_identity(registration_digest: &str) -> DispatchIdentity<'_> {
        DispatchIdentity {
            receipt_id: "receipt_opaque",
            effect_id: "effect_opaque",
            hook_id: "periodic_report.runtime_trigger",
            capability_id: "periodic_report",
            registration_digest,
            registration_schema_version: "loopx_post_writeback_capability_hook_registration_v0",
            event_kind: "todo_completed",
        }
    }

    fn assert_id_shape(id: &str, prefix: &str) {
        assert_eq!(id.len(), 68, "{id}");
        assert!(id.starts_with(prefix), "{id}");
        assert!(id[4..].bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')), "{id}");
    }

    #[test]
    fn sha256_known_vectors() {
        assert_eq!(sha256_hex(b""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        assert_eq!(sha256_hex(b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_eq!(
            sha256_hex(b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        );
    }

    #[test]
    fn registration_digest_is_sha_of_jcs() {
        let registration = rfc_registration();
        assert_eq!(canonical_json(&registration), RFC_REGISTRATION_JCS);
        let digest = registration_digest(&registration);
        assert_eq!(digest, sha256_hex(RFC_REGISTRATION_JCS.as_bytes()));
        // pinned independently (node crypto: sha256 of the literal above)
        assert_eq!(digest, "dfb1b5282c617cdae6f929a5ac037ffa96ae7ebac8dc1a5f80a8a15b888845b3");
        assert_eq!(result_digest(&registration), digest);
        let mut changed = registration.clone();
        changed["budget"]["timeout_ms"] = json!(1001);
        assert_ne!(registration_digest(&changed), digest);
    }

    /// Pins the domain string and every field name of the dispatch object.
    #[test]
    fn dispatch_id_of_rfc_example() {
        let reg_digest = registration_digest(&rfc_registration());
        let id = dispatch_id(&sample_identity(&reg_digest));
        let hand_written = format!(
            concat!(
                r#"{{"capability_id":"periodic_report","domain":"loopx_post_writeback_dispatch_v0","#,
                r#""effect_id":"effect_opaque","event_kind":"todo_completed","#,
                r#""hook_id":"periodic_report.runtime_trigger","receipt_id":"receipt_opaque","#,
                r#""registration_digest":"{}","#,
                r#""registration_schema_version":"loopx_post_writeback_capability_hook_registration_v0"}}"#,
            ),
            reg_digest
        );
        assert_eq!(id, format!("pwh_{}", sha256_hex(hand_written.as_bytes())));
        assert_eq!(id, "pwh_d0aa30c2cc1d71f3cab85d026a1b99be23b07d9b2e56645a854e076c8ece5037");
        assert_id_shape(&id, "pwh_");
    }

    /// Pins the domain string and every field name of the intent object.
    #[test]
    fn intent_id_of_rfc_example() {
        let dispatch = dispatch_id(&sample_identity(&registration_digest(&rfc_registration())));
        let payload = json!({"source_event_refs": ["event_opaque"], "segment_ref": "segment_opaque"});
        let id = intent_id(&dispatch, "periodic_report.trigger_evaluation", "weekly_v0", &payload);
        let hand_written = format!(
            concat!(
                r#"{{"dispatch_id":"{}","domain":"loopx_post_writeback_intent_v0","#,
                r#""intent_kind":"periodic_report.trigger_evaluation","#,
                r#""payload":{{"segment_ref":"segment_opaque","source_event_refs":["event_opaque"]}},"#,
                r#""policy_version":"weekly_v0"}}"#,
            ),
            dispatch
        );
        assert_eq!(id, format!("pwi_{}", sha256_hex(hand_written.as_bytes())));
        assert_eq!(id, "pwi_3a09bf882d12a9bc491bdee7e6b6d4ea2deded68427080816e4dbe29932910d0");
        assert_id_shape(&id, "pwi_");
    }

    #[test]
    fn dispatch_id_is_deterministic_and_sensitive_to_every_field() {
        let base = sample_identity("d0");
        let id = dispatch_id(&base);
        assert_id_shape(&id, "pwh_");
        assert_eq!(dispatch_id(&base), id);

        let variants = [
            DispatchIdentity { receipt_id: "receipt_other", ..base },
            DispatchIdentity { effect_id: "effect_other", ..base },
            DispatchIdentity { hook_id: "periodic_report.other", ..base },
            DispatchIdentity { capability_id: "other", ..base },
            DispatchIdentity { registration_digest: "d1", ..base },
            DispatchIdentity { registration_schema_version: "other_v0", ..base },
            DispatchIdentity { event_kind: "replan_recorded", ..base },
        ];
        let mut seen = std::collections::HashSet::from([id]);
        for variant in &variants {
            let other = dispatch_id(variant);
            assert_id_shape(&other, "pwh_");
            assert!(seen.insert(other), "{variant:?} collides");
        }
        // a value moved between two fields is a different identity
        let swapped = DispatchIdentity { receipt_id: base.effect_id, effect_id: base.receipt_id, ..base };
        assert!(seen.insert(dispatch_id(&swapped)));
    }

    #[test]
    fn intent_id_is_deterministic_and_sensitive_to_every_input() {
        let payload = json!({"segment_ref": "s1", "count": 3});
        let id = intent_id("pwh_x", "cap.kind", "v0", &payload);
        assert_id_shape(&id, "pwi_");
        assert_eq!(intent_id("pwh_x", "cap.kind", "v0", &payload), id);

        let others = [
            intent_id("pwh_y", "cap.kind", "v0", &payload),
            intent_id("pwh_x", "cap.other", "v0", &payload),
            intent_id("pwh_x", "cap.kind", "v1", &payload),
            intent_id("pwh_x", "cap.kind", "v0", &json!({"segment_ref": "s2", "count": 3})),
            intent_id("pwh_x", "cap.kind", "v0", &json!({"segment_ref": "s1", "count": 4})),
            intent_id("pwh_x", "cap.kind", "v0", &json!({"segment_ref": "s1"})),
            intent_id("pwh_x", "cap.kind", "v0", &json!({})),
        ];
        let mut seen = std::collections::HashSet::from([id]);
        for other in others {
            assert_id_shape(&other, "pwi_");
            assert!(seen.insert(other));
        }
    }

    #[test]
    fn intent_id_ignores_payload_key_order_and_number_spelling() {
        let a: Value = serde_json::from_str(r#"{"b": [1, {"y": true, "x": null}], "a": "r"}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{ "a" : "r", "b" : [ 1.0, { "x" : null, "y" : true } ] }"#).unwrap();
        assert_eq!(intent_id("pwh_x", "cap.kind", "v0", &a), intent_id("pwh_x", "cap.kind", "v0", &b));
        assert_eq!(result_digest(&a), result_digest(&b));
        let c: Value = serde_json::from_str(r#"{"é": "\u00e9\ud83d\ude00", "n": [1e21, -0.0, 0.1]}"#).unwrap();
        for v in [&a, &b, &c] {
            assert_eq!(result_digest_and_len(v), (result_digest(v), crate::canonical::canonical_len(v)));
        }
    }

    #[test]
    fn domains_separate_kinds() {
        // the same strings hashed as a dispatch and as an intent never coincide,
        // and neither equals a plain digest
        let reg = registration_digest(&json!({}));
        let d = dispatch_id(&sample_identity(&reg));
        let i = intent_id(&d, "periodic_report.trigger_evaluation", "weekly_v0", &json!({}));
        assert_ne!(&d[4..], &i[4..]);
        assert_ne!(&d[4..], reg);
    }
}
