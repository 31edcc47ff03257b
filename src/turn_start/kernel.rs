//! The turn-start kernel (RFC "Ordering", contract-v0 section 6): validates
//! the request before anything runs, runs each installed hook identity once,
//! in hook_id byte order, under its timeout, turns whatever a provider answers
//! into one public receipt, projects the required reads of the hooks whose
//! receipts need them into the Agent and CLI channels (deduplicated by
//! command, `before_work`), and decides the lane. Providers are a trait; the
//! binding implements it over JS functions, tests in Rust.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use ts_rs::TS;

use super::contract::{
    TurnStartBudget, TurnStartHookRegistration, TurnStartReceipt, TurnStartReceiptSchemaVersion, TurnStartStatus,
    TurnStartWriteScope,
};
use super::inbox::InboxStore;
use super::outcome::{
    PendingStanding, TurnStartHookOutcome, TurnStartKernelFailure, TurnStartLane, TurnStartLaneReason, TurnStartOutcome,
};
use super::request::{TurnIdentity, TurnStartRequest};
use super::session::{SessionCounts, TurnStartSession};
use super::steps::TurnStartCallResult;
use super::validate::{validate_turn_start_receipt, validate_turn_start_registration};
use crate::contract::FailureCode;
use crate::identity;
pub use crate::provider_reply::{ProviderReply, ReplyFuture};
use crate::validate::{Rule, Violation, Violations};

/// A receipt is a few hundred bytes; text longer than this is refused unparsed.
pub const MAX_RECEIPT_BYTES: usize = 4096;

/// A turn-start provider: takes its input as JSON text, answers with its
/// public receipt. It does its bounded external reads, owner-private inbox
/// and cursor writes and (when registered) reactions itself.
pub trait TurnStartProvider: Send + Sync {
    /// Starts one invocation. The kernel applies timeout_ms and drops the
    /// future (and with it any late answer) when it expires.
    fn invoke(&self, input_json: String) -> ReplyFuture;
}

/// What a provider receives: who it is, the Turn, its budget and scopes.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
#[ts(export)]
pub struct TurnStartHookInput {
    pub hook_id: String,
    pub capability_id: String,
    pub turn: TurnIdentity,
    /// The one aggregate attempt budget of this dispatch, its routes and timeout.
    pub budget: TurnStartBudget,
    pub write_scopes: Vec<TurnStartWriteScope>,
    /// When an inbox store is attached: this invocation's session, through
    /// which core grants, counts and bounds its inbox writes and reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub session: Option<String>,
}

/// The kernel's profile. Defaults: phase disabled, every hook allowed.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
#[ts(export, optional_fields)]
pub struct TurnStartProfile {
    pub enabled: bool,
    /// When set, only these hook_ids run.
    pub allowlist: Option<Vec<String>>,
}

impl TurnStartProfile {
    pub fn allows(&self, hook_id: &str) -> bool {
        self.allowlist.as_ref().is_none_or(|list| list.iter().any(|h| h == hook_id))
    }
}

/// One installed hook.
pub struct InstalledTurnStartHook {
    pub registration: TurnStartHookRegistration,
    /// sha256 of the registration's canonical JSON: with hook_id, its identity.
    pub digest: String,
    /// `None` when the caller of the kernel's steps invokes it (a JS function).
    pub provider: Option<Arc<dyn TurnStartProvider>>,
}

/// How a registration was taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Registered {
    Installed,
    /// The same identity (hook_id and registration) was installed already;
    /// it keeps its first provider and runs once per dispatch.
    AlreadyInstalled,
}

pub struct TurnStartKernel {
    profile: TurnStartProfile,
    /// The owner-private inbox, when attached: core counts pending material
    /// there itself when a hook fails (fail closed, not self-reported).
    inbox: RwLock<Option<Arc<InboxStore>>>,
    /// The sessions of invocations in flight, by token.
    sessions: Mutex<HashMap<String, Arc<TurnStartSession>>>,
    session_counter: AtomicU64,
    /// Sorted by hook_id; swapped whole so a dispatch in flight keeps its snapshot.
    hooks: RwLock<Arc<Vec<Arc<InstalledTurnStartHook>>>>,
}

impl TurnStartKernel {
    pub fn new(profile: TurnStartProfile) -> Self {
        TurnStartKernel {
            profile,
            inbox: RwLock::new(None),
            sessions: Mutex::new(HashMap::new()),
            session_counter: AtomicU64::new(0),
            hooks: RwLock::new(Arc::new(Vec::new())),
        }
    }

    /// Attaches the owner-private inbox store the providers use.
    pub fn use_inbox(&self, store: Arc<InboxStore>) {
        *self.inbox.write().unwrap_or_else(|p| p.into_inner()) = Some(store);
    }

