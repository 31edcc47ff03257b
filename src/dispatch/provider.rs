//! Providers as the dispatcher sees them: something that takes the input as
//! JSON text and eventually answers. The binding implements this over a JS
//! function; tests implement it in Rust. Failures are values, not panics.

use std::future::Future;
use std::pin::Pin;

/// What came back from one invocation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProviderReply {
    /// The result as JSON text.
    Json(String),
    /// The provider threw or rejected (its message is never kept).
    Threw,
    /// The provider returned something JSON cannot hold.
    NotJson,
}

pub type ReplyFuture = Pin<Box<dyn Future<Output = ProviderReply> + Send>>;

pub trait Provider: Send + Sync {
    /// Starts one invocation. The dispatcher applies the timeout and drops the
    /// future (and with it any late answer) when it expires.
    fn invoke(&self, input_json: String) -> ReplyFuture;
}
