//! The hooks, requests and dispatches the power is cut under. Documents are
//! the RFC's examples (registration section 6, the example intent kind).

use std::collections::HashSet;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use loopx_hooks::builder::{build_intent, IntentOrigin, IntentSpec};
use loopx_hooks::contract::PostWritebackHookInput;
use loopx_hooks::dispatch::{
    DispatchOutcome, DispatchRequest, Dispatcher, EventFacts, Profile, Provider, ProviderReply, ReplyFuture,
    SettlementIdentity, WritebackReceipt,
};
use loopx_hooks::journal::{Journal, JournalOptions, OpenMode};
use serde_json::{json, Value};
use tokio::task::JoinSet;

use super::vfs;

const INTENT_KIND: &str = "periodic_report.trigger_evaluation";
const OPERATION: &str = "evaluate_runtime_trigger";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Behaviour {
    /// One intent, after a pause long enough that its checkpoint commits in
    /// a batch of its own (synchronous=NORMAL, no fsync).
    ProposeSlowly,
    NotApplicable,
    /// Throws at its first invocation of each identity, proposes after.
    FailsOnce,
    /// Always throws: with one invocation allowed, the next dispatch exhausts it.
    Throws,
}

/// (hook id suffix, behaviour, max_invocations_per_dispatch)
pub const HOOKS: [(&str, Behaviour, u32); 4] = [
    ("a_propose", Behaviour::ProposeSlowly, 1),
    ("b_not_applicable", Behaviour::NotApplicable, 1),
    ("c_fails_once", Behaviour::FailsOnce, 2),
    ("d_throws", Behaviour::Throws, 1),
];

pub struct TestProvider {
    behaviour: Behaviour,
    paced: bool,
    /// Identities whose first invocation already failed.
    failed: Mutex<HashSet<String>>,
}

impl TestProvider {
    pub fn new(behaviour: Behaviour, paced: bool) -> Arc<Self> {
        Arc::new(TestProvider { behaviour, paced, failed: Mutex::new(HashSet::new()) })
    }
}

fn proposal(input: &PostWritebackHookInput) -> ProviderReply {
    let origin =
        IntentOrigin { dispatch_id: &input.dispatch_id, hook_id: &input.hook_id, capability_id: &input.capability_id };
    let intent = build_intent(
        &origin,
        IntentSpec {
            intent_kind: INTENT_KIND.into(),
            operation: OPERATION.into(),
            policy_version: "weekly_v0".into(),
            payload: json!({"segment_ref": input.source.receipt_id, "source_event_refs": input.projection.fact_refs}),
            budget: None,
            requested_write_scope: vec![],
        },
    );
    let result =
        json!({"schema_version": "loopx_post_writeback_hook_result_v0", "status": "proposed", "intents": [intent]});
    ProviderReply::Json(result.to_string())
}

impl Provider for TestProvider {
    fn invoke(&self, input_json: String) -> ReplyFuture {
        let (behaviour, paced) = (self.behaviour, self.paced);
        let first_failure = behaviour == Behaviour::FailsOnce && {
            let id = serde_json::from_str::<Value>(&input_json)
                .ok()
                .and_then(|v| v["dispatch_id"].as_str().map(str::to_owned));
            self.failed.lock().unwrap().insert(id.unwrap_or_default())
        };
        Box::pin(async move {
            let Ok(input) = serde_json::from_str::<PostWritebackHookInput>(&input_json) else {
                return ProviderReply::NotJson;
            };
            match behaviour {
                Behaviour::ProposeSlowly => {
                    if paced {
                        tokio::time::sleep(Duration::from_millis(3)).await;
                    }
                    proposal(&input)
                }
                Behaviour::NotApplicable => ProviderReply::Json(
                    json!({"schema_version": "loopx_post_writeback_hook_result_v0", "status": "not_applicable", "intents": []})
                        .to_string(),
                ),
                Behaviour::FailsOnce if first_failure => ProviderReply::Threw,
                Behaviour::FailsOnce => proposal(&input),
                Behaviour::Throws => ProviderReply::Threw,
            }
        })
    }
}

fn kind_definition() -> Value {
    json!({
        "intent_kind": INTENT_KIND,
        "capability_id": "periodic_report",
        "operations": [OPERATION, "record_trigger_evaluation"],
        "payload_schema": {
            "type": "object",
            "properties": {
                "segment_ref": {"type": "string", "format": "opaque_ref"},
                "source_event_refs": {
                    "type": "array",
                    "items": {"type": "string", "format": "opaque_ref"},
                    "maxItems": 8,
                    "uniqueItems": true
                }
            },
            "required": ["segment_ref", "source_event_refs"],
            "additionalProperties": false
        }
    })
}

fn registration(hook: &str, invocations: u32) -> Value {
    json!({
        "schema_version": "loopx_post_writeback_capability_hook_registration_v0",
        "hook_id": format!("periodic_report.{hook}"),
        "capability_id": "periodic_report",
        "phase": "post_writeback",
        "event_kinds": ["todo_completed", "replan_recorded"],
        "intent_kinds": [INTENT_KIND],
        "requested_read_scope": ["settlement_identity", "bounded_event_projection"],
        "budget": {
            "max_invocations_per_dispatch": invocations,
            "max_intents_per_dispatch": 1,
            "max_result_bytes": 16384,
            "timeout_ms": 1000
        },
        "failure_policy": "isolate"
    })
}

