//! The owner-private inbox store that turn-start providers use (RFC
//! "Provider-Neutral Turn-Start Inbox Hook v0"; contract-v0 section 6). Its
//! own SQLite file, never the public journal: captured messages with their
//! private payloads, first Agent-read receipts, the Agent's dispositions and
//! effect bindings, acknowledgement reaction receipts, and provider cursors.
//! Nothing here reaches a public receipt except the counts of [`FirstReads`].
//!
//! Every operation is one SQLite transaction (`BEGIN IMMEDIATE` for writes),
//! so several processes can share one inbox file. Inbox traffic is a handful
//! of rows per Turn, so there is no writer thread: the binding runs each call
//! off the JS thread.
//!
//! What holds, by construction and by test:
//! - capture collapses by provider message identity `(route_id,
//!   provider_message_id)`; the self filter drops a message only when its
//!   sender is typed and its verified identity equals the configured one
//!   exactly, and otherwise fails open to capture;
//! - a message gets at most one first Agent-read receipt, ever;
//! - a message is acknowledged only after it was read and disposed, and a
//!   material disposition only once bound to a durable effect receipt;
//! - a reaction is admitted only on a captured, still-pending, human-authored
//!   message that a turn-start dispatch has read; at most one is ever added;
//!   an attempt is recorded before the provider creates anything, a fresh
//!   one blocks a second create, and an attempt whose effect is unknown (or
//!   that never finished) fails closed until a readback resolves it;
//! - reaction candidates rotate route priority per collector across calls,
//!   and each route keeps its own round-robin message cursor, so a failing
//!   backlog never starves other routes or messages;
//! - provider cursors are single-flight (claimed with a lease) and advance
//!   only after the read messages are found in the inbox and the new value is
//!   read back; history and acknowledgement cursors are independent.

mod open;
mod types;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use rusqlite::{params, Connection, OptionalExtension, Transaction, TransactionBehavior};
use serde_json::Value;

pub use open::{APPLICATION_ID, SCHEMA_VERSION};
pub use types::*;

use crate::validate::grammar::{is_opaque_ref, OPAQUE_REF_MAX};

/// Bounds of the private values (bytes).
pub const MAX_ID_BYTES: usize = 512;
pub const MAX_PAYLOAD_BYTES: usize = 65_536;
pub const MAX_PAGE: u32 = 1000;

/// What can go wrong. `Display` never holds the path, an id or a payload.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InboxError {
    #[error("the file is not a loopx-hooks inbox")]
    NotAnInbox,
    #[error("inbox schema version {found} is newer than this build supports ({supported})")]
    TooNew { found: i32, supported: i32 },
    #[error("the inbox is closed")]
    Closed,
    #[error("the inbox is busy")]
    Busy,
    #[error("inbox i/o error: {kind}")]
    Io { kind: std::io::ErrorKind },
    #[error("inbox sqlite error: {what} (code {code})")]
    Sqlite { code: i32, what: &'static str },
    /// A caller's value is out of bounds; `what` names the argument.
    #[error("invalid argument: {what}")]
    InvalidArgument { what: &'static str },
}

impl InboxError {
    pub fn code(&self) -> &'static str {
        match self {
            InboxError::NotAnInbox => "not_an_inbox",
            InboxError::TooNew { .. } => "inbox_too_new",
            InboxError::Closed => "inbox_closed",
            InboxError::Busy => "busy",
            InboxError::Io { .. } => "io",
            InboxError::Sqlite { .. } => "sqlite",
            InboxError::InvalidArgument { .. } => "invalid_argument",
        }
    }
}

impl From<std::io::Error> for InboxError {
    fn from(e: std::io::Error) -> Self {
        InboxError::Io { kind: e.kind() }
    }
}

impl From<rusqlite::Error> for InboxError {
    fn from(e: rusqlite::Error) -> Self {
        use rusqlite::ffi::ErrorCode;
        match e {
            rusqlite::Error::SqliteFailure(f, _) => match f.code {
                ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked => InboxError::Busy,
                ErrorCode::NotADatabase => InboxError::NotAnInbox,
                _ => InboxError::Sqlite { code: f.extended_code, what: rusqlite::ffi::code_to_str(f.extended_code) },
            },
            // Driver-side errors can hold values: keep a fixed text.
            _ => InboxError::Sqlite { code: -1, what: "sqlite driver error" },
        }
    }
}

