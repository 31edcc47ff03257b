//! Turn-start validator tests. Every case asserts the exact `(path, rule)`
//! list, so a missing or extra violation fails; each bound is tried just
//! inside and just outside.

use serde_json::{json, Value};

use super::*;

mod kernel;
use crate::validate::fixtures::{assert_one, assert_violations, with, without};
use crate::validate::Rule::*;
use crate::validate::Verdict;

fn registration() -> Value {
    json!({
        "schema_version": "loopx_turn_start_capability_hook_registration_v0",
        "hook_id": "team_inbox.turn_start_read",
        "capability_id": "team_inbox",
        "phase": "turn_start",
        "required_read": { "command": "loopx inbox read --pending" },
        "write_scopes": ["owner_private_inbox", "owner_private_cursor", "provider_message_reaction"],
        "budget": { "timeout_ms": 5000, "max_attempts_per_dispatch": 8, "max_routes": 4 },
        "failure_policy": "isolate"
    })
}

fn receipt() -> Value {
    json!({
        "schema_version": "loopx_turn_start_hook_receipt_v0",
        "hook_id": "team_inbox.turn_start_read",
        "status": "ok",
        "error_code": null,
        "agent_read_required": true,
        "observations_new": 2,
        "pending": 3,
        "direct_questions": 1,
        "verified_replies": 1,
        "routes_ok": 2,
        "routes_failed": 0,
        "reactions_added": 2,
        "external_writes_performed": 2
    })
}

fn reg(doc: Value) -> Verdict<TurnStartHookRegistration> {
    validate_turn_start_registration(&doc)
}

fn set_reg(pointer: &str, value: Value) -> Verdict<TurnStartHookRegistration> {
    reg(with(registration(), pointer, value))
}

fn rec(doc: Value) -> Verdict<TurnStartReceipt> {
    validate_turn_start_receipt(&doc)
}

/// The example receipt with several members replaced.
fn receipt_with(changes: &[(&str, Value)]) -> Value {
    changes.iter().fold(receipt(), |doc, (pointer, value)| with(doc, pointer, value.clone()))
}

fn set_rec(changes: &[(&str, Value)]) -> Verdict<TurnStartReceipt> {
    rec(receipt_with(changes))
}

fn empty_receipt() -> Value {
    receipt_with(&[
        ("/status", json!("empty")),
        ("/agent_read_required", json!(false)),
        ("/observations_new", json!(0)),
        ("/pending", json!(0)),
        ("/direct_questions", json!(0)),
        ("/verified_replies", json!(0)),
        ("/reactions_added", json!(0)),
        ("/external_writes_performed", json!(0)),
    ])
}

fn partial_receipt() -> Value {
    receipt_with(&[
        ("/status", json!("partial")),
        ("/error_code", json!("provider_unavailable")),
        ("/routes_failed", json!(1)),
    ])
}

fn failure_receipt(status: &str) -> Value {
    with(with(with(empty_receipt(), "/status", json!(status)), "/error_code", json!(status)), "/routes_ok", json!(0))
}

// ---------------------------------------------------------------- registration

#[test]
fn valid_registration_is_accepted() {
    let typed = reg(registration()).expect("example registration");
    assert_eq!(typed.phase, TurnStartPhase::TurnStart);
    assert_eq!(typed.required_read.command, "loopx inbox read --pending");
    assert_eq!(typed.write_scopes.len(), 3);
    assert_eq!(typed.budget, TurnStartBudget { timeout_ms: 5000, max_attempts_per_dispatch: 8, max_routes: 4 });
    // Only the inbox scope; integral floats are the integers they denote.
    assert!(set_reg("/write_scopes", json!(["owner_private_inbox"])).is_ok());
    let floats = with(registration(), "/budget/timeout_ms", json!(5000.0));
    assert_eq!(reg(floats).expect("integral float").budget.timeout_ms, 5000);
}

#[test]
fn registration_not_an_object() {
    assert_one(&reg(json!([])), "", WrongType);
    assert_one(&reg(json!("x")), "", WrongType);
}

