//! Retention of private content : an
//! acknowledged message keeps its private payload for `retention_ms`, then
//! the payload is purged (overwritten with JSON `null`, with SQLite's
//! secure_delete zeroing the freed bytes). The message row and its read,
//! disposition and reaction receipts stay, so every count and receipt does.
//! Purging runs inside the writes that happen every Turn (first reads, ACK)
//! and on demand (`purge_expired`).

use std::sync::Arc;

use rusqlite::{params, Transaction};

use super::{InboxStore, Result};

/// Milliseconds since the Unix epoch, as the store reads the time.
pub type Clock = Arc<dyn Fn() -> i64 + Send + Sync>;

/// Seven days: long enough to audit a Turn's disposition, short enough that
/// private message text does not outlive its use.
pub const DEFAULT_RETENTION_MS: i64 = 7 * 24 * 60 * 60 * 1000;
/// About ten years; a longer setting is refused (it would be "for ever").
pub const MAX_RETENTION_MS: i64 = 10 * 366 * 24 * 60 * 60 * 1000;

/// Copies the WAL into the database and truncates it to zero bytes, so no
/// earlier page image (a purged payload's text among them) stays on disk.
/// False when another connection's reader kept it from completing: the
/// store tries again after its next write.
pub(super) fn truncate_wal(conn: &rusqlite::Connection) -> bool {
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get::<_, i64>(0)).is_ok_and(|busy| busy == 0)
}

pub(super) fn system_clock() -> Clock {
    Arc::new(super::now_ms)
}

/// What stands in for a purged payload.
const PURGED: &str = "null";

impl InboxStore {
    /// Purges the payloads of messages acknowledged at least `retention_ms`
    /// before `now`; the number purged. `secure_delete` zeroes the old text
    /// in the page; the WAL still holds earlier images of that page, so the
    /// store truncates it once the purge has committed.
    pub(super) fn purge(&self, tx: &Transaction<'_>, now: i64) -> Result<u32> {
        let n = tx.execute(
            "UPDATE messages SET payload = ?2
             WHERE acked_at IS NOT NULL AND acked_at <= ?1 AND payload != ?2",
            params![now.saturating_sub(self.retention_ms), PURGED],
        )?;
        if n > 0 {
            self.wal_dirty.store(true, std::sync::atomic::Ordering::SeqCst);
        }
        Ok(u32::try_from(n).unwrap_or(u32::MAX))
    }

    /// Purges every acknowledged payload past retention now; the number purged.
    pub fn purge_expired(&self) -> Result<u32> {
        let now = self.now();
        self.write(|tx| self.purge(tx, now))
    }

    /// How many acknowledged messages still hold their payload, and how many
    /// were purged (for tests and operators; counts only).
    pub fn retention_counts(&self) -> Result<RetentionCounts> {
        self.read(|tx| {
            Ok(tx.query_row(
                "SELECT count(*) FILTER (WHERE payload != ?1), count(*) FILTER (WHERE payload = ?1)
                 FROM messages WHERE acked_at IS NOT NULL",
                params![PURGED],
                |r| Ok(RetentionCounts { acked_with_payload: r.get(0)?, acked_purged: r.get(1)? }),
            )?)
        })
    }
}

/// Acknowledged messages by whether their private payload is still kept.
#[derive(serde::Serialize, ts_rs::TS, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "camelCase")]
#[ts(export)]
pub struct RetentionCounts {
    pub acked_with_payload: u32,
    pub acked_purged: u32,
}

#[cfg(test)]
mod tests {
    //! "Private content has a retention bound": acknowledged payloads are
    //! purged after the retention setting, with an injected clock; the
    //! pending, counts and receipts are kept.

    use std::path::PathBuf;
    use std::sync::atomic::{AtomicI64, Ordering};
    use std::sync::Arc;

    use serde_json::json;

    use super::super::*;