/// The intent kind and every hook of [`HOOKS`], with fresh providers;
/// `paced`: the proposing hook takes its pause (see [`Behaviour::ProposeSlowly`]).
pub fn install(dispatcher: &Dispatcher, paced: bool) {
    dispatcher.define_intent_kind(&kind_definition()).expect("the RFC's kind is valid");
    for (hook, behaviour, invocations) in HOOKS {
        dispatcher
            .register(&registration(hook, invocations), TestProvider::new(behaviour, paced))
            .expect("valid registration");
    }
}

pub fn profile() -> Profile {
    Profile { enabled: true, ..Profile::default() }
}

/// The committed, checkpointed writeback receipt `n`.
pub fn request(n: usize) -> DispatchRequest {
    DispatchRequest {
        settlement: SettlementIdentity {
            goal_id: "goal_opaque".into(),
            agent_id: "agent_opaque".into(),
            todo_id: format!("todo_{n}"),
            turn_instance_id: "turn_opaque".into(),
            effect_id: format!("effect_{n}"),
        },
        receipt: WritebackReceipt {
            receipt_id: format!("receipt_{n}"),
            effect_id: format!("effect_{n}"),
            step_kind: "durable_writeback".into(),
            status: "committed".into(),
            checkpointed: true,
            state_revision: "revision_opaque".into(),
            committed_at: "2026-08-26T00:00:00Z".into(),
        },
        event: EventFacts { event_kind: "todo_completed".into(), fact_refs: vec![format!("fact_{n}")] },
    }
}

/// One dispatch whose outcome the caller saw, and the log length then: a
/// cut at or after `position` must keep what it reported.
#[derive(Clone, Debug)]
pub struct Observed {
    pub request: usize,
    pub position: usize,
    pub outcome: DispatchOutcome,
}

/// Dispatches `requests` all at once.
async fn at_once(dispatcher: &Arc<Dispatcher>, requests: impl IntoIterator<Item = usize>, seen: &mut Vec<Observed>) {
    let mut set = JoinSet::new();
    for n in requests {
        let d = dispatcher.clone();
        set.spawn(async move {
            let outcome = d.dispatch(&request(n)).await.expect("the journal records");
            Observed { request: n, position: vfs::position(), outcome }
        });
    }
    while let Some(done) = set.join_next().await {
        seen.push(done.expect("a dispatch task ends"));
    }
}

async fn one_at_a_time(dispatcher: &Dispatcher, requests: impl IntoIterator<Item = usize>, seen: &mut Vec<Observed>) {
    for n in requests {
        let outcome = dispatcher.dispatch(&request(n)).await.expect("the journal records");
        seen.push(Observed { request: n, position: vfs::position(), outcome });
    }
}

/// Receipts dispatched many at once, and one at a time.
fn split(scale: usize) -> (usize, usize) {
    (8 * scale, 2 * scale)
}

/// How many receipts the workload dispatches.
pub fn requests(scale: usize) -> usize {
    let (many, single) = split(scale);
    many + single
}

/// Copies the WAL into the main file from a connection of its own, as any
/// other connection (a reader, the CLI) may: the writer's next commit then
/// starts the WAL over from its first frame.
fn checkpoint_elsewhere(journal: &Path) {
    let conn = rusqlite::Connection::open(journal).expect("a second connection");
    // PASSIVE never waits; the writer is idle between phases, so it copies all.
    conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())).expect("a checkpoint");
}

/// A dispatcher with [`HOOKS`] on the journal at `path` (created when missing).
fn open(path: &Path) -> Arc<Dispatcher> {
    let journal = Journal::open(path, JournalOptions::default(), OpenMode::ReadWrite).expect("the journal opens");
    let dispatcher = Arc::new(Dispatcher::new(Arc::new(journal), profile()));
    install(&dispatcher, true);
    dispatcher
}

/// Runs the workload on a new journal at `path` (under the recorded
/// directory): first dispatches of receipts many at once and one at a time,
/// then their second dispatches (the failed hooks retry or exhaust) in the
/// same two ways, then replays; with WAL checkpoints from another connection
/// in between, and a restart (close, which checkpoints and deletes the WAL,
/// and open again) halfway.
pub async fn run(path: &Path, scale: usize) -> Vec<Observed> {
    let (many, single) = split(scale);
    let mut seen = Vec::new();
    let dispatcher = open(path);
    at_once(&dispatcher, 0..many / 2, &mut seen).await;
    one_at_a_time(&dispatcher, many..many + single / 2, &mut seen).await;
    checkpoint_elsewhere(path);
    at_once(&dispatcher, many / 2..many, &mut seen).await;
    one_at_a_time(&dispatcher, many + single / 2..many + single, &mut seen).await;
    dispatcher.close().await;
    let dispatcher = open(path);
    at_once(&dispatcher, 0..many, &mut seen).await;
    checkpoint_elsewhere(path);
    one_at_a_time(&dispatcher, many..many + single, &mut seen).await;
    at_once(&dispatcher, (0..many + single).step_by(3), &mut seen).await;
    dispatcher.close().await;
    seen
}
