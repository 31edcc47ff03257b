//! `NativeHookRuntime`: the dispatcher's synchronous steps over a journal
//! file. The TypeScript layer (lib/runtime.ts) calls the providers itself
//! between `prepare`/`begin` and `complete`; dispatches whose records need a
//! commit come back through one callback per group commit.

use std::fmt::Write as _;
use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi::threadsafe_function::{ThreadsafeCallContext, ThreadsafeFunctionCallMode};
use napi_derive::napi;

use super::error::{coded, internal, misuse, rejection, task_failed, Code, Result as BindingResult};
use super::js_provider::call_result;
use super::js_value::{read_document, JsAny};
use super::validators::set_rejection;
use crate::dispatch::{plan_json, DialectRules, DispatchOutcome, Dispatcher, Finished, OnTheWay, Prepared, Source};
use crate::journal::{BatchInfo, OpenMode};
use crate::options::RuntimeOptions;
use crate::validate::Violations;

fn verdict(env: &Env, result: std::result::Result<(), Violations>) -> BindingResult<Object<'_>> {
    let mut out = Object::new(env).map_err(internal)?;
    match result {
        Ok(()) => out.set("ok", true).map_err(internal)?,
        Err(violations) => set_rejection(&mut out, violations).map_err(internal)?,
    }
    Ok(out)
}

fn to_json<T: serde::Serialize>(value: &T) -> BindingResult<String> {
    serde_json::to_string(value).map_err(|_| misuse(Code::Internal, "value could not be serialized"))
}

/// One page of `NativeRecovery`: request i runs only hook `hookIds[i]`.
#[napi(object)]
pub struct NativeRecoveryPage {
    pub requests: Vec<String>,
    pub hook_ids: Vec<String>,
}

/// The identities one `recover()` re-dispatches, oldest first, handed out a page at a time.
#[napi]
pub struct NativeRecovery {
    items: std::sync::Mutex<std::collections::VecDeque<(Source, String)>>,
    skipped: u32,
    ledgers_skipped: u32,
}

#[napi]
impl NativeRecovery {
    /// Checkpointed identities left out (another dialect, or a hook not installed).
    #[napi(getter)]
    pub fn skipped(&self) -> u32 {
        self.skipped
    }

    /// Ledger-folder entries left alone (not a regular file of this user's).
    #[napi(getter)]
    pub fn ledgers_skipped(&self) -> u32 {
        self.ledgers_skipped
    }

    /// The next `limit` identities (at least one); empty once all are taken.
    #[napi]
    pub fn take(&self, limit: u32) -> NativeRecoveryPage {
        let mut items = self.items.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let n = items.len().min(limit.max(1) as usize);
        let mut page = NativeRecoveryPage { requests: Vec::with_capacity(n), hook_ids: Vec::with_capacity(n) };
        for (request, hook_id) in items.drain(..n) {
            page.requests.push(request.to_json());
            page.hook_ids.push(hook_id);
        }
        page
    }
}

#[napi]
pub struct NativeHookRuntime {
    dispatcher: Arc<Dispatcher>,
}

/// Opens (creating on first use) the journal and builds a runtime over it;
/// `optionsJson` is a `RuntimeOptions` as JSON text, and `at` how an error
/// names it (`HookRuntime.open: options`).
#[napi]
pub async fn open_native_runtime(options_json: String, at: String) -> napi::Result<NativeHookRuntime> {
    open_runtime(&options_json, &at).await.map_err(rejection)
}

async fn open_runtime(options_json: &str, at: &str) -> BindingResult<NativeHookRuntime> {
    let options = RuntimeOptions::parse(at, options_json).map_err(coded)?;
    let journal_options = options.journal_options();
    let (profile, dialect) = (options.profile(), options.dialect.unwrap_or_default());
    let journal = super::journal::open_journal(options.journal, journal_options, OpenMode::ReadWrite).await?;
    Ok(NativeHookRuntime { dispatcher: Arc::new(Dispatcher::in_dialect(Arc::new(journal), profile, dialect)) })
}