    struct Temp(PathBuf);
    impl Drop for Temp {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    const HOUR: i64 = 60 * 60 * 1000;

    fn store(name: &str, retention_ms: i64) -> (Temp, InboxStore, Arc<AtomicI64>) {
        let dir = std::env::temp_dir().join(format!("loopx-retention-{name}-{}-{}", std::process::id(), nanos()));
        std::fs::create_dir_all(&dir).unwrap();
        let now = Arc::new(AtomicI64::new(1_000 * HOUR));
        let clock: Clock = {
            let now = now.clone();
            Arc::new(move || now.load(Ordering::SeqCst))
        };
        let options = InboxOptions { retention_ms, ..Default::default() };
        let s = InboxStore::open_with_clock(dir.join("inbox.sqlite"), options, clock).unwrap();
        (Temp(dir), s, now)
    }

    fn take(s: &InboxStore, id: &str) -> MessageRef {
        let m = MessageRef { route_id: "route".into(), provider_message_id: id.into() };
        s.capture(&CaptureInput {
            route_id: m.route_id.clone(),
            provider_message_id: id.into(),
            source: CaptureSource::TurnStart,
            sender: Sender { kind: SenderKind::Human, verified_identity: None },
            attention: Attention::Ordinary,
            payload: json!({"text": format!("private words of {id}")}),
        })
        .unwrap();
        m
    }

    fn settle(s: &InboxStore, m: &MessageRef) {
        assert_eq!(s.dispose(m, Disposition::NoFollowUp, None).unwrap(), DisposeOutcome::Recorded);
        assert_eq!(s.ack(m).unwrap(), AckOutcome::Acked);
    }

