//! The shipped turn-start on core's kernel: with core's inbox attached, a
//! LoopX provider that fails, times out or under-reports while pending
//! material is in the inbox still leaves the Agent its hook's read; counts
//! core can verify come from core; the document stays valid under LoopX's
//! rules (checked in `complete` under test) and the fail-closed read rides
//! on the object around it.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{json, Value};

use super::{registration, result, LARK_COMMAND};
use crate::dialect::shipped::turn_start::*;
use crate::provider_reply::ProviderReply;
use crate::turn_start::inbox::{Attention, CaptureInput, CaptureSource, InboxOptions, InboxStore, Sender, SenderKind};
use crate::turn_start::{PendingStanding, TurnStartCallResult, TurnStartLaneReason, TurnStartSession};

struct Inbox {
    dir: PathBuf,
    store: Arc<InboxStore>,
}

impl Drop for Inbox {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn capture(id: &str) -> CaptureInput {
    CaptureInput {
        route_id: "lark".into(),
        provider_message_id: id.into(),
        source: CaptureSource::TurnStart,
        sender: Sender { kind: SenderKind::Human, verified_identity: None },
        attention: Attention::Ordinary,
        payload: json!({"text": "private"}),
    }
}

/// An inbox holding one message that an earlier turn read and nobody acknowledged.
fn inbox_with_a_read_pending_message(name: &str) -> Inbox {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let dir = std::env::temp_dir().join(format!("loopx-shipped-ts-{name}-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let store = Arc::new(InboxStore::open(dir.join("inbox.sqlite"), InboxOptions::default()).unwrap());
    store.capture(&capture("m0")).unwrap();
    assert_eq!(store.record_first_reads("turn_0").unwrap().observations_new, 1);
    Inbox { dir, store }
}

fn reply(doc: Value) -> TurnStartCallResult {
    TurnStartCallResult::Reply(ProviderReply::Json(doc.to_string()))
}

type Provider = dyn Fn(Option<&TurnStartSession>) -> TurnStartCallResult;

/// One dispatch of the lark registration over `provider`, with `inbox` attached when given.
fn dispatch(inbox: Option<&Inbox>, provider: &Provider) -> ShippedTurnStartOutcome {
    let kernel = ShippedTurnStartKernel::new(None).unwrap();
    if let Some(inbox) = inbox {
        kernel.sessions().use_inbox(inbox.store.clone());
    }
    let run = kernel.prepare(&[registration()]);
    let answers = run
        .calls
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let answer = provider(c.session.as_ref().map(|(_, s)| s.as_ref()));
            kernel.end_call(&run, i);
            answer
        })
        .collect();
    kernel.complete(&run, answers)
}

fn read_commands(outcome: &ShippedTurnStartOutcome) -> Vec<(&str, ShippedReadBasis)> {
    outcome.required_reads.iter().map(|r| (r.command.as_str(), r.basis)).collect()
}

#[test]
fn no_failing_or_under_reporting_provider_leaves_the_agent_without_its_read() {
    let under_count: Box<Provider> = Box::new(|session| {
        let session = session.expect("a session");
        session.capture(&capture("m1")).unwrap();
        assert_eq!(session.record_first_reads("turn_1").unwrap().observations_new, 1);
        reply(result("empty"))
    });
    let providers: Vec<(&str, Box<Provider>)> = vec![
        ("throws", Box::new(|_| TurnStartCallResult::Reply(ProviderReply::Threw))),
        ("hangs", Box::new(|_| TurnStartCallResult::TimedOut)),
        ("failed", Box::new(|_| reply(result("failed")))),
        ("unavailable", Box::new(|_| reply(result("unavailable")))),
        ("empty", Box::new(|_| reply(result("empty")))),
        ("under-counts", under_count),
    ];
    for (name, provider) in providers {
        let inbox = inbox_with_a_read_pending_message(name);
        let outcome = dispatch(Some(&inbox), provider.as_ref());
        assert_eq!(read_commands(&outcome).len(), 1, "{name}: {outcome:?}");
        assert_eq!(outcome.required_reads[0].command, LARK_COMMAND, "{name}");
        assert_eq!(outcome.required_reads[0].hook_id, "lark_inbox.turn_start", "{name}");
        let hook = &outcome.hooks[0];
        assert!(hook.read_required, "{name}");
        assert!(hook.pending >= 1, "{name}");
        if name == "under-counts" {
            // Core's session counted the first read the result left out.
            assert_eq!(outcome.document.results[0].observation_count, 1);
            assert_eq!(outcome.required_reads[0].basis, ShippedReadBasis::Result);
        } else {
            assert_eq!(hook.pending_standing, PendingStanding::InboxStore, "{name}");
            assert_eq!(outcome.required_reads[0].basis, ShippedReadBasis::FailClosed, "{name}");
        }
        assert_ne!(outcome.lane.reason, TurnStartLaneReason::NothingToRead, "{name}");
    }
}

#[test]
fn a_failed_hook_keeps_loopx_document_and_carries_the_read_outside_it() {
    let inbox = inbox_with_a_read_pending_message("failed-doc");
    let outcome = dispatch(Some(&inbox), &|_| reply(result("unavailable")));
    // LoopX's rules: an unavailable result claims no read, so the document has none.
    assert!(outcome.document.required_reads.is_empty());
    assert!(!outcome.document.results[0].agent_read_required);
    assert_eq!(read_commands(&outcome), [(LARK_COMMAND, ShippedReadBasis::FailClosed)]);
    assert!(outcome.hooks[0].failed);
    assert_eq!(outcome.lane.reason, TurnStartLaneReason::MaterialStillPending);
}

#[test]
fn first_reads_core_counted_come_from_core_in_the_document() {
    let inbox = inbox_with_a_read_pending_message("counted");
    let outcome = dispatch(Some(&inbox), &|session| {
        let session = session.unwrap();
        session.capture(&capture("m1")).unwrap();
        session.capture(&capture("m2")).unwrap();
        session.record_first_reads("turn_1").unwrap();
        let mut doc = result("observed");
        doc["observation_count"] = json!(1);
        reply(doc)
    });
    let result = &outcome.document.results[0];
    assert_eq!((result.status, result.observation_count), (ShippedTurnStartStatus::Observed, 2));
    assert_eq!(read_commands(&outcome), [(LARK_COMMAND, ShippedReadBasis::Result)]);
    assert_eq!(outcome.document.required_reads.len(), 1);
    assert_eq!((outcome.hooks[0].observations_new, outcome.hooks[0].pending), (2, 3));
}

#[test]
fn a_failed_private_write_is_partial_in_the_document_never_observed() {
    let inbox = inbox_with_a_read_pending_message("write-failed");
    let store = inbox.store.clone();
    let outcome = dispatch(Some(&inbox), &move |session| {
        let session = session.unwrap();
        session.capture(&capture("m1")).unwrap();
        store.close();
        assert!(session.record_first_reads("turn_1").is_err());
        let mut doc = result("observed");
        doc["observation_count"] = json!(1);
        reply(doc)
    });
    let result = &outcome.document.results[0];
    assert_eq!(result.status, ShippedTurnStartStatus::Partial);
    assert_eq!(result.error_code.as_deref(), Some("private_receipt_failed"));
    assert_eq!(result.observation_count, 0, "nothing the store did not persist is claimed");
    // The store cannot be read any more: unknown, so the read stays required.
    assert_eq!(outcome.hooks[0].pending_standing, PendingStanding::Unknown);
    assert_eq!(read_commands(&outcome), [(LARK_COMMAND, ShippedReadBasis::FailClosed)]);
}

#[test]
fn without_an_inbox_a_failed_hook_is_an_unknown_standing_and_its_read_stays() {
    let outcome = dispatch(None, &|session| {
        assert!(session.is_none(), "no inbox, no session");
        TurnStartCallResult::Reply(ProviderReply::Threw)
    });
    assert_eq!(outcome.document.failures[0].error_code, ShippedTurnStartFailureCode::ProducerFailed);
    assert_eq!(read_commands(&outcome), [(LARK_COMMAND, ShippedReadBasis::FailClosed)]);
    assert_eq!(outcome.hooks[0].pending_standing, PendingStanding::Unknown);
    assert_eq!(outcome.lane.reason, TurnStartLaneReason::StandingUnknown);
}

#[test]
fn a_provider_that_reports_what_core_saw_gets_loopx_own_document() {
    let regs = [registration()];
    let plain = dispatch_v1(&regs, |_, _| reply(result("observed")));
    let inbox = inbox_with_a_read_pending_message("faithful");
    let outcome = dispatch(Some(&inbox), &|session| {
        let session = session.unwrap();
        session.read_route("lark").unwrap();
        session.capture(&capture("m1")).unwrap();
        session.capture(&capture("m2")).unwrap();
        session.record_first_reads("turn_1").unwrap();
        reply(result("observed"))
    });
    assert_eq!(outcome.document, plain);
    assert_eq!(read_commands(&outcome), [(LARK_COMMAND, ShippedReadBasis::Result)]);
}

#[test]
fn a_session_grants_only_the_registrations_write_scopes() {
    let inbox = inbox_with_a_read_pending_message("scopes");
    let kernel = ShippedTurnStartKernel::new(None).unwrap();
    kernel.sessions().use_inbox(inbox.store.clone());
    let mut doc = registration();
    doc["requested_write_scope"] = json!(["owner_private_inbox"]);
    let run = kernel.prepare(&[doc]);
    let (_, session) = run.calls[0].session.clone().unwrap();
    assert!(session.capture(&capture("m1")).is_ok());
    assert!(session.claim_cursor("lark", crate::turn_start::inbox::CursorKind::History, 1000).is_err());
    kernel.end_call(&run, 0);
    assert!(session.capture(&capture("m2")).is_err(), "closed with its call");
}

#[test]
fn the_call_limit_is_an_integer_up_to_thirty_seconds() {
    assert_eq!(ShippedTurnStartKernel::new(Some(250.0)).unwrap().call_limit_ms(), 250);
    assert_eq!(ShippedTurnStartKernel::new(None).unwrap().call_limit_ms(), CALL_LIMIT_MS);
    for bad in [0.0, -1.0, 1.5, 30_001.0, f64::NAN, f64::INFINITY] {
        assert!(ShippedTurnStartKernel::new(Some(bad)).is_none(), "{bad}");
    }
}

#[test]
fn a_hook_that_does_not_write_to_the_inbox_does_not_share_it() {
    let inbox = inbox_with_a_read_pending_message("not-shared");
    let kernel = ShippedTurnStartKernel::new(None).unwrap();
    kernel.sessions().use_inbox(inbox.store.clone());
    let mut doc = registration();
    doc["requested_write_scope"] = json!([]);
    let run = kernel.prepare(&[doc.clone()]);
    assert!(run.calls[0].session.is_none(), "no session for a hook with state of its own");
    // Its `empty` is taken as it came: the inbox's material is not its to read.
    let mut empty = result("empty");
    empty["local_private_state_mutated"] = json!(false);
    kernel.end_call(&run, 0);
    let outcome = kernel.complete(&run, vec![reply(empty)]);
    assert!(outcome.required_reads.is_empty(), "{outcome:?}");
    assert_eq!(outcome.hooks[0].pending_standing, PendingStanding::Reported);
    // When it fails, its standing is unknown (not the inbox's count), and its read stays.
    let run = kernel.prepare(&[doc]);
    kernel.end_call(&run, 0);
    let outcome = kernel.complete(&run, vec![TurnStartCallResult::Reply(ProviderReply::Threw)]);
    assert_eq!(outcome.hooks[0].pending_standing, PendingStanding::Unknown);
    assert_eq!(read_commands(&outcome), [(LARK_COMMAND, ShippedReadBasis::FailClosed)]);
}
