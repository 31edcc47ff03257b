//! "Budgets and scopes are enforced, not self-reported": with an inbox store
//! attached, each invocation gets a session through which core grants the
//! registration's write scopes, counts and bounds reads and writes itself,
//! and refuses everything once the invocation is over.

use std::path::PathBuf;

use super::*;
use crate::error_code::{Coded, ErrorCode};
use crate::turn_start::inbox::{
    Attention, CaptureInput, CaptureOutcome, CaptureSource, CursorKind, InboxOptions, InboxStore, MessageRef,
    ReactionBegin, ReactionResult, Sender, SenderKind,
};
use crate::turn_start::{SessionError, TurnStartSession};

/// The token and session the provider was given, kept for after the invocation.
type Kept = Arc<Mutex<Option<(String, Arc<TurnStartSession>)>>>;
type Body = dyn Fn(&TurnStartSession, &TurnStartHookInput) -> Value + Send + Sync;

/// A provider that works through its session, then answers `body`'s receipt.
struct SessionProvider {
    kernel: Mutex<Option<Arc<TurnStartKernel>>>,
    body: Box<Body>,
    kept: Kept,
}

impl TurnStartProvider for SessionProvider {
    fn invoke(&self, input_json: String) -> ReplyFuture {
        let input: TurnStartHookInput = serde_json::from_str(&input_json).unwrap();
        let kernel = self.kernel.lock().unwrap().clone().unwrap();
        let token = input.session.clone().expect("a session");
        let session = kernel.session(&token).expect("open");
        *self.kept.lock().unwrap() = Some((token, session.clone()));
        let mut doc = (self.body)(&session, &input);
        doc["hook_id"] = json!(input.hook_id);
        Box::pin(async move { ProviderReply::Json(doc.to_string()) })
    }
}

struct Scene {
    _dir: Temp,
    store: Arc<InboxStore>,
    kernel: Arc<TurnStartKernel>,
    kept: Kept,
}