pub type Result<T, E = InboxError> = std::result::Result<T, E>;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InboxOptions {
    pub busy_timeout_ms: u32,
    /// How long a begun reaction attempt may stay unfinished before it counts
    /// as uncertain (a crash, a lost answer) rather than in flight. Longer
    /// than any hook timeout (30 s) by default.
    pub attempt_stale_ms: u32,
    /// The configured profile's own identity, exactly as the provider
    /// verifies senders; messages from it are not captured.
    pub self_identity: Option<String>,
}

impl Default for InboxOptions {
    fn default() -> Self {
        InboxOptions { busy_timeout_ms: 5_000, attempt_stale_ms: 60_000, self_identity: None }
    }
}

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

fn private_id(s: &str, what: &'static str) -> Result<()> {
    if !s.is_empty() && s.len() <= MAX_ID_BYTES {
        Ok(())
    } else {
        Err(InboxError::InvalidArgument { what })
    }
}

fn opaque_ref(s: &str, what: &'static str) -> Result<()> {
    if s.len() <= OPAQUE_REF_MAX && is_opaque_ref(s) {
        Ok(())
    } else {
        Err(InboxError::InvalidArgument { what })
    }
}

fn message_ref(m: &MessageRef) -> Result<()> {
    private_id(&m.route_id, "route_id")?;
    private_id(&m.provider_message_id, "provider_message_id")
}

fn enum_str<T: serde::Serialize>(v: T) -> String {
    serde_json::to_value(v).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
}

fn enum_parse<T: serde::de::DeserializeOwned>(s: &str) -> rusqlite::Result<T> {
    serde_json::from_value(Value::String(s.to_owned()))
        .map_err(|_| rusqlite::Error::InvalidColumnType(0, "enum".into(), rusqlite::types::Type::Text))
}

/// The state of one message, read inside a transaction.
struct MessageState {
    seq: i64,
    acked: bool,
    human: bool,
    read: bool,
    disposition: Option<(Disposition, Option<String>)>,
    reaction: Option<String>,
    reaction_at: Option<i64>,
}

fn message_state(tx: &Transaction<'_>, m: &MessageRef) -> Result<Option<MessageState>> {
    let row = tx
        .query_row(
            "SELECT m.seq, m.acked_at IS NOT NULL, m.sender_kind = 'human', r.message_seq IS NOT NULL,
                    d.disposition, d.effect_receipt_id, x.state, x.updated_at
             FROM messages m
             LEFT JOIN reads r ON r.message_seq = m.seq
             LEFT JOIN dispositions d ON d.message_seq = m.seq
             LEFT JOIN reactions x ON x.message_seq = m.seq
             WHERE m.route_id = ?1 AND m.provider_message_id = ?2",
            params![m.route_id, m.provider_message_id],
            |r| {
                let disposition: Option<String> = r.get(4)?;
                Ok(MessageState {
                    seq: r.get(0)?,
                    acked: r.get(1)?,
                    human: r.get(2)?,
                    read: r.get(3)?,
                    disposition: match disposition {
                        Some(d) => Some((enum_parse(&d)?, r.get(5)?)),
                        None => None,
                    },
                    reaction: r.get(6)?,
                    reaction_at: r.get(7)?,
                })
            },
        )
        .optional()?;
    Ok(row)
}

/// An open inbox. Share it behind an `Arc`; every method takes `&self` and
/// blocks on SQLite (call it off an async runtime's worker threads).
pub struct InboxStore {
    conn: Mutex<Option<Connection>>,
    self_identity: Option<String>,
    attempt_stale_ms: i64,
    lease_counter: AtomicU64,
}

impl std::fmt::Debug for InboxStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InboxStore").finish_non_exhaustive()
    }
}

