//! The inbox's own standing for one dispatch's lane decision: each pending
//! message is fresh (first read during this dispatch), carried (first read
//! before it) or unread, counted per message rather than summed from the
//! receipts of several hooks that share this inbox.

use std::collections::BTreeSet;

use super::*;

/// Pending messages by their standing after one dispatch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InboxStanding {
    /// First read during this dispatch, by attention class.
    pub fresh_ordinary: u32,
    pub fresh_direct_questions: u32,
    pub fresh_verified_replies: u32,
    /// First read on an earlier turn and still pending.
    pub carried: u32,
    /// Captured and never first-read.
    pub unread: u32,
}

impl InboxStanding {
    pub fn pending(&self) -> u32 {
        self.fresh() + self.carried + self.unread
    }

    pub fn fresh(&self) -> u32 {
        self.fresh_ordinary + self.fresh_direct_questions + self.fresh_verified_replies
    }
}

/// The pending messages that had their first read when a dispatch began.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReadBefore(BTreeSet<i64>);

impl InboxStore {
    /// Taken when a dispatch begins: which pending messages were read already.
    pub fn read_before(&self) -> Result<ReadBefore> {
        self.read(|tx| {
            let mut stmt = tx.prepare(
                "SELECT m.seq FROM messages m JOIN reads r ON r.message_seq = m.seq WHERE m.acked_at IS NULL",
            )?;
            let seqs = stmt.query_map([], |r| r.get::<_, i64>(0))?.collect::<rusqlite::Result<_>>()?;
            Ok(ReadBefore(seqs))
        })
    }

    /// Taken when the dispatch ends: every pending message by its standing.
    pub fn standing(&self, before: &ReadBefore) -> Result<InboxStanding> {
        self.read(|tx| {
            let mut stmt = tx.prepare(
                "SELECT m.seq, m.attention, r.message_seq IS NOT NULL FROM messages m
                 LEFT JOIN reads r ON r.message_seq = m.seq WHERE m.acked_at IS NULL",
            )?;
            let mut standing = InboxStanding::default();
            let rows =
                stmt.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?, r.get::<_, bool>(2)?)))?;
            for row in rows {
                let (seq, attention, read) = row?;
                let count = match (read, before.0.contains(&seq), attention.as_str()) {
                    (false, _, _) => &mut standing.unread,
                    (true, true, _) => &mut standing.carried,
                    (true, false, "direct_question") => &mut standing.fresh_direct_questions,
                    (true, false, "verified_reply") => &mut standing.fresh_verified_replies,
                    (true, false, _) => &mut standing.fresh_ordinary,
                };
                *count += 1;
            }
            Ok(standing)
        })
    }
}
