//! A turn-start provider's session, exported to JS: one async method per
//! operation, each looking the invocation's session up by its token (so a
//! call after the invocation is over is refused `ERR_LOOPX_SESSION_CLOSED`)
//! and running off the JS thread. Arguments and results cross as JSON text.
//! No rule lives here: core's session grants scopes and counts budgets.

use std::sync::Arc;

use napi_derive::napi;
use serde_json::Value;

use super::error::{coded, rejection, task_failed};
use super::inbox::{advance_args, arg, capture_arg, claim_args, message, parse, reaction_end, release_args};
use crate::turn_start::{InboxSessions, SessionError, TurnStartSession};

/// The session of one invocation, named by its token.
#[napi]
pub struct NativeTurnStartSession {
    pub(crate) sessions: Arc<InboxSessions>,
    pub(crate) token: String,
}

impl NativeTurnStartSession {
    async fn run<T, F>(&self, args_json: String, op: F) -> napi::Result<String>
    where
        T: serde::Serialize,
        F: FnOnce(&TurnStartSession, &Value) -> napi::Result<Result<T, SessionError>> + Send + 'static,
    {
        let session = self.sessions.session(&self.token).ok_or_else(|| rejection(coded(SessionError::Closed)))?;
        let work = move || {
            let done = op(&session, &parse(&args_json)?)?.map_err(|e| rejection(coded(e)))?;
            serde_json::to_string(&done).map_err(|_| task_failed("result could not be serialized"))
        };
        tokio::task::spawn_blocking(work).await.map_err(|_| task_failed("session task failed"))?
    }
}

#[napi]
impl NativeTurnStartSession {
    #[napi]
    pub async fn read_route(&self, args_json: String) -> napi::Result<String> {
        self.run(args_json, |s, a| Ok(s.read_route(&arg::<String>(a, "routeId")?).map(|_| ()))).await
    }

    #[napi]
    pub async fn capture(&self, args_json: String) -> napi::Result<String> {
        self.run(args_json, |s, a| Ok(s.capture(&capture_arg(a)?))).await
    }

    #[napi]
    pub async fn record_first_reads(&self, args_json: String) -> napi::Result<String> {
        self.run(args_json, |s, a| Ok(s.record_first_reads(&arg::<String>(a, "readRef")?))).await
    }

    #[napi]
    pub async fn claim_cursor(&self, args_json: String) -> napi::Result<String> {
        self.run(args_json, |s, a| claim_args(a).map(|(scope, kind, lease)| s.claim_cursor(&scope, kind, lease))).await
    }

    #[napi]
    pub async fn advance_cursor(&self, args_json: String) -> napi::Result<String> {
        self.run(args_json, |s, a| {
            advance_args(a)
                .map(|(scope, kind, token, value, read)| s.advance_cursor(&scope, kind, &token, &value, &read))
        })
        .await
    }

    #[napi]
    pub async fn release_cursor(&self, args_json: String) -> napi::Result<String> {
        self.run(args_json, |s, a| release_args(a).map(|(scope, kind, token)| s.release_cursor(&scope, kind, &token)))
            .await
    }

    #[napi]
    pub async fn reaction_candidates(&self, args_json: String) -> napi::Result<String> {
        self.run(args_json, |s, a| Ok(s.reaction_candidates(&arg::<String>(a, "collectorId")?, arg::<u32>(a, "max")?)))
            .await
    }

    #[napi]
    pub async fn begin_reaction(&self, args_json: String) -> napi::Result<String> {
        self.run(args_json, |s, a| Ok(s.begin_reaction(&message(a)?))).await
    }

    #[napi]
    pub async fn finish_reaction(&self, args_json: String) -> napi::Result<String> {
        self.run(args_json, |s, a| reaction_end(a).map(|(m, r)| s.finish_reaction(&m, r))).await
    }

    #[napi]
    pub async fn resolve_reaction(&self, args_json: String) -> napi::Result<String> {
        self.run(args_json, |s, a| reaction_end(a).map(|(m, r)| s.resolve_reaction(&m, r))).await
    }
}
