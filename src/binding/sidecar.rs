//! The sidecar mirror's entry point: one receipt of one dispatch written as
//! LoopX's sidecar file, off the JS thread (the lock may be waited for).

use napi_derive::napi;

/// Writes `receiptJson` (a sidecar receipt the journal holds) for the goal
/// of `sourceJson` under `runtimeRoot`. Resolves to `written` or
/// `replayed`, or to the code of why not (`lock_acquire_timeout`,
/// `receipt_conflict`, `invalid_receipt`, `bad_goal_id`,
/// `journal_write_failed`): a mirror failure is the caller's to count, never
/// a dispatch's.
#[napi]
pub async fn mirror_sidecar_receipt(runtime_root: String, source_json: String, receipt_json: String) -> String {
    let write = move || {
        crate::dialect::shipped::sidecar::mirror_for_source(
            std::path::Path::new(&runtime_root),
            &source_json,
            &receipt_json,
        )
    };
    match tokio::task::spawn_blocking(write).await {
        Ok(Ok(outcome)) => outcome.as_str().to_owned(),
        Ok(Err(e)) => e.code().to_owned(),
        Err(_) => "journal_write_failed".to_owned(),
    }
}
