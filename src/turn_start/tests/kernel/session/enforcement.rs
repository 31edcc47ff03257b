//! Turn-start enforcement: core's session is the source of truth for what it
//! saw, a session ends with its call, the lane is decided per message from
//! the inbox's own standing, and failures and writes are never turned into
//! success or zero. Each test quotes the RFC sentence it holds. Every receipt
//! these dispatches publish also passes core's validator (checked in
//! `complete` under test).

use std::time::Duration;

use super::*;

/// A hook body: its own session, the sessions the dispatch's earlier hooks
/// were given (kept after their calls ended), and what it answers.
type HookBody = dyn Fn(&TurnStartSession, &[Arc<TurnStartSession>]) -> Value + Send + Sync;

struct HookProvider {
    kernel: Arc<TurnStartKernel>,
    body: Box<HookBody>,
    /// Answer only after the hook's timeout has run out.
    hang: bool,
    seen: Arc<Mutex<Vec<Arc<TurnStartSession>>>>,
}

impl TurnStartProvider for HookProvider {
    fn invoke(&self, input_json: String) -> ReplyFuture {
        let input: TurnStartHookInput = serde_json::from_str(&input_json).unwrap();
        let session = self.kernel.session(&input.session.expect("a session")).expect("open during its call");
        let earlier = self.seen.lock().unwrap().clone();
        self.seen.lock().unwrap().push(session.clone());
        let mut doc = (self.body)(&session, &earlier);
        doc["hook_id"] = json!(input.hook_id);
        let hang = self.hang;
        Box::pin(async move {
            if hang {
                tokio::time::sleep(Duration::from_secs(3600)).await;
            }
            ProviderReply::Json(doc.to_string())
        })
    }
}

struct Inbox {
    _dir: Temp,
    store: Arc<InboxStore>,
    kernel: Arc<TurnStartKernel>,
    seen: Arc<Mutex<Vec<Arc<TurnStartSession>>>>,
}

