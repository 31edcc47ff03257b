/**
 * Catch-up jobs (bench/catchup.ts), each in its own process so that peak RSS
 * is the job's own. Prints one JSON line on stdout.
 *
 *   catchup_child.js owe <ours|plain> <n> <journal | pg:schema>
 *     n writebacks dispatched while the hook's downstream is down (the
 *     provider throws): every identity ends checkpointed with one failed
 *     attempt, owed, as after an outage. synchronous=NORMAL on SQLite.
 *   catchup_child.js catchup <ours|plain> <recover|many> <n> <journal | pg:schema>
 *     the downstream is back: ours `recover()` (or `dispatchMany` of the same
 *     requests), the plain path reading its owed requests and dispatching
 *     them again, 64 in flight; wall time, event-loop delay, peak RSS.
 *
 * PostgreSQL: a `pg:` journal names a schema on LOOPX_BENCH_PG_URL.
 */
import { monitorEventLoopDelay, performance } from 'node:perf_hooks'

import Database from 'better-sqlite3'
import pg from 'pg'

import type { DispatchRequest } from '../bindings/index.js'
import { PlainRuntime } from './baseline.js'
import { intentKind, provider, registration, request } from './fixtures.js'
import { lateness, pct } from './lateness.js'
import { PlainPgRuntime } from './plain_pg.js'
import { pkg } from './pkg.js'
import type { SideName } from './sides.js'

export const CATCHUP_TAG = 'catchup'
const INFLIGHT = 64

/** The example hook with a second invocation allowed: the outage used the first. */
const reg = { ...registration, budget: { ...registration.budget, max_invocations_per_dispatch: 2 } }
const down = (): never => {
  throw new Error('downstream unavailable')
}

interface Side {
  dispatch(r: DispatchRequest): Promise<{ hooks: Array<{ outcome: string }> }>
  close(): Promise<void>
  runtime?: any
}

async function openSide(side: SideName, where: string, hookProvider: (input: any) => unknown): Promise<Side> {
  const pgSchema = where.startsWith('pg:') ? where.slice(3) : undefined
  const connectionString = process.env.LOOPX_BENCH_PG_URL ?? ''
  if (side === 'ours') {
    const runtime = await pkg.HookRuntime.open({
      ...(pgSchema
        ? { journal: { postgres: { connectionString, schema: pgSchema } } }
        : { journal: where, synchronous: hookProvider === down ? 'normal' : 'full' }),
      profile: { enabled: true, replay: 'return' },
    })
    runtime.defineIntentKind(intentKind)
    runtime.register({ registration: reg, provider: hookProvider })
    return { dispatch: (r) => runtime.dispatch(r), close: () => runtime.close(), runtime }
  }
  const runtime: any = pgSchema
    ? await PlainPgRuntime.open({ connectionString, schema: pgSchema, replay: 'return' })
    : PlainRuntime.open({
        journalPath: where,
        synchronous: hookProvider === down ? 'normal' : 'full',
        replay: 'return',
      })
  runtime.defineIntentKind(intentKind)
  runtime.register(reg, hookProvider)
  return { dispatch: (r) => runtime.dispatch(r), close: async () => runtime.close() }
}

async function inFlight<T>(items: T[], each: (item: T) => Promise<void>): Promise<void> {
  let next = 0
  const worker = async () => {
    while (next < items.length) await each(items[next++]!)
  }
  await Promise.all(Array.from({ length: Math.min(INFLIGHT, items.length) }, worker))
}

function expect(outcomes: Array<{ outcome: string }>, want: string, n: number): void {
  const bad = outcomes.filter((o) => o.outcome !== want)
  if (outcomes.length !== n || bad.length > 0)
    throw new Error(
      `catchup: ${outcomes.length} outcomes (${bad.length} not '${want}', e.g. ${bad[0]?.outcome}), ${n} wanted`,
    )
}

async function owe(side: SideName, n: number, where: string) {
  const s = await openSide(side, where, down)
  const t0 = performance.now()
  const indexes = Array.from({ length: n }, (_, i) => i)
  const outcomes: Array<{ outcome: string }> = []
  await inFlight(indexes, async (i) => void outcomes.push(...(await s.dispatch(request(CATCHUP_TAG, i))).hooks))
  await s.close()
  expect(outcomes, 'failed', n)
  return { side, n, ms: performance.now() - t0 }
}

/** The plain host's owed list: what its journal holds for identities without a final record, oldest first. */
async function plainOwed(where: string): Promise<DispatchRequest[]> {
  const q = `SELECT request FROM %dispatches WHERE state IN ('checkpointed', 'failed') ORDER BY created_at, dispatch_id`
  if (where.startsWith('pg:')) {
    const c = new pg.Client({ connectionString: process.env.LOOPX_BENCH_PG_URL })
    await c.connect()
    try {
      const rows = (await c.query(q.replace('%', `${where.slice(3)}.`))).rows as Array<{ request: string }>
      return rows.map((r) => JSON.parse(r.request))
    } finally {
      await c.end()
    }
  }
  const db = new Database(where, { readonly: true })
  const rows = db.prepare(q.replace('%', '')).pluck().all() as string[]
  db.close()
  return rows.map((r) => JSON.parse(r))
}

async function catchup(side: SideName, how: 'recover' | 'many', n: number, where: string) {
  const s = await openSide(side, where, provider)
  const h = monitorEventLoopDelay({ resolution: 1 })
  h.enable()
  // The histogram's timer records a delay from its second firing on: let it
  // fire once first, or a stall at the very start goes unseen.
  await new Promise((r) => setTimeout(r, 5))
  h.reset()
  const stop = lateness()
  const elu0 = performance.eventLoopUtilization()
  const t0 = performance.now()
  let outcomes: Array<{ outcome: string }>
  if (side === 'ours' && how === 'recover') {
    const report = await s.runtime.recover()
    outcomes = report.outcomes
  } else if (side === 'ours') {
    const requests = Array.from({ length: n }, (_, i) => request(CATCHUP_TAG, i))
    outcomes = (await s.runtime.dispatchMany(requests)).flatMap((o: any) => o.hooks)
  } else {
    const owed = await plainOwed(where)
    outcomes = []
    await inFlight(owed, async (r) => void outcomes.push(...(await s.dispatch(r)).hooks))
  }
  const ms = performance.now() - t0
  const late = stop()
  const active = performance.eventLoopUtilization(elu0).utilization
  h.disable()
  await s.close()
  expect(outcomes, 'recorded', n)
  return {
    side,
    how,
    n,
    ms,
    delayP99Ms: pct(late, 0.99),
    delayMaxMs: Math.max(...late),
    delaySamples: late.length,
    monitorEventLoopDelay: { p99Ms: h.percentile(99) / 1e6, maxMs: h.max / 1e6, samples: h.count },
    elu: active,
    maxRssKiB: process.resourceUsage().maxRSS,
  }
}

const [mode, ...args] = process.argv.slice(2)
let result: unknown
if (mode === 'owe') result = await owe(args[0] as SideName, Number(args[1]), args[2]!)
else if (mode === 'catchup')
  result = await catchup(args[0] as SideName, args[1] as 'recover' | 'many', Number(args[2]), args[3]!)
else throw new Error(`catchup_child: unknown mode ${mode}`)
process.stdout.write(JSON.stringify({ ok: true, result }) + '\n')
