//! Inbox store tests over real files: recognition, capture and the self
//! filter, first reads, dispositions and ACK, reactions, fairness, cursors.

use std::path::PathBuf;

use serde_json::json;

use super::*;

mod hostile;

struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let n = std::sync::atomic::AtomicU64::new(0);
        let path = std::env::temp_dir().join(format!(
            "loopx-inbox-{name}-{}-{}-{}",
            std::process::id(),
            nanos(),
            n.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&path).unwrap();
        Dir(path)
    }
    fn file(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn store(dir: &Dir) -> InboxStore {
    InboxStore::open(
        dir.file("inbox.sqlite"),
        InboxOptions { self_identity: Some("U_SELF".into()), ..Default::default() },
    )
    .unwrap()
}

fn msg(route: &str, id: &str) -> MessageRef {
    MessageRef { route_id: route.into(), provider_message_id: id.into() }
}

fn capture(s: &InboxStore, route: &str, id: &str, kind: SenderKind, attention: Attention) -> CaptureOutcome {
    s.capture(&CaptureInput {
        route_id: route.into(),
        provider_message_id: id.into(),
        source: CaptureSource::TurnStart,
        sender: Sender { kind, verified_identity: Some(format!("U_{id}")) },
        attention,
        payload: json!({"text": format!("body of {id}")}),
    })
    .unwrap()
}

fn human(s: &InboxStore, route: &str, id: &str) -> CaptureOutcome {
    capture(s, route, id, SenderKind::Human, Attention::Ordinary)
}

// ------------------------------------------------------------- the file

#[test]
fn opens_creates_and_recognises_its_own_file_only() {
    let dir = Dir::new("open");
    let path = dir.file("inbox.sqlite");
    drop(InboxStore::open(&path, InboxOptions::default()).unwrap());
    let s = InboxStore::open(&path, InboxOptions::default()).unwrap();
    assert_eq!(s.pending_count().unwrap(), 0);
    s.close();
    assert_eq!(s.pending_count(), Err(InboxError::Closed));

    // Not SQLite: refused, unchanged.
    let text = dir.file("notes.txt");
    std::fs::write(
        &text,
        b"hello, this is not a database at all, but it is more than a hundred bytes long............................",
    )
    .unwrap();
    let before = std::fs::read(&text).unwrap();
    assert_eq!(InboxStore::open(&text, InboxOptions::default()).unwrap_err(), InboxError::NotAnInbox);
    assert_eq!(std::fs::read(&text).unwrap(), before);

    // Another SQLite file, and the public journal: refused; the journal refuses an inbox.
    let other = dir.file("other.sqlite");
    rusqlite::Connection::open(&other).unwrap().execute_batch("CREATE TABLE t (x)").unwrap();
    assert_eq!(InboxStore::open(&other, InboxOptions::default()).unwrap_err(), InboxError::NotAnInbox);
    let journal_path = dir.file("journal.sqlite");
    crate::journal::Journal::open(
        &journal_path,
        crate::journal::JournalOptions::default(),
        crate::journal::OpenMode::ReadWrite,
    )
    .unwrap()
    .close();
    assert_eq!(InboxStore::open(&journal_path, InboxOptions::default()).unwrap_err(), InboxError::NotAnInbox);
    let journal = crate::journal::Journal::open(
        &path,
        crate::journal::JournalOptions::default(),
        crate::journal::OpenMode::ReadWrite,
    );
    assert_eq!(journal.unwrap_err().code(), "not_a_journal");

    // A newer inbox: refused.
    let newer = dir.file("newer.sqlite");
    drop(InboxStore::open(&newer, InboxOptions::default()).unwrap());
    rusqlite::Connection::open(&newer).unwrap().pragma_update(None, "user_version", SCHEMA_VERSION + 1).unwrap();
    assert_eq!(
        InboxStore::open(&newer, InboxOptions::default()).unwrap_err(),
        InboxError::TooNew { found: 2, supported: 1 }
    );
}

#[test]
fn arguments_are_bounded_and_errors_hold_no_value() {
    let dir = Dir::new("args");
    let s = store(&dir);
    let long = "x".repeat(MAX_ID_BYTES + 1);
    let err = s.contains(&msg(&long, "m")).unwrap_err();
    assert_eq!(err, InboxError::InvalidArgument { what: "routeId" });
    assert!(!err.to_string().contains("xxx"));
    assert!(s.contains(&msg(&"x".repeat(MAX_ID_BYTES), "m")).is_ok());
    assert_eq!(s.record_first_reads("turn/1").unwrap_err(), InboxError::InvalidArgument { what: "readRef" });
    let big = CaptureInput {
        route_id: "r".into(),
        provider_message_id: "m".into(),
        source: CaptureSource::Collector,
        sender: Sender { kind: SenderKind::Human, verified_identity: None },
        attention: Attention::Ordinary,
        payload: json!("x".repeat(MAX_PAYLOAD_BYTES)),
    };
    assert_eq!(s.capture(&big).unwrap_err(), InboxError::InvalidArgument { what: "payload" });
    assert_eq!(s.pending(None, 0).unwrap_err(), InboxError::InvalidArgument { what: "limit" });
    assert_eq!(s.pending(None, MAX_PAGE + 1).unwrap_err(), InboxError::InvalidArgument { what: "limit" });
}

// ------------------------------------------------------------- capture

#[test]
fn duplicate_messages_collapse_by_provider_message_identity() {
    let dir = Dir::new("dedupe");
    let s = store(&dir);
    assert_eq!(human(&s, "r1", "m1"), CaptureOutcome::Captured);
    // The same identity from the collector and again from the hook: one message.
    assert_eq!(human(&s, "r1", "m1"), CaptureOutcome::Duplicate);
    // The same provider id on another route is another message.
    assert_eq!(human(&s, "r2", "m1"), CaptureOutcome::Captured);
    assert_eq!(s.pending_count().unwrap(), 2);
    // A second store on the same file sees and collapses the same identities.
    let other = store(&dir);
    assert_eq!(human(&other, "r1", "m1"), CaptureOutcome::Duplicate);
    assert!(other.contains(&msg("r2", "m1")).unwrap());
    assert!(!other.contains(&msg("r3", "m1")).unwrap());
}

#[test]
fn self_filter_uses_a_typed_sender_and_exact_verified_identity_and_fails_open() {
    let dir = Dir::new("self");
    let s = store(&dir);
    let send = |id: &str, kind: SenderKind, identity: Option<&str>| {
        s.capture(&CaptureInput {
            route_id: "r".into(),
            provider_message_id: id.into(),
            source: CaptureSource::Collector,
            sender: Sender { kind, verified_identity: identity.map(str::to_owned) },
            attention: Attention::Ordinary,
            payload: json!({"display_name": "U_SELF", "text": "from U_SELF"}),
        })
        .unwrap()
    };
    assert_eq!(send("m1", SenderKind::Human, Some("U_SELF")), CaptureOutcome::SelfFiltered);
    assert_eq!(send("m2", SenderKind::Bot, Some("U_SELF")), CaptureOutcome::SelfFiltered);
    // Untyped sender, unresolved identity, or a near miss: captured.
    assert_eq!(send("m3", SenderKind::Unknown, Some("U_SELF")), CaptureOutcome::Captured);
    assert_eq!(send("m4", SenderKind::Human, None), CaptureOutcome::Captured);
    assert_eq!(send("m5", SenderKind::Human, Some("u_self")), CaptureOutcome::Captured);
    assert_eq!(send("m6", SenderKind::Human, Some("U_SELF ")), CaptureOutcome::Captured);
    // Without a configured identity nothing is filtered.
    let open = InboxStore::open(dir.file("inbox.sqlite"), InboxOptions::default()).unwrap();
    let outcome = open
        .capture(&CaptureInput {
            route_id: "r".into(),
            provider_message_id: "m7".into(),
            source: CaptureSource::Collector,
            sender: Sender { kind: SenderKind::Human, verified_identity: Some("U_SELF".into()) },
            attention: Attention::Ordinary,
            payload: json!(null),
        })
        .unwrap();
    assert_eq!(outcome, CaptureOutcome::Captured);
    assert_eq!(s.pending_count().unwrap(), 5);
}

// ------------------------------------------------------------- first reads

#[test]
fn first_agent_read_receipts_are_never_duplicated() {
    let dir = Dir::new("reads");
    let s = store(&dir);
    capture(&s, "r1", "m1", SenderKind::Human, Attention::DirectQuestion);
    capture(&s, "r1", "m2", SenderKind::Human, Attention::VerifiedReply);
    capture(&s, "r2", "m3", SenderKind::Bot, Attention::Mention);
    let first = s.record_first_reads("turn_1").unwrap();
    assert_eq!(first, FirstReads { observations_new: 3, direct_questions: 1, verified_replies: 1, pending: 3 });
    // Nothing new on the next turn; the material is still pending.
    assert_eq!(s.record_first_reads("turn_2").unwrap(), FirstReads { pending: 3, ..Default::default() });
    // A new message (an old topic's new reply: a new identity) is read once.
    human(&s, "r1", "m4");
    assert_eq!(
        s.record_first_reads("turn_3").unwrap(),
        FirstReads { observations_new: 1, pending: 4, ..Default::default() }
    );
    // A second store on the same file does not read it again either.
    assert_eq!(store(&dir).record_first_reads("turn_4").unwrap().observations_new, 0);
    // The drain: pending messages with their private payloads, paged.
    let page = s.pending(None, 2).unwrap();
    assert_eq!(page.iter().map(|m| m.provider_message_id.as_str()).collect::<Vec<_>>(), ["m1", "m2"]);
    assert!(page.iter().all(|m| m.read && m.disposition.is_none()));
    assert_eq!(page[0].payload, json!({"text": "body of m1"}));
    let rest = s.pending(Some(page[1].seq), 10).unwrap();
    assert_eq!(rest.iter().map(|m| m.provider_message_id.as_str()).collect::<Vec<_>>(), ["m3", "m4"]);
}

// ------------------------------------------------------------- dispositions and ACK

#[test]
fn ack_waits_for_read_disposition_and_bound_effect() {
    let dir = Dir::new("ack");
    let s = store(&dir);
    human(&s, "r", "m1");
    human(&s, "r", "m2");
    let (m1, m2) = (msg("r", "m1"), msg("r", "m2"));
    // Not read yet: neither disposed nor acknowledged.
    assert_eq!(s.dispose(&m1, Disposition::ReplanGoal, None).unwrap(), DisposeOutcome::NotRead);
    assert_eq!(s.ack(&m1).unwrap(), AckOutcome::NotRead);
    s.record_first_reads("turn_1").unwrap();
    assert_eq!(s.ack(&m1).unwrap(), AckOutcome::NoDisposition);
    // A material disposition: no ACK until its durable effect receipt is bound.
    assert_eq!(s.dispose(&m1, Disposition::ReplanGoal, None).unwrap(), DisposeOutcome::Recorded);
    assert_eq!(s.ack(&m1).unwrap(), AckOutcome::EffectNotBound);
    assert_eq!(s.dispose(&m1, Disposition::ReplanGoal, None).unwrap(), DisposeOutcome::Unchanged);
    assert_eq!(s.dispose(&m1, Disposition::NoFollowUp, None).unwrap(), DisposeOutcome::Conflict);
    assert_eq!(s.dispose(&m1, Disposition::ReplanGoal, Some("effect_42")).unwrap(), DisposeOutcome::Recorded);
    assert_eq!(s.dispose(&m1, Disposition::ReplanGoal, Some("effect_42")).unwrap(), DisposeOutcome::Unchanged);
    assert_eq!(s.dispose(&m1, Disposition::ReplanGoal, Some("effect_43")).unwrap(), DisposeOutcome::Conflict);
    assert_eq!(s.ack(&m1).unwrap(), AckOutcome::Acked);
    assert_eq!(s.ack(&m1).unwrap(), AckOutcome::AlreadyAcked);
    assert_eq!(s.dispose(&m1, Disposition::ReplanGoal, None).unwrap(), DisposeOutcome::AlreadyAcked);
    // A non-material disposition settles without an effect.
    assert_eq!(s.dispose(&m2, Disposition::NoFollowUp, None).unwrap(), DisposeOutcome::Recorded);
    assert_eq!(s.ack(&m2).unwrap(), AckOutcome::Acked);
    assert_eq!(s.pending_count().unwrap(), 0);
    assert_eq!(s.ack(&msg("r", "nope")).unwrap(), AckOutcome::UnknownMessage);
    assert_eq!(
        s.dispose(&m1, Disposition::NoFollowUp, Some("effect/1")).unwrap_err(),
        InboxError::InvalidArgument { what: "effectReceiptId" }
    );
}

#[test]
fn material_and_non_material_dispositions() {
    let material: Vec<_> = [
        Disposition::SteerCurrentTurn,
        Disposition::ReplanGoal,
        Disposition::RecordContext,
        Disposition::ContinueCurrentWork,
        Disposition::NoFollowUp,
    ]
    .into_iter()
    .map(|d| (d.as_str(), d.is_material(), Disposition::parse(d.as_str()) == Some(d)))
    .collect();
    assert_eq!(
        material,
        [
            ("steer_current_turn", true, true),
            ("replan_goal", true, true),
            ("record_context", true, true),
            ("continue_current_work", false, true),
            ("no_follow_up", false, true)
        ]
    );
}

// ------------------------------------------------------------- reactions

#[test]
fn reactions_only_on_read_pending_human_messages_once() {
    let dir = Dir::new("react");
    let s = store(&dir);
    human(&s, "r", "m1");
    capture(&s, "r", "bot", SenderKind::Bot, Attention::Ordinary);
    capture(&s, "r", "who", SenderKind::Unknown, Attention::Ordinary);
    let m1 = msg("r", "m1");
    // Collector-only capture (no turn-start read yet) admits no provider write.
    assert_eq!(s.begin_reaction(&m1).unwrap(), ReactionBegin::NotRead);
    assert!(s.reaction_candidates("collector", 8).unwrap().is_empty());
    s.record_first_reads("turn_1").unwrap();
    assert_eq!(s.begin_reaction(&msg("r", "bot")).unwrap(), ReactionBegin::NotHuman);
    assert_eq!(s.begin_reaction(&msg("r", "who")).unwrap(), ReactionBegin::NotHuman);
    assert_eq!(s.reaction_candidates("collector", 8).unwrap(), std::slice::from_ref(&m1));
    assert_eq!(s.begin_reaction(&m1).unwrap(), ReactionBegin::Proceed);
    assert_eq!(s.finish_reaction(&m1, ReactionResult::Added).unwrap(), ReactionFinish::Recorded);
    assert_eq!(s.begin_reaction(&m1).unwrap(), ReactionBegin::AlreadyAdded);
    assert_eq!(s.finish_reaction(&m1, ReactionResult::Added).unwrap(), ReactionFinish::NotAttempting);
    assert!(s.reaction_candidates("collector", 8).unwrap().is_empty());
    assert_eq!(s.begin_reaction(&msg("r", "nope")).unwrap(), ReactionBegin::UnknownMessage);
}

#[test]
fn failed_reactions_retry_and_uncertain_ones_fail_closed() {
    let dir = Dir::new("uncertain");
    let s = store(&dir);
    human(&s, "r", "m1");
    s.record_first_reads("turn_1").unwrap();
    let m1 = msg("r", "m1");
    // A definite failure stays eligible (from the durable pending-read set).
    assert_eq!(s.begin_reaction(&m1).unwrap(), ReactionBegin::Proceed);
    assert_eq!(s.finish_reaction(&m1, ReactionResult::Failed).unwrap(), ReactionFinish::Recorded);
    assert_eq!(s.reaction_candidates("c", 4).unwrap(), std::slice::from_ref(&m1));
    // An attempt in flight blocks a second create; left unfinished past
    // attempt_stale_ms (a crash), it is uncertain: still no second create,
    // but it is offered again for its readback.
    assert_eq!(s.begin_reaction(&m1).unwrap(), ReactionBegin::Proceed);
    assert_eq!(s.begin_reaction(&m1).unwrap(), ReactionBegin::InFlight);
    assert!(s.reaction_candidates("c", 4).unwrap().is_empty());
    let options = InboxOptions { attempt_stale_ms: 0, self_identity: Some("U_SELF".into()), ..Default::default() };
    let reopened = InboxStore::open(dir.file("inbox.sqlite"), options).unwrap();
    assert_eq!(reopened.reaction_candidates("c", 4).unwrap(), std::slice::from_ref(&m1));
    assert_eq!(reopened.begin_reaction(&m1).unwrap(), ReactionBegin::Uncertain);
    assert_eq!(reopened.begin_reaction(&m1).unwrap(), ReactionBegin::Uncertain);
    assert_eq!(reopened.reaction_candidates("c", 4).unwrap(), std::slice::from_ref(&m1));
    // An answer the provider could not interpret is uncertain too.
    // After a readback: absent -> eligible again; present -> added.
    assert_eq!(reopened.resolve_reaction(&m1, ReactionResult::Failed).unwrap(), ReactionFinish::Recorded);
    assert_eq!(reopened.begin_reaction(&m1).unwrap(), ReactionBegin::Proceed);
    assert_eq!(reopened.finish_reaction(&m1, ReactionResult::Uncertain).unwrap(), ReactionFinish::Recorded);
    assert_eq!(reopened.begin_reaction(&m1).unwrap(), ReactionBegin::Uncertain);
    assert_eq!(reopened.resolve_reaction(&m1, ReactionResult::Added).unwrap(), ReactionFinish::Recorded);
    assert_eq!(reopened.begin_reaction(&m1).unwrap(), ReactionBegin::AlreadyAdded);
    assert_eq!(reopened.resolve_reaction(&m1, ReactionResult::Added).unwrap(), ReactionFinish::NotAttempting);
    // Acknowledged messages get no reaction.
    s.dispose(&m1, Disposition::NoFollowUp, None).unwrap();
    s.ack(&m1).unwrap();
    assert_eq!(s.begin_reaction(&m1).unwrap(), ReactionBegin::NotPending);
}

#[test]
fn reaction_candidates_rotate_routes_and_round_robin_messages() {
    let dir = Dir::new("fair");
    let s = store(&dir);
    for (route, n) in [("a", 3), ("b", 1), ("c", 2)] {
        for i in 1..=n {
            human(&s, route, &format!("{route}{i}"));
        }
    }
    s.record_first_reads("turn_1").unwrap();
    let ids = |v: Vec<MessageRef>| v.into_iter().map(|m| m.provider_message_id).collect::<Vec<_>>();
    // Each call is one dispatch with an attempt budget of 2; every attempt fails.
    let mut offered = Vec::new();
    for _ in 0..6 {
        let batch = ids(s.reaction_candidates("collector_1", 2).unwrap());
        for id in &batch {
            let route = &id[..1];
            let m = msg(route, id);
            assert_eq!(s.begin_reaction(&m).unwrap(), ReactionBegin::Proceed);
            s.finish_reaction(&m, ReactionResult::Failed).unwrap();
        }
        offered.push(batch);
    }
    assert_eq!(
        offered,
        [
            vec!["a1", "b1"], // routes a, b, c
            vec!["b1", "c1"], // rotated: b, c, a
            vec!["c2", "a2"], // rotated: c, a, b; c and a continue after what they offered
            vec!["a3", "b1"],
            vec!["b1", "c1"],
            vec!["c2", "a1"],
        ]
    );
    // Every pending read was offered; a failing backlog starved nobody.
    let all: std::collections::BTreeSet<_> = offered.into_iter().flatten().collect();
    assert_eq!(all.len(), 6);
    // The rotation is per collector.
    assert_eq!(ids(s.reaction_candidates("collector_2", 3).unwrap()), ["a2", "b1", "c1"]);
    assert!(s.reaction_candidates("collector_1", 0).unwrap().is_empty());
}

// ------------------------------------------------------------- cursors

#[test]
fn cursors_are_single_flight_and_advance_after_readback() {
    let dir = Dir::new("cursor");
    let s = store(&dir);
    let other = store(&dir);
    let ClaimOutcome::Claimed(claim) = s.claim_cursor("r1", CursorKind::History, 60_000).unwrap() else {
        panic!("claim")
    };
    assert_eq!(claim.value, None);
    // Single flight, across stores sharing the file.
    assert_eq!(other.claim_cursor("r1", CursorKind::History, 60_000).unwrap(), ClaimOutcome::Busy);
    // The ack cursor is independent of the history cursor.
    let ClaimOutcome::Claimed(ack) = other.claim_cursor("r1", CursorKind::Ack, 60_000).unwrap() else {
        panic!("ack claim")
    };
    // A message read from the provider but not in the inbox: nothing moves.
    let read = [msg("r1", "m1"), msg("r1", "m2")];
    human(&s, "r1", "m1");
    let advance = s.advance_cursor("r1", CursorKind::History, &claim.token, "t2", &read).unwrap();
    assert_eq!(advance, AdvanceOutcome::MissingMessages);
    assert_eq!(s.cursor("r1", CursorKind::History).unwrap(), None);
    human(&s, "r1", "m2");
    assert_eq!(
        other.advance_cursor("r1", CursorKind::History, "forged", "t2", &read).unwrap(),
        AdvanceOutcome::LeaseLost
    );
    assert_eq!(
        s.advance_cursor("r1", CursorKind::History, &claim.token, "t2", &read).unwrap(),
        AdvanceOutcome::Advanced
    );
    assert_eq!(other.cursor("r1", CursorKind::History).unwrap().as_deref(), Some("t2"));
    // The claim was released by the advance; a spent token advances nothing.
    assert_eq!(
        s.advance_cursor("r1", CursorKind::History, &claim.token, "t3", &[]).unwrap(),
        AdvanceOutcome::LeaseLost
    );
    let ClaimOutcome::Claimed(next) = other.claim_cursor("r1", CursorKind::History, 60_000).unwrap() else {
        panic!("reclaim")
    };
    assert_eq!(next.value.as_deref(), Some("t2"));
    assert!(other.release_cursor("r1", CursorKind::History, &next.token).unwrap());
    assert!(!other.release_cursor("r1", CursorKind::History, &next.token).unwrap());
    // The ack cursor still has no value and its claim is still held.
    assert_eq!(s.cursor("r1", CursorKind::Ack).unwrap(), None);
    assert_eq!(s.claim_cursor("r1", CursorKind::Ack, 60_000).unwrap(), ClaimOutcome::Busy);
    assert_eq!(other.advance_cursor("r1", CursorKind::Ack, &ack.token, "a1", &[]).unwrap(), AdvanceOutcome::Advanced);
    assert_eq!(s.cursor("r1", CursorKind::History).unwrap().as_deref(), Some("t2"));
}

#[test]
fn an_expired_claim_is_lost() {
    let dir = Dir::new("lease");
    let s = store(&dir);
    let ClaimOutcome::Claimed(old) = s.claim_cursor("r", CursorKind::History, 20).unwrap() else { panic!() };
    std::thread::sleep(std::time::Duration::from_millis(40));
    let ClaimOutcome::Claimed(new) = s.claim_cursor("r", CursorKind::History, 60_000).unwrap() else {
        panic!("expired claim is free")
    };
    assert_eq!(s.advance_cursor("r", CursorKind::History, &old.token, "x", &[]).unwrap(), AdvanceOutcome::LeaseLost);
    assert_eq!(s.advance_cursor("r", CursorKind::History, &new.token, "y", &[]).unwrap(), AdvanceOutcome::Advanced);
    assert_eq!(s.cursor("r", CursorKind::History).unwrap().as_deref(), Some("y"));
    assert_eq!(
        s.claim_cursor("r", CursorKind::History, 0).unwrap_err(),
        InboxError::InvalidArgument { what: "leaseMs" }
    );
}

// ------------------------------------------------------------- collector

#[test]
fn a_collector_captures_only_as_realtime_collection() {
    let dir = Dir::new("collector");
    let s = std::sync::Arc::new(store(&dir));
    let collector = InboxCollector::new(s.clone());
    let input = |id: &str, source: CaptureSource| CaptureInput {
        route_id: "r".into(),
        provider_message_id: id.into(),
        source,
        sender: Sender { kind: SenderKind::Human, verified_identity: Some("U_human".into()) },
        attention: Attention::DirectQuestion,
        payload: json!({"text": "hello"}),
    };
    // A turn-start capture belongs to a session: refused before any write.
    let refused = collector.capture(&input("m0", CaptureSource::TurnStart)).unwrap_err();
    assert_eq!(refused, InboxError::InvalidArgument { what: "source" });
    assert_eq!(s.pending_count().unwrap(), 0);
    assert_eq!(collector.capture(&input("m1", CaptureSource::Collector)).unwrap(), CaptureOutcome::Captured);
    assert_eq!(collector.capture(&input("m1", CaptureSource::Collector)).unwrap(), CaptureOutcome::Duplicate);
    let pending = s.pending(None, 10).unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].source, CaptureSource::Collector);
    assert!(!pending[0].read);
    // Closing the store closes its collectors.
    s.close();
    assert_eq!(collector.capture(&input("m2", CaptureSource::Collector)).unwrap_err(), InboxError::Closed);
}