    /// The session of an invocation in flight.
    pub fn session(&self, token: &str) -> Option<Arc<TurnStartSession>> {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner()).get(token).cloned()
    }

    /// Opens a session for one invocation of `hook`, when an inbox is attached.
    pub(super) fn open_session(&self, hook: &InstalledTurnStartHook) -> Option<(String, Arc<TurnStartSession>)> {
        let store = self.inbox.read().unwrap_or_else(|p| p.into_inner()).clone()?;
        let r = &hook.registration;
        let session = Arc::new(TurnStartSession::new(store, r.write_scopes.clone(), r.budget));
        let n = self.session_counter.fetch_add(1, Ordering::Relaxed);
        let seed = format!("{}:{n}:{:?}:{}", std::process::id(), std::time::SystemTime::now(), r.hook_id);
        let token = format!("tss_{}", identity::sha256_hex(seed.as_bytes()));
        self.sessions.lock().unwrap_or_else(|p| p.into_inner()).insert(token.clone(), session.clone());
        Some((token, session))
    }

    /// Ends a call's session the moment the call ends: its token is
    /// forgotten and every later operation refused, while the rest of the
    /// dispatch runs on.
    pub(super) fn end_session(&self, token: &str, session: &TurnStartSession) {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner()).remove(token);
        session.end();
    }

    pub(super) fn close_session(&self, token: &str, session: &TurnStartSession) -> SessionCounts {
        self.end_session(token, session);
        session.close()
    }

    pub(super) fn inbox_store(&self) -> Option<Arc<InboxStore>> {
        self.inbox.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The inbox's durably pending count, or None (no store, or it cannot be
    /// read). A point count on the inbox's own connection, read in the step.
    pub(super) fn inbox_pending(&self) -> Option<u32> {
        self.inbox_store()?.pending_count().ok()
    }

    pub fn profile(&self) -> &TurnStartProfile {
        &self.profile
    }

    /// Validates and installs. A second registration of the same identity is
    /// `AlreadyInstalled`; another registration under an installed hook_id is
    /// `duplicate_item` at `/hook_id`.
    pub fn register(&self, doc: &Value, provider: Arc<dyn TurnStartProvider>) -> Result<Registered, Violations> {
        self.install(doc, Some(provider))
    }

    /// Installs a registration whose provider the caller of
    /// [`TurnStartKernel::prepare`] / [`TurnStartKernel::complete`] invokes itself.
    pub fn register_external(&self, doc: &Value) -> Result<Registered, Violations> {
        self.install(doc, None)
    }

    fn install(&self, doc: &Value, provider: Option<Arc<dyn TurnStartProvider>>) -> Result<Registered, Violations> {
        let registration = validate_turn_start_registration(doc)?;
        let typed = serde_json::to_value(&registration).unwrap_or(Value::Null);
        let digest = identity::registration_digest(&typed);
        let mut guard = self.hooks.write().unwrap_or_else(|p| p.into_inner());
        if let Some(existing) = guard.iter().find(|h| h.registration.hook_id == registration.hook_id) {
            return if existing.digest == digest {
                Ok(Registered::AlreadyInstalled)
            } else {
                Err(vec![Violation { path: "/hook_id".into(), rule: Rule::DuplicateItem }].into())
            };
        }
        let mut next = (**guard).clone();
        let at = next.partition_point(|h| h.registration.hook_id.as_bytes() < registration.hook_id.as_bytes());
        next.insert(at, Arc::new(InstalledTurnStartHook { registration, digest, provider }));
        *guard = Arc::new(next);
        Ok(Registered::Installed)
    }

    /// The outcome of a refused request: nothing ran, the selected lane stands.
    pub fn refused(&self, violations: Vec<Violation>) -> TurnStartOutcome {
        TurnStartOutcome { phase_enabled: self.profile.enabled, ..TurnStartOutcome::refused(violations) }
    }

    /// The installed hook_ids, in dispatch order.
    pub fn hook_ids(&self) -> Vec<String> {
        self.snapshot().iter().map(|h| h.registration.hook_id.clone()).collect()
    }

    pub(super) fn snapshot(&self) -> Arc<Vec<Arc<InstalledTurnStartHook>>> {
        self.hooks.read().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl TurnStartOutcome {
    /// A refused request: nothing ran, the selected lane stands.
    pub fn refused(violations: Vec<Violation>) -> Self {
        TurnStartOutcome {
            admitted: false,
            violations,
            phase_enabled: true,
            hooks: Vec::new(),
            required_reads: Vec::new(),
            lane: TurnStartLane::from_reason(TurnStartLaneReason::NothingToRead),
        }
    }
}

/// A receipt core makes for a hook whose provider gave none it can accept:
/// the failure status, nothing read, nothing routed. `writes` carries the
/// (reactions_added, external_writes_performed) the reply claimed, so writes
/// a provider made are never hidden by core's verdict on it.
fn failure_receipt(hook_id: &str, status: TurnStartStatus, writes: (u32, u32)) -> TurnStartReceipt {
    TurnStartReceipt {
        schema_version: TurnStartReceiptSchemaVersion::V0,
        hook_id: hook_id.to_owned(),
        status,
        error_code: status.failure_code(),
        agent_read_required: false,
        observations_new: 0,
        pending: 0,
        direct_questions: 0,
        verified_replies: 0,
        routes_ok: 0,
        routes_failed: 0,
        reactions_added: writes.0,
        external_writes_performed: writes.1,
    }
}

fn failed(
    hook: &InstalledTurnStartHook,
    status: TurnStartStatus,
    code: FailureCode,
    rule: Option<Rule>,
    writes: (u32, u32),
) -> TurnStartHookOutcome {
    let hook_id = &hook.registration.hook_id;
    TurnStartHookOutcome {
        hook_id: hook_id.clone(),
        receipt: failure_receipt(hook_id, status, writes),
        kernel_failure: Some(TurnStartKernelFailure { code, rule }),
        pending_standing: PendingStanding::Reported,
    }
}

fn rejected(hook: &InstalledTurnStartHook, rule: Rule, writes: (u32, u32)) -> TurnStartHookOutcome {
    failed(hook, TurnStartStatus::ProviderContractError, FailureCode::ResultContractRejected, Some(rule), writes)
}

/// A valid receipt checked against its own registration: its hook, its write
/// scopes, its routes and its aggregate attempt budget.
fn registration_rule(registration: &TurnStartHookRegistration, receipt: &TurnStartReceipt) -> Option<Rule> {
    if receipt.hook_id != registration.hook_id {
        return Some(Rule::HookMismatch);
    }
    if receipt.external_writes_performed > 0
        && !registration.write_scopes.contains(&TurnStartWriteScope::ProviderMessageReaction)
    {
        return Some(Rule::AuthorityClaimed);
    }
    let budget = &registration.budget;
    if receipt.routes_ok + receipt.routes_failed > budget.max_routes
        || receipt.external_writes_performed > budget.max_attempts_per_dispatch
    {
        return Some(Rule::OutOfRange);
    }
    None
}

/// The writes a reply claims, read from the document whether or not it is a
/// valid receipt: (reactions_added, external_writes_performed), each a
/// non-negative integer or 0, reactions capped at the writes.
fn claimed_writes(doc: &Value) -> (u32, u32) {
    let count =
        |field: &str| doc.get(field).and_then(Value::as_u64).map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX));
    let writes = count("external_writes_performed");
    (count("reactions_added").min(writes), writes)
}

