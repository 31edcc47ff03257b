//! One test per rule of the shipped result: each names the pointer and rule
//! it expects, so it fails when its rule is removed.

use serde_json::{json, Value};

use super::{admitted, one, reg_rules, registration, result, result_rules, with, without};
use crate::dialect::shipped::turn_start::*;
use crate::validate::{Rule, Violation};

#[test]
fn results_of_every_status_are_admitted() {
    for status in ["not_applicable", "observed", "empty", "partial", "unavailable", "failed"] {
        let mut doc = result(status);
        if status == "not_applicable" || status == "empty" {
            doc["local_private_state_mutated"] = json!(false);
        }
        assert!(
            validate_result(&doc, Some(&admitted())).is_ok(),
            "{status}: {:?}",
            validate_result(&doc, Some(&admitted()))
        );
    }
}

#[test]
fn result_shape_and_identity() {
    assert_eq!(result_rules(&without(result("observed"), "/error_code")), one("/error_code", Rule::MissingField));
    assert_eq!(
        result_rules(&with(result("observed"), "/schema_version", json!("x"))),
        one("/schema_version", Rule::BadSchemaVersion)
    );
    assert_eq!(
        result_rules(&with(result("observed"), "/hook_id", json!("other.hook"))),
        one("/hook_id", Rule::HookMismatch)
    );
    assert_eq!(
        result_rules(&with(result("observed"), "/capability_id", json!("other-cap"))),
        one("/capability_id", Rule::CapabilityMismatch)
    );
    assert_eq!(result_rules(&with(result("observed"), "/status", json!("ok"))), one("/status", Rule::NotAllowedValue));
    assert_eq!(
        result_rules(&with(result("observed"), "/observation_count", json!(10_001))),
        one("/observation_count", Rule::OutOfRange)
    );
    assert_eq!(
        result_rules(&with(result("observed"), "/external_reads_performed", json!(1))),
        one("/external_reads_performed", Rule::WrongType)
    );
    assert_eq!(
        result_rules(&with(result("failed"), "/error_code", json!("Bad Code"))),
        one("/error_code", Rule::BadToken)
    );
}

#[test]
fn result_authority_is_the_registrations() {
    let unscoped = validate_registration(&with(registration(), "/requested_write_scope", json!([]))).unwrap();
    let rules = validate_result(&result("observed"), Some(&unscoped)).unwrap_err().into_vec();
    assert_eq!(rules, one("/local_private_state_mutated", Rule::AuthorityClaimed));
    let inbox_only = json!(["owner_private_inbox"]);
    let no_reaction = validate_registration(&with(registration(), "/requested_write_scope", inbox_only)).unwrap();
    let writes = with(result("observed"), "/external_writes_performed", json!(true));
    let rules = validate_result(&writes, Some(&no_reaction)).unwrap_err().into_vec();
    assert_eq!(rules, one("/external_writes_performed", Rule::AuthorityClaimed));
    assert!(validate_result(&writes, Some(&admitted())).is_ok());
}

/// Valid members cannot reach 1024 bytes (three tokens of at most 96 bytes
/// and fixed members), so the size bound is seen on a result that is also
/// over-long in one member: both are reported.
#[test]
fn a_result_past_its_budget_is_too_large() {
    let mut reg = registration();
    reg["budget"]["max_result_bytes"] = json!(1024);
    let reg = validate_registration(&reg).unwrap();
    let longest = with(result("failed"), "/error_code", json!(format!("c{}", "a".repeat(95))));
    assert!(validate_result(&longest, Some(&reg)).is_ok());
    let over = with(result("failed"), "/error_code", json!("a".repeat(1100)));
    let rules = validate_result(&over, Some(&reg)).unwrap_err().into_vec();
    assert_eq!(
        rules,
        vec![
            Violation { path: "/error_code".into(), rule: Rule::TooLong },
            Violation { path: String::new(), rule: Rule::ResultTooLarge },
        ]
    );
    assert_eq!(validate_result(&over, None).unwrap_err().into_vec(), one("/error_code", Rule::TooLong));
}