fn parse_request(rules: &'static dyn DialectRules, text: &str) -> BindingResult<Source> {
    rules.parse_source(text).map_err(|_| misuse(Code::InvalidArgument, rules.source_shape()))
}

/// An outcome as the JS side reads it: the engine's outcome, and beside it
/// under `shipped` the dialect's own dispatch result when it has one (what a
/// `loopx-shipped-v0` runtime's `dispatch` resolves to).
fn outcome_text(rules: &'static dyn DialectRules, registered: u32, outcome: &DispatchOutcome) -> String {
    crate::dispatch::outcome_json(outcome, rules.dispatch_result(outcome, registered).as_ref())
}

/// A prepared dispatch as the JSON text of its `NativePlan`.
fn plan_text(d: &Dispatcher, prepared: Prepared) -> String {
    plan_json(prepared, |o| outcome_text(d.rules(), d.registered_count(), o))
}

fn ticket(t: i64) -> BindingResult<u64> {
    u64::try_from(t).map_err(|_| misuse(Code::InvalidArgument, "unknown ticket"))
}

/// Prepares many requests in one step (see `Dispatcher::prepare_many`); a
/// malformed request prepares none.
fn prepare_many(
    dispatcher: &Dispatcher,
    requests_json: &[String],
    only_hook_ids: Option<&[String]>,
) -> Result<Vec<String>, Code> {
    let rules = dispatcher.rules();
    let requests = requests_json.iter().map(|t| parse_request(rules, t)).collect::<BindingResult<Vec<_>>>()?;
    if only_hook_ids.is_some_and(|ids| ids.len() != requests.len()) {
        return Err(misuse(Code::InvalidArgument, "onlyHookIds must have one hook_id per request"));
    }
    let requests = requests.into_iter().enumerate().map(|(i, r)| (r, only_hook_ids.map(|ids| ids[i].as_str())));
    let prepared = dispatcher.prepare_many(requests.collect()).map_err(coded)?;
    Ok(prepared.into_iter().map(|p| plan_text(dispatcher, p)).collect())
}

/// One group commit as JSON text: `{ batch, finished }`, `batch` its
/// [`BatchInfo`] and `finished` its dispatches, `[ticket, outcome, null]` or
/// `[ticket, null, [code, message]]` each.
fn finished_json(rules: &'static dyn DialectRules, registered: u32, batch: Vec<Finished>, info: &BatchInfo) -> String {
    let mut out = String::with_capacity(96 + 640 * batch.len());
    out.push_str("{\"batch\":");
    out.push_str(&serde_json::to_string(info).unwrap_or_default());
    out.push_str(",\"finished\":[");
    for (i, f) in batch.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        match f.outcome {
            Ok(outcome) => {
                let _ = write!(out, "[{},", f.ticket);
                out.push_str(&outcome_text(rules, registered, &outcome));
                out.push_str(",null]");
            }
            Err(e) => {
                let err = coded(e);
                out.push_str(&serde_json::json!([f.ticket, null, [err.status.as_ref(), err.reason]]).to_string());
            }
        }
    }
    out.push_str("]}");
    out
}

