/**
 * The retention rows (`BENCH_ONLY=prune`): a journal of N final dispatches
 * (the example hook, one intent each, every intent rejected by an executor
 * so that all are prunable) is pruned with `journal.prune({ olderThanMs: 0 })`
 * while this process keeps dispatching fresh writebacks one at a time.
 * On SQLite the filled file is first switched to incremental vacuum offline,
 * as docs/durability.md says (`PRAGMA auto_vacuum = INCREMENTAL; VACUUM`).
 * Measured: journal bytes per dispatch before and after the prune (after
 * its incremental vacuum, SQLite), the prune's wall time, how long a batch
 * held the writer at p99 and at most (`PruneReport.p99BatchMs`,
 * `longestBatchMs`: each batch from reading its candidates to its commit,
 * so no less than its hold of the writer), the p99 and max latency of
 * the dispatches made meanwhile (they go through the writer), and the
 * event-loop delay meanwhile (the lateness of a 1 ms timer). Target: both
 * holds under 50 ms at p99. SQLite (synchronous=FULL) and, when
 * LOOPX_BENCH_PG_URL is set, PostgreSQL.
 */
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'

import Database from 'better-sqlite3'
import pg from 'pg'

import { lateness, pct } from './lateness.js'
import { intentKind, provider, registration, request } from './fixtures.js'
import { pkg } from './pkg.js'

const QUICK = process.env.BENCH_QUICK === '1'
const N = QUICK ? 5_000 : 100_000
const CHUNK = 1_000

/** What the bench uses of the runtime and journal beyond `Package` (bench/pkg.ts). */
interface Journal {
  claim(o: { executorId: string; leaseMs: number; batch: number }): Promise<Array<{ intentId: string }>>
  decide(d: { intentId: string; executorId: string; decision: 'reject'; reasonCode: string }): Promise<unknown>
  prune(o: { olderThanMs: number; batchSize?: number }): Promise<PruneReport>
  storage(): Promise<{ bytes: number; freeBytes: number; pruned: number }>
}
interface PruneReport {
  dispatches: number
  intents: number
  batches: number
  longestBatchMs: number
  p99BatchMs: number
  reclaimedBytes: number
}

export interface PruneRun {
  n: number
  fillMs: number
  /** SQLite: the offline switch to incremental vacuum (ms); null on PostgreSQL. */
  switchMs: number | null
  bytesPerDispatchBefore: number
  bytesPerDispatchAfter: number
  /** SQLite: the file's bytes in use after the prune (free pages not counted) per dispatch. */
  usedBytesPerDispatchAfter: number
  pruneMs: number
  report: PruneReport
  writerWaitP99Ms: number
  dispatchP99Ms: number
  dispatchMaxMs: number
  dispatchesMeanwhile: number
  loopDelayP99Ms: number
  loopDelayMaxMs: number
}
export type PruneResults = { sqlite: PruneRun; pg: PruneRun | { error: string } }

type Log = (msg: string) => void

async function open(journalArg: string | { postgres: { connectionString: string; schema: string } }) {
  const runtime = await pkg.HookRuntime.open({ journal: journalArg, synchronous: 'full', profile: { enabled: true } })
  runtime.defineIntentKind(intentKind)
  runtime.register({ registration, provider })
  return runtime
}

