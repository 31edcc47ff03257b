//! `NativeJournal`: the readers and the outbox over a journal, for
//! inspection and for governed executors (which need no dispatcher). On a
//! SQLite file readers are synchronous point reads on the calling (JS)
//! thread through a reader connection's cached statements, as better-sqlite3
//! does: a WAL read costs less than any thread hop. On PostgreSQL a read is
//! a round trip, so each reader has an `*_off_thread` twin the caller uses
//! instead (see `reads_are_remote`). Outbox decisions go to the writer.
//! Values come back as JSON text. Rows carry their
//! documents as the journal does not store them whole: a dispatch's receipt
//! and an intent's document are rebuilt by `dispatch::with_receipt` and
//! `dispatch::with_intent_doc`.

use std::sync::Arc;
use std::time::Duration;

use napi_derive::napi;
use serde::{Deserialize, Serialize};

use super::error::{coded, misuse, rejection, task_failed, Code, Result as BindingResult};
use crate::dialect::{with_intent_doc, with_receipt};
use crate::journal::{
    ClaimRequest, Decision, DispatchFilter, DispatchState, IntentFilter, Journal, JournalOptions, JournalTarget,
    OpenMode, Page, PruneOptions, PrunedBatch, DEFAULT_PRUNE_BATCH,
};
use crate::journal_export::JsonlExport;
use crate::options::{self, JournalOpenOptions};

