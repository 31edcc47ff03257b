//! Messages: capture (deduped, self filter), first Agent reads, pending,
//! dispositions and ACK.

use super::*;

impl InboxStore {
    /// Captures one message, collapsing a repeat of its provider message
    /// identity. The self filter drops a message only when the sender is
    /// typed and its verified identity equals the configured identity
    /// exactly; an unresolved sender is captured (fail open), and so is one
    /// whose identity cannot match (see [`exact_identity`]). Reached from
    /// outside the crate only through an [`InboxCollector`] or a session.
    pub(crate) fn capture(&self, input: &CaptureInput) -> Result<CaptureOutcome> {
        private_id(&input.route_id, "routeId")?;
        private_id(&input.provider_message_id, "providerMessageId")?;
        let payload =
            serde_json::to_string(&input.payload).map_err(|_| InboxError::InvalidArgument { what: "payload" })?;
        if payload.len() > MAX_PAYLOAD_BYTES {
            return Err(InboxError::InvalidArgument { what: "payload" });
        }
        let sender = input.sender.verified_identity.as_deref().and_then(exact_identity);
        let own = self.self_identity.as_deref().and_then(exact_identity);
        let is_self =
            input.sender.kind != SenderKind::Unknown && matches!((sender, own), (Some(s), Some(own)) if s == own);
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
                    self.now(),
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
    /// once, ever: a second call finds nothing new. Only a turn-start session
    /// reaches it from outside the crate.
    pub(crate) fn record_first_reads(&self, read_ref: &str) -> Result<FirstReads> {
        opaque_ref(read_ref, "readRef")?;
        self.write(|tx| {
            let now = self.now();
            let mut fresh = tx.prepare(
                "SELECT m.seq, m.attention FROM messages m
                 WHERE m.acked_at IS NULL AND NOT EXISTS (SELECT 1 FROM reads r WHERE r.message_seq = m.seq)
                 ORDER BY m.seq",
            )?;
            let rows: Vec<(i64, String)> =
                fresh.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect::<rusqlite::Result<_>>()?;
            let mut counts = FirstReads::default();
            for (seq, attention) in rows {
                tx.execute(
                    "INSERT INTO reads (message_seq, read_ref, read_at) VALUES (?1, ?2, ?3)",
                    params![seq, read_ref, now],
                )?;
                counts.observations_new += 1;
                match attention.as_str() {
                    "direct_question" => counts.direct_questions += 1,
                    "verified_reply" => counts.verified_replies += 1,
                    _ => {}
                }
            }
            counts.pending = tx.query_row("SELECT count(*) FROM messages WHERE acked_at IS NULL", [], |r| r.get(0))?;
            self.purge(tx, now)?;
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
    pub fn dispose(
        &self,
        m: &MessageRef,
        disposition: Disposition,
        effect_receipt_id: Option<&str>,
    ) -> Result<DisposeOutcome> {
        message_ref(m)?;
        if let Some(effect) = effect_receipt_id {
            opaque_ref(effect, "effectReceiptId")?;
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
                        params![state.seq, disposition.as_str(), effect_receipt_id, self.now()],
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
                    let now = self.now();
                    tx.execute("UPDATE messages SET acked_at = ?2 WHERE seq = ?1", params![state.seq, now])?;
                    self.purge(tx, now)?;
                    Ok(AckOutcome::Acked)
                }
            }
        })
    }
}
