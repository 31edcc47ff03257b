//! Single-flight provider cursors: claim, advance after readback, release.

use super::*;

impl InboxStore {
    /// Claims a provider cursor for `lease_ms` (1..=600000). Single-flight:
    /// while another unexpired claim holds it, the answer is `Busy`.
    pub(crate) fn claim_cursor(&self, scope: &str, kind: CursorKind, lease_ms: u32) -> Result<ClaimOutcome> {
        private_id(scope, "scope")?;
        if !(1..=600_000).contains(&lease_ms) {
            return Err(InboxError::InvalidArgument { what: "leaseMs" });
        }
        let n = self.lease_counter.fetch_add(1, Ordering::Relaxed);
        let token =
            crate::identity::sha256_hex(format!("{}:{}:{}:{n}", std::process::id(), now_ms(), nanos()).as_bytes());
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
    pub(crate) fn advance_cursor(
        &self,
        scope: &str,
        kind: CursorKind,
        token: &str,
        value: &str,
        read: &[MessageRef],
    ) -> Result<AdvanceOutcome> {
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
                return Err(InboxError::Internal { what: "cursor readback differs" });
            }
            Ok(AdvanceOutcome::Advanced)
        })
    }

    /// Gives a claim up without advancing. Returns false when it was not held.
    pub(crate) fn release_cursor(&self, scope: &str, kind: CursorKind, token: &str) -> Result<bool> {
        private_id(scope, "scope")?;
        self.write(|tx| {
            if !holds_lease(tx, scope, kind, token)? {
                return Ok(false);
            }
            tx.execute(
                "UPDATE cursors SET lease_token = NULL, lease_until = NULL WHERE scope = ?1 AND kind = ?2",
                params![scope, kind.as_str()],
            )?;
            Ok(true)
        })
    }

    /// A cursor's value (null before its first advance).
    pub fn cursor(&self, scope: &str, kind: CursorKind) -> Result<Option<String>> {
        private_id(scope, "scope")?;
        self.read(|tx| cursor_value(tx, scope, kind.as_str()))
    }
}

pub(super) fn cursor_value(tx: &Transaction<'_>, scope: &str, kind: &str) -> Result<Option<String>> {
    Ok(tx
        .query_row("SELECT value FROM cursors WHERE scope = ?1 AND kind = ?2", params![scope, kind], |r| {
            r.get::<_, Option<String>>(0)
        })
        .optional()?
        .flatten())
}

pub(super) fn set_cursor(tx: &Transaction<'_>, scope: &str, kind: &str, value: &str, now: i64) -> Result<()> {
    tx.execute(
        "INSERT INTO cursors (scope, kind, value, updated_at) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (scope, kind) DO UPDATE SET value = ?3, updated_at = ?4",
        params![scope, kind, value, now],
    )?;
    Ok(())
}

fn holds_lease(tx: &Transaction<'_>, scope: &str, kind: CursorKind, token: &str) -> Result<bool> {
    let held: Option<(Option<String>, Option<i64>)> = tx
        .query_row(
            "SELECT lease_token, lease_until FROM cursors WHERE scope = ?1 AND kind = ?2",
            params![scope, kind.as_str()],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    Ok(matches!(held, Some((Some(t), Some(until))) if t == token && until > now_ms()))
}
