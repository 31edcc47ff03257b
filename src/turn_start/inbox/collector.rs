//! The realtime collector's handle on the inbox: it can only capture, and
//! only as realtime collection (`source: collector`). First reads, cursors
//! and reactions go through a turn-start session, which enforces its
//! registration's write scopes and budget; a collector holding this handle
//! cannot reach them, so realtime collection cannot spend the reaction scope
//! whatever the composition root hands it.

use std::sync::Arc;

use super::{CaptureInput, CaptureOutcome, CaptureSource, InboxError, InboxStore, Result};

/// A capture-only handle on an open inbox. Cheap to clone; closing the
/// store closes every collector made from it.
#[derive(Clone, Debug)]
pub struct InboxCollector {
    store: Arc<InboxStore>,
}

impl InboxCollector {
    pub fn new(store: Arc<InboxStore>) -> InboxCollector {
        InboxCollector { store }
    }

    /// Captures one message as realtime collection. A capture that claims
    /// another source (a turn-start capture) is refused before any write:
    /// that one belongs to a session.
    pub fn capture(&self, input: &CaptureInput) -> Result<CaptureOutcome> {
        if input.source != CaptureSource::Collector {
            return Err(InboxError::InvalidArgument { what: "source" });
        }
        self.store.capture(input)
    }
}
