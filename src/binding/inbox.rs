//! The owner-private inbox store, exported to JS for turn-start providers:
//! one async method per operation, each running off the JS thread, with
//! arguments and results as JSON text (so core's JSON rule reads them). No
//! rule lives here.

use std::sync::Arc;

use napi_derive::napi;

use super::error::{coded, misuse, rejection, task_failed, Code};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::turn_start::inbox::{
    parse_args, Attention, CaptureInput, CaptureSource, CursorKind, Disposition, InboxCollector, InboxError,
    InboxOptions, InboxStore, MessageRef, ReactionResult, Sender, DEFAULT_PAGE,
};

pub(crate) fn inbox_error(e: InboxError) -> napi::Error {
    rejection(coded(e))
}

pub(crate) fn invalid(what: &str) -> napi::Error {
    rejection(misuse(Code::InvalidArgument, &format!("invalid argument: {what}")))
}

/// Member `name` of the arguments, as `T`.
pub(crate) fn arg<T: DeserializeOwned>(args: &Value, name: &'static str) -> napi::Result<T> {
    serde_json::from_value(args.get(name).cloned().unwrap_or(Value::Null)).map_err(|_| invalid(name))
}

/// The arguments' JSON text, lone surrogates handled by core's rule.
pub(crate) fn parse(args_json: &str) -> napi::Result<Value> {
    parse_args(args_json).map_err(inbox_error)
}

