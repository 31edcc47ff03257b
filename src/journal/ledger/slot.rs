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

/// A slot's payload: written from the checkpoint's own strings (`S = &str`),
/// read back owned (`S = String`), one field list for both.
#[derive(Serialize, Deserialize)]
struct Entry<S> {
    dispatch_id: S,
    hook_id: S,
    capability_id: S,
    receipt_id: S,
    effect_id: S,
    event_kind: S,
    registration_digest: S,
    // Ledger files written before dialects existed hold neither field.
    #[serde(default)]
    dialect: Dialect,
    #[serde(default = "Option::default")]
    recorded_at: Option<S>,
    request_json: S,
    attempt: u32,
}

impl<'a> From<&'a Checkpoint> for Entry<&'a str> {
    fn from(c: &'a Checkpoint) -> Self {
        Entry {
            dispatch_id: &c.dispatch_id,
            hook_id: &c.hook_id,
            capability_id: &c.capability_id,
            receipt_id: &c.receipt_id,
            effect_id: &c.effect_id,
            event_kind: &c.event_kind,
            registration_digest: &c.registration_digest,
            dialect: c.dialect,
            recorded_at: c.recorded_at.as_deref(),
            request_json: &c.request_json,
            attempt: c.attempt,
        }
    }
}

impl From<Entry<String>> for Checkpoint {
    fn from(e: Entry<String>) -> Self {
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
/// then skips it). None when even that does not fit. The payload is
/// serialized once, behind room left for its header.
pub(super) fn encode(c: &Checkpoint) -> Option<Vec<u8>> {
    let mut entry = Entry::from(c);
    let mut record = Vec::with_capacity((HEADER + 256 + c.request_json.len() * 2).min(SLOT as usize));
    record.extend_from_slice(&[0; HEADER]);
    serde_json::to_writer(&mut record, &entry).ok()?;
    if record.len() > SLOT as usize {
        entry.request_json = "null";
        record.truncate(HEADER);
        serde_json::to_writer(&mut record, &entry).ok()?;
    }
    if record.len() > SLOT as usize {
        return None;
    }
    let (header, payload) = record.split_at_mut(HEADER);
    header[..4].copy_from_slice(&MAGIC);
    header[4..8].copy_from_slice(&(payload.len() as u32).to_le_bytes());
    header[8..].copy_from_slice(&fnv1a(payload).to_le_bytes());
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
    let entry: Entry<String> = serde_json::from_slice(payload).ok()?;
    (entry.attempt >= 1).then(|| entry.into())
}