// ------------------------------------------------------------- neutral errors

/// A fault with no SQLite result code is the inbox's own, not an SQLite one:
/// a cursor whose value reads back other than it was written (a trigger on
/// the real file rewrites it) fails `Internal`, and nothing is kept.
#[test]
fn a_cursor_readback_that_differs_is_an_internal_error_and_writes_nothing() {
    let dir = Dir::new("readback");
    let s = store(&dir);
    rusqlite::Connection::open(dir.file("inbox.sqlite"))
        .unwrap()
        .execute_batch(
            "CREATE TRIGGER rewrite AFTER UPDATE OF value ON cursors BEGIN
               UPDATE cursors SET value = 'other' WHERE scope = NEW.scope AND kind = NEW.kind;
             END;",
        )
        .unwrap();
    let ClaimOutcome::Claimed(claim) = s.claim_cursor("r", CursorKind::History, 60_000).unwrap() else { panic!() };
    let err = s.advance_cursor("r", CursorKind::History, &claim.token, "t1", &[]).unwrap_err();
    assert_eq!(err, InboxError::Internal { what: "cursor readback differs" });
    assert_eq!(err.code(), "inbox_internal");
    assert_eq!(crate::error_code::Coded::error_code(&err), crate::error_code::ErrorCode::InboxInternal);
    // The advance rolled back: no value, and the claim is still held.
    assert_eq!(s.cursor("r", CursorKind::History).unwrap(), None);
    assert_eq!(s.claim_cursor("r", CursorKind::History, 60_000).unwrap(), ClaimOutcome::Busy);
}

#[test]
fn a_driver_error_without_a_code_is_internal() {
    let e = InboxError::from(rusqlite::Error::QueryReturnedNoRows);
    assert_eq!(e, InboxError::Internal { what: "query returned no rows" });
    assert!(!matches!(e, InboxError::Sqlite { .. }));
}
