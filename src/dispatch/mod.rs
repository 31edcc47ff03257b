//! The post-writeback dispatcher: admission, the registry, ordering, budgets,
//! timeouts and outcomes (RFC sections 5, 9, 10; contract-v0 sections 4, 5).
//! Providers are a trait and the journal is plain Rust, so none of this knows
//! about JavaScript.

mod complete;
mod dialect;
mod driver;
mod flight;
mod judged;
mod keys;
mod outcome;
mod outcome_json;
mod plan_json;
mod prepare;
mod profile;
mod projection;
mod provider;
mod registry;
mod request;
mod run;
mod steps;
mod stored;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use serde_json::Value;

pub use dialect::{CheckpointParts, DialectRules, Doc, PlannedHook, RegisteredHook, Source, Standing};
pub use flight::{Deliver, Finished, OnTheWay};
pub use judged::{Accepted, Failure};
pub use outcome::{DispatchOutcome, HookOutcome, HookOutcomeKind, ShippedEnd};
pub use outcome_json::outcome_json;
pub use plan_json::plan_json;
pub use prepare::{prepare_retry_after, PREPARE_RETRYABLE};
pub use profile::{Profile, ProfileOptions, ReplayMode};
pub use projection::{dispatch_id_for, project, project_document, recoverable_request};
pub use provider::{Provider, ProviderReply, ReplyFuture};
pub use registry::Registry;
pub use request::{
    admit, quota_spend_eligible, AdmissionRefusal, DispatchRequest, EventFacts, NotADispatchRequest,
    SettlementIdentity, WritebackReceipt,
};
pub use run::{max_reply_len, CallResult};
pub use steps::{Completion, Limit, Plan, PlannedCall, Prepared};
pub use stored::{intent_from_stored, receipt_from_row, stored_intent, RowIntent, RowReceipt, RowRequest};

use crate::contract::Dialect;
use crate::journal::Journal;
use crate::validate::{validate_intent_kind_definition, CompiledIntentKind, IntentKinds, Rule, Violation, Violations};

/// Adds `kind`; an intent_kind defined twice is `duplicate_item` at `/intent_kind`.
fn define(kinds: &mut IntentKinds, kind: CompiledIntentKind) -> Result<(), Violation> {
    if kinds.insert(kind) {
        Ok(())
    } else {
        Err(Violation { path: "/intent_kind".into(), rule: Rule::DuplicateItem })
    }
}

/// Adds `kind` to a runtime's kinds: the same definition again changes
/// nothing (a hook carries the kinds it was made with, and `register`
/// defines them); another definition of a defined intent_kind is
/// `duplicate_item`, so the schema payloads were checked against never changes.
fn define_once(kinds: &mut IntentKinds, kind: CompiledIntentKind) -> Result<(), Violation> {
    match kinds.get(&kind.definition.intent_kind) {
        Some(existing) if existing.definition == kind.definition => Ok(()),
        _ => define(kinds, kind),
    }
}

/// The intent kinds of a list of definitions, each read by the caller (a
/// definition it could not read is its violations): all of them or, when
/// any is invalid or defined twice, every violation, each path prefixed by
/// the definition's index.
pub fn intent_kinds(
    definitions: impl IntoIterator<Item = Result<Value, Violations>>,
) -> Result<IntentKinds, Vec<Violation>> {
    let mut kinds = IntentKinds::new();
    let mut violations: Vec<Violation> = Vec::new();
    for (i, definition) in definitions.into_iter().enumerate() {
        let prefix = format!("/{i}");
        match definition.and_then(|doc| validate_intent_kind_definition(&doc)) {
            Ok(kind) => {
                if let Err(v) = define(&mut kinds, kind) {
                    violations.push(Violation { path: format!("{prefix}{}", v.path), rule: v.rule });
                }
            }
            Err(found) => violations.extend(found.prefixed(&prefix)),
        }
    }
    if violations.is_empty() {
        Ok(kinds)
    } else {
        Err(violations)
    }
}

/// What is installed at the composition root, swapped whole on change so a
/// dispatch in flight keeps the snapshot it started with.
#[derive(Clone, Default)]
struct Installed {
    kinds: IntentKinds,
    registry: Registry,
}

/// Summary of a `recover()` run.
#[derive(serde::Serialize, ts_rs::TS, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[ts(export)]
pub struct RecoverReport {
    /// Outcomes of the re-dispatched identities, oldest checkpoint first.
    pub outcomes: Vec<HookOutcome>,
    /// Checkpointed identities whose hook (with that exact registration) is
    /// not installed in this process, so they could not be re-dispatched.
    pub skipped: u32,
    /// Entries of a SQLite journal's attempt-ledger folder that are not a
    /// regular file of this user's (a symlink, a FIFO, a folder, another
    /// user's file): left alone, never read.
    pub ledgers_skipped: u32,
}