/// A capture's `input`; when it does not convert, the error names the member
/// that does not (`invalid argument: sender`), else `input`.
pub(crate) fn capture_arg(args: &Value) -> napi::Result<CaptureInput> {
    arg::<CaptureInput>(args, "input").map_err(|e| {
        let Some(input) = args.get("input").and_then(Value::as_object) else { return e };
        let member = |name: &str| input.get(name).cloned().unwrap_or(Value::Null);
        let fits: [(&'static str, bool); 5] = [
            ("routeId", member("routeId").is_string()),
            ("providerMessageId", member("providerMessageId").is_string()),
            ("source", serde_json::from_value::<CaptureSource>(member("source")).is_ok()),
            ("sender", serde_json::from_value::<Sender>(member("sender")).is_ok()),
            ("attention", serde_json::from_value::<Attention>(member("attention")).is_ok()),
        ];
        fits.iter().find(|(_, ok)| !ok).map_or(e, |(name, _)| invalid(name))
    })
}

/// The `message` argument, a `MessageRef`.
pub(crate) fn message(args: &Value) -> napi::Result<MessageRef> {
    arg::<MessageRef>(args, "message")
}

/// `{ scope, kind, leaseMs }` of a cursor claim.
pub(crate) fn claim_args(a: &Value) -> napi::Result<(String, CursorKind, u32)> {
    Ok((arg(a, "scope")?, arg(a, "kind")?, arg(a, "leaseMs")?))
}

/// `{ scope, kind, token, value, read }` of a cursor advance.
pub(crate) type AdvanceArgs = (String, CursorKind, String, String, Vec<MessageRef>);

pub(crate) fn advance_args(a: &Value) -> napi::Result<AdvanceArgs> {
    Ok((arg(a, "scope")?, arg(a, "kind")?, arg(a, "token")?, arg(a, "value")?, arg(a, "read")?))
}

/// `{ scope, kind, token }` of a cursor release.
pub(crate) fn release_args(a: &Value) -> napi::Result<(String, CursorKind, String)> {
    Ok((arg(a, "scope")?, arg(a, "kind")?, arg(a, "token")?))
}

/// `{ message, result }` of a reaction's end.
pub(crate) fn reaction_end(a: &Value) -> napi::Result<(MessageRef, ReactionResult)> {
    Ok((message(a)?, arg(a, "result")?))
}

fn out<T: serde::Serialize>(v: Result<T, InboxError>) -> napi::Result<String> {
    let v = v.map_err(inbox_error)?;
    serde_json::to_string(&v).map_err(|_| task_failed("result could not be serialized"))
}

/// An open owner-private inbox file.
#[napi]
pub struct NativeInboxStore {
    pub(crate) store: Arc<InboxStore>,
}

#[napi(object)]
pub struct InboxOpenOptions {
    /// The configured profile's own verified identity, for the self filter.
    pub self_identity: Option<String>,
    pub busy_timeout_ms: Option<u32>,
    /// How long an unfinished reaction attempt counts as in flight (default 60000).
    pub attempt_stale_ms: Option<u32>,
    /// How long an acknowledged message keeps its private payload (default 7 days).
    pub retention_ms: Option<i64>,
}

/// Opens (creating on first use) the inbox file at `path`.
#[napi]
pub async fn open_native_inbox(path: String, options: Option<InboxOpenOptions>) -> napi::Result<NativeInboxStore> {
    let defaults = InboxOptions::default();
    let options = match options {
        Some(o) => InboxOptions {
            busy_timeout_ms: o.busy_timeout_ms.unwrap_or(defaults.busy_timeout_ms),
            attempt_stale_ms: o.attempt_stale_ms.unwrap_or(defaults.attempt_stale_ms),
            self_identity: o.self_identity,
            retention_ms: o.retention_ms.unwrap_or(defaults.retention_ms),
        },
        None => defaults,
    };
    let store = tokio::task::spawn_blocking(move || InboxStore::open(path, options))
        .await
        .map_err(|_| task_failed("inbox open task failed"))?
        .map_err(inbox_error)?;
    Ok(NativeInboxStore { store: Arc::new(store) })
}

impl NativeInboxStore {
    /// Runs `op` off the JS thread on the arguments' JSON text; resolves to
    /// its result as JSON text.
    async fn run<T, F>(&self, args_json: String, op: F) -> napi::Result<String>
    where
        T: serde::Serialize,
        F: FnOnce(&InboxStore, &Value) -> napi::Result<Result<T, InboxError>> + Send + 'static,
    {
        let store = self.store.clone();
        tokio::task::spawn_blocking(move || out(op(&store, &parse(&args_json)?)?))
            .await
            .map_err(|_| task_failed("inbox task failed"))?
    }
}

/// One method per operation of the owner's side, each named as in
/// lib/inbox.ts; arguments (`{ message }`, ...) and results cross as JSON
/// text. Captures go through `collector()`; first reads, cursor writes and
/// reactions only through a turn-start session.
#[napi]
impl NativeInboxStore {
    /// The capture-only handle a realtime collector holds.
    #[napi]
    pub fn collector(&self) -> NativeInboxCollector {
        NativeInboxCollector { collector: InboxCollector::new(self.store.clone()) }
    }

    #[napi]
    pub async fn contains(&self, args_json: String) -> napi::Result<String> {
        self.run(args_json, |s, a| Ok(s.contains(&message(a)?))).await
    }

    #[napi]
    pub async fn pending_count(&self) -> napi::Result<String> {
        self.run(String::from("{}"), |s, _| Ok(s.pending_count())).await
    }

    #[napi]
    pub async fn pending(&self, args_json: String) -> napi::Result<String> {
        self.run(args_json, |s, a| {
            let after = arg::<Option<i64>>(a, "after")?;
            Ok(s.pending(after, arg::<Option<u32>>(a, "limit")?.unwrap_or(DEFAULT_PAGE)))
        })
        .await
    }

    #[napi]
    pub async fn dispose(&self, args_json: String) -> napi::Result<String> {
        self.run(args_json, |s, a| {
            let effect = arg::<Option<String>>(a, "effectReceiptId")?;
            Ok(s.dispose(&message(a)?, arg::<Disposition>(a, "disposition")?, effect.as_deref()))
        })
        .await
    }

    #[napi]
    pub async fn ack(&self, args_json: String) -> napi::Result<String> {
        self.run(args_json, |s, a| Ok(s.ack(&message(a)?))).await
    }

    #[napi]
    pub async fn purge_expired(&self) -> napi::Result<String> {
        self.run(String::from("{}"), |s, _| Ok(s.purge_expired())).await
    }

    #[napi]
    pub async fn retention_counts(&self) -> napi::Result<String> {
        self.run(String::from("{}"), |s, _| Ok(s.retention_counts())).await
    }

    #[napi]
    pub async fn cursor(&self, args_json: String) -> napi::Result<String> {
        self.run(args_json, |s, a| Ok(s.cursor(&arg::<String>(a, "scope")?, arg::<CursorKind>(a, "kind")?))).await
    }

    /// Closes the file; later calls fail with `ERR_LOOPX_INBOX_CLOSED`.
    #[napi]
    pub async fn close(&self) -> napi::Result<()> {
        let store = self.store.clone();
        tokio::task::spawn_blocking(move || store.close()).await.map_err(|_| task_failed("inbox close task failed"))
    }
}

/// A realtime collector's handle on an inbox: capture only. Core refuses a
/// capture whose source is not `collector`.
#[napi]
pub struct NativeInboxCollector {
    collector: InboxCollector,
}

#[napi]
impl NativeInboxCollector {
    #[napi]
    pub async fn capture(&self, args_json: String) -> napi::Result<String> {
        let collector = self.collector.clone();
        let work = move || out(collector.capture(&capture_arg(&parse(&args_json)?)?));
        tokio::task::spawn_blocking(work).await.map_err(|_| task_failed("inbox task failed"))?
    }
}
