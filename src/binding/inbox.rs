//! The owner-private inbox store, exported to JS for turn-start providers.
//! One async entry point per operation name keeps the conversions in one
//! place: arguments cross as JSON text, results come back as JSON text, and
//! every call runs off the JS thread. No rule lives here.

use std::sync::Arc;

use napi_derive::napi;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::turn_start::inbox::{
    parse_args, Attention, CaptureInput, CaptureSource, CursorKind, Disposition, InboxError, InboxOptions, InboxStore,
    MessageRef, ReactionResult, Sender, DEFAULT_PAGE,
};

/// A failure as the TS layer reads it back: `CODE|message`.
pub(crate) fn fail(code: &str, message: &str) -> napi::Error {
    napi::Error::new(napi::Status::GenericFailure, format!("{code}|{message}"))
}

pub(crate) fn inbox_error(e: InboxError) -> napi::Error {
    fail(e.stable_code(), &e.to_string())
}

pub(crate) fn invalid(what: &str) -> napi::Error {
    fail("ERR_LOOPX_INVALID_ARGUMENT", &format!("invalid argument: {what}"))
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

fn out<T: serde::Serialize>(v: Result<T, InboxError>) -> napi::Result<String> {
    let v = v.map_err(inbox_error)?;
    serde_json::to_string(&v).map_err(|_| fail("ERR_LOOPX_INTERNAL", "result could not be serialized"))
}

fn run(store: &InboxStore, op: &str, args: &Value) -> napi::Result<String> {
    let m = || arg::<MessageRef>(args, "message");
    match op {
        "capture" => out(store.capture(&capture_arg(args)?)),
        "contains" => out(store.contains(&m()?)),
        "recordFirstReads" => out(store.record_first_reads(&arg::<String>(args, "readRef")?)),
        "pendingCount" => out(store.pending_count()),
        "pending" => {
            let after = arg::<Option<i64>>(args, "after")?;
            let limit = arg::<Option<u32>>(args, "limit")?.unwrap_or(DEFAULT_PAGE);
            out(store.pending(after, limit))
        }
        "dispose" => {
            let effect = arg::<Option<String>>(args, "effectReceiptId")?;
            out(store.dispose(&m()?, arg::<Disposition>(args, "disposition")?, effect.as_deref()))
        }
        "ack" => out(store.ack(&m()?)),
        "purgeExpired" => out(store.purge_expired()),
        "retentionCounts" => out(store.retention_counts()),
        "reactionCandidates" => {
            out(store.reaction_candidates(&arg::<String>(args, "collectorId")?, arg::<u32>(args, "max")?))
        }
        "beginReaction" => out(store.begin_reaction(&m()?)),
        "finishReaction" => out(store.finish_reaction(&m()?, arg::<ReactionResult>(args, "result")?)),
        "resolveReaction" => out(store.resolve_reaction(&m()?, arg::<ReactionResult>(args, "result")?)),
        "claimCursor" => out(store.claim_cursor(
            &arg::<String>(args, "scope")?,
            arg::<CursorKind>(args, "kind")?,
            arg::<u32>(args, "leaseMs")?,
        )),
        "advanceCursor" => out(store.advance_cursor(
            &arg::<String>(args, "scope")?,
            arg::<CursorKind>(args, "kind")?,
            &arg::<String>(args, "token")?,
            &arg::<String>(args, "value")?,
            &arg::<Vec<MessageRef>>(args, "read")?,
        )),
        "releaseCursor" => out(store.release_cursor(
            &arg::<String>(args, "scope")?,
            arg::<CursorKind>(args, "kind")?,
            &arg::<String>(args, "token")?,
        )),
        "cursor" => out(store.cursor(&arg::<String>(args, "scope")?, arg::<CursorKind>(args, "kind")?)),
        _ => Err(invalid("op")),
    }
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
        .map_err(|_| fail("ERR_LOOPX_INTERNAL", "inbox open task failed"))?
        .map_err(inbox_error)?;
    Ok(NativeInboxStore { store: Arc::new(store) })
}

#[napi]
impl NativeInboxStore {
    /// Runs one store operation (`op`, arguments as JSON text); resolves to
    /// its result as JSON text.
    #[napi]
    pub async fn call(&self, op: String, args_json: String) -> napi::Result<String> {
        let store = self.store.clone();
        tokio::task::spawn_blocking(move || run(&store, &op, &parse(&args_json)?))
            .await
            .map_err(|_| fail("ERR_LOOPX_INTERNAL", "inbox task failed"))?
    }

    /// Closes the file; later calls fail with `ERR_LOOPX_INBOX_CLOSED`.
    #[napi]
    pub async fn close(&self) -> napi::Result<()> {
        let store = self.store.clone();
        tokio::task::spawn_blocking(move || store.close())
            .await
            .map_err(|_| fail("ERR_LOOPX_INTERNAL", "inbox close task failed"))
    }
}