    fn payload_texts(s: &InboxStore) -> Vec<String> {
        s.read(|tx| {
            let mut stmt = tx.prepare("SELECT payload FROM messages ORDER BY seq")?;
            let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
        .unwrap()
    }

    #[test]
    fn acknowledged_private_payloads_are_purged_after_retention_and_counts_and_receipts_are_kept() {
        let (_t, s, now) = store("purge", 24 * HOUR);
        let (a, b, c) = (take(&s, "a"), take(&s, "b"), take(&s, "c"));
        s.record_first_reads("turn_1").unwrap();
        settle(&s, &a);
        now.fetch_add(12 * HOUR, Ordering::SeqCst);
        settle(&s, &b);
        // c stays pending: never purged, whatever the time.
        assert_eq!(s.purge_expired().unwrap(), 0, "nothing is past retention yet");
        assert_eq!(s.retention_counts().unwrap(), RetentionCounts { acked_with_payload: 2, acked_purged: 0 });

        now.fetch_add(12 * HOUR, Ordering::SeqCst); // a acked 24 h ago, b 12 h ago
        assert_eq!(s.purge_expired().unwrap(), 1);
        assert_eq!(s.retention_counts().unwrap(), RetentionCounts { acked_with_payload: 1, acked_purged: 1 });
        let texts = payload_texts(&s);
        assert_eq!(texts[0], "null");
        assert!(texts[1].contains("private words of b") && texts[2].contains("private words of c"));

        // The next Turn's first reads purge what has expired since, without being asked.
        now.fetch_add(12 * HOUR, Ordering::SeqCst);
        let reads = s.record_first_reads("turn_2").unwrap();
        assert_eq!((reads.observations_new, reads.pending), (0, 1));
        assert_eq!(s.retention_counts().unwrap(), RetentionCounts { acked_with_payload: 0, acked_purged: 2 });

        // Receipts and counts are kept: the rows, their reads and dispositions; ACK stays final.
        assert!(s.contains(&a).unwrap() && s.contains(&b).unwrap());
        assert_eq!(s.ack(&a).unwrap(), AckOutcome::AlreadyAcked);
        assert_eq!(s.dispose(&a, Disposition::NoFollowUp, None).unwrap(), DisposeOutcome::AlreadyAcked);
        let kept: (i64, i64, i64) = s
            .read(|tx| {
                Ok(tx.query_row(
                    "SELECT (SELECT count(*) FROM messages), (SELECT count(*) FROM reads), (SELECT count(*) FROM dispositions)",
                    [],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
                )?)
            })
            .unwrap();
        assert_eq!(kept, (3, 3, 2));
        // A capture of a purged message's identity is still a duplicate, not a new message.
        assert_eq!(
            s.capture(&CaptureInput {
                route_id: "route".into(),
                provider_message_id: "a".into(),
                source: CaptureSource::Collector,
                sender: Sender { kind: SenderKind::Human, verified_identity: None },
                attention: Attention::Ordinary,
                payload: json!({"text": "again"}),
            })
            .unwrap(),
            CaptureOutcome::Duplicate
        );
        assert_eq!(
            s.pending(None, 10).unwrap().iter().map(|m| m.provider_message_id.as_str()).collect::<Vec<_>>(),
            [c.provider_message_id.as_str()]
        );
    }

    #[test]
    fn retention_zero_purges_at_the_acknowledgement_and_the_default_is_seven_days() {
        let (_t, s, _now) = store("zero", 0);
        let a = take(&s, "a");
        s.record_first_reads("turn_1").unwrap();
        settle(&s, &a);
        assert_eq!(s.retention_counts().unwrap(), RetentionCounts { acked_with_payload: 0, acked_purged: 1 });
        assert_eq!(InboxOptions::default().retention_ms, 7 * 24 * HOUR);
    }

    /// Whether `needle` occurs in the raw bytes of the inbox's db, -wal or -shm.
    fn on_disk(dir: &std::path::Path, needle: &str) -> Vec<&'static str> {
        ["", "-wal", "-shm"]
            .into_iter()
            .filter(|suffix| {
                let bytes = std::fs::read(dir.join(format!("inbox.sqlite{suffix}"))).unwrap_or_default();
                bytes.windows(needle.len()).any(|w| w == needle.as_bytes())
            })
            .collect()
    }

    /// "Private content has a retention bound": a purged payload's text is gone
    /// from every file of the inbox, the WAL's earlier page images included,
    /// while the store stays open and after it is reopened.
    #[test]
    fn purged_text_is_gone_from_the_db_the_wal_and_the_shm() {
        let (t, s, _now) = store("disk", 0);
        let a = take(&s, "a");
        take(&s, "b");
        s.record_first_reads("turn_1").unwrap();
        assert_eq!(on_disk(&t.0, "private words of a"), ["-wal"], "captured text is in the WAL before the purge");
        settle(&s, &a);
        assert!(on_disk(&t.0, "private words of a").is_empty(), "{:?}", on_disk(&t.0, "private words of a"));
        assert!(!on_disk(&t.0, "private words of b").is_empty(), "pending text is kept");
        // A second store on the same live file, and a reopened one.
        let other =
            InboxStore::open(t.0.join("inbox.sqlite"), InboxOptions { retention_ms: 0, ..Default::default() }).unwrap();
        assert_eq!(other.pending_count().unwrap(), 1);
        drop(other);
        drop(s);
        assert!(on_disk(&t.0, "private words of a").is_empty());
    }

    #[test]
    fn a_retention_outside_its_bounds_is_refused() {
        for bad in [-1, MAX_RETENTION_MS + 1] {
            let dir = std::env::temp_dir().join(format!("loopx-retention-bad-{}-{}", std::process::id(), nanos()));
            std::fs::create_dir_all(&dir).unwrap();
            let _t = Temp(dir.clone());
            let options = InboxOptions { retention_ms: bad, ..Default::default() };
            let err = InboxStore::open(dir.join("inbox.sqlite"), options).unwrap_err();
            assert_eq!(err, InboxError::InvalidArgument { what: "retentionMs" });
        }
    }
}