#[test]
fn registration_exact_fields() {
    assert_one(&set_reg("/extra", json!(1)), "/extra", UnknownField);
    assert_one(&set_reg("/required_read/channel_hint", json!("agent")), "/required_read/channel_hint", UnknownField);
    assert_one(
        &set_reg("/budget/max_invocations_per_dispatch", json!(1)),
        "/budget/max_invocations_per_dispatch",
        UnknownField,
    );
    for field in [
        "schema_version",
        "hook_id",
        "capability_id",
        "phase",
        "required_read",
        "write_scopes",
        "budget",
        "failure_policy",
    ] {
        let path = format!("/{field}");
        assert_one(&reg(without(registration(), &path)), &path, MissingField);
    }
    assert_one(&reg(without(registration(), "/required_read/command")), "/required_read/command", MissingField);
    for field in ["timeout_ms", "max_attempts_per_dispatch", "max_routes"] {
        let path = format!("/budget/{field}");
        assert_one(&reg(without(registration(), &path)), &path, MissingField);
    }
}

#[test]
fn registration_schema_version_phase_and_policy() {
    assert_one(
        &set_reg("/schema_version", json!("loopx_post_writeback_capability_hook_registration_v0")),
        "/schema_version",
        BadSchemaVersion,
    );
    assert_one(&set_reg("/phase", json!("post_writeback")), "/phase", NotAllowedValue);
    assert_one(&set_reg("/phase", json!(1)), "/phase", WrongType);
    assert_one(&set_reg("/failure_policy", json!("retry")), "/failure_policy", PolicyNotIsolate);
    assert_one(&set_reg("/failure_policy", json!(null)), "/failure_policy", WrongType);
}

#[test]
fn registration_ids() {
    assert_one(&set_reg("/hook_id", json!("other.turn_start_read")), "/hook_id", CapabilityMismatch);
    assert_one(&set_reg("/hook_id", json!("team_inbox")), "/hook_id", CapabilityMismatch);
    assert_one(&set_reg("/hook_id", json!("Team.read")), "/hook_id", BadToken);
    // A bad capability_id is one violation, not one per owned name.
    assert_one(&set_reg("/capability_id", json!("Team")), "/capability_id", BadToken);
    let long_cap = "c".repeat(126);
    let ok = with(with(registration(), "/capability_id", json!(long_cap)), "/hook_id", json!(format!("{long_cap}.h")));
    assert!(reg(ok).is_ok(), "128-byte hook_id");
    let over =
        with(with(registration(), "/capability_id", json!(long_cap)), "/hook_id", json!(format!("{long_cap}.hh")));
    assert_one(&reg(over), "/hook_id", TooLong);
    assert_one(&set_reg("/hook_id", json!("ghp_secretvalue")), "/hook_id", CredentialLikeValue);
}

#[test]
fn command_grammar() {
    let path = "/required_read/command";
    for ok in ["loopx", "loopx inbox read --pending", "a0 --x=1 b:c d.e f-g h_i", "--flag", "9"] {
        assert!(set_reg(path, json!(ok)).is_ok(), "{ok}");
    }
    for bad in [
        "",
        " loopx",
        "loopx ",
        "loopx  inbox",
        "Loopx",
        "loopx /tmp",
        "loopx ~/x",
        "-x",
        "---x",
        "--",
        "loopx\tinbox",
        "loopx https://x.y",
        "a@b",
        "loopx 'quoted'",
        "loopx é",
    ] {
        assert_one(&set_reg(path, json!(bad)), path, BadToken);
    }
    assert_one(&set_reg(path, json!(["loopx"])), path, WrongType);
    // Credentials fit the word grammar; the credential check, on the command,
    // each word and each `=`/`:` part, comes first.
    for secret in
        ["sk-live", "ghp_abc", "loopx read sk-live", "loopx --token=ghp_abc", "loopx key:npm_x", "loopx --sk_test_1"]
    {
        assert_one(&set_reg(path, json!(secret)), path, CredentialLikeValue);
    }
    assert!(set_reg(path, json!("loopx read --skip=1 npm ghp")).is_ok());
}

