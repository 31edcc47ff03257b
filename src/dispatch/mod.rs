//! The post-writeback dispatcher: admission, the registry, ordering, budgets,
//! timeouts and outcomes (RFC sections 5, 9, 10; contract-v0 sections 4, 5).
//! Providers are a trait and the journal is plain Rust, so none of this knows
//! about JavaScript.

mod outcome;
mod profile;
mod projection;
mod provider;
mod registry;
mod request;
mod run;
mod stored;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use serde_json::Value;

pub use outcome::{DispatchOutcome, HookOutcome, HookOutcomeKind};
pub use profile::{Profile, ReplayMode};
pub use provider::{Provider, ProviderReply, ReplyFuture};
pub use registry::{RegisteredHook, Registry};
pub use request::{admit, AdmissionRefusal, DispatchRequest, EventFacts, SettlementIdentity, WritebackReceipt};
pub use stored::{intent_from_stored, receipt_from_row, stored_intent, with_intent_doc, with_receipt};

use crate::journal::{Journal, JournalError};
use crate::validate::{validate_intent_kind_definition, IntentKinds, Rule, Violation, Violations};

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
}

pub struct Dispatcher {
    journal: Arc<Journal>,
    profile: Profile,
    installed: RwLock<Arc<Installed>>,
    /// One lock per dispatch identity in flight: two runs of one identity in
    /// this process take turns, so the second replays the first's receipt (or
    /// sees its failure) instead of invoking the provider again.
    identities: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    /// Dispatches and recoveries in flight; `close()` waits for them.
    running: tokio::sync::watch::Sender<usize>,
    closing: std::sync::atomic::AtomicBool,
}

/// Counts one dispatch or recovery as running until dropped.
struct Running<'a>(&'a tokio::sync::watch::Sender<usize>);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n -= 1);
    }
}

/// Holds one identity's lock; forgets the identity when the last holder leaves.
pub(crate) struct IdentityGuard<'a> {
    dispatcher: &'a Dispatcher,
    dispatch_id: String,
    _guard: tokio::sync::OwnedMutexGuard<()>,
}

impl Drop for IdentityGuard<'_> {
    fn drop(&mut self) {
        let mut map = self.dispatcher.identities.lock().unwrap_or_else(|p| p.into_inner());
        // Two references: the map's and our guard's mutex; anyone else waiting holds a third.
        if map.get(&self.dispatch_id).is_some_and(|m| Arc::strong_count(m) <= 2) {
            map.remove(&self.dispatch_id);
        }
    }
}

impl Dispatcher {
    pub fn new(journal: Arc<Journal>, profile: Profile) -> Self {
        Dispatcher {
            journal,
            profile,
            installed: RwLock::new(Arc::new(Installed::default())),
            identities: Mutex::new(HashMap::new()),
            running: tokio::sync::watch::channel(0).0,
            closing: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Waits for this identity's earlier runs in this process to finish.
    pub(crate) async fn lock_identity(&self, dispatch_id: &str) -> IdentityGuard<'_> {
        let mutex = {
            let mut map = self.identities.lock().unwrap_or_else(|p| p.into_inner());
            map.entry(dispatch_id.to_owned()).or_default().clone()
        };
        let guard = mutex.lock_owned().await;
        IdentityGuard { dispatcher: self, dispatch_id: dispatch_id.to_owned(), _guard: guard }
    }

    fn start(&self) -> Result<Running<'_>, JournalError> {
        if self.closing.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(JournalError::Closed);
        }
        self.running.send_modify(|n| *n += 1);
        Ok(Running(&self.running))
    }

    /// Refuses new dispatches, lets those in flight finish and record (each is
    /// bounded by its hooks' timeouts and the profile's wall budget), then
    /// closes the journal.
    pub async fn close(&self) {
        self.closing.store(true, std::sync::atomic::Ordering::SeqCst);
        let mut running = self.running.subscribe();
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
    /// before the registrations that name them.
    pub fn define_intent_kind(&self, doc: &Value) -> Result<(), Violations> {
        let kind = validate_intent_kind_definition(doc)?;
        self.update(|installed| {
            if installed.kinds.insert(kind) {
                Ok(())
            } else {
                Err(vec![Violation { path: "/intent_kind".into(), rule: Rule::DuplicateItem }].into())
            }
        })
    }

    /// Installs a provider behind a validated registration (`registration_rejected`
    /// when invalid: nothing is installed and nothing is invoked).
    pub fn register(&self, doc: &Value, provider: Arc<dyn Provider>) -> Result<String, Violations> {
        self.update(|installed| {
            let kinds = installed.kinds.clone();
            installed.registry.register(doc, &kinds, provider).map(|hook| hook.digest.clone())
        })
    }

    /// Dispatches one committed writeback to every admitted hook, in hook_id
    /// byte order, each isolated from the others. Resolves once every record
    /// it made is durable.
    pub async fn dispatch(&self, request: &DispatchRequest) -> Result<DispatchOutcome, JournalError> {
        let _running = self.start()?;
        if let Err(refusal) = admit(request, self.profile.enabled) {
            return Ok(DispatchOutcome::refused(refusal));
        }
        let installed = self.snapshot();
        let hooks: Vec<&Arc<RegisteredHook>> = installed
            .registry
            .subscribed(&request.event.event_kind)
            .filter(|h| self.profile.allows(&h.registration.hook_id))
            .collect();
        let deadline = tokio::time::Instant::now()
            + std::time::Duration::from_millis(u64::from(self.profile.max_dispatch_wall_ms));
        let mut outcomes = Vec::with_capacity(hooks.len());
        for (i, hook) in hooks.into_iter().enumerate() {
            let over_ceiling = i >= self.profile.max_hooks_per_dispatch as usize;
            let outcome = run::run_hook(self, &installed.kinds, hook, request, deadline, over_ceiling).await?;
            outcomes.push(outcome);
        }
        Ok(DispatchOutcome { admitted: true, refusal: None, hooks: outcomes })
    }

    /// Re-dispatches every checkpointed identity without a final receipt.
    pub async fn recover(&self) -> Result<RecoverReport, JournalError> {
        let _running = self.start()?;
        let journal = self.journal.clone();
        let pending =
            tokio::task::spawn_blocking(move || journal.unfinished()).await.map_err(|_| JournalError::Closed)??;
        let installed = self.snapshot();
        let mut report = RecoverReport { outcomes: Vec::new(), skipped: 0 };
        for row in pending {
            let hook = installed.registry.find(&row.hook_id, &row.registration_digest);
            let request: Option<DispatchRequest> =
                row.request_json.as_deref().and_then(|text| serde_json::from_str(text).ok());
            match (hook, request) {
                (Some(hook), Some(request))
                    if admit(&request, self.profile.enabled).is_ok() && self.profile.allows(&row.hook_id) =>
                {
                    let deadline = tokio::time::Instant::now()
                        + std::time::Duration::from_millis(u64::from(self.profile.max_dispatch_wall_ms));
                    report.outcomes.push(run::run_hook(self, &installed.kinds, hook, &request, deadline, false).await?);
                }
                _ => report.skipped += 1,
            }
        }
        Ok(report)
    }
}

#[cfg(test)]
mod tests;