#[napi]
pub struct NativeJournal {
    pub(crate) journal: Arc<Journal>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
struct DispatchQuery {
    state: Option<String>,
    hook_id: Option<String>,
    after: Option<i64>,
    limit: Option<u32>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PruneQuery {
    older_than_ms: u64,
    batch_size: Option<u32>,
    #[serde(default)]
    archive: bool,
    export_to: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ClaimQuery {
    executor_id: String,
    lease_ms: u32,
    batch: u32,
    capability_id: Option<String>,
    intent_kind: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
struct IntentQuery {
    dispatch_id: Option<String>,
    capability_id: Option<String>,
    intent_kind: Option<String>,
    pending_only: bool,
    after: Option<i64>,
    limit: Option<u32>,
}

fn query<T: for<'de> Deserialize<'de> + Default>(json: Option<String>) -> BindingResult<T> {
    match json {
        None => Ok(T::default()),
        Some(text) => {
            serde_json::from_str(&text).map_err(|_| misuse(Code::InvalidArgument, "unknown or mistyped query field"))
        }
    }
}

/// A reader's value as JSON text.
fn read<T: Serialize>(value: crate::journal::Result<T>) -> napi::Result<String, Code> {
    let value = value.map_err(coded)?;
    serde_json::to_string(&value).map_err(|_| misuse(Code::Internal, "value could not be serialized"))
}

/// Where a journal lives on PostgreSQL (see `journal::postgres`).
/// The journal a `JournalTarget` (JSON text) names, and the open options
/// (JSON text) that go with it, as core reads them; `at` names the method in errors.
fn journal_args(
    at: &str,
    target_json: &str,
    options_json: Option<&str>,
) -> BindingResult<(JournalTarget, JournalOptions)> {
    let value = serde_json::from_str(target_json).map_err(|_| misuse(Code::InvalidArgument, "journal is not JSON"))?;
    let target = options::journal_target(&format!("{at}: journal"), value).map_err(coded)?;
    let options = match options_json {
        Some(text) => {
            let value = serde_json::from_str(text).map_err(|_| misuse(Code::InvalidArgument, "options is not JSON"))?;
            JournalOpenOptions::read(&format!("{at}: options"), value).map_err(coded)?
        }
        None => JournalOpenOptions { busy_timeout_ms: None },
    };
    Ok((target, options.journal_options()))
}

/// Opens `target` off the JS thread.
pub(crate) async fn open_journal(
    target: JournalTarget,
    options: JournalOptions,
    mode: OpenMode,
) -> BindingResult<Journal> {
    let open = move || Journal::open(target, options, mode);
    tokio::task::spawn_blocking(open)
        .await
        .map_err(|_| misuse(Code::Internal, "journal open task failed"))?
        .map_err(coded)
}

/// Opens (creating on first use) a journal for reading and outbox decisions:
/// where `targetJson` (a `JournalTarget`) says, with `optionsJson` (`JournalOpenOptions`).
#[napi]
pub async fn open_native_journal(
    at: String,
    target_json: String,
    options_json: Option<String>,
) -> napi::Result<NativeJournal> {
    let (target, options) = journal_args(&at, &target_json, options_json.as_deref()).map_err(rejection)?;
    let journal = open_journal(target, options, OpenMode::ReadWrite).await.map_err(rejection)?;
    Ok(NativeJournal { journal: Arc::new(journal) })
}

/// Opens an existing journal for reading only (SQLite: SQLITE_OPEN_READONLY;
/// PostgreSQL: read-only transactions): it creates, migrates and changes
/// nothing, and works on a read-only file.
#[napi]
pub async fn open_native_journal_reader(
    at: String,
    target_json: String,
    options_json: Option<String>,
) -> napi::Result<NativeJournal> {
    let (target, options) = journal_args(&at, &target_json, options_json.as_deref()).map_err(rejection)?;
    let journal = open_journal(target, options, OpenMode::ReadOnly).await.map_err(rejection)?;
    Ok(NativeJournal { journal: Arc::new(journal) })
}

/// One reader call, its arguments already converted: made on the calling
/// thread (`NativeJournal::get_dispatch` and its siblings) or off it (the
/// `*_off_thread` twins, for a journal whose reads wait on a network).
enum Read {
    Dispatch(String),
    Dispatches(DispatchFilter),
    Failures(String),
    Intents(IntentFilter),
    Stats,
}

impl Read {
    fn dispatches(query_json: Option<String>) -> BindingResult<Read> {
        let q: DispatchQuery = query(query_json)?;
        let state = match q.state.as_deref() {
            None => None,
            Some(s) => {
                Some(DispatchState::parse(s).ok_or_else(|| misuse(Code::InvalidArgument, "unknown dispatch state"))?)
            }
        };
        Ok(Read::Dispatches(DispatchFilter {
            state,
            hook_id: q.hook_id,
            after_cursor: q.after,
            limit: q.limit.unwrap_or(100),
        }))
    }

    fn intents(query_json: Option<String>) -> BindingResult<Read> {
        let q: IntentQuery = query(query_json)?;
        Ok(Read::Intents(IntentFilter {
            dispatch_id: q.dispatch_id,
            capability_id: q.capability_id,
            intent_kind: q.intent_kind,
            pending_only: q.pending_only,
            after_seq: q.after.unwrap_or(0),
            limit: q.limit.unwrap_or(100),
        }))
    }

    /// The reader's value as JSON text.
    fn run(self, journal: &Journal) -> BindingResult<String> {
        match self {
            Read::Dispatch(id) => read(journal.get_dispatch(&id).map(|row| row.map(with_receipt))),
            Read::Dispatches(filter) => read(journal.list_dispatches(&filter).map(|page| Page {
                items: page.items.into_iter().map(with_receipt).collect(),
                next_cursor: page.next_cursor,
            })),
            Read::Failures(id) => read(journal.list_failures(&id)),
            Read::Intents(filter) => read(journal.list_intents(&filter).map(|page| Page {
                items: page.items.into_iter().map(with_intent_doc).collect(),
                next_cursor: page.next_cursor,
            })),
            Read::Stats => read(journal.stats()),
        }
    }

    /// On tokio's blocking pool: the event loop's thread never waits on the
    /// round trip, and the read answers as it would there (one bound, an
    /// outage at once).
    async fn off_thread(self, journal: Arc<Journal>) -> napi::Result<String> {
        tokio::task::spawn_blocking(move || Journal::reads_without_backoff(|| self.run(&journal)))
            .await
            .map_err(|_| task_failed("journal task failed"))?
            .map_err(rejection)
    }
}

#[napi]
impl NativeJournal {
    /// Whether reads wait on a network round trip (PostgreSQL): then the
    /// caller uses the `*OffThread` readers; a SQLite file's readers answer
    /// on the calling thread.
    #[napi(getter)]
    pub fn reads_are_remote(&self) -> bool {
        self.journal.reads_are_remote()
    }

    #[napi]
    pub fn get_dispatch(&self, dispatch_id: String) -> napi::Result<String, Code> {
        Read::Dispatch(dispatch_id).run(&self.journal)
    }

    #[napi]
    pub async fn get_dispatch_off_thread(&self, dispatch_id: String) -> napi::Result<String> {
        Read::Dispatch(dispatch_id).off_thread(self.journal.clone()).await
    }

    /// Dispatches, oldest first, paged by `after` (a cursor from the last page).
    #[napi(ts_args_type = "queryJson?: string")]
    pub fn list_dispatches(&self, query_json: Option<String>) -> napi::Result<String, Code> {
        Read::dispatches(query_json)?.run(&self.journal)
    }

    #[napi(ts_args_type = "queryJson?: string")]
    pub async fn list_dispatches_off_thread(&self, query_json: Option<String>) -> napi::Result<String> {
        Read::dispatches(query_json).map_err(rejection)?.off_thread(self.journal.clone()).await
    }

    #[napi]
    pub fn list_failures(&self, dispatch_id: String) -> napi::Result<String, Code> {
        Read::Failures(dispatch_id).run(&self.journal)
    }

    #[napi]
    pub async fn list_failures_off_thread(&self, dispatch_id: String) -> napi::Result<String> {
        Read::Failures(dispatch_id).off_thread(self.journal.clone()).await
    }

    /// Intents, oldest first; `pendingOnly` keeps undecided and admitted-not-done ones.
    #[napi(ts_args_type = "queryJson?: string")]
    pub fn list_intents(&self, query_json: Option<String>) -> napi::Result<String, Code> {
        Read::intents(query_json)?.run(&self.journal)
    }

    #[napi(ts_args_type = "queryJson?: string")]
    pub async fn list_intents_off_thread(&self, query_json: Option<String>) -> napi::Result<String> {
        Read::intents(query_json).map_err(rejection)?.off_thread(self.journal.clone()).await
    }

    #[napi]
    pub fn stats(&self) -> napi::Result<String, Code> {
        Read::Stats.run(&self.journal)
    }

    #[napi]
    pub async fn stats_off_thread(&self) -> napi::Result<String> {
        Read::Stats.off_thread(self.journal.clone()).await
    }

    /// The integrity verdict `{ ok, messages }`; a damaged file is `ok: false`.
    #[napi]
    pub async fn integrity(&self) -> napi::Result<String> {
        let j = self.journal.clone();
        let verdict = tokio::task::spawn_blocking(move || j.integrity())
            .await
            .map_err(|_| task_failed("journal task failed"))?
            .map_err(|e| rejection(coded(e)))?;
        serde_json::to_string(&verdict).map_err(|_| task_failed("value could not be serialized"))
    }

    /// Prunes final dispatches older than `olderThanMs` (see
    /// `journal::prune`), batch by batch off the JS thread; with `exportTo`,
    /// each batch's rows are appended to that JSONL file first.
    #[napi(ts_args_type = "pruneJson: string")]
    pub async fn prune(&self, prune_json: String) -> napi::Result<String> {
        let q: PruneQuery = serde_json::from_str(&prune_json)
            .map_err(|_| rejection(misuse(Code::InvalidArgument, "unknown or mistyped prune option")))?;
        let options = PruneOptions {
            older_than_ms: q.older_than_ms,
            batch_size: q.batch_size.unwrap_or(DEFAULT_PRUNE_BATCH),
            archive: q.archive,
        };
        let j = self.journal.clone();
        let report = tokio::task::spawn_blocking(move || match q.export_to {
            Some(path) => {
                let mut export = JsonlExport::open(std::path::Path::new(&path))?;
                j.prune(&options, Some(&mut |b: &PrunedBatch| export.write(b)))
            }
            None => j.prune(&options, None),
        })
        .await
        .map_err(|_| task_failed("journal task failed"))?
        .map_err(|e| rejection(coded(e)))?;
        serde_json::to_string(&report).map_err(|_| task_failed("value could not be serialized"))
    }

    /// The journal's size in bytes, its free bytes and its pruned dispatches.
    #[napi]
    pub async fn storage(&self) -> napi::Result<String> {
        let j = self.journal.clone();
        let stats = tokio::task::spawn_blocking(move || j.storage())
            .await
            .map_err(|_| task_failed("journal task failed"))?
            .map_err(|e| rejection(coded(e)))?;
        serde_json::to_string(&stats).map_err(|_| task_failed("value could not be serialized"))
    }

    /// What this journal's prunes removed since it opened, and its size as
    /// last read (JSON text of `RetentionStats`); no I/O.
    #[napi]
    pub fn retention(&self) -> napi::Result<String> {
        serde_json::to_string(&self.journal.retention()).map_err(|_| task_failed("value could not be serialized"))
    }

    /// Claims up to `batch` open intents for `leaseMs` (see `journal::lease`).
    #[napi(ts_args_type = "claimJson: string")]
    pub async fn claim(&self, claim_json: String) -> napi::Result<String> {
        let q: ClaimQuery = serde_json::from_str(&claim_json)
            .map_err(|_| rejection(misuse(Code::InvalidArgument, "unknown or mistyped claim field")))?;
        let request = ClaimRequest {
            executor_id: q.executor_id,
            lease_ms: q.lease_ms,
            batch: q.batch,
            capability_id: q.capability_id,
            intent_kind: q.intent_kind,
        };
        let claimed = self.journal.claim(request).await.map_err(|e| rejection(coded(e)))?;
        let claimed: Vec<_> = claimed.into_iter().map(with_intent_doc).collect();
        serde_json::to_string(&claimed).map_err(|_| task_failed("value could not be serialized"))
    }

    /// This file's commit generation in this process (grows on records and decisions).
    #[napi]
    pub fn commit_generation(&self) -> i64 {
        i64::try_from(self.journal.commit_generation()).unwrap_or(i64::MAX)
    }

    /// Resolves `true` once the commit generation passes `after`, `false`
    /// after `timeoutMs`, on `releaseWaits()` or once the journal closes.
    #[napi]
    pub async fn wait_for_commit(&self, after: i64, timeout_ms: u32) -> napi::Result<bool> {
        let after = u64::try_from(after).unwrap_or(0);
        Ok(self.journal.wait_for_commit(after, Duration::from_millis(u64::from(timeout_ms))).await)
    }

    /// Ends every pending `waitForCommit` of this journal now (they resolve `false`).
    #[napi]
    pub fn release_waits(&self) {
        self.journal.release_waits();
    }

    /// Records an executor's decision on an intent, once per intent_id.
    #[napi(ts_args_type = "intentId: string, executorId: string, decision: 'admit' | 'reject', reasonCode: string")]
    pub async fn decide(
        &self,
        intent_id: String,
        executor_id: String,
        decision: String,
        reason_code: String,
    ) -> napi::Result<String> {
        let decision = match decision.as_str() {
            "admit" => Decision::Admit,
            "reject" => Decision::Reject,
            _ => return Err(rejection(misuse(Code::InvalidArgument, "decision is 'admit' or 'reject'"))),
        };
        let reply = self.journal.decide(&intent_id, &executor_id, decision, &reason_code);
        let outcome = reply.await.map_err(|e| rejection(coded(e)))?;
        serde_json::to_string(&outcome).map_err(|_| task_failed("value could not be serialized"))
    }

    /// Marks an intent this executor admitted as done.
    #[napi]
    pub async fn mark_done(&self, intent_id: String, executor_id: String) -> napi::Result<String> {
        let reply = self.journal.mark_done(&intent_id, &executor_id);
        let outcome = reply.await.map_err(|e| rejection(coded(e)))?;
        serde_json::to_string(&outcome).map_err(|_| task_failed("value could not be serialized"))
    }

    /// Imports LoopX's sidecar receipts under `runtimeRoot` (see
    /// `sidecar::import`); resolves to the `SidecarImportReport` as JSON.
    #[napi]
    pub async fn import_sidecars(&self, runtime_root: String) -> napi::Result<String> {
        let j = self.journal.clone();
        let root = std::path::PathBuf::from(runtime_root);
        let report = tokio::task::spawn_blocking(move || crate::dialect::shipped::sidecar::import_sidecars(&j, &root))
            .await
            .map_err(|_| task_failed("journal task failed"))?
            .map_err(|_| rejection(misuse(Code::InvalidArgument, "the runtime root cannot be listed")))?;
        serde_json::to_string(&report).map_err(|_| task_failed("value could not be serialized"))
    }

    #[napi]
    pub async fn close(&self) -> napi::Result<()> {
        let j = self.journal.clone();
        tokio::task::spawn_blocking(move || j.close()).await.map_err(|_| task_failed("journal close task failed"))
    }
}
