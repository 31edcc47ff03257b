//! One slot of a ledger file: a checkpoint as JSON behind a magic, its
//! length and a checksum, so a torn write or a foreign file reads as nothing.
//! Slots are written as `LXA2`: the request embedded as JSON, and a
//! checksum taken 8 bytes at a time, since a slot is written on the event
//! loop's thread before each provider call and escaping the request and
//! hashing byte by byte were most of its cost. `LXA1` slots (the request
//! as a JSON string, FNV-1a byte by byte), which an earlier version left
//! behind, still read.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::super::types::Checkpoint;
use crate::contract::Dialect;

/// Bytes per slot: a checkpoint's request is bounded by the contract's
/// grammars (32 fact refs of at most 128 bytes and a few ids), far below it.
pub(super) const SLOT: u64 = 16 * 1024;
const MAGIC: [u8; 4] = *b"LXA2";
const MAGIC_V1: [u8; 4] = *b"LXA1";
/// magic, payload length, FNV-1a 64 of the payload.
pub(super) const HEADER: usize = 4 + 4 + 8;
/// The first bytes of a slot cleared after its identity's outcome committed.
pub(super) const CLEARED: [u8; 4] = [0; 4];

/// A slot's payload: written from the checkpoint's own strings (`S = &str`),
/// read back owned (`S = String`), one field list for both. The request is
/// a JSON string in `LXA1` (`R = String`) and JSON itself in `LXA2` (`R =
/// Box<RawValue>`), written after the other members (`None` here).
#[derive(Serialize, Deserialize)]
struct Entry<S, R> {
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
    #[serde(skip_serializing_if = "Option::is_none")]
    request_json: Option<R>,
    attempt: u32,
}

impl<'a> From<&'a Checkpoint> for Entry<&'a str, ()> {
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
            request_json: None,
            attempt: c.attempt,
        }
    }
}

impl<R> Entry<String, R> {
    /// The checkpoint, its request text given by `request`; a request left
    /// out (JSON `null`, which reads as `None`) is `null`.
    fn checkpoint(self, request: impl FnOnce(R) -> String) -> Checkpoint {
        let e = self;
        let request_json = e.request_json.map(request).unwrap_or_else(|| "null".into());
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
            request_json,
            attempt: e.attempt,
        }
    }
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0100_0000_01b3;

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(FNV_OFFSET, |h, b| (h ^ u64::from(*b)).wrapping_mul(FNV_PRIME))
}

/// FNV-1a over 8-byte little-endian words, the tail bytes one by one.
fn fnv1a_words(bytes: &[u8]) -> u64 {
    let mut words = bytes.chunks_exact(8);
    let h = words
        .by_ref()
        .fold(FNV_OFFSET, |h, w| (h ^ u64::from_le_bytes(w.try_into().unwrap_or_default())).wrapping_mul(FNV_PRIME));
    words.remainder().iter().fold(h, |h, b| (h ^ u64::from(*b)).wrapping_mul(FNV_PRIME))
}

/// The slot's bytes for `c`; a request too large for a slot is left out
/// (the attempt still counts, and the next dispatch of its source runs the
/// identity; only `recover()`, which re-dispatches from the stored request,
/// then skips it). None when even that does not fit. The payload is
/// serialized once, behind room left for its header.
pub(super) fn encode(c: &Checkpoint) -> Option<Vec<u8>> {
    let mut record = Vec::with_capacity((HEADER + 384 + c.request_json.len()).min(SLOT as usize));
    record.extend_from_slice(&[0; HEADER]);
    serde_json::to_writer(&mut record, &Entry::from(c)).ok()?;
    // The members end with `}`: the request goes before it, as it is (a
    // checkpoint's request is JSON the core wrote, checked before noting).
    record.pop();
    let head = record.len();
    record.extend_from_slice(b",\"request_json\":");
    record.extend_from_slice(c.request_json.as_bytes());
    record.push(b'}');
    if record.len() > SLOT as usize {
        record.truncate(head);
        record.extend_from_slice(b",\"request_json\":null}");
    }
    if record.len() > SLOT as usize {
        return None;
    }
    let (header, payload) = record.split_at_mut(HEADER);
    header[..4].copy_from_slice(&MAGIC);
    header[4..8].copy_from_slice(&(payload.len() as u32).to_le_bytes());
    header[8..].copy_from_slice(&fnv1a_words(payload).to_le_bytes());
    Some(record)
}

/// Every whole entry of a ledger file's bytes; a torn or foreign slot is
/// skipped (a torn write was never followed by its provider call).
pub(super) fn entries(bytes: &[u8]) -> Vec<Checkpoint> {
    bytes.chunks(SLOT as usize).filter_map(parse).collect()
}

/// A slot's whole entry; a torn or foreign slot is none.
fn parse(slot: &[u8]) -> Option<Checkpoint> {
    if slot.len() < HEADER {
        return None;
    }
    let v2 = match slot[..4].try_into().ok()? {
        MAGIC => true,
        MAGIC_V1 => false,
        _ => return None,
    };
    let len = u32::from_le_bytes(slot[4..8].try_into().ok()?) as usize;
    let sum = u64::from_le_bytes(slot[8..16].try_into().ok()?);
    let payload = slot.get(HEADER..HEADER + len)?;
    let c = if v2 {
        if fnv1a_words(payload) != sum {
            return None;
        }
        let entry: Entry<String, Box<RawValue>> = serde_json::from_slice(payload).ok()?;
        entry.checkpoint(|raw| raw.get().to_owned())
    } else {
        if fnv1a(payload) != sum {
            return None;
        }
        let entry: Entry<String, String> = serde_json::from_slice(payload).ok()?;
        entry.checkpoint(|text| text)
    };
    (c.attempt >= 1).then_some(c)
}
