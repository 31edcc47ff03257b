/**
 * The two sides behind one small interface, and the load driver.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { performance } from 'node:perf_hooks'

import type { DispatchOutcome, DispatchRequest } from '../bindings/index.js'
import { PlainRuntime } from './baseline.js'
import { intentKind, provider, registration, request } from './fixtures.js'
import { PlainPgRuntime } from './plain_pg.js'
import { pkg } from './pkg.js'

export type SideName = 'ours' | 'plain'

export interface OpenOptions {
  synchronous: 'full' | 'normal'
  replay?: 'return' | 'verify'
  /** Ours only: `false` turns the attempt ledger off, to measure what it costs. */
  attemptLedger?: boolean
  /** Ours only: the opt-in inline commit, to measure its trade. */
  inlineCommit?: boolean
}

export interface Runner {
  dispatch(request: DispatchRequest): Promise<DispatchOutcome>
  /** Ours only: the writer thread's wake-ups since the runtime opened (`metrics().writer.wakes`). */
  writerWakes?(): number
  /** PostgreSQL: one page of the journal's dispatches, as an inspecting reader asks for it. */
  read?(): Promise<unknown>
  close(): Promise<void>
}

/** Rows per page of `Runner.read`. */
const READ_PAGE = 20

export async function open(side: SideName, journalPath: string, options: OpenOptions): Promise<Runner> {
  if (side === 'ours') {
    const runtime = await pkg.HookRuntime.open({
      journal: journalPath,
      synchronous: options.synchronous,
      profile: { enabled: true, replay: options.replay ?? 'return' },
      attemptLedger: options.attemptLedger,
      inlineCommit: options.inlineCommit,
    })
    runtime.defineIntentKind(intentKind)
    runtime.register({ registration, provider })
    return {
      dispatch: (r) => runtime.dispatch(r),
      writerWakes: () => runtime.metrics().writer.wakes,
      close: () => runtime.close(),
    }
  }
  const runtime = PlainRuntime.open({
    journalPath,
    synchronous: options.synchronous,
    replay: options.replay ?? 'return',
  })
  runtime.defineIntentKind(intentKind)
  runtime.register(registration, provider)
  return { dispatch: (r) => runtime.dispatch(r), close: async () => runtime.close() }
}

export interface PgOpenOptions {
  connectionString: string
  schema: string
  replay?: 'return' | 'verify'
  /** The plain side creates its tables (ours creates its schema on first use by itself). */
  create?: boolean
  /** Ours only: `false` leaves attempts uncounted before the call, to measure what counting costs. */
  attemptLedger?: boolean
}

/** Either side on PostgreSQL (bench/pg.ts): ours through the journal option, the plain path through node-postgres. */
export async function openPg(side: SideName, options: PgOpenOptions): Promise<Runner> {
  const replay = options.replay ?? 'return'
  if (side === 'ours') {
    const runtime = await pkg.HookRuntime.open({
      journal: { postgres: { connectionString: options.connectionString, schema: options.schema } },
      profile: { enabled: true, replay },
      attemptLedger: options.attemptLedger,
    })
    runtime.defineIntentKind(intentKind)
    runtime.register({ registration, provider })
    return {
      dispatch: (r) => runtime.dispatch(r),
      read: () => runtime.journal.listDispatches({ limit: READ_PAGE }),
      close: () => runtime.close(),
    }
  }
  const runtime = await PlainPgRuntime.open({ ...options, replay })
  runtime.defineIntentKind(intentKind)
  runtime.register(registration, provider)
  const page = `SELECT * FROM ${options.schema}.dispatches ORDER BY dispatch_id LIMIT ${READ_PAGE}`
  return {
    dispatch: (r) => runtime.dispatch(r),
    read: () => runtime.pool.query(page),
    close: () => runtime.close(),
  }
}

/** Bytes of a closed journal: the database file plus any WAL left behind. */
export function journalBytes(path: string): number {
  let total = 0
  for (const p of [path, path + '-wal']) if (existsSync(p)) total += statSync(p).size
  return total
}

/** CPU ms by thread of this process so far (/proc, Linux; 10 ms resolution): the JS thread, the journal's writer, the rest. */
export interface ThreadsCpu {
  main: number
  writer: number
  other: number
}

