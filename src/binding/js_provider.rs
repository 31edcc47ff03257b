//! JS providers are called by the TypeScript layer on the JS thread
//! (lib/provider.ts `callProvider`); what a call produced crosses back as the
//! reply's JSON text, or as a `\u0000`-prefixed marker (JSON text never
//! starts with NUL) for what happened instead.

use crate::dispatch::{CallResult, ProviderReply};
use crate::turn_start::TurnStartCallResult;

/// A settled reply: JSON text, or the provider threw / returned what JSON cannot hold.
fn parse_reply(text: String) -> ProviderReply {
    match text.strip_prefix('\u{0}') {
        Some("not_json") => ProviderReply::NotJson,
        Some(_) => ProviderReply::Threw,
        None => ProviderReply::Json(text),
    }
}

/// A post-writeback provider call as lib/runtime.ts reports it.
pub(crate) fn call_result(text: String) -> CallResult {
    match text.strip_prefix('\u{0}') {
        Some("timed_out") => CallResult::TimedOut,
        Some("wall") => CallResult::WallExceeded,
        Some("too_large") => CallResult::TooLarge,
        Some("not_started") => CallResult::NotStarted,
        _ => CallResult::Reply(parse_reply(text)),
    }
}

/// A turn-start provider call as lib/turn_start.ts reports it.
pub(crate) fn turn_start_call_result(text: String) -> TurnStartCallResult {
    match text.strip_prefix('\u{0}') {
        Some("timed_out") => TurnStartCallResult::TimedOut,
        Some("too_large") => TurnStartCallResult::TooLarge,
        _ => TurnStartCallResult::Reply(parse_reply(text)),
    }
}
