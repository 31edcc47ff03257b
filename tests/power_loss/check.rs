//! What must hold of every image: it opens as a journal and is intact, every
//! outcome a caller saw before the cut is there as it was reported, no
//! identity or intent is recorded twice or differently, and `recover()`
//! finishes every owed identity and leaves the journal consistent.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use loopx_hooks::contract::DispatchReceipt;
use loopx_hooks::dispatch::{receipt_from_row, Dispatcher, HookOutcomeKind};
use loopx_hooks::journal::{
    DispatchFilter, DispatchRow, DispatchState, IntentFilter, Journal, JournalOptions, OpenMode,
};

use super::workload::{self, Observed};

/// What the whole run reported, to judge any image by.
pub struct Expected {
    pub observed: Vec<Observed>,
    /// The final receipt the run reported for each identity that got one.
    pub receipts: HashMap<String, DispatchReceipt>,
    /// Every identity the run dispatched.
    pub identities: HashSet<String>,
    pub requests: usize,
}

impl Expected {
    pub fn new(observed: Vec<Observed>, requests: usize) -> Result<Self, String> {
        let mut receipts: HashMap<String, DispatchReceipt> = HashMap::new();
        let mut identities = HashSet::new();
        for o in &observed {
            for h in &o.outcome.hooks {
                identities.insert(h.dispatch_id.clone());
                if let Some(r) = &h.receipt {
                    if let Some(before) = receipts.insert(h.dispatch_id.clone(), r.clone()) {
                        if before != *r {
                            return Err(format!("the run itself reported two receipts for {}", h.dispatch_id));
                        }
                    }
                }
            }
        }
        Ok(Expected { observed, receipts, identities, requests })
    }
}

/// Rounds of `recover()` needed at most: a hook allowed two invocations can
/// fail once, and its exhausted receipt takes one more.
const RECOVER_ROUNDS: usize = 4;

/// Checks the journal at `path` (the image, written out) against what the
/// run saw by `cut`.
pub async fn image(path: &Path, cut: usize, expected: &Expected) -> Result<(), String> {
    // No fsync needed to check an image; NORMAL keeps the run short.
    let options = JournalOptions { synchronous_full: false, ..JournalOptions::default() };
    let journal =
        Arc::new(Journal::open(path, options, OpenMode::ReadWrite).map_err(|e| format!("open: {} ({e})", e.code()))?);
    intact(&journal, "as found")?;
    let seen: Vec<&Observed> = expected.observed.iter().filter(|o| o.position <= cut).collect();
    kept(&journal, &seen)?;
    consistent(&journal, expected, true)?;

    let dispatcher = Arc::new(Dispatcher::new(journal.clone(), workload::profile()));
    workload::install(&dispatcher, false);
    for _ in 0..RECOVER_ROUNDS {
        let report = dispatcher.recover().await.map_err(|e| format!("recover: {}", e.code()))?;
        if report.skipped != 0 {
            return Err(format!("recover skipped {} identities whose hooks are installed", report.skipped));
        }
        if report.outcomes.is_empty() {
            break;
        }
    }
    // Every hook here can finish (propose, answer not_applicable or exhaust).
    let owed = journal.unfinished().map_err(|e| e.code().to_string())?;
    if let Some(row) = owed.first() {
        return Err(format!(
            "{} identities still owed after recover, first {} ({:?}, {} attempts)",
            owed.len(),
            row.dispatch_id,
            row.state,
            row.attempts
        ));
    }
    intact(&journal, "after recover")?;
    kept(&journal, &seen)?;
    consistent(&journal, expected, false)?;

    // The orchestrator's recovery: every committed receipt dispatched again.
    // What a caller saw comes back as a replay of the same receipt.
    let mut redispatches = tokio::task::JoinSet::new();
    for n in 0..expected.requests {
        let d = dispatcher.clone();
        redispatches.spawn(async move { d.dispatch(&workload::request(n)).await });
    }
    while let Some(out) = redispatches.join_next().await {
        let out = out.map_err(|_| "a redispatch task failed".to_string())?;
        let out = out.map_err(|e| format!("redispatch: {}", e.code()))?;
        for h in &out.hooks {
            let Some(seen_receipt) = seen
                .iter()
                .flat_map(|o| &o.outcome.hooks)
                .find_map(|s| (s.dispatch_id == h.dispatch_id).then_some(s.receipt.as_ref()).flatten())
            else {
                continue;
            };
            if h.outcome != HookOutcomeKind::Replayed || h.receipt.as_ref() != Some(seen_receipt) {
                return Err(format!(
                    "redispatch of {}: {:?} instead of a replay of the seen receipt",
                    h.dispatch_id, h.outcome
                ));
            }
        }
    }
    intact(&journal, "after redispatch")?;
    consistent(&journal, expected, false)?;
    dispatcher.close().await;
    Ok(())
}

fn intact(journal: &Journal, when: &str) -> Result<(), String> {
    let verdict = journal.integrity().map_err(|e| format!("integrity {when}: {}", e.code()))?;
    if verdict.ok {
        Ok(())
    } else {
        Err(format!("integrity {when}: {:?}", verdict.messages))
    }
}

