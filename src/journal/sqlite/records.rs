//! SQLite's statements for the record rules (`../record/rule.rs`). One
//! writer owns the file, so nothing races inside a batch's transaction.

use rusqlite::{params, Connection, OptionalExtension};

use super::super::read::stored_dialect;
use super::super::record::{FailureCols, RecordSql};
use super::super::states::DispatchState;
use super::super::types::{Checkpoint, FinalRecord};
use super::super::{DispatchRow, JournalError, Result};
use super::read::{dispatch_row, DISPATCH_COLS};
use super::schema::DISPATCH_UNFINISHED;

impl RecordSql for Connection {
    fn insert_checkpoint(&mut self, c: &Checkpoint, now: i64) -> Result<bool> {
        let inserted = self
            .prepare_cached(
                "INSERT INTO dispatches (dispatch_id, state, attempts, hook_id, capability_id, receipt_id, effect_id,
                   event_kind, registration_digest, created_at, updated_at, dialect, recorded_at)
                 VALUES (?1, 'checkpointed', ?9, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8, ?10, ?11)
                 ON CONFLICT (dispatch_id) DO NOTHING",
            )?
            .execute(params![
                c.dispatch_id,
                c.hook_id,
                c.capability_id,
                c.receipt_id,
                c.effect_id,
                c.event_kind,
                c.registration_digest,
                now,
                c.attempt,
                stored_dialect(c.dialect),
                c.recorded_at
            ])?;
        if inserted == 1 {
            self.prepare_cached("INSERT INTO requests (seq, request) VALUES (?1, ?2)")?
                .execute(params![self.last_insert_rowid(), c.request_json])?;
        }
        Ok(inserted == 1)
    }

    fn standing(&mut self, dispatch_id: &str) -> Result<Option<DispatchRow>> {
        static SQL: std::sync::LazyLock<String> =
            std::sync::LazyLock::new(|| format!("SELECT {DISPATCH_COLS} FROM dispatches WHERE dispatch_id = ?1"));
        Ok(self.prepare_cached(&SQL)?.query_row([dispatch_id], dispatch_row).optional()?)
    }

    fn raise_attempts(&mut self, dispatch_id: &str, attempt: u32, now: i64) -> Result<()> {
        self.prepare_cached("UPDATE dispatches SET attempts = ?2, updated_at = ?3 WHERE dispatch_id = ?1")?
            .execute(params![dispatch_id, attempt, now])?;
        Ok(())
    }

    fn finish_if_unfinished(&mut self, r: &FinalRecord, state: DispatchState, now: i64) -> Result<bool> {
        static FINISH: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
            format!(
                "UPDATE dispatches SET state = ?2, attempts = ?3, result_digest = ?4, updated_at = ?5
                 WHERE dispatch_id = ?1 AND {DISPATCH_UNFINISHED} RETURNING seq"
            )
        });
        let seq: Option<i64> = self
            .prepare_cached(&FINISH)?
            .query_row(params![r.dispatch_id, state.as_str(), r.attempt, r.result_digest, now], |row| row.get(0))
            .optional()?;
        let Some(seq) = seq else { return Ok(false) };
        // The request only serves recover(); a final identity never needs it again.
        self.prepare_cached("DELETE FROM requests WHERE seq = ?1")?.execute([seq])?;
        final_rows(self, r, now)?;
        Ok(true)
    }

    fn insert_final(&mut self, c: &Checkpoint, r: &FinalRecord, state: DispatchState, now: i64) -> Result<bool> {
        let inserted = self
            .prepare_cached(
                "INSERT INTO dispatches (dispatch_id, state, attempts, hook_id, capability_id, receipt_id, effect_id,
                   event_kind, registration_digest, result_digest, created_at, updated_at, dialect, recorded_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?11, ?12, ?13)
                 ON CONFLICT (dispatch_id) DO NOTHING",
            )?
            .execute(params![
                c.dispatch_id,
                state.as_str(),
                r.attempt,
                c.hook_id,
                c.capability_id,
                c.receipt_id,
                c.effect_id,
                c.event_kind,
                c.registration_digest,
                r.result_digest,
                now,
                stored_dialect(c.dialect),
                c.recorded_at
            ])?;
        if inserted == 0 {
            return Ok(false);
        }
        final_rows(self, r, now)?;
        Ok(true)
    }

    fn insert_failure(&mut self, f: FailureCols<'_>, now: i64) -> Result<()> {
        self.prepare_cached(
            "INSERT INTO failures (dispatch_id, attempt, code, rule, at, pointer) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
             ON CONFLICT (dispatch_id, attempt) DO NOTHING",
        )?
        .execute(params![f.id, f.attempt, f.code, f.rule, now, f.pointer])?;
        Ok(())
    }

    fn mark_failed(&mut self, dispatch_id: &str, attempt: u32, now: i64) -> Result<()> {
        self.prepare_cached(
            "UPDATE dispatches SET state = 'failed', attempts = max(attempts, ?2), updated_at = ?3 WHERE dispatch_id = ?1",
        )?
        .execute(params![dispatch_id, attempt, now])?;
        Ok(())
    }

    fn enter_record(&mut self, _count: usize) -> Result<bool> {
        super::cached(self, "SAVEPOINT rec")?;
        Ok(true)
    }

    fn leave_record(&mut self, _isolated: bool, ok: bool) -> Result<()> {
        if ok {
            return super::cached(self, "RELEASE rec");
        }
        Ok(self.execute_batch("ROLLBACK TO rec; RELEASE rec")?)
    }
}

/// A final row's other rows: the exhausted failure, then the intents in order.
fn final_rows(c: &mut Connection, r: &FinalRecord, now: i64) -> Result<()> {
    if let Some((code, rule)) = &r.failure {
        let cols = FailureCols { id: &r.dispatch_id, attempt: r.attempt, code, rule: rule.as_deref(), pointer: None };
        c.insert_failure(cols, now)?;
    }
    let mut insert = c.prepare_cached(
        "INSERT INTO intents (intent_id, dispatch_id, capability_id, intent_kind, doc) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    for i in &r.intents {
        insert.execute(params![i.intent_id, r.dispatch_id, i.capability_id, i.intent_kind, i.stored_json]).map_err(
            |e| match &e {
                rusqlite::Error::SqliteFailure(f, _) if f.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE => {
                    JournalError::DuplicateIntent
                }
                _ => e.into(),
            },
        )?;
    }
    Ok(())
}
