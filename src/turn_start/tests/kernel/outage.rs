//! "An outage does not drop the read obligation": when a provider throws,
//! times out, answers something that is not its receipt, or reports a
//! failure status itself, the kernel fails closed. It counts the inbox
//! store's durably pending messages itself (pending material preempts into
//! material review), or, with no store, reports the standing as unknown and
//! still projects the required read before work.

use std::path::PathBuf;

use super::*;
use crate::turn_start::inbox::{Attention, CaptureInput, CaptureSource, InboxOptions, InboxStore, Sender, SenderKind};

struct TempInbox {
    dir: PathBuf,
    store: Arc<InboxStore>,
}

impl TempInbox {
    fn new(name: &str) -> TempInbox {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
        let dir = std::env::temp_dir().join(format!("loopx-outage-{name}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let store = InboxStore::open(dir.join("inbox.sqlite"), InboxOptions::default()).unwrap();
        TempInbox { dir, store: Arc::new(store) }
    }

    fn capture(&self, id: &str) {
        self.store
            .capture(&CaptureInput {
                route_id: "route".into(),
                provider_message_id: id.into(),
                source: CaptureSource::TurnStart,
                sender: Sender { kind: SenderKind::Human, verified_identity: None },
                attention: Attention::Ordinary,
                payload: json!({"text": "steer"}),
            })
            .unwrap();
    }
}

impl Drop for TempInbox {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn provider_failure(status: &str) -> Value {
    let mut doc = receipt(status, &[("routes_ok", 0), ("routes_failed", 1)]);
    doc["error_code"] = json!(status);
    doc
}

fn outages() -> Vec<(&'static str, Answer)> {
    vec![
        ("threw", Answer::Throw),
        ("hung", Answer::Hang),
        ("not json", Answer::NotJson),
        ("not a receipt", Answer::Receipt(json!({"status": "ok"}))),
        ("reported unavailable", Answer::Receipt(provider_failure("provider_unavailable"))),
    ]
}

#[tokio::test]
async fn an_outage_does_not_drop_the_read_obligation_pending_count_from_the_inbox_store() {
    for (what, answer) in outages() {
        let inbox = TempInbox::new("pending");
        inbox.capture("m1");
        inbox.capture("m2");
        let f = Fixture::new();
        f.kernel.use_inbox(inbox.store.clone());
        f.add("alpha", "loopx inbox read", answer);
        let outcome = f.dispatch().await;
        let hook = &outcome.hooks[0];
        assert!(hook.receipt.status.failure_code().is_some(), "{what}");
        assert_eq!(hook.pending_standing, PendingStanding::InboxStore, "{what}");
        assert_eq!((hook.receipt.pending, hook.receipt.agent_read_required), (2, true), "{what}");
        // Still a valid public receipt: counts, booleans and codes only.
        let doc = serde_json::to_value(&hook.receipt).unwrap();
        assert_eq!(validate_turn_start_receipt(&doc).map(|_| ()), Ok(()), "{what}");
        assert_eq!(outcome.required_reads.len(), 2, "{what}: Agent and CLI");
        assert!(outcome.required_reads.iter().all(|r| r.ordering == ReadOrdering::BeforeWork));
        assert_eq!(
            outcome.lane,
            TurnStartLane {
                decision: TurnStartLaneDecision::PreemptMaterialReview,
                reason: TurnStartLaneReason::MaterialStillPending
            },
            "{what}: durably pending material preempts work"
        );
    }
}

#[tokio::test]
async fn an_outage_with_nothing_pending_in_the_inbox_store_requires_no_read() {
    let inbox = TempInbox::new("empty");
    let f = Fixture::new();
    f.kernel.use_inbox(inbox.store.clone());
    f.add("alpha", "loopx inbox read", Answer::Throw);
    let outcome = f.dispatch().await;
    assert_eq!(outcome.hooks[0].pending_standing, PendingStanding::InboxStore);
    assert_eq!((outcome.hooks[0].receipt.pending, outcome.hooks[0].receipt.agent_read_required), (0, false));
    assert!(outcome.required_reads.is_empty());
    assert_eq!(outcome.lane.reason, TurnStartLaneReason::NothingToRead);
}

#[tokio::test]
async fn an_outage_without_an_inbox_store_reports_the_standing_unknown_with_a_required_read() {
    for (what, answer) in outages() {
        let f = Fixture::new();
        f.add("alpha", "loopx inbox read", answer);
        f.add("beta", "loopx inbox read", Answer::Receipt(empty()));
        let outcome = f.dispatch().await;
        let (alpha, beta) = (&outcome.hooks[0], &outcome.hooks[1]);
        assert_eq!(alpha.pending_standing, PendingStanding::Unknown, "{what}");
        assert!(alpha.read_required(), "{what}");
        assert_eq!(beta.pending_standing, PendingStanding::Reported, "{what}");
        // The public receipt stays consistent (no read required with 0 pending);
        // the obligation is in the outcome: the read is projected before work.
        let doc = serde_json::to_value(&alpha.receipt).unwrap();
        assert_eq!(validate_turn_start_receipt(&doc).map(|_| ()), Ok(()), "{what}");
        let channels: Vec<_> = outcome.required_reads.iter().map(|r| (r.channel, r.command.as_str())).collect();
        assert_eq!(
            channels,
            [(InteractionChannel::Agent, "loopx inbox read"), (InteractionChannel::Cli, "loopx inbox read")],
            "{what}"
        );
        assert_eq!(
            outcome.lane,
            TurnStartLane {
                decision: TurnStartLaneDecision::NotifyKeepSelected,
                reason: TurnStartLaneReason::StandingUnknown
            },
            "{what}"
        );
    }
}

#[tokio::test]
async fn an_inbox_store_that_cannot_be_read_is_an_unknown_standing() {
    let inbox = TempInbox::new("closed");
    inbox.capture("m1");
    inbox.store.close();
    let f = Fixture::new();
    f.kernel.use_inbox(inbox.store.clone());
    f.add("alpha", "loopx inbox read", Answer::Throw);
    let outcome = f.dispatch().await;
    assert_eq!(outcome.hooks[0].pending_standing, PendingStanding::Unknown);
    assert_eq!(outcome.lane.reason, TurnStartLaneReason::StandingUnknown);
    assert_eq!(outcome.required_reads.len(), 2);
}

#[tokio::test]
async fn a_successful_hook_that_reports_less_than_the_inbox_holds_still_leaves_the_read() {
    let inbox = TempInbox::new("under");
    inbox.capture("m1");
    let f = Fixture::new();
    f.kernel.use_inbox(inbox.store.clone());
    f.add("alpha", "loopx inbox read", Answer::Receipt(empty()));
    let outcome = f.dispatch().await;
    assert_eq!(outcome.hooks[0].pending_standing, PendingStanding::InboxStore);
    assert_eq!(outcome.hooks[0].receipt.pending, 1);
    assert!(outcome.hooks[0].receipt.agent_read_required);
    assert_eq!(outcome.required_reads.len(), 2);
    assert_eq!(outcome.lane.reason, TurnStartLaneReason::MaterialStillPending);
}

#[tokio::test]
async fn a_successful_hook_keeps_its_reported_counts_when_the_inbox_holds_no_more() {
    let inbox = TempInbox::new("ok");
    let f = Fixture::new();
    f.kernel.use_inbox(inbox.store.clone());
    f.add("alpha", "loopx inbox read", Answer::Receipt(empty()));
    let outcome = f.dispatch().await;
    assert_eq!(outcome.hooks[0].pending_standing, PendingStanding::Reported);
    assert_eq!(outcome.hooks[0].receipt.pending, 0);
    assert!(outcome.required_reads.is_empty());
}
