//! Acknowledgement reactions: fair candidates across routes and messages,
//! attempts recorded before any create, uncertain effects resolved by readback.

use super::cursors::{cursor_value, set_cursor};
use super::*;

impl InboxStore {
    /// Up to `max` messages whose acknowledgement reaction is due (pending,
    /// human-authored, read by a turn-start dispatch, no reaction added and
    /// none in flight; an uncertain or stale attempt is due for its readback),
    /// fairly across routes and messages:
    /// routes start after the one `collector_id` started with last time, one
    /// message per route per round, and each route continues after the
    /// message it last attempted. The route rotation moves now; a route's
    /// message cursor moves only in [`InboxStore::begin_reaction`], past the
    /// message actually attempted, so a message offered but refused by the
    /// attempt budget stays first in line ("every pending read remains
    /// eligible across routes and messages") and a message that keeps
    /// failing does not hold the others back.
    pub(crate) fn reaction_candidates(&self, collector_id: &str, max: u32) -> Result<Vec<MessageRef>> {
        private_id(collector_id, "collectorId")?;
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
            let mut round = 0;
            while out.len() < max as usize && queues.iter().any(|(_, q)| round < q.len()) {
                for (route, queue) in &queues {
                    if out.len() == max as usize {
                        break;
                    }
                    if let Some((_, id)) = queue.get(round) {
                        out.push(MessageRef { route_id: (*route).clone(), provider_message_id: id.clone() });
                    }
                }
                round += 1;
            }
            set_cursor(tx, collector_id, "route_rotation", order[0], now)?;
            Ok(out)
        })
    }

    /// Before the provider creates a reaction: checks eligibility and records
    /// the attempt. Only `Proceed` admits the create. An attempt begun less
    /// than `attempt_stale_ms` ago is `InFlight`; an older unfinished one (a
    /// crash, a lost answer) becomes `Uncertain`: the store fails closed
    /// until the provider reads back whether the reaction exists.
    pub(crate) fn begin_reaction(&self, m: &MessageRef) -> Result<ReactionBegin> {
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
            // This message was attempted: its route's round robin continues after it.
            set_cursor(tx, &m.route_id, "reaction_round_robin", &state.seq.to_string(), now)?;
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
    pub(crate) fn finish_reaction(&self, m: &MessageRef, result: ReactionResult) -> Result<ReactionFinish> {
        self.settle_reaction(m, "attempting", result)
    }

    /// After a provider readback of an uncertain attempt: `Added` when the
    /// reaction exists, `Failed` when it does not (eligible again).
    pub(crate) fn resolve_reaction(&self, m: &MessageRef, result: ReactionResult) -> Result<ReactionFinish> {
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
            tx.execute(
                "UPDATE reactions SET state = ?2, updated_at = ?3 WHERE message_seq = ?1",
                params![state.seq, to, now_ms()],
            )?;
            Ok(ReactionFinish::Recorded)
        })
    }
}