impl InboxStore {
    /// Opens the inbox at `path`, creating it when missing or empty. A file
    /// that is not an inbox (a public journal included) or is newer than this
    /// build is refused unchanged.
    pub fn open(path: impl AsRef<Path>, options: InboxOptions) -> Result<InboxStore> {
        if let Some(identity) = &options.self_identity {
            private_id(identity, "self_identity")?;
        }
        let conn = open::open(path.as_ref(), options.busy_timeout_ms)?;
        Ok(InboxStore {
            conn: Mutex::new(Some(conn)),
            self_identity: options.self_identity,
            attempt_stale_ms: i64::from(options.attempt_stale_ms),
            lease_counter: AtomicU64::new(0),
        })
    }

    /// Closes the connection; later calls answer `Closed`. Idempotent.
    pub fn close(&self) {
        self.conn.lock().unwrap_or_else(|p| p.into_inner()).take();
    }

    fn write<T>(&self, f: impl FnOnce(&Transaction<'_>) -> Result<T>) -> Result<T> {
        let mut guard = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        let conn = guard.as_mut().ok_or(InboxError::Closed)?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let out = f(&tx)?;
        tx.commit()?;
        Ok(out)
    }

    fn read<T>(&self, f: impl FnOnce(&Transaction<'_>) -> Result<T>) -> Result<T> {
        let mut guard = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        let conn = guard.as_mut().ok_or(InboxError::Closed)?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Deferred)?;
        let out = f(&tx)?;
        tx.commit()?;
        Ok(out)
    }

    /// Captures one message, collapsing a repeat of its provider message
    /// identity. The self filter drops a message only when the sender is
    /// typed and its verified identity equals the configured identity
    /// exactly; an unresolved sender is captured (fail open).
    pub fn capture(&self, input: &CaptureInput) -> Result<CaptureOutcome> {
        private_id(&input.route_id, "route_id")?;
        private_id(&input.provider_message_id, "provider_message_id")?;
        if let Some(identity) = &input.sender.verified_identity {
            private_id(identity, "verified_identity")?;
        }
        let payload = serde_json::to_string(&input.payload).map_err(|_| InboxError::InvalidArgument { what: "payload" })?;
        if payload.len() > MAX_PAYLOAD_BYTES {
            return Err(InboxError::InvalidArgument { what: "payload" });
        }
        let is_self = input.sender.kind != SenderKind::Unknown
            && matches!((&input.sender.verified_identity, &self.self_identity), (Some(s), Some(own)) if s == own);
        if is_self {
            return Ok(CaptureOutcome::SelfFiltered);
        }
        self.write(|tx| {
            let inserted = tx.execute(
                "INSERT INTO messages (route_id, provider_message_id, source, sender_kind, attention, captured_at, payload)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                 ON CONFLICT (route_id, provider_message_id) DO NOTHING",
                params![
                    input.route_id,
                    input.provider_message_id,
                    enum_str(input.source),
                    enum_str(input.sender.kind),
                    input.attention.as_str(),
                    now_ms(),
                    payload
                ],
            )?;
            Ok(if inserted == 1 { CaptureOutcome::Captured } else { CaptureOutcome::Duplicate })
        })
    }

    /// Whether a message with this provider message identity is in the inbox
    /// (the readback a provider does before advancing its cursor).
    pub fn contains(&self, m: &MessageRef) -> Result<bool> {
        message_ref(m)?;
        self.read(|tx| Ok(message_state(tx, m)?.is_some()))
    }

    /// Gives every pending message that has none its first Agent-read
    /// receipt, under `read_ref` (the Turn or dispatch that read it), and
    /// returns the counts for the public receipt. A message is first-read
    /// once, ever: a second call finds nothing new.
    pub fn record_first_reads(&self, read_ref: &str) -> Result<FirstReads> {
        opaque_ref(read_ref, "read_ref")?;
        self.write(|tx| {
            let now = now_ms();
            let mut fresh = tx.prepare(
                "SELECT m.seq, m.attention FROM messages m
                 WHERE m.acked_at IS NULL AND NOT EXISTS (SELECT 1 FROM reads r WHERE r.message_seq = m.seq)
                 ORDER BY m.seq",
            )?;
            let rows: Vec<(i64, String)> = fresh.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect::<rusqlite::Result<_>>()?;
            let mut counts = FirstReads::default();
            for (seq, attention) in rows {
                tx.execute("INSERT INTO reads (message_seq, read_ref, read_at) VALUES (?1, ?2, ?3)", params![seq, read_ref, now])?;
                counts.observations_new += 1;
                match attention.as_str() {
                    "direct_question" => counts.direct_questions += 1,
                    "verified_reply" => counts.verified_replies += 1,
                    _ => {}
                }
            }
            counts.pending = tx.query_row("SELECT count(*) FROM messages WHERE acked_at IS NULL", [], |r| r.get(0))?;
            Ok(counts)
        })
    }

    /// Messages durably pending (captured, not acknowledged).
    pub fn pending_count(&self) -> Result<u32> {
        self.read(|tx| Ok(tx.query_row("SELECT count(*) FROM messages WHERE acked_at IS NULL", [], |r| r.get(0))?))
    }

    /// The private drain: pending messages after `after` (a `seq`), oldest
    /// first, at most `limit` (1..=1000).
    pub fn pending(&self, after: Option<i64>, limit: u32) -> Result<Vec<PendingMessage>> {
        if !(1..=MAX_PAGE).contains(&limit) {
            return Err(InboxError::InvalidArgument { what: "limit" });
        }
        self.read(|tx| {
            let mut stmt = tx.prepare(
                "SELECT m.seq, m.route_id, m.provider_message_id, m.source, m.sender_kind, m.attention, m.payload,
                        r.message_seq IS NOT NULL, d.disposition, d.effect_receipt_id
                 FROM messages m
                 LEFT JOIN reads r ON r.message_seq = m.seq
                 LEFT JOIN dispositions d ON d.message_seq = m.seq
                 WHERE m.acked_at IS NULL AND m.seq > ?1
                 ORDER BY m.seq LIMIT ?2",
            )?;
            let rows = stmt.query_map(params![after.unwrap_or(0), limit], |r| {
                let payload: String = r.get(6)?;
                let disposition: Option<String> = r.get(8)?;
                Ok(PendingMessage {
                    seq: r.get(0)?,
                    route_id: r.get(1)?,
                    provider_message_id: r.get(2)?,
                    source: enum_parse(&r.get::<_, String>(3)?)?,
                    sender_kind: enum_parse(&r.get::<_, String>(4)?)?,
                    attention: enum_parse(&r.get::<_, String>(5)?)?,
                    payload: serde_json::from_str(&payload).unwrap_or(Value::Null),
                    read: r.get(7)?,
                    disposition: disposition.as_deref().map(enum_parse).transpose()?,
                    effect_receipt_id: r.get(9)?,
                })
            })?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    /// Records the Agent's disposition of a message it read, with the durable
    /// effect receipt when there already is one. Idempotent for the same
    /// values; a different disposition, or a different effect, is a conflict.
    /// A material disposition recorded without an effect can get it later
    /// by calling again with the same disposition and the effect.
    pub fn dispose(&self, m: &MessageRef, disposition: Disposition, effect_receipt_id: Option<&str>) -> Result<DisposeOutcome> {
        message_ref(m)?;
        if let Some(effect) = effect_receipt_id {
            opaque_ref(effect, "effect_receipt_id")?;
        }
        self.write(|tx| {
            let Some(state) = message_state(tx, m)? else { return Ok(DisposeOutcome::UnknownMessage) };
            if state.acked {
                return Ok(DisposeOutcome::AlreadyAcked);
            }
            if !state.read {
                return Ok(DisposeOutcome::NotRead);
            }
            match state.disposition {
                None => {
                    tx.execute(
                        "INSERT INTO dispositions (message_seq, disposition, effect_receipt_id, decided_at) VALUES (?1, ?2, ?3, ?4)",
                        params![state.seq, disposition.as_str(), effect_receipt_id, now_ms()],
                    )?;
                    Ok(DisposeOutcome::Recorded)
                }
                Some((existing, _)) if existing != disposition => Ok(DisposeOutcome::Conflict),
                Some((_, Some(bound))) => {
                    Ok(if effect_receipt_id.is_none_or(|e| e == bound) { DisposeOutcome::Unchanged } else { DisposeOutcome::Conflict })
                }
                Some((_, None)) => match effect_receipt_id {
                    None => Ok(DisposeOutcome::Unchanged),
                    Some(effect) => {
                        tx.execute("UPDATE dispositions SET effect_receipt_id = ?2 WHERE message_seq = ?1", params![state.seq, effect])?;
                        Ok(DisposeOutcome::Recorded)
                    }
                },
            }
        })
    }

    /// Acknowledges a message: refused until it was read and disposed, and a
    /// material disposition until its durable effect receipt is bound.
    pub fn ack(&self, m: &MessageRef) -> Result<AckOutcome> {
        message_ref(m)?;
        self.write(|tx| {
            let Some(state) = message_state(tx, m)? else { return Ok(AckOutcome::UnknownMessage) };
            if state.acked {
                return Ok(AckOutcome::AlreadyAcked);
            }
            if !state.read {
                return Ok(AckOutcome::NotRead);
            }
            match state.disposition {
                None => Ok(AckOutcome::NoDisposition),
                Some((d, None)) if d.is_material() => Ok(AckOutcome::EffectNotBound),
                Some(_) => {
                    tx.execute("UPDATE messages SET acked_at = ?2 WHERE seq = ?1", params![state.seq, now_ms()])?;
                    Ok(AckOutcome::Acked)
                }
            }
        })
    }

    /// Up to `max` messages whose acknowledgement reaction is due (pending,
    /// human-authored, read by a turn-start dispatch, no reaction added and
    /// none in flight; an uncertain or stale attempt is due for its readback),
    /// fairly across routes and messages:
    /// routes start after the one `collector_id` started with last time, one
    /// message per route per round, and each route continues after the
    /// message it offered last. The cursors move now, so a message that keeps
    /// failing does not hold the others back.
    pub fn reaction_candidates(&self, collector_id: &str, max: u32) -> Result<Vec<MessageRef>> {
        private_id(collector_id, "collector_id")?;
        self.write(|tx| {
            let mut stmt = tx.prepare(
                "SELECT m.route_id, m.seq, m.provider_message_id FROM messages m
                 JOIN reads r ON r.message_seq = m.seq
                 LEFT JOIN reactions x ON x.message_seq = m.seq
                 WHERE m.acked_at IS NULL AND m.sender_kind = 'human'
                   AND (x.state IS NULL OR x.state IN ('failed','uncertain') OR (x.state = 'attempting' AND x.updated_at <= ?1))
                 ORDER BY m.route_id, m.seq",
            )?;
            let stale_before = now_ms() - self.attempt_stale_ms;
            let mut routes: BTreeMap<String, Vec<(i64, String)>> = BTreeMap::new();
            for row in stmt.query_map([stale_before], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?, r.get::<_, String>(2)?)))? {
                let (route, seq, id) = row?;
                routes.entry(route).or_default().push((seq, id));
            }
            if routes.is_empty() || max == 0 {
                return Ok(Vec::new());
            }
            let now = now_ms();
            // Route order: after the route this collector started with last.
            let last_first = cursor_value(tx, collector_id, "route_rotation")?;
            let names: Vec<&String> = routes.keys().collect();
            let start = last_first.as_ref().map_or(0, |last| names.partition_point(|n| n.as_str() <= last.as_str()) % names.len());
            let order: Vec<&String> = names[start..].iter().chain(&names[..start]).copied().collect();
            // Within each route: after the message it offered last, wrapping.
            let mut queues: Vec<(&String, Vec<&(i64, String)>)> = Vec::new();
            for route in &order {
                let messages = &routes[*route];
                let after: i64 = cursor_value(tx, route, "reaction_round_robin")?.and_then(|v| v.parse().ok()).unwrap_or(0);
                let split = messages.partition_point(|(seq, _)| *seq <= after);
                queues.push((route, messages[split..].iter().chain(&messages[..split]).collect()));
            }
            let mut out = Vec::new();
            let mut last_offered: BTreeMap<&String, i64> = BTreeMap::new();
            let mut round = 0;
            while out.len() < max as usize && queues.iter().any(|(_, q)| round < q.len()) {
                for (route, queue) in &queues {
                    if out.len() == max as usize {
                        break;
                    }
                    if let Some((seq, id)) = queue.get(round) {
                        out.push(MessageRef { route_id: (*route).clone(), provider_message_id: id.clone() });
                        last_offered.insert(route, *seq);
                    }
                }
                round += 1;
            }
            set_cursor(tx, collector_id, "route_rotation", order[0], now)?;
            for (route, seq) in last_offered {
                set_cursor(tx, route, "reaction_round_robin", &seq.to_string(), now)?;
            }
            Ok(out)
        })
    }

    /// Before the provider creates a reaction: checks eligibility and records
    /// the attempt. Only `Proceed` admits the create. An attempt begun less
    /// than `attempt_stale_ms` ago is `InFlight`; an older unfinished one (a
    /// crash, a lost answer) becomes `Uncertain`: the store fails closed
    /// until the provider reads back whether the reaction exists.
    pub fn begin_reaction(&self, m: &MessageRef) -> Result<ReactionBegin> {
        message_ref(m)?;
        self.write(|tx| {
            let Some(state) = message_state(tx, m)? else { return Ok(ReactionBegin::UnknownMessage) };
            if state.acked {
                return Ok(ReactionBegin::NotPending);
            }
            if !state.human {
                return Ok(ReactionBegin::NotHuman);
            }
            if !state.read {
                return Ok(ReactionBegin::NotRead);
            }
            let now = now_ms();
            match state.reaction.as_deref() {
                Some("added") => Ok(ReactionBegin::AlreadyAdded),
                Some("uncertain") => Ok(ReactionBegin::Uncertain),
                Some("attempting") if state.reaction_at.is_some_and(|at| at > now - self.attempt_stale_ms) => Ok(ReactionBegin::InFlight),
                Some("attempting") => {
                    tx.execute("UPDATE reactions SET state = 'uncertain', updated_at = ?2 WHERE message_seq = ?1", params![state.seq, now])?;
                    Ok(ReactionBegin::Uncertain)
                }
                _ => {
                    tx.execute(
                        "INSERT INTO reactions (message_seq, state, attempts, updated_at) VALUES (?1, 'attempting', 1, ?2)
                         ON CONFLICT (message_seq) DO UPDATE SET state = 'attempting', attempts = attempts + 1, updated_at = ?2",
                        params![state.seq, now],
                    )?;
                    Ok(ReactionBegin::Proceed)
                }
            }
        })
    }

    /// Records how an attempt begun with `begin_reaction` ended.
    pub fn finish_reaction(&self, m: &MessageRef, result: ReactionResult) -> Result<ReactionFinish> {
        self.settle_reaction(m, "attempting", result)
    }

    /// After a provider readback of an uncertain attempt: `Added` when the
    /// reaction exists, `Failed` when it does not (eligible again).
    pub fn resolve_reaction(&self, m: &MessageRef, result: ReactionResult) -> Result<ReactionFinish> {
        self.settle_reaction(m, "uncertain", result)
    }

    fn settle_reaction(&self, m: &MessageRef, from: &str, result: ReactionResult) -> Result<ReactionFinish> {
        message_ref(m)?;
        let to = match result {
            ReactionResult::Added => "added",
            ReactionResult::Failed => "failed",
            ReactionResult::Uncertain => "uncertain",
        };
        self.write(|tx| {
            let Some(state) = message_state(tx, m)? else { return Ok(ReactionFinish::UnknownMessage) };
            if state.reaction.as_deref() != Some(from) {
                return Ok(ReactionFinish::NotAttempting);
            }
            tx.execute("UPDATE reactions SET state = ?2, updated_at = ?3 WHERE message_seq = ?1", params![state.seq, to, now_ms()])?;
            Ok(ReactionFinish::Recorded)
        })
    }

    /// Claims a provider cursor for `lease_ms` (1..=600000). Single-flight:
    /// while another unexpired claim holds it, the answer is `Busy`.
    pub fn claim_cursor(&self, scope: &str, kind: CursorKind, lease_ms: u32) -> Result<ClaimOutcome> {
        private_id(scope, "scope")?;
        if !(1..=600_000).contains(&lease_ms) {
            return Err(InboxError::InvalidArgument { what: "lease_ms" });
        }
        let n = self.lease_counter.fetch_add(1, Ordering::Relaxed);
        let token = crate::identity::sha256_hex(format!("{}:{}:{}:{n}", std::process::id(), now_ms(), nanos()).as_bytes());
        self.write(|tx| {
            let now = now_ms();
            let held: Option<(Option<String>, Option<i64>)> = tx
                .query_row("SELECT lease_token, lease_until FROM cursors WHERE scope = ?1 AND kind = ?2", params![scope, kind.as_str()], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })
                .optional()?;
            if let Some((Some(_), Some(until))) = held {
                if until > now {
                    return Ok(ClaimOutcome::Busy);
                }
            }
            tx.execute(
                "INSERT INTO cursors (scope, kind, value, lease_token, lease_until, updated_at) VALUES (?1, ?2, NULL, ?3, ?4, ?5)
                 ON CONFLICT (scope, kind) DO UPDATE SET lease_token = ?3, lease_until = ?4",
                params![scope, kind.as_str(), token, now + i64::from(lease_ms), now],
            )?;
            let value = cursor_value(tx, scope, kind.as_str())?;
            Ok(ClaimOutcome::Claimed(CursorClaim { token: token.clone(), value }))
        })
    }

    /// Advances a claimed cursor to `value` once every message in `read` (the
    /// messages the provider read up to `value`) is found in the inbox; the
    /// new value is read back before the claim is released. Nothing is
    /// written when the claim was lost or a message is missing.
    pub fn advance_cursor(&self, scope: &str, kind: CursorKind, token: &str, value: &str, read: &[MessageRef]) -> Result<AdvanceOutcome> {
        private_id(scope, "scope")?;
        private_id(value, "value")?;
        for m in read {
            message_ref(m)?;
        }
        self.write(|tx| {
            if !holds_lease(tx, scope, kind, token)? {
                return Ok(AdvanceOutcome::LeaseLost);
            }
            for m in read {
                if message_state(tx, m)?.is_none() {
                    return Ok(AdvanceOutcome::MissingMessages);
                }
            }
            tx.execute(
                "UPDATE cursors SET value = ?3, lease_token = NULL, lease_until = NULL, updated_at = ?4 WHERE scope = ?1 AND kind = ?2",
                params![scope, kind.as_str(), value, now_ms()],
            )?;
            if cursor_value(tx, scope, kind.as_str())?.as_deref() != Some(value) {
                return Err(InboxError::Sqlite { code: -1, what: "cursor readback differs" });
            }
            Ok(AdvanceOutcome::Advanced)
        })
    }

    /// Gives a claim up without advancing. Returns false when it was not held.
    pub fn release_cursor(&self, scope: &str, kind: CursorKind, token: &str) -> Result<bool> {
        private_id(scope, "scope")?;
        self.write(|tx| {
            if !holds_lease(tx, scope, kind, token)? {
                return Ok(false);
            }
            tx.execute("UPDATE cursors SET lease_token = NULL, lease_until = NULL WHERE scope = ?1 AND kind = ?2", params![scope, kind.as_str()])?;
            Ok(true)
        })
    }

    /// A cursor's value (null before its first advance).
    pub fn cursor(&self, scope: &str, kind: CursorKind) -> Result<Option<String>> {
        private_id(scope, "scope")?;
        self.read(|tx| cursor_value(tx, scope, kind.as_str()))
    }
}

fn nanos() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos())
}

fn cursor_value(tx: &Transaction<'_>, scope: &str, kind: &str) -> Result<Option<String>> {
    Ok(tx
        .query_row("SELECT value FROM cursors WHERE scope = ?1 AND kind = ?2", params![scope, kind], |r| r.get::<_, Option<String>>(0))
        .optional()?
        .flatten())
}

fn set_cursor(tx: &Transaction<'_>, scope: &str, kind: &str, value: &str, now: i64) -> Result<()> {
    tx.execute(
        "INSERT INTO cursors (scope, kind, value, updated_at) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (scope, kind) DO UPDATE SET value = ?3, updated_at = ?4",
        params![scope, kind, value, now],
    )?;
    Ok(())
}

fn holds_lease(tx: &Transaction<'_>, scope: &str, kind: CursorKind, token: &str) -> Result<bool> {
    let held: Option<(Option<String>, Option<i64>)> = tx
        .query_row("SELECT lease_token, lease_until FROM cursors WHERE scope = ?1 AND kind = ?2", params![scope, kind.as_str()], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .optional()?;
    Ok(matches!(held, Some((Some(t), Some(until))) if t == token && until > now_ms()))
}