#[test]
fn command_bounds() {
    let path = "/required_read/command";
    let words = |n: usize| vec!["w"; n].join(" ");
    assert!(set_reg(path, json!(words(16))).is_ok());
    assert_one(&set_reg(path, json!(words(17))), path, TooLong);
    // 256 bytes in 16 words is fine, 257 is not (whatever the word count).
    let word = "a".repeat(15); // 16 words of 15 bytes + 15 spaces = 255
    let at_255 = vec![word.as_str(); 16].join(" ");
    assert_eq!(at_255.len(), 255);
    let at_256 = format!("{at_255}b");
    assert!(set_reg(path, json!(at_256)).is_ok());
    assert_one(&set_reg(path, json!(format!("{at_256}c"))), path, TooLong);
    assert_one(&set_reg(path, json!("a".repeat(257))), path, TooLong);
    assert!(set_reg(path, json!("a".repeat(256))).is_ok());
    // Over-long and ungrammatical: the length is reported.
    assert_one(&set_reg(path, json!("A".repeat(257))), path, TooLong);
}

#[test]
fn write_scopes() {
    assert_one(&set_reg("/write_scopes", json!([])), "/write_scopes", TooFewItems);
    assert_violations(
        &set_reg(
            "/write_scopes",
            json!(["owner_private_inbox", "owner_private_cursor", "provider_message_reaction", "owner_private_inbox"]),
        ),
        &[("/write_scopes", TooManyItems), ("/write_scopes/3", DuplicateItem)],
    );
    assert_one(
        &set_reg("/write_scopes", json!(["owner_private_inbox", "owner_private_inbox"])),
        "/write_scopes/1",
        DuplicateItem,
    );
    assert_one(
        &set_reg("/write_scopes", json!(["owner_private_inbox", "repository"])),
        "/write_scopes/1",
        NotAllowedValue,
    );
    assert_one(
        &set_reg("/write_scopes", json!(["owner_private_inbox", "outbound_message"])),
        "/write_scopes/1",
        NotAllowedValue,
    );
    assert_one(&set_reg("/write_scopes", json!(["owner_private_inbox", 1])), "/write_scopes/1", WrongType);
    // The inbox scope is always declared.
    assert_one(&set_reg("/write_scopes", json!(["owner_private_cursor"])), "/write_scopes", NotAllowedValue);
    assert_one(
        &set_reg("/write_scopes", json!(["owner_private_cursor", "provider_message_reaction"])),
        "/write_scopes",
        NotAllowedValue,
    );
    // A misspelt inbox is one fault, reported at the item.
    assert_one(&set_reg("/write_scopes", json!(["owner_private_inbx"])), "/write_scopes/0", NotAllowedValue);
    assert_one(&set_reg("/write_scopes", json!("owner_private_inbox")), "/write_scopes", WrongType);
}

#[test]
fn budget_bounds() {
    for (field, max) in [("timeout_ms", 30000), ("max_attempts_per_dispatch", 16), ("max_routes", 16)] {
        let path = format!("/budget/{field}");
        assert!(set_reg(&path, json!(1)).is_ok(), "{field} 1");
        assert!(set_reg(&path, json!(max)).is_ok(), "{field} {max}");
        assert_one(&set_reg(&path, json!(0)), &path, OutOfRange);
        assert_one(&set_reg(&path, json!(max + 1)), &path, OutOfRange);
        assert_one(&set_reg(&path, json!(-1)), &path, OutOfRange);
        assert_one(&set_reg(&path, json!(1.5)), &path, WrongType);
        assert_one(&set_reg(&path, json!("1")), &path, WrongType);
    }
    assert_one(&set_reg("/budget", json!([])), "/budget", WrongType);
}

