//! The audit trail of a prune: each batch's rows as JSON Lines, appended and
//! synced to a file before the batch that removes them commits.
//!
//! A line is `{"kind":"dispatch","row":…}`, `{"kind":"intent","row":…}` or
//! `{"kind":"failure","row":…}`, each row as the journal's readers hand it
//! out (a dispatch with its receipt, an intent with its document): only what
//! the journal already holds, which is public-safe by construction (ids,
//! codes, digests and documents that passed its credential scan). A batch
//! whose commit fails after its lines were written is written again by the
//! next prune: a reader keeps the last line of each id.

use std::fs::File;
use std::io::Write;
use std::path::Path;

use serde::Serialize;

use crate::dialect::{with_intent_doc, with_receipt};
use crate::journal::{JournalError, PrunedBatch, Result};

#[derive(Serialize)]
#[serde(tag = "kind", content = "row", rename_all = "snake_case")]
enum Line<'a> {
    Dispatch(&'a crate::journal::DispatchRow),
    Intent(&'a crate::journal::StoredIntent),
    Failure(&'a crate::journal::FailureRow),
}

/// Appends to `path` (created 0600 when missing, never through a symlink).
pub struct JsonlExport {
    file: File,
}

impl JsonlExport {
    pub fn open(path: &Path) -> Result<JsonlExport> {
        let mut options = std::fs::OpenOptions::new();
        options.create(true).append(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600).custom_flags(libc::O_NOFOLLOW);
        }
        let file = options.open(path)?;
        if !file.metadata()?.is_file() {
            return Err(JournalError::NotAFile);
        }
        Ok(JsonlExport { file })
    }

    /// Writes one batch's rows and syncs them to the disk.
    pub fn write(&mut self, batch: &PrunedBatch) -> Result<()> {
        let mut out = Vec::new();
        let mut line = |l: Line<'_>| -> Result<()> {
            serde_json::to_writer(&mut out, &l).map_err(|_| JournalError::Internal { what: "an export line" })?;
            out.push(b'\n');
            Ok(())
        };
        for d in &batch.dispatches {
            line(Line::Dispatch(&with_receipt(d.clone())))?;
        }
        for i in &batch.intents {
            line(Line::Intent(&with_intent_doc(i.clone())))?;
        }
        for f in &batch.failures {
            line(Line::Failure(f))?;
        }
        self.file.write_all(&out)?;
        Ok(self.file.sync_data()?)
    }
}