/// Every outcome seen before the cut is in the journal as reported: a final
/// receipt byte for byte (state, result digest, intent ids, attempt), a
/// failed attempt as its failure row (and any receipt since from a later attempt).
fn kept(journal: &Journal, seen: &[&Observed]) -> Result<(), String> {
    for o in seen {
        for h in &o.outcome.hooks {
            let row = journal.get_dispatch(&h.dispatch_id).map_err(|e| e.code().to_string())?;
            let Some(row) = row else {
                return Err(format!(
                    "{} of receipt_{} ({:?} at position {}) is missing",
                    h.dispatch_id, o.request, h.outcome, o.position
                ));
            };
            match (&h.receipt, h.outcome) {
                (Some(receipt), _) => {
                    if receipt_from_row(&row).as_ref() != Some(receipt) {
                        return Err(format!(
                            "{} was reported {:?} at attempt {} (position {}); the journal holds {:?} at attempt {}",
                            h.dispatch_id, receipt.status, receipt.attempt, o.position, row.state, row.attempts
                        ));
                    }
                }
                (None, HookOutcomeKind::Failed) => {
                    let failures = journal.list_failures(&h.dispatch_id).map_err(|e| e.code().to_string())?;
                    let code = h.failure_code.map(|c| serde_json::to_value(c).expect("a code serializes"));
                    let recorded = failures.iter().any(|f| {
                        f.attempt == h.attempt && code.as_ref().and_then(|c| c.as_str()) == Some(f.code.as_str())
                    });
                    // A receipt produced after the failure belongs to a later attempt.
                    let produced_at_or_before =
                        matches!(row.state, DispatchState::Proposed | DispatchState::NotApplicable)
                            && row.attempts <= h.attempt;
                    if !recorded || row.attempts < h.attempt || produced_at_or_before {
                        return Err(format!(
                            "{} failed at attempt {} (position {}); the journal has failures {:?} and {} attempts",
                            h.dispatch_id,
                            h.attempt,
                            o.position,
                            failures.iter().map(|f| (f.attempt, f.code.clone())).collect::<Vec<_>>(),
                            row.attempts
                        ));
                    }
                }
                (None, other) => return Err(format!("{} reported {other:?} without a receipt", h.dispatch_id)),
            }
        }
    }
    Ok(())
}

fn all_rows(journal: &Journal) -> Result<Vec<DispatchRow>, String> {
    let mut rows = Vec::new();
    let mut filter = DispatchFilter { limit: 1000, ..DispatchFilter::default() };
    loop {
        let page = journal.list_dispatches(&filter).map_err(|e| e.code().to_string())?;
        rows.extend(page.items);
        match page.next_cursor {
            Some(c) => filter.after_cursor = Some(c),
            None => return Ok(rows),
        }
    }
}

/// No identity twice, no identity the run never dispatched, every final row a
/// whole receipt (`as_found`: the very receipt the run reported for it, if it
/// reported one), and every intent once, belonging to a proposed row that
/// lists it.
fn consistent(journal: &Journal, expected: &Expected, as_found: bool) -> Result<(), String> {
    let rows = all_rows(journal)?;
    let mut ids = HashSet::new();
    let mut listed: HashMap<String, String> = HashMap::new();
    for row in &rows {
        if !ids.insert(row.dispatch_id.clone()) {
            return Err(format!("{} has two rows", row.dispatch_id));
        }
        if !expected.identities.contains(&row.dispatch_id) {
            return Err(format!("{} was never dispatched", row.dispatch_id));
        }
        if !row.state.is_final() {
            continue;
        }
        let Some(receipt) = receipt_from_row(row) else {
            return Err(format!("final row {} is not a receipt", row.dispatch_id));
        };
        if as_found {
            if let Some(reported) = expected.receipts.get(&row.dispatch_id) {
                if *reported != receipt {
                    return Err(format!("{} holds a receipt other than the one reported", row.dispatch_id));
                }
            }
        }
        for intent in &receipt.intent_ids {
            if listed.insert(intent.clone(), row.dispatch_id.clone()).is_some() {
                return Err(format!("intent {intent} is listed by two receipts"));
            }
        }
    }
    let mut filter = IntentFilter { limit: 1000, ..IntentFilter::default() };
    let mut stored = HashSet::new();
    loop {
        let page = journal.list_intents(&filter).map_err(|e| e.code().to_string())?;
        for i in &page.items {
            if !stored.insert(i.intent_id.clone()) {
                return Err(format!("intent {} is stored twice", i.intent_id));
            }
            if listed.get(&i.intent_id) != Some(&i.dispatch_id) {
                return Err(format!("intent {} is not in its dispatch's receipt", i.intent_id));
            }
        }
        match page.next_cursor {
            Some(c) => filter.after_seq = c,
            None => break,
        }
    }
    if stored.len() != listed.len() {
        return Err(format!("{} intents listed by receipts, {} stored", listed.len(), stored.len()));
    }
    Ok(())
}
