//! What one provider invocation answers, as the post-writeback dispatcher and
//! the turn-start kernel both see it. Each defines its own provider trait over
//! these; the binding implements both over one JS function wrapper.

use std::future::Future;
use std::pin::Pin;

/// What came back from one invocation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProviderReply {
    /// The answer as JSON text: a post-writeback hook result, or a turn-start
    /// hook's receipt.
    Json(String),
    /// The provider threw or rejected (its message is never kept).
    Threw,
    /// The provider returned something JSON cannot hold.
    NotJson,
}

pub type ReplyFuture = Pin<Box<dyn Future<Output = ProviderReply> + Send>>;
