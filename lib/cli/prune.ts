/**
 * `loopx-hooks journal prune|export --db PATH|URL --older-than DURATION`:
 * prunes final dispatches older than the window through the library's
 * `HookJournal.prune` (its rules are the Rust core's). `export` is a prune
 * that first appends each batch's rows to `--out FILE` as JSON Lines, for a
 * host that keeps an audit trail.
 */
import type { PruneReport } from '../../bindings/index'
import type { HookJournal, PruneOptions } from '../journal.js'
import { UsageError } from './errors.js'
import type { Style } from './format.js'
import type { Io } from './io.js'

const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }

/** `30d`, `12h`, `15m`, `45s`, `250ms` or a plain count of ms, as ms. */
export function parseDuration(flag: string, text: string): number {
  const match = /^(\d{1,12})(ms|s|m|h|d)?$/.exec(text)
  const ms = match === null ? NaN : Number(match[1]) * UNIT_MS[match[2] ?? 'ms']!
  if (!Number.isSafeInteger(ms)) {
    throw new UsageError(`--${flag} needs a duration such as 30d, 12h, 15m, 45s or 250ms, not '${text}'`)
  }
  return ms
}

/** The flags of `journal prune` and `journal export`, parsed. */
export interface PruneCliOptions {
  /** Print the `PruneReport` as one line of JSON. */
  json: boolean
  /** `--older-than`: the window, as typed (see `parseDuration`). */
  olderThan?: string
  /** `--batch-size`: dispatches per write transaction. */
  batchSize?: number
  /** `--archive`: keep pruned intents in the journal's `intents_archive` table. */
  archive?: boolean
  /** `--out`: the JSON Lines file `export` appends the rows to. */
  out?: string
}

/** Runs `journal prune` (or `journal export` when `exporting`) on an open journal; answers the exit status. */
export async function pruneCommand(
  journal: HookJournal,
  o: PruneCliOptions,
  io: Io,
  s: Style,
  exporting: boolean,
): Promise<number> {
  const verb = exporting ? 'export' : 'prune'
  if (o.olderThan === undefined) throw new UsageError(`journal ${verb} needs --older-than DURATION`)
  if (exporting && o.out === undefined) throw new UsageError('journal export needs --out FILE')
  const options: PruneOptions = {
    olderThanMs: parseDuration('older-than', o.olderThan),
    ...(o.batchSize !== undefined ? { batchSize: o.batchSize } : {}),
    ...(o.archive === true ? { archive: true } : {}),
    ...(o.out !== undefined ? { exportTo: o.out } : {}),
  }
  const report: PruneReport = await journal.prune(options)
  if (o.json) {
    io.stdout.write(`${JSON.stringify(report)}\n`)
  } else {
    const lines = [
      `pruned ${report.dispatches} dispatches (${report.intents} intents, ${report.archived} archived, ${report.failures} failed attempts) in ${report.batches} batches`,
      s.dim(
        `batches took ${report.p99BatchMs.toFixed(1)} ms at p99, ${report.longestBatchMs.toFixed(1)} ms at most; ${report.reclaimedBytes} bytes given back`,
      ),
    ]
    io.stdout.write(`${lines.join('\n')}\n`)
  }
  return 0
}
