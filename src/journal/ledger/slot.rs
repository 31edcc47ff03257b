//! One slot of a ledger file: a checkpoint as JSON behind a magic, its
//! length and a checksum, so a torn write or a foreign file reads as nothing.

use serde::{Deserialize, Serialize};

use super::super::types::Checkpoint;
use crate::contract::Dialect;

/// Bytes per slot: a checkpoint's request is bounded by the contract's
/// grammars (32 fact refs of at most 128 bytes and a few ids), far below it.
pub(super) const SLOT: u64 = 16 * 1024;
const MAGIC: [u8; 4] = *b"LXA1";
/// magic, payload length, FNV-1a 64 of the payload.
pub(super) const HEADER: usize = 4 + 4 + 8;
/// The first bytes of a slot cleared after its identity's outcome committed.
pub(super) const CLEARED: [u8; 4] = [0; 4];

#[derive(Serialize, Deserialize)]
pub(super) struct Entry {
    dispatch_id: String,
    hook_id: String,
    capability_id: String,
    receipt_id: String,
    effect_id: String,
    event_kind: String,
    registration_digest: String,
    // Ledger files written before dialects existed hold neither field.
    #[serde(default)]
    dialect: Dialect,
    #[serde(default)]
    recorded_at: Option<String>,
    request_json: String,
    attempt: u32,
}

impl From<&Checkpoint> for Entry {
    fn from(c: &Checkpoint) -> Self {
        Entry {
            dispatch_id: c.dispatch_id.clone(),
            hook_id: c.hook_id.clone(),
            capability_id: c.capability_id.clone(),
            receipt_id: c.receipt_id.clone(),
            effect_id: c.effect_id.clone(),
            event_kind: c.event_kind.clone(),
            registration_digest: c.registration_digest.clone(),
            dialect: c.dialect,
            recorded_at: c.recorded_at.clone(),
            request_json: c.request_json.clone(),
            attempt: c.attempt,
        }
    }
}

impl From<Entry> for Checkpoint {
    fn from(e: Entry) -> Self {
        Checkpoint {
            dispatch_id: e.dispatch_id,
            hook_id: e.hook_id,
            capability_id: e.capability_id,
            receipt_id: e.receipt_id,
            effect_id: e.effect_id,
            event_kind: e.event_kind,
            registration_digest: e.registration_digest,
            dialect: e.dialect,
            recorded_at: e.recorded_at,
            request_json: e.request_json,
            attempt: e.attempt,
        }
    }
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3))
}

/// The slot's bytes for `c`; a request too large for a slot is left out
/// (the attempt still counts, and the next dispatch of its source runs the
/// identity; only `recover()`, which re-dispatches from the stored request,
/// then skips it). None when even that does not fit.
pub(super) fn encode(c: &Checkpoint) -> Option<Vec<u8>> {
    let mut entry = Entry::from(c);
    let mut payload = serde_json::to_vec(&entry).ok()?;
    if HEADER + payload.len() > SLOT as usize {
        entry.request_json = "null".into();
        payload = serde_json::to_vec(&entry).ok()?;
    }
    if HEADER + payload.len() > SLOT as usize {
        return None;
    }
    let mut record = Vec::with_capacity(HEADER + payload.len());
    record.extend_from_slice(&MAGIC);
    record.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    record.extend_from_slice(&fnv1a(&payload).to_le_bytes());
    record.extend_from_slice(&payload);
    Some(record)
}

/// Every whole entry of a ledger file's bytes; a torn or foreign slot is
/// skipped (a torn write was never followed by its provider call).
pub(super) fn entries(bytes: &[u8]) -> Vec<Checkpoint> {
    bytes.chunks(SLOT as usize).filter_map(parse).collect()
}

/// A slot's whole entry; a torn or foreign slot is none.
fn parse(slot: &[u8]) -> Option<Checkpoint> {
    if slot.len() < HEADER || slot[..4] != MAGIC {
        return None;
    }
    let len = u32::from_le_bytes(slot[4..8].try_into().ok()?) as usize;
    let sum = u64::from_le_bytes(slot[8..16].try_into().ok()?);
    let payload = slot.get(HEADER..HEADER + len)?;
    if fnv1a(payload) != sum {
        return None;
    }
    let entry: Entry = serde_json::from_slice(payload).ok()?;
    (entry.attempt >= 1).then(|| entry.into())
}