#[napi]
impl NativeHookRuntime {
    /// Defines an intent kind; returns the verdict.
    #[napi(
        ts_args_type = "definition: unknown",
        ts_return_type = "{ ok: true } | { ok: false; violations: Violation[] }"
    )]
    pub fn define_intent_kind<'e>(&self, env: &'e Env, definition: JsAny) -> Result<Object<'e>, Code> {
        let result = read_document(definition).and_then(|doc| self.dispatcher.define_intent_kind(doc.value()));
        verdict(env, result)
    }

    /// Installs `registration`, whose provider the TypeScript layer calls; returns the verdict.
    #[napi(
        ts_args_type = "registration: unknown",
        ts_return_type = "{ ok: true } | { ok: false; violations: Violation[] }"
    )]
    pub fn register<'e>(&self, env: &'e Env, registration: JsAny) -> Result<Object<'e>, Code> {
        let result =
            read_document(registration).and_then(|doc| self.dispatcher.register_external(doc.value()).map(|_| ()));
        verdict(env, result)
    }

    /// Sets the one callback that receives, per group commit, every dispatch
    /// it finished (JSON text, see `finished_json`). Weak: it never keeps the
    /// process alive by itself. The delivery's token is dropped on the JS
    /// thread just before the callback runs (or wherever a failed call drops it).
    #[napi(ts_args_type = "callback: (finishedJson: string) => void")]
    pub fn on_finished(&self, callback: Function<'_, String, ()>) -> Result<(), Code> {
        let callback = callback
            .build_threadsafe_function::<(String, OnTheWay)>()
            .weak::<true>()
            .build_callback(|ctx: ThreadsafeCallContext<(String, OnTheWay)>| Ok(ctx.value.0))
            .map_err(internal)?;
        let (rules, registered) = (self.dispatcher.rules(), self.dispatcher.registered_counter());
        self.dispatcher.set_deliver(Box::new(move |batch, info, on_the_way| {
            let registered = registered.load(std::sync::atomic::Ordering::Relaxed);
            let text = finished_json(rules, registered, batch, info);
            callback.call((text, on_the_way), ThreadsafeFunctionCallMode::NonBlocking);
        }));
        Ok(())
    }

    /// The journal writer's counters and histograms (JSON text of `WriterStats`, camelCase).
    #[napi]
    pub fn writer_stats(&self) -> Result<String, Code> {
        to_json(&self.dispatcher.journal().writer_stats())
    }

    /// Dispatches in flight at once (the profile's `maxInFlight`).
    #[napi(getter)]
    pub fn max_in_flight(&self) -> u32 {
        self.dispatcher.profile().max_in_flight
    }

    /// Step 1 of a dispatch (JSON text of a `DispatchRequest`), synchronous:
    /// the JSON text of its `NativePlan`.
    #[napi]
    pub fn prepare(&self, request_json: String) -> Result<String, Code> {
        let request = parse_request(self.dispatcher.rules(), &request_json)?;
        Ok(plan_text(&self.dispatcher, self.dispatcher.prepare(request).map_err(coded)?))
    }

    /// `prepare` for many requests in one call, one plan's text each; with
    /// `onlyHookIds`, request i runs only that hook (recovery). A malformed
    /// request prepares none.
    #[napi]
    pub fn prepare_many(
        &self,
        requests_json: Vec<String>,
        only_hook_ids: Option<Vec<String>>,
    ) -> Result<Vec<String>, Code> {
        prepare_many(&self.dispatcher, &requests_json, only_hook_ids.as_deref())
    }

    /// `prepareMany` on tokio's blocking pool, for a journal whose standing
    /// reads wait on a network (`readsAreRemote`): the event loop's thread
    /// never waits on the round trip.
    #[napi]
    pub async fn prepare_many_off_thread(
        &self,
        requests_json: Vec<String>,
        only_hook_ids: Option<Vec<String>>,
    ) -> napi::Result<Vec<String>> {
        let dispatcher = Arc::clone(&self.dispatcher);
        let prepare = move || prepare_many(&dispatcher, &requests_json, only_hook_ids.as_deref());
        tokio::task::spawn_blocking(move || crate::journal::Journal::reads_without_backoff(prepare))
            .await
            .map_err(|_| task_failed("dispatch task failed"))?
            .map_err(rejection)
    }

    /// Whether the journal's reads wait on a network round trip (PostgreSQL).
    #[napi(getter)]
    pub fn reads_are_remote(&self) -> bool {
        self.dispatcher.journal().reads_are_remote()
    }

    /// Step 2, just before calling the provider of `slot`: queues its
    /// checkpoint and returns the call's limit in milliseconds, negated when
    /// the dispatch's wall budget is the bound; null when that budget is
    /// spent (do not call it).
    #[napi]
    pub fn begin(&self, ticket_id: i64, slot: u32) -> Result<Option<i64>, Code> {
        let limit = self.dispatcher.begin(ticket(ticket_id)?, slot as usize).map_err(coded)?;
        Ok(limit.map(crate::dispatch::Limit::signed_ms))
    }

    /// `begin` that holds the checkpoint back where the journal allows it
    /// (its attempt ledger file counts the attempt meanwhile): `complete`
    /// queues it with the records, one hand-off to the writer. Call
    /// `flushCheckpoints` once a provider has not answered within its turn.
    #[napi]
    pub fn begin_deferred(&self, ticket_id: i64, slot: u32) -> Result<Option<i64>, Code> {
        let limit = self.dispatcher.begin_deferred(ticket(ticket_id)?, slot as usize).map_err(coded)?;
        Ok(limit.map(crate::dispatch::Limit::signed_ms))
    }

    /// Queues every checkpoint `beginDeferred` held back for a dispatch
    /// still in flight, so other processes see those attempts counted.
    #[napi]
    pub fn flush_checkpoints(&self) {
        self.dispatcher.flush_checkpoints();
    }

    /// Step 2 on a journal that counts attempts on its server
    /// (`countsAttemptsOnServer`): commits the call's checkpoint there, off
    /// this thread, then answers as `begin` does; null also when the attempt
    /// could not be counted (do not call the provider).
    #[napi]
    pub async fn begin_counted(&self, ticket_id: i64, slot: u32) -> napi::Result<Option<i64>> {
        let (t, slot) = (ticket(ticket_id).map_err(rejection)?, slot as usize);
        let begun = match self.dispatcher.count_attempt(t, slot) {
            Ok(Some(counting)) => self.dispatcher.counted(t, slot, counting.await),
            Ok(None) => self.dispatcher.begin(t, slot),
            Err(e) => Err(e),
        };
        Ok(begun.map_err(|e| rejection(coded(e)))?.map(crate::dispatch::Limit::signed_ms))
    }

    /// Whether each attempt is committed on the journal's server before its
    /// provider runs (PostgreSQL): call `beginCounted` instead of `begin`.
    #[napi(getter)]
    pub fn counts_attempts_on_server(&self) -> bool {
        self.dispatcher.journal().counts_attempts_on_server()
    }

    /// Step 3: the calls' replies (text, or a `\u0000` marker), in plan order.
    /// Returns the outcome as JSON text when nothing needs recording;
    /// otherwise null, and the outcome arrives through `onFinished`.
    #[napi]
    pub fn complete(&self, ticket_id: i64, replies: Vec<String>) -> Result<Option<String>, Code> {
        let results = replies.into_iter().map(call_result).collect();
        match self.dispatcher.complete(ticket(ticket_id)?, results).map_err(coded)? {
            crate::dispatch::Completion::Done(outcome) => {
                Ok(Some(outcome_text(self.dispatcher.rules(), self.dispatcher.registered_count(), &outcome)))
            }
            crate::dispatch::Completion::Pending => Ok(None),
        }
    }

    /// Drops a prepared dispatch that will not be completed.
    #[napi]
    pub fn cancel(&self, ticket_id: i64) {
        if let Ok(t) = u64::try_from(ticket_id) {
            self.dispatcher.cancel(t);
        }
    }

    /// What `recover()` re-dispatches, read on a worker thread: every owed
    /// identity is one read that may be large, and the JS thread takes them
    /// a page at a time.
    #[napi]
    pub async fn recovery(&self) -> napi::Result<NativeRecovery> {
        let dispatcher = self.dispatcher.clone();
        let r = tokio::task::spawn_blocking(move || dispatcher.recovery_items())
            .await
            .map_err(|_| task_failed("journal task failed"))?
            .map_err(|e| rejection(coded(e)))?;
        let items = std::sync::Mutex::new(r.items.into());
        Ok(NativeRecovery { items, skipped: r.skipped, ledgers_skipped: r.ledgers_skipped })
    }

    /// The journal this runtime writes, for readers and the outbox.
    #[napi]
    pub fn journal(&self) -> crate::binding::journal::NativeJournal {
        crate::binding::journal::NativeJournal { journal: self.dispatcher.journal().clone() }
    }

    /// Waits for dispatches in flight to record, then closes the journal;
    /// later calls fail with `journal_closed`.
    #[napi]
    pub async fn close(&self) -> napi::Result<()> {
        self.dispatcher.close().await;
        Ok(())
    }
}