async function run(journalArg: string | { postgres: { connectionString: string; schema: string } }, log: Log) {
  let runtime = await open(journalArg)
  let journal = runtime.journal as unknown as Journal
  const t0 = performance.now()
  for (let i = 0; i < N; i += CHUNK) {
    await Promise.all(Array.from({ length: Math.min(CHUNK, N - i) }, (_, k) => runtime.dispatch(request('p', i + k))))
    for (;;) {
      const claimed = await journal.claim({ executorId: 'bench.executor', leaseMs: 60_000, batch: 1000 })
      if (claimed.length === 0) break
      await Promise.all(
        claimed.map((c) =>
          journal.decide({
            intentId: c.intentId,
            executorId: 'bench.executor',
            decision: 'reject',
            reasonCode: 'bench',
          }),
        ),
      )
    }
    if ((i / CHUNK) % 20 === 0) log(`prune bench: ${i + CHUNK} final dispatches`)
  }
  const fillMs = performance.now() - t0
  let switchMs: number | null = null
  if (typeof journalArg === 'string') {
    await runtime.close()
    const s = performance.now()
    const db = new Database(journalArg)
    db.exec('PRAGMA auto_vacuum = INCREMENTAL; VACUUM')
    db.close()
    switchMs = performance.now() - s
    runtime = await open(journalArg)
    journal = runtime.journal as unknown as Journal
  }
  const before = await journal.storage()
  await new Promise((r) => setTimeout(r, 5))

  // The prune, with dispatches of fresh writebacks going on meanwhile.
  const stop = lateness()
  const latencies: number[] = []
  let pruning = true
  const meanwhile = (async () => {
    for (let i = 0; pruning; i++) {
      const s = performance.now()
      await runtime.dispatch(request('meanwhile', i))
      latencies.push(performance.now() - s)
    }
  })()
  const p0 = performance.now()
  const report = await journal.prune({ olderThanMs: 0 })
  const pruneMs = performance.now() - p0
  pruning = false
  await meanwhile
  const delays = stop()
  const after = await journal.storage()
  await runtime.close()
  return {
    n: N,
    fillMs,
    switchMs,
    bytesPerDispatchBefore: before.bytes / N,
    bytesPerDispatchAfter: after.bytes / N,
    usedBytesPerDispatchAfter: (after.bytes - after.freeBytes) / N,
    pruneMs,
    report,
    writerWaitP99Ms: report.p99BatchMs,
    dispatchP99Ms: pct(latencies, 0.99),
    dispatchMaxMs: Math.max(...latencies),
    dispatchesMeanwhile: latencies.length,
    loopDelayP99Ms: pct(delays, 0.99),
    loopDelayMaxMs: Math.max(...delays),
  }
}

export async function pruneBench(tmp: string, log: Log): Promise<PruneResults> {
  const file = join(tmp, 'prune.sqlite')
  rmSync(file, { force: true })
  const sqlite = await run(file, log)
  let pgResult: PruneRun | { error: string }
  const url = process.env.LOOPX_BENCH_PG_URL
  if (!url) {
    pgResult = { error: 'LOOPX_BENCH_PG_URL is not set' }
  } else {
    const schema = `bench_prune_${process.pid}`
    try {
      pgResult = await run({ postgres: { connectionString: url, schema } }, log)
    } catch (e) {
      pgResult = { error: (e as Error).message }
    } finally {
      const c = new pg.Client({ connectionString: url })
      await c.connect()
      await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
      await c.end()
    }
  }
  return { sqlite, pg: pgResult }
}

/** The table's lines: one per backend and figure, with the 50 ms target for the two holds. */
export function pruneTable(res: PruneResults): string {
  const lines = ['| backend | figure | value | target |', '| --- | --- | --- | --- |']
  const rows = (name: string, r: PruneRun) => {
    const n = r.n.toLocaleString('en-US')
    const add = (figure: string, value: string, target = '') =>
      lines.push(`| ${name} | ${figure} | ${value} | ${target} |`)
    add(`journal bytes per dispatch, ${n} final dispatches`, r.bytesPerDispatchBefore.toFixed(0))
    if (r.switchMs !== null) add('switch to incremental vacuum, once, offline (ms)', r.switchMs.toFixed(0))
    add('journal bytes per dispatch after the prune', r.bytesPerDispatchAfter.toFixed(0))
    if (r.switchMs !== null) add('of which in use (free pages not counted)', r.usedBytesPerDispatchAfter.toFixed(0))
    else add('space of the deleted rows', 'reused once autovacuum has run; the relations do not shrink')
    add(`prune of ${n}: wall time (ms), batches`, `${r.pruneMs.toFixed(0)}, ${r.report.batches}`)
    const held = r.writerWaitP99Ms
    add(
      'writer held by one batch, p99 / max (ms)',
      `${held.toFixed(2)} / ${r.report.longestBatchMs.toFixed(2)}`,
      `p99 < 50 ms: ${held < 50 ? 'met' : 'NOT met'}`,
    )
    add(
      'dispatch latency meanwhile p99 / max (ms)',
      `${r.dispatchP99Ms.toFixed(2)} / ${r.dispatchMaxMs.toFixed(2)} (${r.dispatchesMeanwhile} dispatches)`,
    )
    const loop = r.loopDelayP99Ms
    add(
      'event-loop delay meanwhile p99 / max (ms)',
      `${loop.toFixed(2)} / ${r.loopDelayMaxMs.toFixed(2)}`,
      `p99 < 50 ms: ${loop < 50 ? 'met' : 'NOT met'}`,
    )
  }
  rows('SQLite', res.sqlite)
  if ('error' in res.pg) lines.push(`| PostgreSQL | left out | ${res.pg.error} | |`)
  else rows('PostgreSQL', res.pg)
  return lines.join('\n')
}