#[test]
fn private_content_is_never_returned() {
    for field in ["private_content_returned", "provider_payload_returned"] {
        let path = format!("/{field}");
        assert_eq!(result_rules(&with(result("observed"), &path, json!(true))), one(&path, Rule::NotAllowedValue));
    }
}

#[test]
fn status_observed_and_empty() {
    assert_eq!(
        result_rules(&with(result("observed"), "/observation_count", json!(0))),
        one("/observation_count", Rule::OutOfRange)
    );
    assert_eq!(
        result_rules(&with(result("observed"), "/error_code", json!("some_code"))),
        one("/error_code", Rule::NotAllowedValue)
    );
    assert_eq!(
        result_rules(&with(result("observed"), "/agent_read_required", json!(false))),
        one("/agent_read_required", Rule::NotAllowedValue)
    );
    let empty = with(result("empty"), "/local_private_state_mutated", json!(false));
    assert_eq!(
        result_rules(&with(empty.clone(), "/observation_count", json!(1))),
        one("/observation_count", Rule::OutOfRange)
    );
    assert_eq!(
        result_rules(&with(empty.clone(), "/error_code", json!("provider_contract_error"))),
        one("/error_code", Rule::NotAllowedValue)
    );
    assert_eq!(
        result_rules(&with(empty, "/agent_read_required", json!(true))),
        one("/agent_read_required", Rule::NotAllowedValue)
    );
}

#[test]
fn status_not_applicable_is_empty() {
    let base = result("not_applicable");
    assert_eq!(
        result_rules(&with(base.clone(), "/observation_count", json!(1))),
        one("/observation_count", Rule::OutOfRange)
    );
    for field in
        ["agent_read_required", "external_reads_performed", "external_writes_performed", "local_private_state_mutated"]
    {
        let path = format!("/{field}");
        assert_eq!(result_rules(&with(base.clone(), &path, json!(true))), one(&path, Rule::NotAllowedValue), "{field}");
    }
    assert_eq!(result_rules(&with(base, "/error_code", json!("some_code"))), one("/error_code", Rule::NotAllowedValue));
}

#[test]
fn failure_statuses_carry_a_code() {
    for status in ["partial", "unavailable", "failed"] {
        assert_eq!(
            result_rules(&with(result(status), "/error_code", Value::Null)),
            one("/error_code", Rule::NotAllowedValue),
            "{status}"
        );
    }
    assert_eq!(
        result_rules(&with(result("partial"), "/agent_read_required", json!(false))),
        one("/agent_read_required", Rule::NotAllowedValue)
    );
    let quiet_partial =
        with(with(result("partial"), "/observation_count", json!(0)), "/agent_read_required", json!(false));
    assert!(validate_result(&quiet_partial, Some(&admitted())).is_ok());
    for status in ["unavailable", "failed"] {
        assert_eq!(
            result_rules(&with(result(status), "/agent_read_required", json!(true))),
            one("/agent_read_required", Rule::NotAllowedValue),
            "{status}"
        );
    }
    // LoopX refuses provider_contract_error nowhere but on a status that takes no code.
    assert!(validate_result(
        &with(result("partial"), "/error_code", json!("provider_contract_error")),
        Some(&admitted())
    )
    .is_ok());
}

#[test]
fn a_read_requirement_needs_a_registered_route() {
    let routeless = validate_registration(&with(registration(), "/required_read", Value::Null)).unwrap();
    let rules = validate_result(&result("observed"), Some(&routeless)).unwrap_err().into_vec();
    assert_eq!(rules, one("/agent_read_required", Rule::NotAllowedValue));
    let v0 = without(
        with(registration(), "/schema_version", json!("loopx_turn_start_capability_hook_registration_v0")),
        "/required_read",
    );
    assert!(validate_result(&result("observed"), Some(&validate_registration(&v0).unwrap())).is_ok());
    assert!(validate_result(&result("observed"), None).is_ok());
}

#[test]
fn credentials_are_refused_in_every_string() {
    assert_eq!(
        reg_rules(&with(registration(), "/hook_id", json!("ghp_abcdef"))),
        one("/hook_id", Rule::CredentialLikeValue)
    );
    assert_eq!(
        result_rules(&with(result("failed"), "/error_code", json!("sk-live-abc"))),
        one("/error_code", Rule::CredentialLikeValue)
    );
}
