//! LoopX's post-writeback hook transaction, served by this package: the
//! protocol LoopX's Python composition roots speak to its Node runtime
//! (`capability_hook.post_writeback.transaction`), in two stateless phases.
//!
//! - `preflight` admits the registrations (in canonical `hook_id` order),
//!   reads each hook's sidecar receipt and answers the provider plan: what
//!   to call, at which attempt, with which input; or, when nothing needs to
//!   run, the dispatch result at once.
//! - `finalize` carries the same facts plus the providers' outcomes. It
//!   reads the sidecars again, judges each outcome, writes each receipt
//!   under LoopX's lock with a compare-and-swap, and answers the dispatch.
//!
//! The sidecar folder is the store both phases read and write, so LoopX's
//! own writers and its periodic-report consumer stay correct while both run.
//! Documents are judged by the dialect's validators (`super`), ids by
//! `super::ids`. A malformed request is a [`Rejected`] with LoopX's message;
//! everything about one hook is a failure inside the dispatch.

mod envelope;
mod finalize;
mod inspect;
mod journal;
mod request;
mod store;

#[cfg(test)]
mod tests;

use std::sync::Arc;

use serde_json::{json, Value};

pub use journal::Step;
pub use request::MAX_DEPTH;

use crate::journal::Journal;

pub const REQUEST_SCHEMA_VERSION: &str = "loopx_post_writeback_hook_transaction_request_v0";
pub const RESULT_SCHEMA_VERSION: &str = "loopx_post_writeback_hook_transaction_result_v0";
pub const SOURCE_SCHEMA_VERSION: &str = "loopx_post_writeback_hook_source_v0";

/// Deep documents are parsed, judged and written recursively; this stack
/// holds [`MAX_DEPTH`] levels of the deepest of those walks.
const STACK_BYTES: usize = 128 << 20;

/// Why a request was refused as a whole: LoopX's message for it (fixed
/// text and field names, never a value of the request) and which kind.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Rejected {
    pub message: String,
    pub reason: Reason,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// The request breaks the transaction protocol.
    Request,
    /// The source breaks the source contract (LoopX's own code for it).
    Source,
    /// The request is deeper than this package walks.
    TooDeep,
    /// The worst case of the answer, or the answer, exceeds LoopX's envelope.
    Envelope,
    /// The evaluation itself failed; nothing of the request is named.
    Internal,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Request => "post_writeback_transaction_invalid",
            Reason::Source => "post_writeback_source_invalid",
            Reason::TooDeep => "post_writeback_transaction_too_deep",
            Reason::Envelope => "post_writeback_transaction_envelope",
            Reason::Internal => "post_writeback_transaction_failed",
        }
    }
}

impl Rejected {
    pub(crate) fn request(message: impl Into<String>) -> Self {
        Rejected { message: message.into(), reason: Reason::Request }
    }
}

/// An answered request: the result document's JSON text, and what became
/// of each admitted hook's receipt in the journal, when one was given.
pub struct Evaluated {
    pub text: String,
    pub journal: Vec<Step>,
}

/// Evaluates one request (JSON text) and answers the result document as
/// JSON text; with a journal, each admitted hook's receipt is then imported
/// into it as the folder holds it. Runs on a thread of its own whose stack
/// holds the deepest document admitted; it may wait for sidecar locks, so
/// call it off any event loop.
pub fn evaluate(request: String, journal: Option<Arc<Journal>>) -> Result<Evaluated, Rejected> {
    let failed = || Rejected { message: "the transaction could not be evaluated".into(), reason: Reason::Internal };
    std::thread::Builder::new()
        .name("loopx-hooks-transaction".into())
        .stack_size(STACK_BYTES)
        .spawn(move || evaluate_here(&request, journal.as_deref()))
        .map_err(|_| failed())?
        .join()
        .map_err(|_| failed())?
}

fn evaluate_here(text: &str, journal: Option<&Journal>) -> Result<Evaluated, Rejected> {
    let value = request::parse(text)?;
    let request = request::decode(&value)?;
    let transaction_id = request.transaction_id();
    let (result, inspection) = match request.phase {
        request::Phase::Preflight => preflight(&request, &transaction_id)?,
        request::Phase::Finalize => {
            if request.supplied_transaction_id.as_deref() != Some(transaction_id.as_str()) {
                return Err(Rejected::request("finalize transaction_id does not match source and registrations"));
            }
            finalize::finalize(&request, &transaction_id)?
        }
    };
    let text = envelope::bounded(result)?;
    let journal = journal.map(|j| journal::keep_in_step(j, &request, &inspection)).unwrap_or_default();
    Ok(Evaluated { text, journal })
}

fn preflight(request: &request::Request, transaction_id: &str) -> Result<(Value, inspect::Inspection), Rejected> {
    let mut inspection = inspect::inspect(request)?;
    envelope::admit(&inspection, transaction_id, inspection.plans.len())?;
    let dispatch = if inspection.plans.is_empty() {
        finalize::materialize(request, &mut inspection, &Default::default())?;
        envelope::dispatch_result(&inspection, 0)
    } else {
        Value::Null
    };
    let result = json!({
        "schema_version": RESULT_SCHEMA_VERSION,
        "phase": "preflight",
        "transaction_id": transaction_id,
        "provider_plan": inspection.plans.iter().map(inspect::Plan::to_json).collect::<Vec<_>>(),
        "dispatch": dispatch,
    });
    Ok((result, inspection))
}
