//! Claims on SQLite: the open intents whose lease is free, oldest first,
//! leased one row at a time inside the writer's transaction (the write lock
//! is the whole file's, so no two claimers see the same row). The claim's
//! rules are the core's (`../lease.rs`).

use rusqlite::{params, Connection, ToSql};

use super::super::read::INTENT_COLS;
use super::super::{ClaimRequest, Result, StoredIntent};
use super::read::intent_row;
use super::schema::INTENT_OPEN;

/// `AND lease is free` for claim queries, `now` being parameter `?1`.
const LEASE_FREE: &str = "(lease_until IS NULL OR lease_until <= ?1)";

pub(super) fn claim_sql(select: &str, r: &ClaimRequest) -> (String, usize) {
    let mut sql = format!("SELECT {select} FROM intents i WHERE {INTENT_OPEN} AND {LEASE_FREE}");
    let mut n = 1;
    for (col, v) in [("capability_id", &r.capability_id), ("intent_kind", &r.intent_kind)] {
        if v.is_some() {
            n += 1;
            sql += &format!(" AND {col} = ?{n}");
        }
    }
    (sql, n)
}

pub(super) fn claim_params<'a>(now: &'a i64, r: &'a ClaimRequest) -> Vec<&'a dyn ToSql> {
    let mut p: Vec<&dyn ToSql> = vec![now];
    for v in [&r.capability_id, &r.intent_kind].into_iter().flatten() {
        p.push(v);
    }
    p
}

pub(super) fn run_claim(conn: &mut Connection, r: &ClaimRequest, now: i64) -> Result<Vec<StoredIntent>> {
    let (sql, n) = claim_sql("i.seq", r);
    let sql = format!("{sql} ORDER BY i.seq LIMIT ?{}", n + 1);
    let batch = i64::from(r.batch);
    let mut p = claim_params(&now, r);
    p.push(&batch);
    let seqs: Vec<i64> =
        conn.prepare_cached(&sql)?.query_map(p.as_slice(), |row| row.get(0))?.collect::<rusqlite::Result<_>>()?;
    let until = now.saturating_add(i64::from(r.lease_ms));
    let mut claimed = Vec::with_capacity(seqs.len());
    for seq in seqs {
        conn.prepare_cached("UPDATE intents SET lease_owner = ?2, lease_until = ?3 WHERE seq = ?1")?
            .execute(params![seq, r.executor_id, until])?;
        let sql = format!("SELECT {INTENT_COLS} FROM intents i WHERE i.seq = ?1");
        claimed.push(conn.prepare_cached(&sql)?.query_row([seq], intent_row)?);
    }
    Ok(claimed)
}