#[test]
fn registration_reports_every_violation() {
    let doc = json!({
        "schema_version": "v0",
        "hook_id": "x.y",
        "capability_id": "team_inbox",
        "phase": "turn_end",
        "required_read": { "command": "cat /etc/passwd" },
        "write_scopes": ["owner_private_cursor", "owner_private_cursor"],
        "budget": { "timeout_ms": 0, "max_attempts_per_dispatch": 17, "max_routes": 0, "x": 1 },
        "failure_policy": "retry",
        "extra": true
    });
    assert_violations(
        &reg(doc),
        &[
            ("/schema_version", BadSchemaVersion),
            ("/hook_id", CapabilityMismatch),
            ("/phase", NotAllowedValue),
            ("/required_read/command", BadToken),
            ("/write_scopes/1", DuplicateItem),
            ("/write_scopes", NotAllowedValue),
            ("/budget/x", UnknownField),
            ("/budget/timeout_ms", OutOfRange),
            ("/budget/max_attempts_per_dispatch", OutOfRange),
            ("/budget/max_routes", OutOfRange),
            ("/failure_policy", PolicyNotIsolate),
            ("/extra", UnknownField),
        ],
    );
}

// ---------------------------------------------------------------- receipt

#[test]
fn valid_receipts_are_accepted() {
    let ok = rec(receipt()).expect("ok receipt");
    assert_eq!((ok.status, ok.error_code, ok.observations_new, ok.pending), (TurnStartStatus::Ok, None, 2, 3));
    assert!(rec(empty_receipt()).is_ok());
    // Empty with durably pending material from an earlier turn, to be read again.
    assert!(rec(with(with(empty_receipt(), "/pending", json!(4)), "/agent_read_required", json!(true))).is_ok());
    // Empty may retry reactions from durable pending reads.
    let retried = receipt_with(&[
        ("/status", json!("empty")),
        ("/observations_new", json!(0)),
        ("/direct_questions", json!(0)),
        ("/verified_replies", json!(0)),
    ]);
    assert!(rec(retried).is_ok());
    let partial = rec(partial_receipt()).expect("partial receipt");
    assert_eq!(partial.error_code, Some(TurnStartErrorCode::ProviderUnavailable));
    assert!(rec(with(partial_receipt(), "/observations_new", json!(0))).is_err()); // direct_questions 1 > 0
    for code in ["reaction_failed", "private_receipt_failed", "attempt_budget_exhausted"] {
        let step = receipt_with(&[
            ("/status", json!("partial")),
            ("/error_code", json!(code)),
            ("/reactions_added", json!(1)),
        ]);
        assert!(rec(step).is_ok(), "{code}");
    }
    for status in ["provider_contract_error", "provider_permission_denied", "provider_unavailable", "timed_out"] {
        let failed = rec(failure_receipt(status)).expect(status);
        assert_eq!(failed.error_code.map(|c| c.as_str()), Some(status));
        // A failed dispatch keeps reporting durably pending material.
        assert!(
            rec(with(with(failure_receipt(status), "/pending", json!(2)), "/agent_read_required", json!(true))).is_ok()
        );
        assert!(rec(with(failure_receipt(status), "/routes_failed", json!(3))).is_ok());
    }
    // Integral floats are integers.
    assert_eq!(rec(with(receipt(), "/pending", json!(3.0))).expect("float").pending, 3);
}

#[test]
fn receipt_exact_fields() {
    assert_one(&rec(json!(null)), "", WrongType);
    assert_one(&rec(with(receipt(), "/message", json!("hello"))), "/message", UnknownField);
    assert_one(&rec(with(receipt(), "/cursor", json!("abc"))), "/cursor", UnknownField);
    assert_one(
        &rec(with(receipt(), "/external_write_performed", json!(false))),
        "/external_write_performed",
        UnknownField,
    );
    for field in [
        "schema_version",
        "hook_id",
        "status",
        "error_code",
        "agent_read_required",
        "observations_new",
        "pending",
        "direct_questions",
        "verified_replies",
        "routes_ok",
        "routes_failed",
        "reactions_added",
        "external_writes_performed",
    ] {
        let path = format!("/{field}");
        assert_one(&rec(without(receipt(), &path)), &path, MissingField);
    }
}

