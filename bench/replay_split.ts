/**
 * Where a first `return` replay's main-thread time goes, and the floor
 * under it: a replay of a request this process has not answered yet must
 * read its identity's row. Ours is timed inside the addon's `prepare`
 * (validate the request, derive the ids, read the row, build the outcome)
 * and as a whole; then the same number of point reads of that row, every
 * column, run through better-sqlite3 on ours' own journal file, with
 * nothing else around them. No replay of a request not yet seen can cost
 * less than that read.
 */
import Database from 'better-sqlite3'
import { performance } from 'node:perf_hooks'

import { timeCalls, us } from './js_thread.js'
import { drive, median, open } from './sides.js'
import type { Add } from './targets.js'

export interface ReplaySplitRound {
  /** Main-thread busy µs per first replay, all of it. */
  busyUs: number
  /** µs per replay inside the addon's `prepare`. */
  prepareUs: number
  /** µs per point read of one row through better-sqlite3, alone. */
  readUs: number
}

/** `n` first replays of ours' journal at `path` (built by `n` dispatches), `inflight` at a time, then `n` bare reads. */
export async function replaySplitRound(
  path: string,
  n: number,
  inflight: number,
  order: (k: number) => number,
): Promise<ReplaySplitRound> {
  const runner = await open('ours', path, { synchronous: 'full', replay: 'return' })
  const spent: Record<string, number> = {}
  let res
  try {
    await drive(runner, 'replay', 200, inflight, 'replayed') // warm-up
    const restore = timeCalls(spent, ['prepare'])
    try {
      res = await drive(runner, 'replay', n, inflight, 'replayed', { order })
    } finally {
      restore()
    }
  } finally {
    await runner.close()
  }
  const db = new Database(path, { readonly: true })
  let readMs
  try {
    const ids = db.prepare('SELECT dispatch_id FROM dispatches ORDER BY seq').pluck().all() as string[]
    const row = db.prepare('SELECT * FROM dispatches WHERE dispatch_id = ?')
    for (let k = 0; k < 200; k++) row.get(ids[k % ids.length])
    const t0 = performance.now()
    for (let k = 0; k < n; k++) row.get(ids[order(k) % ids.length])
    readMs = performance.now() - t0
  } finally {
    db.close()
  }
  const perReplay = (ms: number): number => (ms * 1000) / n
  return { busyUs: perReplay(res.activeMs), prepareUs: perReplay(spent.prepare ?? 0), readUs: perReplay(readMs) }
}

/** The split's rows: `prepare`, and the bare read, each against ours' whole main-thread time per first replay. */
export function replaySplitRows(rounds: ReplaySplitRound[], inflight: number, add: Add): void {
  if (rounds.length === 0) return
  const busy = median(rounds.map((r) => r.busyUs))
  const what = `main-thread time per first 'return' replay, ${inflight} in flight`
  const whole = '(plain column: ours, all main-thread busy time; ratio: the share)'
  const parts = [
    ['replaySplit_prepare', "inside the addon's `prepare`", (r: ReplaySplitRound) => r.prepareUs],
    [
      'replaySplit_read',
      "the row's point read alone, every column, through better-sqlite3 on ours' journal file",
      (r: ReplaySplitRound) => r.readUs,
    ],
  ] as const
  for (const [key, part, f] of parts) {
    add(
      key,
      `${what}: ${part} ${whole}`,
      us(median(rounds.map(f))),
      us(busy),
      median(rounds.map((r) => f(r) / r.busyUs)),
      {
        rounds: rounds.map((r) => [f(r), r.busyUs]),
      },
    )
  }
}