/// The input one hook receives, with its session token when an inbox is attached.
pub(super) fn hook_input(hook: &InstalledTurnStartHook, request: &TurnStartRequest, session: Option<String>) -> String {
    let registration = &hook.registration;
    let input = TurnStartHookInput {
        hook_id: registration.hook_id.clone(),
        capability_id: registration.capability_id.clone(),
        turn: request.turn.clone(),
        budget: registration.budget,
        write_scopes: registration.write_scopes.clone(),
        session,
    };
    serde_json::to_string(&input).unwrap_or_default()
}

/// Turns what one provider call produced into the hook's outcome.
pub(super) fn judge(hook: &InstalledTurnStartHook, call: TurnStartCallResult) -> TurnStartHookOutcome {
    let registration = &hook.registration;
    let none = (0, 0);
    let text = match call {
        TurnStartCallResult::TimedOut => {
            return failed(hook, TurnStartStatus::TimedOut, FailureCode::ProducerTimedOut, None, none)
        }
        TurnStartCallResult::TooLarge => return rejected(hook, Rule::ResultTooLarge, none),
        TurnStartCallResult::Reply(ProviderReply::Threw) => {
            return failed(hook, TurnStartStatus::ProviderContractError, FailureCode::ProducerFailed, None, none)
        }
        TurnStartCallResult::Reply(ProviderReply::NotJson) => return rejected(hook, Rule::NotJsonValue, none),
        TurnStartCallResult::Reply(ProviderReply::Json(text)) => text,
    };
    if text.len() > MAX_RECEIPT_BYTES {
        return rejected(hook, Rule::ResultTooLarge, none);
    }
    let Ok(doc) = serde_json::from_str::<Value>(&text) else { return rejected(hook, Rule::NotJsonValue, none) };
    let receipt = match validate_turn_start_receipt(&doc) {
        Ok(receipt) => receipt,
        Err(violations) => {
            return rejected(hook, violations.first().map_or(Rule::WrongType, |v| v.rule), claimed_writes(&doc))
        }
    };
    if let Some(rule) = registration_rule(registration, &receipt) {
        return rejected(hook, rule, (receipt.reactions_added, receipt.external_writes_performed));
    }
    TurnStartHookOutcome {
        hook_id: registration.hook_id.clone(),
        receipt,
        kernel_failure: None,
        pending_standing: PendingStanding::Reported,
    }
}