#[test]
fn receipt_grammar_and_sets() {
    assert_one(
        &set_rec(&[("/schema_version", json!("loopx_post_writeback_dispatch_receipt_v0"))]),
        "/schema_version",
        BadSchemaVersion,
    );
    assert_one(&set_rec(&[("/hook_id", json!("Team"))]), "/hook_id", BadToken);
    assert_one(&set_rec(&[("/hook_id", json!("xoxb-1"))]), "/hook_id", CredentialLikeValue);
    assert_one(&set_rec(&[("/status", json!("success"))]), "/status", NotAllowedValue);
    assert_one(&set_rec(&[("/status", json!(null))]), "/status", WrongType);
    assert_one(&set_rec(&[("/error_code", json!("crashed"))]), "/error_code", NotAllowedValue);
    assert_one(&set_rec(&[("/error_code", json!(7))]), "/error_code", WrongType);
    assert_one(&set_rec(&[("/agent_read_required", json!("true"))]), "/agent_read_required", WrongType);
    assert_one(&set_rec(&[("/agent_read_required", json!(null))]), "/agent_read_required", WrongType);
}

#[test]
fn count_bounds() {
    let message = ["observations_new", "pending", "direct_questions", "verified_replies"];
    for field in message.iter().chain(&["routes_ok", "routes_failed", "reactions_added", "external_writes_performed"]) {
        let path = format!("/{field}");
        assert_one(&set_rec(&[(&path, json!(-1))]), &path, OutOfRange);
        assert_one(&set_rec(&[(&path, json!(0.5))]), &path, WrongType);
        assert_one(&set_rec(&[(&path, json!("1"))]), &path, WrongType);
        assert_one(&set_rec(&[(&path, json!(null))]), &path, WrongType);
    }
    // Message counts: u32.
    let max = u64::from(u32::MAX);
    let big = [
        ("/observations_new", json!(max)),
        ("/pending", json!(max)),
        ("/direct_questions", json!(max)),
        ("/verified_replies", json!(max)),
    ];
    assert!(set_rec(&big).is_ok());
    let bigger: Vec<(&str, Value)> = big.iter().map(|(p, _)| (*p, json!(max + 1))).collect();
    assert_violations(
        &set_rec(&bigger),
        &[
            ("/observations_new", OutOfRange),
            ("/pending", OutOfRange),
            ("/direct_questions", OutOfRange),
            ("/verified_replies", OutOfRange),
        ],
    );
    // Routes: 16 each and in total.
    assert!(set_rec(&[("/routes_ok", json!(16))]).is_ok());
    assert_one(&set_rec(&[("/routes_ok", json!(17))]), "/routes_ok", OutOfRange);
    let p = partial_receipt();
    assert!(rec(with(with(p.clone(), "/routes_ok", json!(15)), "/routes_failed", json!(1))).is_ok());
    assert_one(
        &rec(with(with(p.clone(), "/routes_ok", json!(15)), "/routes_failed", json!(2))),
        "/routes_failed",
        OutOfRange,
    );
    assert_one(&rec(with(with(p, "/routes_ok", json!(1)), "/routes_failed", json!(17))), "/routes_failed", OutOfRange);
    // External writes: no contract ceiling but u32 ("writes are never hidden": a
    // reply that claims writes past its budget is published with them; the
    // kernel holds it against its registration's budget).
    let writes = |n: u64| set_rec(&[("/reactions_added", json!(n)), ("/external_writes_performed", json!(n))]);
    assert!(writes(16).is_ok() && writes(17).is_ok() && writes(max).is_ok());
    assert_violations(
        &writes(max + 1),
        &[("/reactions_added", OutOfRange), ("/external_writes_performed", OutOfRange)],
    );
}

