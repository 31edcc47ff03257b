//! Providers as the dispatcher sees them: something that takes the input as
//! JSON text and eventually answers. The binding implements this over a JS
//! function; tests implement it in Rust. Failures are values, not panics.

pub use crate::provider_reply::{ProviderReply, ReplyFuture};

pub trait Provider: Send + Sync {
    /// Starts one invocation. The dispatcher applies the timeout and drops the
    /// future (and with it any late answer) when it expires.
    fn invoke(&self, input_json: String) -> ReplyFuture;
}
