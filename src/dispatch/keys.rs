//! The `idempotency_key`s of one shipped dispatch, handed out once each in
//! hook_id order over fresh and replayed hooks alike, as LoopX's own
//! transaction does (`dialect/shipped/transaction/finalize.rs`):
//! - a fresh result whose key an earlier hook took is `intent_key_conflict`,
//!   recorded as its attempt's failure;
//! - a replay whose key an earlier hook took is `intent_key_conflict` too,
//!   neither replayed nor reported (its receipt stays as it is);
//! - a key, once taken, stays taken: by a result whose record then failed or
//!   lost, and by the receipt another writer recorded first (the winner of a
//!   conflict) as well as by the loser's own result.
//!
//! Contract-v0 results and receipts carry no key and pass.

use std::collections::HashSet;

use super::judged::{Accepted, Failure};
use super::outcome::{HookOutcome, HookOutcomeKind};

#[derive(Default)]
pub(super) struct IntentKeys(HashSet<String>);

impl IntentKeys {
    /// A fresh result about to be recorded: it takes its key, or fails with
    /// `intent_key_conflict` when an earlier hook took it.
    pub(super) fn admit(&mut self, a: Accepted) -> Result<Accepted, Failure> {
        match &a.shipped_intent {
            Some(i) if !self.0.insert(i.idempotency_key.clone()) => Err(Failure::intent_key_conflict()),
            _ => Ok(a),
        }
    }

    /// The next outcome in hook_id order once it is settled; `own` is the
    /// key its fresh result took in this dispatch, if any.
    pub(super) fn settle(&mut self, o: &mut HookOutcome, own: Option<&str>) {
        let held = receipt_key(o).map(str::to_owned);
        if o.outcome == HookOutcomeKind::Replayed {
            if let Some(key) = held {
                if !self.0.insert(key) {
                    key_taken(o);
                }
            }
            return;
        }
        self.0.extend(held);
        self.0.extend(own.map(str::to_owned));
    }

    /// Every outcome of a dispatch, in hook_id order, each with the key its
    /// fresh result took: what each replay comes to once every record's
    /// fate (another writer's receipt among them) is known.
    pub(super) fn reduce<'a>(outcomes: impl Iterator<Item = (&'a mut HookOutcome, Option<&'a str>)>) {
        let mut keys = IntentKeys::default();
        for (o, own) in outcomes {
            keys.settle(o, own);
        }
    }
}

/// The key of the receipt an outcome reports (replayed, recorded, or the
/// winner of a conflict).
fn receipt_key(o: &HookOutcome) -> Option<&str> {
    let end = o.shipped.as_deref()?;
    Some(end.receipt.as_ref()?.intent.as_ref()?.idempotency_key.as_str())
}

/// A replay whose key an earlier hook took: `intent_key_conflict`, with
/// nothing recorded by this dispatch (attempt 0, so no receipt reference).
fn key_taken(o: &mut HookOutcome) {
    let f = Failure::intent_key_conflict();
    o.outcome = HookOutcomeKind::Failed;
    o.attempt = 0;
    o.receipt = None;
    o.failure_code = Some(f.code);
    o.failure_rule = None;
    o.failure_pointer = None;
    if let Some(end) = o.shipped.as_deref_mut() {
        end.receipt = None;
        end.error_code = f.shipped;
    }
}
