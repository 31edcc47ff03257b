//! `HookRuntime`: the dispatcher over a journal file, with JS providers as
//! threadsafe functions. Documents cross as JSON text, once each way.

use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi_derive::napi;

use super::error::{async_error, internal, misuse, Code, Result as BindingResult};
use super::js_provider::{JsProvider, JsProviderFn};
use super::js_value::{read_document, JsAny};
use super::validators::set_rejection;
use crate::dispatch::{DispatchRequest, Dispatcher, Profile, Provider};
use crate::journal::{Journal, JournalError, JournalOptions};
use crate::validate::Violations;

pub(crate) fn journal_error(e: JournalError) -> napi::Error<Code> {
    misuse(Code::Journal(e.code()), &e.to_string())
}

fn verdict(env: &Env, result: std::result::Result<(), Violations>) -> BindingResult<Object<'_>> {
    let mut out = Object::new(env).map_err(internal)?;
    match result {
        Ok(()) => out.set("ok", true).map_err(internal)?,
        Err(violations) => set_rejection(&mut out, violations).map_err(internal)?,
    }
    Ok(out)
}

#[napi(object)]
pub struct RuntimeOptions {
    pub journal_path: String,
    /// The profile as JSON text (see `Profile`).
    pub profile_json: Option<String>,
    /// `false` commits final records with synchronous=NORMAL. Default true.
    pub synchronous_full: Option<bool>,
    pub busy_timeout_ms: Option<u32>,
}

#[napi]
pub struct NativeHookRuntime {
    dispatcher: Arc<Dispatcher>,
}

/// Opens (creating on first use) the journal and builds a runtime over it.
#[napi]
pub async fn open_native_runtime(options: RuntimeOptions) -> napi::Result<NativeHookRuntime> {
    open_runtime(options).await.map_err(async_error)
}

async fn open_runtime(options: RuntimeOptions) -> BindingResult<NativeHookRuntime> {
    let profile: Profile = match options.profile_json.as_deref() {
        Some(text) => serde_json::from_str(text)
            .map_err(|_| misuse(Code::InvalidArgument, "profile does not have the Profile shape"))?,
        None => Profile::default(),
    };
    let journal_options = JournalOptions {
        synchronous_full: options.synchronous_full.unwrap_or(true),
        busy_timeout_ms: options.busy_timeout_ms.unwrap_or(JournalOptions::default().busy_timeout_ms),
    };
    let path = options.journal_path;
    let journal = tokio::task::spawn_blocking(move || Journal::open(path, journal_options))
        .await
        .map_err(|_| misuse(Code::Internal, "journal open task failed"))?
        .map_err(journal_error)?;
    Ok(NativeHookRuntime { dispatcher: Arc::new(Dispatcher::new(Arc::new(journal), profile)) })
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

    /// Installs `provider` behind `registration`; returns the verdict.
    #[napi(
        ts_args_type = "registration: unknown, provider: (inputJson: string) => Promise<string> | string",
        ts_return_type = "{ ok: true } | { ok: false; violations: Violation[] }"
    )]
    pub fn register<'e>(&self, env: &'e Env, registration: JsAny, provider: JsProviderFn) -> Result<Object<'e>, Code> {
        let provider: Arc<dyn Provider> = Arc::new(JsProvider::new(provider));
        let result =
            read_document(registration).and_then(|doc| self.dispatcher.register(doc.value(), provider).map(|_| ()));
        verdict(env, result)
    }

    /// Dispatches one request (JSON text of a `DispatchRequest`); resolves to
    /// the `DispatchOutcome` as JSON text once its records are durable.
    #[napi]
    pub async fn dispatch(&self, request_json: String) -> napi::Result<String> {
        self.dispatch_json(request_json).await.map_err(async_error)
    }

    async fn dispatch_json(&self, request_json: String) -> BindingResult<String> {
        let request: DispatchRequest = serde_json::from_str(&request_json)
            .map_err(|_| misuse(Code::InvalidArgument, "request does not have the DispatchRequest shape"))?;
        let outcome = self.dispatcher.dispatch(&request).await.map_err(journal_error)?;
        serde_json::to_string(&outcome).map_err(|_| misuse(Code::Internal, "outcome could not be serialized"))
    }

    /// Re-dispatches every checkpointed identity without a final receipt.
    #[napi]
    pub async fn recover(&self) -> napi::Result<String> {
        let report = self.dispatcher.recover().await.map_err(|e| async_error(journal_error(e)))?;
        serde_json::to_string(&report)
            .map_err(|_| async_error(misuse(Code::Internal, "report could not be serialized")))
    }

    /// The journal this runtime writes, for readers and the outbox.
    #[napi]
    pub fn journal(&self) -> crate::binding::journal::NativeJournal {
        crate::binding::journal::NativeJournal { journal: self.dispatcher.journal().clone() }
    }

    /// Finishes queued writes and closes the journal; later calls fail with `journal_closed`.
    #[napi]
    pub async fn close(&self) -> napi::Result<()> {
        self.dispatcher.close().await;
        Ok(())
    }
}
