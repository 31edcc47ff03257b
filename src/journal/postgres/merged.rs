//! Checkpoints and final records merged (see `../merge.rs`): a run of them
//! costs one statement over array parameters, one round trip, instead of
//! one per command, which is what a batch costs on PostgreSQL.
//!
//! Each command still gets exactly the answer it gets alone. The statement
//! handles the first command of each identity in the run and reports which
//! rows it wrote; then, in queue order, a command whose row was not written
//! reads where its identity stands (the record rule's own code,
//! `../record/rule.rs`), and a later command of an identity already in the
//! run runs alone, through that rule. A refused statement
//! (a duplicate intent id) fails the whole statement: the batch is retried
//! carefully, command by command in savepoints (`writer.rs`), so only that
//! command fails.

use std::collections::HashSet;

use super::super::merge::Merge;
use super::super::read::stored_dialect;
use super::super::record::{checkpoint_existing, final_unchanged, run_checkpoint, run_final};
use super::super::states::DispatchState;
use super::super::types::{Checkpoint, CheckpointState, FinalRecord, RecordOutcome};
use super::super::{JournalError, RecordAnswer, RecordCommand, Result};
use super::conn::to_i32;
use super::writer::PgWriteConn;
use tokio_postgres::types::ToSql;

pub(super) fn checkpoints() -> Merge<PgWriteConn, Checkpoint, CheckpointState> {
    Merge { many: run_checkpoints, ids: |c| Some(vec![c.dispatch_id.as_str()]) }
}

pub(super) fn finals() -> Merge<PgWriteConn, FinalRecord, RecordOutcome> {
    Merge { many: run_finals, ids: |r| Some(vec![r.dispatch_id.as_str()]) }
}

/// Record lists made of final records only; the others run alone.
pub(super) fn record_lists() -> Merge<PgWriteConn, Vec<RecordCommand>, Vec<Result<RecordAnswer>>> {
    Merge { many: run_record_lists, ids: final_ids }
}

// The merge's signature takes the command's own argument type.
#[allow(clippy::ptr_arg)]
fn final_ids(records: &Vec<RecordCommand>) -> Option<Vec<&str>> {
    records
        .iter()
        .map(|r| match r {
            RecordCommand::Final(f) => Some(f.dispatch_id.as_str()),
            _ => None,
        })
        .collect()
}

/// Runs the merged statement; a refused one asks for the careful retry.
fn statement(
    conn: &mut PgWriteConn,
    sql: &'static str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<Vec<tokio_postgres::Row>> {
    match conn.link.query(sql, params) {
        Ok(rows) => Ok(rows),
        Err(e) => {
            conn.undo_command()?;
            Err(e)
        }
    }
}

/// A command's own outcome; busy, unavailable or a refused statement ends the batch.
fn own<T>(conn: &mut PgWriteConn, out: Result<T>) -> Result<Result<T>> {
    match out {
        Err(e @ (JournalError::Busy | JournalError::Unavailable)) => Err(e),
        Err(e) => {
            conn.undo_command()?;
            Ok(Err(e))
        }
        ok => Ok(ok),
    }
}

/// An answer the merged run failed to give: a fault of this module.
fn internal<T>() -> Result<T> {
    Err(JournalError::Internal { what: "a merged command went unanswered" })
}

const CHECKPOINTS: &str = "
WITH t AS (
  SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
    $8::int4[], $9::text[], $11::text[], $12::text[])
    WITH ORDINALITY AS t(id, hook, cap, rid, eid, kind, reg, att, req, dia, rat, n)),
d AS (
  INSERT INTO dispatches (dispatch_id, state, attempts, hook_id, capability_id, receipt_id, effect_id,
    event_kind, registration_digest, created_at, updated_at, dialect, recorded_at, holder)
  SELECT id, 'checkpointed', att, hook, cap, rid, eid, kind, reg, $10::int8, $10::int8, dia, rat, $13::int8
  FROM t ORDER BY n
  ON CONFLICT (dispatch_id) DO NOTHING RETURNING seq, dispatch_id),