#[test]
fn read_obligation() {
    // observations_new > 0 requires agent_read_required (contract-v0 section 6).
    assert_one(&set_rec(&[("/agent_read_required", json!(false))]), "/agent_read_required", NotAllowedValue);
    let one = [("/observations_new", json!(1)), ("/direct_questions", json!(0)), ("/verified_replies", json!(0))];
    assert!(set_rec(&one).is_ok());
    let mut unread = one.to_vec();
    unread.push(("/agent_read_required", json!(false)));
    assert_one(&set_rec(&unread), "/agent_read_required", NotAllowedValue);
    // Nothing pending, nothing to read.
    assert_one(
        &rec(with(empty_receipt(), "/agent_read_required", json!(true))),
        "/agent_read_required",
        NotAllowedValue,
    );
    // Partial success keeps the accepted observations' read obligation.
    assert_one(
        &rec(with(partial_receipt(), "/agent_read_required", json!(false))),
        "/agent_read_required",
        NotAllowedValue,
    );
    // Pending material needs the read flag too: "If the material remains durably
    // pending on the next turn, the existing material-review lane preempts work"
    // and the Agent reads it there, so a receipt that reports pending material
    // without the read would preempt with no required read projected.
    let quiet = [("/observations_new", json!(0)), ("/direct_questions", json!(0)), ("/verified_replies", json!(0))];
    let mut pending = quiet.to_vec();
    pending.extend([("/status", json!("empty")), ("/pending", json!(3)), ("/agent_read_required", json!(false))]);
    assert_one(&set_rec(&pending), "/agent_read_required", NotAllowedValue);
    let mut partial = quiet.to_vec();
    partial.extend([
        ("/status", json!("partial")),
        ("/error_code", json!("provider_unavailable")),
        ("/routes_failed", json!(1)),
        ("/pending", json!(2)),
        ("/agent_read_required", json!(false)),
    ]);
    assert_one(&set_rec(&partial), "/agent_read_required", NotAllowedValue);
    // A failure status stays typed ("provider permission and availability
    // failures remain typed and isolated"): core recounts its pending material.
    let f = with(with(failure_receipt("timed_out"), "/pending", json!(2)), "/agent_read_required", json!(false));
    assert!(rec(f).is_ok());
}

#[test]
fn count_relations() {
    // New observations are pending (just inside, just outside).
    assert!(set_rec(&[("/pending", json!(2))]).is_ok());
    assert_one(&set_rec(&[("/pending", json!(1))]), "/observations_new", OutOfRange);
    assert!(set_rec(&[("/direct_questions", json!(2)), ("/verified_replies", json!(2))]).is_ok());
    assert_one(&set_rec(&[("/direct_questions", json!(3))]), "/direct_questions", OutOfRange);
    assert_one(&set_rec(&[("/verified_replies", json!(3))]), "/verified_replies", OutOfRange);
    assert!(set_rec(&[("/reactions_added", json!(1))]).is_ok());
    assert_one(&set_rec(&[("/reactions_added", json!(3))]), "/reactions_added", OutOfRange);
    // A write that did not add a reaction (uncertain) is still counted.
    assert!(set_rec(&[("/reactions_added", json!(0)), ("/external_writes_performed", json!(1))]).is_ok());
}

#[test]
fn ok_and_empty_rules() {
    assert_one(&set_rec(&[("/error_code", json!("provider_unavailable"))]), "/error_code", NotAllowedValue);
    assert_one(&set_rec(&[("/routes_failed", json!(1))]), "/routes_failed", OutOfRange);
    assert_one(&set_rec(&[("/routes_ok", json!(0))]), "/routes_ok", OutOfRange);
    // ok with no new observation is empty's business.
    let zero = [("/observations_new", json!(0)), ("/direct_questions", json!(0)), ("/verified_replies", json!(0))];
    assert_one(&set_rec(&zero), "/observations_new", OutOfRange);
    // empty never hides observations, failures or error codes.
    assert_violations(&rec(with(receipt(), "/status", json!("empty"))), &[("/observations_new", OutOfRange)]);
    assert_one(
        &rec(with(empty_receipt(), "/error_code", json!("provider_contract_error"))),
        "/error_code",
        NotAllowedValue,
    );
    assert_one(&rec(with(empty_receipt(), "/routes_failed", json!(1))), "/routes_failed", OutOfRange);
    assert_one(&rec(with(empty_receipt(), "/routes_ok", json!(0))), "/routes_ok", OutOfRange);
}