fn inbox(name: &str) -> Inbox {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let dir = std::env::temp_dir().join(format!("loopx-enforce-{name}-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let store = Arc::new(InboxStore::open(dir.join("inbox.sqlite"), InboxOptions::default()).unwrap());
    let kernel = Arc::new(TurnStartKernel::new(TurnStartProfile { enabled: true, allowlist: None }));
    kernel.use_inbox(store.clone());
    Inbox { _dir: Temp(dir), store, kernel, seen: Arc::new(Mutex::new(Vec::new())) }
}

impl Inbox {
    fn hook(&self, capability: &str, budget: Value, hang: bool, body: Box<HookBody>) {
        let provider = Arc::new(HookProvider { kernel: self.kernel.clone(), body, hang, seen: self.seen.clone() });
        let mut doc = registration(capability, &format!("loopx inbox read --{capability}"));
        doc["write_scopes"] = all_scopes();
        doc["budget"] = budget;
        self.kernel.register(&doc, provider).expect("valid registration");
    }

    async fn dispatch(&self) -> TurnStartOutcome {
        self.seen.lock().unwrap().clear();
        self.kernel.dispatch(&request()).await
    }
}

fn human(id: &str, attention: Attention) -> CaptureInput {
    CaptureInput { attention, ..capture_input(id, CaptureSource::TurnStart) }
}

fn lane(decision: TurnStartLaneDecision, reason: TurnStartLaneReason) -> TurnStartLane {
    TurnStartLane { decision, reason }
}

/// "empty means a valid provider success envelope was read and no pending
/// message received its first Agent-owned turn-start read in this dispatch"
/// and "A direct question or verified reply still preempts on its first turn."
#[tokio::test]
async fn a_first_read_core_recorded_is_not_erased_by_an_empty_receipt() {
    let s = inbox("erased");
    s.hook(
        "alpha",
        budget(4, 2),
        false,
        Box::new(|session, _| {
            session.capture(&human("q1", Attention::DirectQuestion)).unwrap();
            assert_eq!(session.record_first_reads("turn_1").unwrap().observations_new, 1);
            empty()
        }),
    );
    let outcome = s.dispatch().await;
    let r = &outcome.hooks[0].receipt;
    assert_eq!((r.status, r.error_code), (TurnStartStatus::Ok, None));
    assert_eq!((r.observations_new, r.direct_questions, r.pending, r.agent_read_required), (1, 1, 1, true));
    assert_eq!(outcome.required_reads.len(), 2, "the read is projected into the agent and cli channels");
    assert_eq!(outcome.lane, lane(TurnStartLaneDecision::PreemptMaterialReview, TurnStartLaneReason::DirectQuestion));
}

/// A session "lives exactly as long as the call": after hook A timed out, its
/// session refuses everything while hook B of the same dispatch still runs,
/// so no reaction can be created after the timeout.
#[tokio::test]
async fn a_timed_out_hooks_session_is_closed_while_the_dispatch_runs_on() {
    let s = inbox("timeout");
    s.store.capture(&human("m1", Attention::Ordinary)).unwrap();
    s.store.record_first_reads("turn_0").unwrap();
    let mut fast = budget(4, 2);
    fast["timeout_ms"] = json!(50);
    s.hook("alpha", fast, true, Box::new(|_, _| empty()));
    let refused = Arc::new(Mutex::new(Vec::new()));
    let out = refused.clone();
    s.hook(
        "beta",
        budget(4, 2),
        false,
        Box::new(move |_, earlier| {
            let a = &earlier[0];
            out.lock().unwrap().extend([
                a.capture(&human("late", Attention::Ordinary)).err(),
                a.read_route("route").err(),
                a.begin_reaction(&msg("m1")).err(),
                a.record_first_reads("turn_late").err(),
            ]);
            empty()
        }),
    );
    let outcome = s.dispatch().await;
    assert_eq!(outcome.hooks[0].receipt.status, TurnStartStatus::TimedOut);
    assert_eq!(*refused.lock().unwrap(), vec![Some(SessionError::Closed); 4]);
    assert!(!s.store.contains(&msg("late")).unwrap(), "nothing captured after the timeout");
    assert_eq!(s.store.begin_reaction(&msg("m1")).unwrap(), ReactionBegin::Proceed, "no attempt was recorded");
}

/// "A fresh ordinary material read emits a non-blocking user notification
/// while preserving the already selected work lane. If the material remains
/// durably pending on the next turn, the existing material-review lane
/// preempts": per message, not one hook's fresh message counted as another's
/// pending material.
#[tokio::test]
async fn two_hooks_on_one_inbox_keep_the_lane_for_fresh_ordinary_reads() {
    let s = inbox("two");
    for (capability, id) in [("alpha", "a1"), ("beta", "b1")] {
        s.hook(
            capability,
            budget(4, 2),
            false,
            Box::new(move |session, _| {
                session.capture(&human(id, Attention::Ordinary)).unwrap();
                let reads = session.record_first_reads("turn_1").unwrap();
                let status = if reads.observations_new > 0 { "ok" } else { "empty" };
                let mut doc =
                    receipt(status, &[("observations_new", reads.observations_new), ("pending", reads.pending)]);
                doc["agent_read_required"] = json!(true);
                doc
            }),
        );
    }
    let first = s.dispatch().await;
    assert_eq!(first.lane, lane(TurnStartLaneDecision::NotifyKeepSelected, TurnStartLaneReason::FreshOrdinaryRead));
    // The next turn: both still pending, nothing new (each capture collapses).
    let second = s.dispatch().await;
    assert_eq!(
        second.lane,
        lane(TurnStartLaneDecision::PreemptMaterialReview, TurnStartLaneReason::MaterialStillPending)
    );
    assert!(second.hooks.iter().all(|h| h.receipt.status == TurnStartStatus::Empty && h.receipt.pending == 2));
}

/// "provider or private-receipt failure is partial, never a false success":
/// a reaction the session admitted and saw fail, or never saw finish.
#[tokio::test]
async fn a_failed_or_unfinished_reaction_is_partial_never_ok() {
    for (name, result) in [("failed", Some(ReactionResult::Failed)), ("unfinished", None)] {
        let s = inbox(name);
        s.hook(
            "alpha",
            budget(4, 2),
            false,
            Box::new(move |session, _| {
                session.capture(&human("m1", Attention::Ordinary)).unwrap();
                session.record_first_reads("turn_1").unwrap();
                assert_eq!(session.begin_reaction(&msg("m1")).unwrap(), ReactionBegin::Proceed);
                if let Some(result) = result {
                    session.finish_reaction(&msg("m1"), result).unwrap();
                }
                let mut doc = fresh(1);
                doc["external_writes_performed"] = json!(1);
                doc
            }),
        );
        let r = s.dispatch().await.hooks[0].receipt.clone();
        assert_eq!((r.status, r.error_code), (TurnStartStatus::Partial, Some(TurnStartErrorCode::ReactionFailed)));
        assert_eq!((r.observations_new, r.agent_read_required, r.external_writes_performed), (1, true, 1));
    }
}

/// "Replay is bounded by one aggregate per-dispatch attempt budget ... every
/// pending read remains eligible across routes and messages": with one
/// attempt per dispatch and five candidates asked, a failing backlog of ten
/// is attempted whole within ten dispatches.
#[tokio::test]
async fn the_round_robin_advances_only_past_messages_actually_attempted() {
    let s = inbox("cursor");
    for i in 0..10 {
        s.store.capture(&human(&format!("m{i}"), Attention::Ordinary)).unwrap();
    }
    s.store.record_first_reads("turn_0").unwrap();
    let attempted = Arc::new(Mutex::new(Vec::new()));
    let log = attempted.clone();
    s.hook(
        "alpha",
        budget(1, 2),
        false,
        Box::new(move |session, _| {
            for m in session.reaction_candidates("collector", 5).unwrap() {
                match session.begin_reaction(&m) {
                    Ok(ReactionBegin::Proceed) => {
                        session.finish_reaction(&m, ReactionResult::Failed).unwrap();
                        log.lock().unwrap().push(m.provider_message_id);
                    }
                    Err(SessionError::BudgetExhausted(_)) => break,
                    other => panic!("{other:?}"),
                }
            }
            let mut doc = receipt("empty", &[("pending", 10), ("external_writes_performed", 1)]);
            doc["agent_read_required"] = json!(true);
            doc
        }),
    );
    for _ in 0..10 {
        let r = s.dispatch().await.hooks[0].receipt.clone();
        assert_eq!(r.error_code, Some(TurnStartErrorCode::ReactionFailed));
    }
    let distinct: std::collections::BTreeSet<_> = attempted.lock().unwrap().iter().cloned().collect();
    assert_eq!(distinct.len(), 10, "attempted: {:?}", attempted.lock().unwrap());
}

/// "Replay is bounded by one aggregate per-dispatch attempt budget": a call
/// the budget refused leaves a success `partial` with attempt_budget_exhausted.
#[tokio::test]
async fn a_call_refused_by_the_budget_is_partial() {
    let s = inbox("refused");
    s.hook(
        "alpha",
        budget(1, 1),
        false,
        Box::new(|session, _| {
            session.read_route("route").unwrap();
            assert_eq!(session.read_route("route"), Err(SessionError::BudgetExhausted("attempt")));
            empty()
        }),
    );
    let r = s.dispatch().await.hooks[0].receipt.clone();
    assert_eq!((r.status, r.error_code), (TurnStartStatus::Partial, Some(TurnStartErrorCode::AttemptBudgetExhausted)));
}

/// "The public receipt must expose external_writes_performed": a reaction
/// begun in an earlier dispatch and finished in this one was that dispatch's
/// write, and the receipt core publishes stays valid (reactions_added <=
/// external_writes_performed).
#[tokio::test]
async fn a_reaction_finished_in_a_later_dispatch_is_not_this_dispatchs_write() {
    let s = inbox("later");
    s.store.capture(&human("m1", Attention::Ordinary)).unwrap();
    s.store.record_first_reads("turn_0").unwrap();
    let turn = Arc::new(Mutex::new(0));
    let count = turn.clone();
    s.hook(
        "alpha",
        budget(4, 2),
        false,
        Box::new(move |session, _| {
            let mut n = count.lock().unwrap();
            *n += 1;
            let mut doc = receipt("empty", &[("pending", 1)]);
            doc["agent_read_required"] = json!(true);
            if *n == 1 {
                assert_eq!(session.begin_reaction(&msg("m1")).unwrap(), ReactionBegin::Proceed);
            } else {
                session.finish_reaction(&msg("m1"), ReactionResult::Added).unwrap();
            }
            doc
        }),
    );
    let first = s.dispatch().await.hooks[0].receipt.clone();
    assert_eq!((first.external_writes_performed, first.error_code), (1, Some(TurnStartErrorCode::ReactionFailed)));
    let second = s.dispatch().await.hooks[0].receipt.clone();
    assert_eq!((second.reactions_added, second.external_writes_performed), (0, 0));
    assert_eq!(second.status, TurnStartStatus::Empty);
    assert_eq!(s.store.begin_reaction(&msg("m1")).unwrap(), ReactionBegin::AlreadyAdded);
}

/// "The public receipt must expose external_writes_performed" (and docs/turn-start.md:
/// "writes are never hidden"): a reply claiming writes past its budget, by
/// any margin, is rejected with its claimed writes published, never as zero.
#[tokio::test]
async fn writes_claimed_past_the_budget_are_kept_at_any_margin() {
    for claimed in [5u64, 16, 17, 100, u64::from(u32::MAX) + 1] {
        let f = Fixture::new();
        let doc = receipt("empty", &[]);
        let mut doc = doc;
        doc["external_writes_performed"] = json!(claimed);
        doc["reactions_added"] = json!(claimed.min(3));
        f.add("alpha", "loopx inbox read", Answer::Receipt(doc));
        let outcome = f.dispatch().await;
        let r = &outcome.hooks[0].receipt;
        assert_eq!(failure(&outcome, 0), Some((FailureCode::ResultContractRejected, Some(Rule::OutOfRange))));
        let kept = u32::try_from(claimed).unwrap_or(u32::MAX);
        assert_eq!((r.external_writes_performed, r.reactions_added), (kept, 3), "{claimed}");
        validate_turn_start_receipt(&serde_json::to_value(r).unwrap()).expect("core's receipt is valid");
    }
}
