//! "Provider or private-receipt failure is partial, never a false success":
//! a private write the store did not commit (another process holds the
//! inbox's write lock, the store is closed mid-call) makes the receipt
//! `partial` with `private_receipt_failed`, whatever the provider, which
//! swallowed the error, answers; nothing the store did not persist is
//! claimed, and the read obligation for what is pending stays.

use super::*;
use crate::turn_start::inbox::{ClaimOutcome, InboxError, ReadBefore};

type MakeBody = dyn FnOnce(PathBuf, Arc<InboxStore>) -> Box<Body>;

/// A scene whose inbox gives up on a held write lock after 50 ms; the body
/// is made with the inbox's path and store.
fn busy_scene(name: &str, make: Box<MakeBody>) -> Scene {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let dir = std::env::temp_dir().join(format!("loopx-writes-{name}-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("inbox.sqlite");
    let options = InboxOptions { busy_timeout_ms: 50, ..InboxOptions::default() };
    let store = Arc::new(InboxStore::open(&path, options).unwrap());
    let kernel = Arc::new(TurnStartKernel::new(TurnStartProfile { enabled: true, allowlist: None }));
    kernel.use_inbox(store.clone());
    let kept = Arc::new(Mutex::new(None));
    let body = make(path, store.clone());
    let provider = Arc::new(SessionProvider { kernel: Mutex::new(Some(kernel.clone())), body, kept: kept.clone() });
    let mut doc = registration("alpha", "loopx inbox read");
    doc["budget"] = budget(8, 4);
    kernel.register(&doc, provider).expect("valid registration");
    Scene { _dir: Temp(dir), store, kernel, kept }
}

/// Another process's connection holding the inbox's write lock until dropped.
fn hold_write_lock(path: &std::path::Path) -> rusqlite::Connection {
    let other = rusqlite::Connection::open(path).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    other
}

/// Partial with `private_receipt_failed`: never a success.
fn assert_private_write_failed(receipt: &TurnStartReceipt) {
    assert_eq!(
        (receipt.status, receipt.error_code),
        (TurnStartStatus::Partial, Some(TurnStartErrorCode::PrivateReceiptFailed)),
        "{receipt:?}"
    );
}

fn ok_claiming_one_read() -> Value {
    let mut doc = receipt("ok", &[("observations_new", 1), ("pending", 1), ("direct_questions", 1)]);
    doc["agent_read_required"] = json!(true);
    doc
}

#[tokio::test]
async fn failed_first_reads_are_partial_and_claim_no_read() {
    let s = busy_scene(
        "first-reads",
        Box::new(|path, _| {
            Box::new(move |session, _| {
                session.capture(&capture_input("m1", CaptureSource::TurnStart)).unwrap();
                let lock = hold_write_lock(&path);
                let failed = session.record_first_reads("turn_1");
                assert!(matches!(failed, Err(SessionError::Inbox(InboxError::Busy))), "{failed:?}");
                drop(lock);
                ok_claiming_one_read()
            })
        }),
    );
    let outcome = s.kernel.dispatch(&request()).await;
    let hook = &outcome.hooks[0];
    assert_private_write_failed(&hook.receipt);
    assert_eq!((hook.receipt.observations_new, hook.receipt.direct_questions), (0, 0));
    // The captured message is pending and unread: the read stays required.
    assert_eq!(hook.receipt.pending, 1);
    assert!(hook.receipt.agent_read_required);
    assert_eq!(hook.pending_standing, PendingStanding::InboxStore);
    assert_eq!(outcome.required_reads.len(), 2);
    assert_eq!(s.store.read_before().unwrap(), ReadBefore::default(), "the inbox holds no first read");
}

#[tokio::test]
async fn a_failed_capture_is_partial_not_empty() {
    let s = busy_scene(
        "capture",
        Box::new(|path, _| {
            Box::new(move |session, _| {
                let lock = hold_write_lock(&path);
                assert!(session.capture(&capture_input("m1", CaptureSource::TurnStart)).is_err());
                drop(lock);
                empty()
            })
        }),
    );
    let outcome = s.kernel.dispatch(&request()).await;
    let receipt = &outcome.hooks[0].receipt;
    assert_private_write_failed(receipt);
    assert!(!s.store.contains(&msg("m1")).unwrap());
}

#[tokio::test]
async fn a_failed_cursor_advance_is_partial_not_ok() {
    let s = busy_scene(
        "cursor",
        Box::new(|path, _| {
            Box::new(move |session, _| {
                session.capture(&capture_input("m1", CaptureSource::TurnStart)).unwrap();
                session.record_first_reads("turn_1").unwrap();
                let ClaimOutcome::Claimed(claim) = session.claim_cursor("route", CursorKind::History, 1000).unwrap()
                else {
                    panic!("claimed")
                };
                let lock = hold_write_lock(&path);
                assert!(session
                    .advance_cursor("route", CursorKind::History, &claim.token, "c2", &[msg("m1")])
                    .is_err());
                drop(lock);
                let mut doc = receipt("ok", &[("observations_new", 1), ("pending", 1)]);
                doc["agent_read_required"] = json!(true);
                doc
            })
        }),
    );
    let outcome = s.kernel.dispatch(&request()).await;
    let receipt = &outcome.hooks[0].receipt;
    assert_private_write_failed(receipt);
    // The first read the store did commit is still claimed, and still read.
    assert_eq!(receipt.observations_new, 1);
    assert!(receipt.agent_read_required);
    assert_eq!(s.store.cursor("route", CursorKind::History).unwrap(), None);
}

#[tokio::test]
async fn a_store_closed_mid_call_claims_nothing_it_did_not_persist() {
    let s = busy_scene(
        "closed-mid-call",
        Box::new(|_, store| {
            Box::new(move |session, _| {
                session.capture(&capture_input("m1", CaptureSource::TurnStart)).unwrap();
                store.close();
                assert!(session.record_first_reads("turn_1").is_err());
                ok_claiming_one_read()
            })
        }),
    );
    let outcome = s.kernel.dispatch(&request()).await;
    let hook = &outcome.hooks[0];
    assert_private_write_failed(&hook.receipt);
    assert_eq!((hook.receipt.observations_new, hook.receipt.direct_questions), (0, 0));
    // The store cannot be read: unknown, so the read is required anyway.
    assert_eq!(hook.pending_standing, PendingStanding::Unknown);
    assert_eq!(outcome.required_reads.len(), 2);
    assert_eq!(outcome.lane.reason, TurnStartLaneReason::StandingUnknown);
}