#[test]
fn partial_rules() {
    assert_one(&rec(with(partial_receipt(), "/error_code", json!(null))), "/error_code", NotAllowedValue);
    assert_one(&rec(with(partial_receipt(), "/routes_ok", json!(0))), "/routes_ok", OutOfRange);
    // A route code needs a failed route ...
    for code in ["provider_contract_error", "provider_permission_denied", "provider_unavailable", "timed_out"] {
        let p = with(partial_receipt(), "/error_code", json!(code));
        assert!(rec(p.clone()).is_ok(), "{code}");
        assert_one(&rec(with(p, "/routes_failed", json!(0))), "/routes_failed", OutOfRange);
    }
    // ... and failed routes need a route code.
    for code in ["reaction_failed", "private_receipt_failed", "attempt_budget_exhausted"] {
        assert_one(&rec(with(partial_receipt(), "/error_code", json!(code))), "/error_code", NotAllowedValue);
    }
    // Partial with no new observation is still partial, never empty.
    let quiet = receipt_with(&[
        ("/status", json!("partial")),
        ("/error_code", json!("provider_permission_denied")),
        ("/routes_failed", json!(1)),
        ("/agent_read_required", json!(false)),
        ("/observations_new", json!(0)),
        ("/pending", json!(0)),
        ("/direct_questions", json!(0)),
        ("/verified_replies", json!(0)),
    ]);
    assert!(rec(quiet).is_ok());
}

#[test]
fn failure_status_rules() {
    for status in ["provider_contract_error", "provider_permission_denied", "provider_unavailable", "timed_out"] {
        let f = failure_receipt(status);
        assert_one(&rec(with(f.clone(), "/error_code", json!(null))), "/error_code", NotAllowedValue);
        let other = if status == "timed_out" { "provider_unavailable" } else { "timed_out" };
        assert_one(&rec(with(f.clone(), "/error_code", json!(other))), "/error_code", NotAllowedValue);
        assert_one(&rec(with(f.clone(), "/error_code", json!("reaction_failed"))), "/error_code", NotAllowedValue);
        assert_one(&rec(with(f.clone(), "/routes_ok", json!(1))), "/routes_ok", OutOfRange);
        let observed = with(
            with(with(f, "/observations_new", json!(1)), "/pending", json!(1)),
            "/agent_read_required",
            json!(true),
        );
        // First reads a dispatch made before it failed are spent; its receipt
        // reports them (core's failure receipt carries its session's count).
        assert!(rec(observed).is_ok(), "{status}");
    }
}

#[test]
fn receipt_reports_every_violation() {
    let doc = json!({
        "schema_version": "loopx_turn_start_hook_receipt_v0",
        "hook_id": "team_inbox.turn_start_read",
        "status": "empty",
        "error_code": "reaction_failed",
        "agent_read_required": false,
        "observations_new": 3,
        "pending": 1,
        "direct_questions": 4,
        "verified_replies": 0,
        "routes_ok": 0,
        "routes_failed": 2,
        "reactions_added": 2,
        "external_writes_performed": 1,
        "body": "hi"
    });
    assert_violations(
        &rec(doc),
        &[
            ("/body", UnknownField),
            ("/agent_read_required", NotAllowedValue),
            ("/observations_new", OutOfRange),
            ("/observations_new", OutOfRange),
            ("/direct_questions", OutOfRange),
            ("/reactions_added", OutOfRange),
            ("/routes_ok", OutOfRange),
            ("/routes_failed", OutOfRange),
            ("/error_code", NotAllowedValue),
        ],
    );
}

#[test]
fn error_code_sets() {
    assert!(TurnStartStatus::ALL.iter().all(|s| TurnStartStatus::parse(s.as_str()) == Some(*s)));
    for status in TurnStartStatus::ALL {
        if let Some(code) = status.failure_code() {
            assert_eq!(code.as_str(), status.as_str());
            assert!(code.names_routes());
        }
    }
    let route_codes: Vec<_> = TurnStartErrorCode::ALL.iter().filter(|c| c.names_routes()).map(|c| c.as_str()).collect();
    assert_eq!(
        route_codes,
        ["provider_contract_error", "provider_permission_denied", "provider_unavailable", "timed_out"]
    );
}
