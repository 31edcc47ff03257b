/**
 * `loopx-hooks journal import --from-sidecars ROOT --db PATH|URL`: reads
 * LoopX's sidecar receipts (`ROOT/goals/<goal_id>/post_writeback_hooks/pwh_*.json`)
 * into the journal through the library's `HookJournal.importSidecars`. The
 * report names files relative to ROOT and never quotes their content.
 */
import type { SidecarImportReport } from '../../bindings/index'
import type { HookJournal } from '../journal.js'
import { CliError, UsageError, printable } from './errors.js'
import { plural, table, type Style } from './format.js'
import type { Io } from './io.js'

export async function importSidecars(
  journal: HookJournal,
  o: { json: boolean; fromSidecars?: string },
  io: Io,
  s: Style,
): Promise<number> {
  if (o.fromSidecars === undefined) throw new UsageError('journal import needs --from-sidecars ROOT')
  let report: SidecarImportReport
  try {
    report = await journal.importSidecars(o.fromSidecars)
  } catch (error) {
    if ((error as { code?: string }).code === 'ERR_LOOPX_INVALID_ARGUMENT') {
      throw new CliError('the --from-sidecars folder cannot be listed')
    }
    throw error
  }
  if (o.json) {
    io.stdout.write(`${JSON.stringify(report)}\n`)
  } else {
    const lines = [
      `imported ${report.imported}, already present ${report.alreadyPresent}, rejected ${report.rejected.length}`,
    ]
    if (report.rejected.length > 0) {
      lines.push(
        '',
        `${plural(report.rejected.length, 'entry', 'entries')} not imported:`,
        ...table(
          [{ header: 'FILE' }, { header: 'REASON' }, { header: 'CODE' }],
          report.rejected.map((r) => [printable(r.file), { text: r.reason, paint: s.red }, r.code ?? '-']),
          s,
        ),
      )
    }
    io.stdout.write(`${lines.join('\n')}\n`)
  }
  return report.rejected.length === 0 ? 0 : 1
}
