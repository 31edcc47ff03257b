//! Outbox consumers that share the work: leases on open intents.
//!
//! An executor claims up to `batch` open intents (undecided, or admitted and
//! not done), oldest first, optionally of one capability and kind, for
//! `lease_ms`. While an intent's lease is set, `decide` and `mark_done`
//! accept only its owner and only before it expires
//! ([`JournalError::LeaseNotHeld`], [`JournalError::LeaseExpired`]); an
//! expired lease makes the intent claimable again, so a consumer that died
//! mid-lease leaves nothing behind. The lease, not the deciding executor,
//! authorises `mark_done`: a successor may finish an intent its dead
//! predecessor admitted. A claim is a plain write command (no fsync: a claim
//! lost to a power cut only expires sooner), and a claim that finds nothing
//! claimable on a reader connection writes nothing.
//!
//! Waking consumers: every journal of one file (or PostgreSQL schema) in a
//! process shares a commit generation ([`commit_signal`]), which the writer
//! bumps after each commit holding a record or a decision; consumers wait on
//! it, and poll for other processes' commits. On PostgreSQL, other hosts'
//! commits bump it too, through LISTEN/NOTIFY (`postgres/listen.rs`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use rusqlite::{params, Connection, ToSql};
use tokio::sync::watch;

use super::read::INTENT_COLS;
use super::schema::INTENT_OPEN;
use super::sqlite::intent_row;
use super::{arg, Journal, JournalError, Reply, Result, StoredIntent};

/// Longest lease and largest batch a claim may ask for.
pub const MAX_LEASE_MS: u32 = 3_600_000;
pub const MAX_CLAIM_BATCH: u32 = 1000;

/// What an executor asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClaimRequest {
    pub executor_id: String,
    pub lease_ms: u32,
    pub batch: u32,
    pub capability_id: Option<String>,
    pub intent_kind: Option<String>,
}

/// The commit generation shared by every journal of `path` in this process.
pub(crate) type CommitSignal = Arc<watch::Sender<u64>>;

/// `key` names the journal: a SQLite file's path, or a PostgreSQL
/// server, database and schema (see `postgres::PgTarget::signal_key`).
pub(crate) fn commit_signal(key: &str) -> CommitSignal {
    static SIGNALS: OnceLock<Mutex<HashMap<String, Weak<watch::Sender<u64>>>>> = OnceLock::new();
    let mut map = SIGNALS.get_or_init(Mutex::default).lock().unwrap_or_else(|p| p.into_inner());
    if let Some(live) = map.get(key).and_then(Weak::upgrade) {
        return live;
    }
    map.retain(|_, w| w.strong_count() > 0);
    let signal = Arc::new(watch::channel(0).0);
    map.insert(key.to_owned(), Arc::downgrade(&signal));
    signal
}

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

/// The lease rule of `decide` and `mark_done`: a leased intent answers only
/// its owner, and only before the lease ends. `Ok(true)` when the caller
/// holds the live lease, `Ok(false)` when the intent was never claimed.
pub(crate) fn check_lease(owner: Option<&str>, until: Option<i64>, executor_id: &str, now: i64) -> Result<bool> {
    match owner {
        None => Ok(false),
        Some(o) if o != executor_id => Err(JournalError::LeaseNotHeld),
        Some(_) if until.is_none_or(|u| u <= now) => Err(JournalError::LeaseExpired),
        Some(_) => Ok(true),
    }
}

impl Journal {
    /// Claims up to `batch` open intents, oldest first, for `lease_ms`:
    /// those never claimed, or whose lease expired. Answers the claimed
    /// rows (an admitted one was admitted by an earlier holder: mark it done).
    pub fn claim(&self, r: ClaimRequest) -> Reply<Vec<StoredIntent>> {
        let checked = arg::token(&r.executor_id, "executorId")
            .and_then(|()| arg::opt_token(r.capability_id.as_deref(), "capabilityId"))
            .and_then(|()| arg::opt_token(r.intent_kind.as_deref(), "intentKind"))
            .and(match (r.lease_ms, r.batch) {
                (1..=MAX_LEASE_MS, 1..=MAX_CLAIM_BATCH) => Ok(()),
                (1..=MAX_LEASE_MS, _) => Err(JournalError::InvalidArgument { what: "batch" }),
                _ => Err(JournalError::InvalidArgument { what: "leaseMs" }),
            });
        if let Err(e) = checked {
            return Reply::ready(Err(e));
        }
        let now = super::writer::now_ms();
        self.queue(|then| self.store.claim(r, now, then))
    }

    /// The commit generation of this file in this process: it grows after
    /// every commit holding a record or a decision.
    pub fn commit_generation(&self) -> u64 {
        *self.commits.borrow()
    }

    /// Waits until the commit generation passes `after`, or `timeout`;
    /// answers whether it did.
    pub async fn wait_for_commit(&self, after: u64, timeout: Duration) -> bool {
        let mut rx = self.commits.subscribe();
        let passed = tokio::time::timeout(timeout, rx.wait_for(|g| *g > after)).await.is_ok_and(|r| r.is_ok());
        passed
    }
}