export function threadsCpuMs(): ThreadsCpu {
  const out: ThreadsCpu = { main: 0, writer: 0, other: 0 }
  let tasks: string[]
  try {
    tasks = readdirSync('/proc/self/task')
  } catch {
    return { main: NaN, writer: NaN, other: NaN }
  }
  for (const task of tasks) {
    let stat: string
    try {
      stat = readFileSync(`/proc/self/task/${task}/stat`, 'utf8')
    } catch {
      continue // the thread ended between the listing and the read
    }
    const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'))
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    const ms = (Number(fields[11]) + Number(fields[12])) * 10
    // The writer thread is named by the addon (src/journal/writer.rs); the kernel keeps 15 bytes of a name.
    const which = task === String(process.pid) ? 'main' : comm.startsWith('loopx-journal-w') ? 'writer' : 'other'
    out[which] += ms
  }
  return out
}

export interface LoadResult {
  ms: number
  /** CPU ms over the whole run by thread (see `threadsCpuMs`; 10 ms resolution, so only the mean over a run means anything); a thread that ended during the run is not counted. */
  threads: ThreadsCpu
  /** Main-thread busy ms over the whole run (event-loop utilization). */
  activeMs: number
  /** Per-dispatch main-thread busy ms, when asked for (1 in flight only). */
  busy?: number[]
}

function check(outcome: DispatchOutcome, expect: string): void {
  const got = outcome.hooks[0]?.outcome
  if (!outcome.admitted || outcome.hooks.length !== 1 || got !== expect) {
    throw new Error(`bench: expected one '${expect}' outcome, got ${JSON.stringify(outcome).slice(0, 300)}`)
  }
}

/**
 * Dispatches requests `tag`/`from`..`from+n` with `inflight` concurrent
 * callers, each awaiting its own dispatch before taking the next index.
 *
 * Main-thread busy time per dispatch (`measureBusy`, only meaningful with one
 * in flight): the change of `performance.eventLoopUtilization().active`
 * between the call and the moment its promise resolved. `active` is wall
 * time minus the time libuv spent waiting in epoll, so it counts every
 * microsecond the JS thread could not run anything else: our JSON.stringify
 * and napi call, the provider callback with its wrapper, the promise
 * resolution and outcome parsing; and for the plain path also the
 * synchronous SQLite work and its fsync. Time the JS thread spends waiting
 * for our writer thread is idle, as it should be.
 */
export async function drive(
  runner: Runner,
  tag: string,
  n: number,
  inflight: number,
  expect: string,
  options: { from?: number; measureBusy?: boolean; order?: (i: number) => number } = {},
): Promise<LoadResult> {
  const from = options.from ?? 0
  const busy: number[] | undefined = options.measureBusy ? new Array(n) : undefined
  let next = 0
  const worker = async () => {
    while (next < n) {
      const k = next++
      const i = from + (options.order ? options.order(k) : k)
      const req = request(tag, i)
      if (busy) {
        const before = performance.eventLoopUtilization()
        const outcome = await runner.dispatch(req)
        busy[k] = performance.eventLoopUtilization(before).active
        check(outcome, expect)
      } else {
        check(await runner.dispatch(req), expect)
      }
    }
  }
  const elu0 = performance.eventLoopUtilization()
  const threads0 = threadsCpuMs()
  const t0 = performance.now()
  await Promise.all(Array.from({ length: Math.min(inflight, n) }, worker))
  const ms = performance.now() - t0
  const activeMs = performance.eventLoopUtilization(elu0).active
  const t1 = threadsCpuMs()
  const threads = {
    main: t1.main - threads0.main,
    writer: t1.writer - threads0.writer,
    other: t1.other - threads0.other,
  }
  return busy ? { ms, threads, activeMs, busy } : { ms, threads, activeMs }
}

/** Latency in ms of each replay of `samples` random identities among `tag`/0..`n`, one in flight. */
export async function lookups(
  runner: Runner,
  tag: string,
  n: number,
  samples: number,
  seed: number,
): Promise<number[]> {
  let x = seed >>> 0 || 1
  const rand = () => {
    // xorshift32: reproducible, no allocation
    x ^= x << 13
    x >>>= 0
    x ^= x >>> 17
    x ^= x << 5
    x >>>= 0
    return x
  }
  const out: number[] = new Array(samples)
  for (let k = 0; k < samples; k++) {
    const req = request(tag, rand() % n)
    const t0 = performance.now()
    const outcome = await runner.dispatch(req)
    out[k] = performance.now() - t0
    check(outcome, 'replayed')
  }
  return out
}

export function percentile(values: number[], q: number): number {
  const sorted = Float64Array.from(values).sort()
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN
}

export function median(values: number[]): number {
  return percentile(values, 0.5)
}
