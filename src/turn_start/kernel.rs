//! The turn-start kernel (RFC "Ordering", contract-v0 section 6): validates
//! the request before anything runs, runs each installed hook identity once,
//! in hook_id byte order, under its timeout, turns whatever a provider answers
//! into one public receipt, projects the required reads of the hooks whose
//! receipts need them into the Agent and CLI channels (deduplicated by
//! command, `before_work`), and decides the lane. Providers are a trait
//! (`hook.rs`); the binding implements it over JS functions, tests in Rust.

use std::sync::{Arc, RwLock};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use ts_rs::TS;

use super::hook::{InstalledTurnStartHook, TurnStartProvider};
use super::inbox::InboxStore;
use super::outcome::{TurnStartLane, TurnStartLaneReason, TurnStartOutcome};
use super::session::TurnStartSession;
use super::sessions::InboxSessions;
use super::validate::validate_turn_start_registration;
use crate::identity;
use crate::options::{member_fault, OptionError};
use crate::validate::{Rule, Violation, Violations};

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
    /// The profile given as JSON text at `at`: a member it does not have, or
    /// one not of its type, is refused by name (never by value).
    pub fn parse(at: &str, text: &str) -> Result<Self, OptionError> {
        let Ok(Value::Object(members)) = serde_json::from_str::<Value>(text) else {
            return Err(OptionError::invalid(at, "a JSON object"));
        };
        if let Some(fault) = member_fault::<Self>(at, &members, "what TurnStartProfile declares for it") {
            return Err(fault);
        }
        serde_json::from_value(Value::Object(members))
            .map_err(|_| OptionError::invalid(at, "a TurnStartProfile (known members of their types)"))
    }

    pub fn allows(&self, hook_id: &str) -> bool {
        self.allowlist.as_ref().is_none_or(|list| list.iter().any(|h| h == hook_id))
    }
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
    /// The owner-private inbox, when attached, and the sessions it grants.
    sessions: Arc<InboxSessions>,
    /// Sorted by hook_id; swapped whole so a dispatch in flight keeps its snapshot.
    hooks: RwLock<Arc<Vec<Arc<InstalledTurnStartHook>>>>,
}

impl TurnStartKernel {
    pub fn new(profile: TurnStartProfile) -> Self {
        TurnStartKernel { profile, sessions: Arc::default(), hooks: RwLock::new(Arc::new(Vec::new())) }
    }

    /// Attaches the owner-private inbox store the providers use.
    pub fn use_inbox(&self, store: Arc<InboxStore>) {
        self.sessions.use_inbox(store);
    }

    /// The session of an invocation in flight.
    pub fn session(&self, token: &str) -> Option<Arc<TurnStartSession>> {
        self.sessions.session(token)
    }

    /// The inbox and the sessions it grants (a provider's side looks its session up there).
    pub fn sessions(&self) -> &Arc<InboxSessions> {
        &self.sessions
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