struct Temp(PathBuf);
impl Drop for Temp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn scene(name: &str, scopes: Value, budget: Value, body: Box<Body>) -> Scene {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let dir = std::env::temp_dir().join(format!("loopx-session-{name}-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let store = Arc::new(InboxStore::open(dir.join("inbox.sqlite"), InboxOptions::default()).unwrap());
    let kernel = Arc::new(TurnStartKernel::new(TurnStartProfile { enabled: true, allowlist: None }));
    kernel.use_inbox(store.clone());
    let kept = Arc::new(Mutex::new(None));
    let provider = Arc::new(SessionProvider { kernel: Mutex::new(Some(kernel.clone())), body, kept: kept.clone() });
    let mut doc = registration("alpha", "loopx inbox read");
    doc["write_scopes"] = scopes;
    doc["budget"] = budget;
    kernel.register(&doc, provider).expect("valid registration");
    Scene { _dir: Temp(dir), store, kernel, kept }
}

fn capture_input(id: &str, source: CaptureSource) -> CaptureInput {
    CaptureInput {
        route_id: "route".into(),
        provider_message_id: id.into(),
        source,
        sender: Sender { kind: SenderKind::Human, verified_identity: None },
        attention: Attention::Ordinary,
        payload: json!({"text": "hello"}),
    }
}

fn msg(id: &str) -> MessageRef {
    MessageRef { route_id: "route".into(), provider_message_id: id.into() }
}

fn all_scopes() -> Value {
    json!(["owner_private_inbox", "owner_private_cursor", "provider_message_reaction"])
}

fn budget(attempts: u32, routes: u32) -> Value {
    json!({ "timeout_ms": 2000, "max_attempts_per_dispatch": attempts, "max_routes": routes })
}

#[tokio::test]
async fn a_write_outside_the_registrations_scopes_is_a_coded_error() {
    let s = scene(
        "scopes",
        json!(["owner_private_inbox"]),
        budget(4, 2),
        Box::new(|session, _| {
            assert_eq!(session.capture(&capture_input("m1", CaptureSource::TurnStart)), Ok(CaptureOutcome::Captured));
            assert_eq!(
                session.claim_cursor("route", CursorKind::History, 1000),
                Err(SessionError::ScopeNotGranted("owner_private_cursor"))
            );
            assert_eq!(
                session.begin_reaction(&msg("m1")),
                Err(SessionError::ScopeNotGranted("provider_message_reaction"))
            );
            assert_eq!(
                session.reaction_candidates("collector", 4),
                Err(SessionError::ScopeNotGranted("provider_message_reaction"))
            );
            let err = session.claim_cursor("route", CursorKind::History, 1000).unwrap_err();
            assert_eq!(err.error_code(), ErrorCode::ScopeNotGranted);
            empty()
        }),
    );
    let outcome = s.kernel.dispatch(&request()).await;
    assert_eq!(outcome.hooks[0].receipt.status, TurnStartStatus::Empty);
    assert_eq!(s.store.cursor("route", CursorKind::History).unwrap(), None, "nothing written");
}

#[tokio::test]
async fn a_realtime_collection_capture_cannot_use_the_reaction_scope() {
    let s = scene(
        "collector",
        all_scopes(),
        budget(4, 2),
        Box::new(|session, _| {
            assert_eq!(
                session.capture(&capture_input("c1", CaptureSource::Collector)),
                Err(SessionError::CollectorCapture)
            );
            empty()
        }),
    );
    s.kernel.dispatch(&request()).await;
    assert!(!s.store.contains(&msg("c1")).unwrap(), "nothing captured");
    assert_eq!(SessionError::CollectorCapture.error_code(), ErrorCode::ScopeNotGranted);
}

#[tokio::test]
async fn core_counts_and_bounds_reads_and_writes_itself() {
    let s = scene(
        "budget",
        all_scopes(),
        budget(3, 2),
        Box::new(|session, _| {
            // Routes: two distinct routes fit max_routes 2; a third is refused.
            assert!(session.read_route("a").is_ok());
            assert!(session.read_route("b").is_ok());
            assert_eq!(session.read_route("c"), Err(SessionError::BudgetExhausted("route")));
            // One more attempt (a reaction) fits the aggregate budget of 3, the next does not.
            session.capture(&capture_input("m1", CaptureSource::TurnStart)).unwrap();
            session.capture(&capture_input("m2", CaptureSource::TurnStart)).unwrap();
            session.record_first_reads("turn_1").unwrap();
            assert_eq!(session.begin_reaction(&msg("m1")), Ok(ReactionBegin::Proceed));
            assert_eq!(session.begin_reaction(&msg("m2")), Err(SessionError::BudgetExhausted("attempt")));
            assert_eq!(session.read_route("a"), Err(SessionError::BudgetExhausted("attempt")));
            session.finish_reaction(&msg("m1"), ReactionResult::Added).unwrap();
            // The receipt under-reports its writes: core's count stands.
            receipt("empty", &[("routes_ok", 2)])
        }),
    );
    let outcome = s.kernel.dispatch(&request()).await;
    let receipt = &outcome.hooks[0].receipt;
    assert_eq!((receipt.external_writes_performed, receipt.reactions_added), (1, 1));
    // The refused attempt wrote nothing: m2 has no reaction attempt on record.
    assert_eq!(s.store.begin_reaction(&msg("m2")).unwrap(), ReactionBegin::Proceed);
}

#[tokio::test]
async fn a_session_is_refused_once_its_invocation_is_over() {
    let s = scene("closed", all_scopes(), budget(4, 2), Box::new(|_, _| empty()));
    s.kernel.dispatch(&request()).await;
    let (token, session) = s.kept.lock().unwrap().clone().unwrap();
    assert_eq!(session.capture(&capture_input("late", CaptureSource::TurnStart)), Err(SessionError::Closed));
    assert_eq!(session.read_route("a"), Err(SessionError::Closed));
    assert!(!s.store.contains(&msg("late")).unwrap());
    // And the kernel no longer knows the token.
    assert!(token.starts_with("tss_"));
    assert!(s.kernel.session(&token).is_none());
}

#[tokio::test]
async fn without_an_inbox_store_no_session_is_offered() {
    let f = Fixture::new();
    f.add("alpha", "loopx inbox read", Answer::Receipt(empty()));
    f.dispatch().await;
    assert!(f.log.lock().unwrap().iter().all(|i| i.session.is_none()));
}

mod enforcement;
mod writes;
