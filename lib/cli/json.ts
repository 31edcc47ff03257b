/**
 * The `--json` shapes of the CLI's commands that are not a library value as
 * it is (docs/cli.md lists every command's shape; the others print
 * `Page<DispatchRow>`, `Page<StoredIntent>`, `DecideOutcome`, `DoneOutcome`
 * and `SidecarImportReport` unchanged).
 */
import type { DispatchRow, FailureRow, IntegrityVerdict, JournalStats, Violation } from '../../bindings/index'

/** `journal show --json`: the library's stats and integrity verdict, and the latest rows, newest first. */
export interface ShowJson {
  /** `HookJournal.stats()`; null when a damaged journal could not be read past its integrity check. */
  stats: JournalStats | null
  /** `HookJournal.integrity()`. */
  integrity: IntegrityVerdict
  /** Up to `--limit` (default 10) `DispatchRow`s, newest first. */
  latestDispatches: DispatchRow[]
}

/** `journal owed --json`: what `HookRuntime.recover()` would re-dispatch, oldest first, each with its failures. */
export interface OwedJson {
  owed: Array<DispatchRow & { failures: FailureRow[] }>
}

/** `validate --json`: the verdict without the accepted value. */
export type ValidateJson = { ok: true } | { ok: false; violations: Violation[]; more?: number }