/// What a `recover()` re-dispatches ([`Dispatcher::recovery_items`]).
pub struct Recovery {
    /// Each owed identity's request and hook_id, oldest first.
    pub items: Vec<(Source, String)>,
    /// As [`RecoverReport::skipped`].
    pub skipped: u32,
    /// As [`RecoverReport::ledgers_skipped`].
    pub ledgers_skipped: u32,
}

pub struct Dispatcher {
    journal: Arc<Journal>,
    profile: Profile,
    rules: &'static dyn DialectRules,
    registered: Arc<std::sync::atomic::AtomicU32>,
    installed: RwLock<Arc<Installed>>,
    shared: Arc<flight::Shared>,
    flights: Mutex<HashMap<u64, steps::Flight>>,
    next_ticket: AtomicU64,
    closing: AtomicBool,
}

impl Dispatcher {
    /// A dispatcher whose registrations, sources, inputs, results and
    /// receipts are `rules`'s dialect's; the journal and the engine are the
    /// same (`crate::dialect` picks the rules by name).
    pub fn with_rules(journal: Arc<Journal>, profile: Profile, rules: &'static dyn DialectRules) -> Self {
        let shared = Arc::new(flight::Shared::new());
        let flush = Arc::clone(&shared);
        journal.after_batch(Arc::new(move |batch| flush.flush(batch)));
        Dispatcher {
            journal,
            profile,
            rules,
            registered: Arc::default(),
            installed: RwLock::new(Arc::new(Installed::default())),
            shared,
            flights: Mutex::new(HashMap::new()),
            next_ticket: AtomicU64::new(1),
            closing: AtomicBool::new(false),
        }
    }

    /// Where dispatches finished by a group commit go when no Rust caller
    /// awaits them (the binding hands them to JS in one call per commit).
    pub fn set_deliver(&self, deliver: Deliver) {
        self.shared.set_deliver(deliver);
    }

    /// Refuses new dispatches, lets those in flight finish and record (each is
    /// bounded by its hooks' timeouts and the profile's wall budget), then
    /// closes the journal.
    pub async fn close(&self) {
        self.closing.store(true, Ordering::SeqCst);
        let mut running = self.shared.running.subscribe();
        let _ = running.wait_for(|n| *n == 0).await;
        let journal = self.journal.clone();
        let _ = tokio::task::spawn_blocking(move || journal.close()).await;
    }

    pub fn journal(&self) -> &Arc<Journal> {
        &self.journal
    }

    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    pub fn dialect(&self) -> Dialect {
        self.rules.dialect()
    }

    /// The dialect's answers (its source parser, its dispatch result).
    pub fn rules(&self) -> &'static dyn DialectRules {
        self.rules
    }

    /// How many hooks are installed (a shipped dispatch result's `registered_count`).
    pub fn registered_count(&self) -> u32 {
        self.registered.load(Ordering::Relaxed)
    }

    /// [`Dispatcher::registered_count`], readable where the dispatcher is not
    /// (the writer thread's delivery, which the dispatcher itself holds).
    pub fn registered_counter(&self) -> Arc<std::sync::atomic::AtomicU32> {
        self.registered.clone()
    }

    fn snapshot(&self) -> Arc<Installed> {
        self.installed.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn update<T>(&self, change: impl FnOnce(&mut Installed) -> Result<T, Violations>) -> Result<T, Violations> {
        let mut guard = self.installed.write().unwrap_or_else(|p| p.into_inner());
        let mut next = (**guard).clone();
        let out = change(&mut next)?;
        *guard = Arc::new(next);
        Ok(out)
    }

    /// Defines an intent kind. Kinds are defined at the composition root,
    /// before the registrations that name them; the same definition again is
    /// a no-op, another one under a defined name `duplicate_item`.
    pub fn define_intent_kind(&self, doc: &Value) -> Result<(), Violations> {
        let kind = validate_intent_kind_definition(doc)?;
        self.update(|installed| define_once(&mut installed.kinds, kind).map_err(|v| vec![v].into()))
    }

    /// Installs a provider behind a validated registration (`registration_rejected`
    /// when invalid: nothing is installed and nothing is invoked).
    pub fn register(&self, doc: &Value, provider: Arc<dyn Provider>) -> Result<String, Violations> {
        self.install(doc, Some(provider))
    }

    /// Installs a registration whose provider the caller of the steps
    /// ([`Dispatcher::prepare`]...) invokes itself (the JS binding).
    pub fn register_external(&self, doc: &Value) -> Result<String, Violations> {
        self.install(doc, None)
    }

    fn install(&self, doc: &Value, provider: Option<Arc<dyn Provider>>) -> Result<String, Violations> {
        self.update(|installed| {
            let kinds = installed.kinds.clone();
            let hook = installed.registry.register(self.rules, doc, &kinds, provider)?;
            self.registered.store(u32::try_from(installed.registry.len()).unwrap_or(u32::MAX), Ordering::Relaxed);
            Ok(hook.digest.clone())
        })
    }
}

#[cfg(test)]
pub(crate) mod tests;