r AS (INSERT INTO requests (seq, request) SELECT d.seq, t.req FROM d JOIN t ON t.id = d.dispatch_id)
SELECT dispatch_id FROM d";

fn run_checkpoints(conn: &mut PgWriteConn, cps: &[&Checkpoint], now: i64) -> Result<Vec<Result<CheckpointState>>> {
    let mut outs: Vec<Option<Result<CheckpointState>>> = cps.iter().map(|_| None).collect();
    let mut merged = vec![false; cps.len()];
    let mut seen = HashSet::new();
    let mut cols: [Vec<&str>; 8] = Default::default();
    let mut atts = Vec::new();
    let mut dialects: Vec<Option<&str>> = Vec::new();
    let mut recorded: Vec<Option<&str>> = Vec::new();
    for (i, c) in cps.iter().enumerate() {
        match to_i32(c.attempt, "attempt") {
            Err(e) => outs[i] = Some(Err(e)),
            Ok(a) => {
                if seen.insert(c.dispatch_id.as_str()) {
                    merged[i] = true;
                    let row = [
                        &c.dispatch_id,
                        &c.hook_id,
                        &c.capability_id,
                        &c.receipt_id,
                        &c.effect_id,
                        &c.event_kind,
                        &c.registration_digest,
                        &c.request_json,
                    ];
                    for (col, v) in cols.iter_mut().zip(row) {
                        col.push(v.as_str());
                    }
                    atts.push(a);
                    dialects.push(stored_dialect(c.dialect));
                    recorded.push(c.recorded_at.as_deref());
                }
            }
        }
    }
    let [ids, hooks, caps, rids, eids, kinds, regs, reqs] = &cols;
    let rows = statement(
        conn,
        CHECKPOINTS,
        &[ids, hooks, caps, rids, eids, kinds, regs, &atts, reqs, &now, &dialects, &recorded, &conn.holder.clone()],
    )?;
    let fresh: HashSet<String> = rows.iter().map(|r| r.get(0)).collect();
    for (i, c) in cps.iter().enumerate() {
        if outs[i].is_some() {
            continue;
        }
        let out = match merged[i] {
            true if fresh.contains(&c.dispatch_id) => Ok(CheckpointState::Fresh),
            true => checkpoint_existing(conn, c, now),
            false => run_checkpoint(conn, c, now),
        };
        outs[i] = Some(own(conn, out)?);
    }
    Ok(outs.into_iter().map(|o| o.unwrap_or_else(internal)).collect())
}

/// The final record's statement (`records.rs`) over arrays: `t` numbers the
/// records, `u` their intents by owner, in queue order.
const FINALS: &str = "
WITH t AS (
  SELECT * FROM unnest($1::text[], $2::text[], $3::int4[], $4::text[], $5::text[], $6::text[])
    WITH ORDINALITY AS t(id, state, att, digest, code, rule, n)),
d AS (
  UPDATE dispatches x SET state = t.state, attempts = t.att, result_digest = t.digest, updated_at = $7::int8
  FROM t WHERE x.dispatch_id = t.id AND x.state IN ('checkpointed','failed') RETURNING x.seq, t.n),
r AS (DELETE FROM requests q USING d WHERE q.seq = d.seq),
f AS (
  INSERT INTO failures (dispatch_id, attempt, code, rule, at)
  SELECT t.id, t.att, t.code, t.rule, $7::int8 FROM d JOIN t ON t.n = d.n WHERE t.code IS NOT NULL ORDER BY t.n
  ON CONFLICT (dispatch_id, attempt) DO NOTHING),
i AS (
  INSERT INTO intents (intent_id, dispatch_id, capability_id, intent_kind, doc)
  SELECT u.iid, t.id, u.cap, u.kind, u.doc
  FROM unnest($8::int8[], $9::text[], $10::text[], $11::text[], $12::text[])
    WITH ORDINALITY AS u(owner, iid, cap, kind, doc, m)
  JOIN d ON d.n = u.owner JOIN t ON t.n = u.owner
  ORDER BY u.m)
