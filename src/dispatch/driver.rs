//! The dispatch steps driven from async Rust, for providers implemented in
//! Rust (tests, embedders): the same rules and records as the JS path, with
//! the limit `begin` gives applied by `tokio::time::timeout`.

use std::time::Duration;

use super::dialect::Source;
use super::outcome::DispatchOutcome;
use super::run::CallResult;
use super::steps::{Completion, Prepared};
use super::{Dispatcher, ProviderReply, RecoverReport, Recovery};
use crate::journal::JournalError;

impl Dispatcher {
    /// Dispatches one committed writeback to every admitted hook, in hook_id
    /// byte order, each isolated from the others. Resolves once every record
    /// it made is durable.
    pub async fn dispatch(&self, request: impl Into<Source>) -> Result<DispatchOutcome, JournalError> {
        self.drive(&request.into(), None).await
    }

    async fn drive(&self, request: &Source, only_hook: Option<&str>) -> Result<DispatchOutcome, JournalError> {
        let plan = loop {
            // Registered before prepare, so a release in between is not missed.
            let released = self.shared.released.notified();
            match self.prepare_for(request.clone(), only_hook)? {
                Prepared::Done(outcome) => return Ok(outcome),
                Prepared::Wait(_) => released.await,
                Prepared::Run(plan) => break plan,
            }
        };
        let mut results = Vec::with_capacity(plan.calls.len());
        for call in &plan.calls {
            let begun = match self.count_attempt(plan.ticket, call.slot) {
                Ok(Some(counting)) => self.counted(plan.ticket, call.slot, counting.await),
                Ok(None) => self.begin(plan.ticket, call.slot),
                Err(e) => Err(e),
            };
            let limit = match begun {
                Ok(limit) => limit,
                Err(e) => {
                    self.cancel(plan.ticket);
                    return Err(e);
                }
            };
            results.push(match (limit, &call.hook.provider) {
                (None, _) => CallResult::NotStarted,
                // Installed for a caller that invokes it itself: nothing to call here.
                (Some(_), None) => CallResult::Reply(ProviderReply::Threw),
                (Some(limit), Some(provider)) => {
                    let call = provider.invoke(call.input_json.clone());
                    // The late answer of a timed-out provider is dropped with its future.
                    match tokio::time::timeout(Duration::from_millis(limit.ms), call).await {
                        Ok(reply) => CallResult::Reply(reply),
                        Err(_) if limit.wall => CallResult::WallExceeded,
                        Err(_) => CallResult::TimedOut,
                    }
                }
            });
        }
        let finished = self.shared.wait_for(plan.ticket);
        match self.complete(plan.ticket, results) {
            Ok(Completion::Pending) => finished.await.unwrap_or(Err(JournalError::Closed)),
            Ok(Completion::Done(outcome)) => {
                self.shared.forget(plan.ticket);
                Ok(outcome)
            }
            Err(e) => {
                self.shared.forget(plan.ticket);
                Err(e)
            }
        }
    }

    /// What `recover()` re-dispatches: each checkpointed identity without a
    /// final receipt whose hook (with that exact registration) is installed,
    /// as its request and hook_id, oldest first; and how many were skipped.
    pub fn recovery_items(&self) -> Result<Recovery, JournalError> {
        if self.closing.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(JournalError::Closed);
        }
        // Attempts of processes that ended since this journal was opened
        // count before anything is re-dispatched.
        let folded = self.journal.fold_ended_attempts();
        let installed = self.snapshot();
        let mut items = Vec::new();
        let mut skipped = 0;
        for row in self.journal.unfinished()? {
            let hook = installed.registry.find(&row.hook_id, &row.registration_digest);
            // A row of another dialect is another runtime's to recover.
            let request = match row.dialect == self.rules.dialect() {
                true => row.request_json.as_deref().and_then(|text| self.rules.parse_source(text).ok()),
                false => None,
            };
            match (hook, request) {
                (Some(_), Some(request))
                    if request.admit(self.profile.enabled).is_ok() && self.profile.allows(&row.hook_id) =>
                {
                    items.push((request, row.hook_id));
                }
                _ => skipped += 1,
            }
        }
        Ok(Recovery { items, skipped, ledgers_skipped: folded.skipped_files })
    }

    /// Re-dispatches every checkpointed identity without a final receipt.
    pub async fn recover(&self) -> Result<RecoverReport, JournalError> {
        let Recovery { items, skipped, ledgers_skipped } = self.recovery_items()?;
        let mut report = RecoverReport { outcomes: Vec::new(), skipped, ledgers_skipped };
        for (request, hook_id) in items {
            report.outcomes.extend(self.drive(&request, Some(&hook_id)).await?.hooks);
        }
        Ok(report)
    }
}