SELECT n FROM d";

fn run_finals(conn: &mut PgWriteConn, recs: &[&FinalRecord], now: i64) -> Result<Vec<Result<RecordOutcome>>> {
    let mut outs: Vec<Option<Result<RecordOutcome>>> = recs.iter().map(|_| None).collect();
    let mut first = Vec::new();
    let mut seen = HashSet::new();
    for (i, r) in recs.iter().enumerate() {
        match to_i32(r.attempt, "attempt") {
            Err(e) => outs[i] = Some(Err(e)),
            Ok(a) if seen.insert(r.dispatch_id.as_str()) => first.push((i, a)),
            Ok(_) => {}
        }
    }
    // Rows are locked in identity order, so two hosts' batches over the same
    // identities wait for each other instead of deadlocking.
    first.sort_by_key(|(i, _)| recs[*i].dispatch_id.as_str());
    // The 1-based row of each record in the statement's arrays (0: not in it).
    let mut row = vec![0i64; recs.len()];
    let (mut ids, mut states, mut atts, mut digests, mut codes, mut rules) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (i, attempt) in first {
        let r = recs[i];
        ids.push(r.dispatch_id.as_str());
        row[i] = ids.len() as i64;
        states.push(DispatchState::from(r.status).as_str());
        atts.push(attempt);
        digests.push(r.result_digest.as_deref());
        codes.push(r.failure.as_ref().map(|(code, _)| code.as_str()));
        rules.push(r.failure.as_ref().and_then(|(_, rule)| rule.as_deref()));
    }
    // Intents in queue order, each naming its record's row.
    let mut intents: (Vec<i64>, [Vec<&str>; 4]) = Default::default();
    for (i, r) in recs.iter().enumerate().filter(|(i, _)| row[*i] > 0) {
        for intent in &r.intents {
            intents.0.push(row[i]);
            let values = [&intent.intent_id, &intent.capability_id, &intent.intent_kind, &intent.stored_json];
            for (col, v) in intents.1.iter_mut().zip(values) {
                col.push(v.as_str());
            }
        }
    }
    let (owners, [iids, icaps, ikinds, idocs]) = &intents;
    let params: [&(dyn ToSql + Sync); 12] =
        [&ids, &states, &atts, &digests, &codes, &rules, &now, owners, iids, icaps, ikinds, idocs];
    let rows = statement(conn, FINALS, &params)?;
    let changed: HashSet<i64> = rows.iter().map(|r| r.get(0)).collect();
    for (i, r) in recs.iter().enumerate() {
        if outs[i].is_some() {
            continue;
        }
        let out = match row[i] {
            0 => run_final(conn, r, now),
            n if changed.contains(&n) => Ok(RecordOutcome::Recorded),
            _ => final_unchanged(conn, r, now),
        };
        outs[i] = Some(own(conn, out)?);
    }
    Ok(outs.into_iter().map(|o| o.unwrap_or_else(internal)).collect())
}

fn run_record_lists(
    conn: &mut PgWriteConn,
    lists: &[&Vec<RecordCommand>],
    now: i64,
) -> Result<Vec<Result<Vec<Result<RecordAnswer>>>>> {
    let finals: Vec<&FinalRecord> = lists
        .iter()
        .flat_map(|records| records.iter())
        .filter_map(|r| match r {
            RecordCommand::Final(f) => Some(f),
            _ => None,
        })
        .collect();
    let mut answers = run_finals(conn, &finals, now)?.into_iter();
    let mut answer = |r: &RecordCommand| match r {
        RecordCommand::Final(_) => answers.next().unwrap_or_else(internal).map(RecordAnswer::Final),
        // `record_lists` merges lists of final records only.
        _ => internal(),
    };
    Ok(lists.iter().map(|records| Ok(records.iter().map(&mut answer).collect())).collect())
}
