/**
 * `npm run bench`: loopx-hooks against the plain TypeScript path
 * (`baseline.ts`), measured in one run. The disk of a shared machine swings
 * widely, so every figure is taken in rounds that alternate the two sides
 * (and their order), each round yields a ratio, and the table reports the
 * median figure and the median ratio. Only same-run ratios mean anything.
 *
 * Started by `bench/bench.mjs`, which builds what is missing first.
 * BENCH_QUICK=1: small sizes, a smoke run; results go to .bench/ only.
 */
import { spawnSync } from 'node:child_process'
import { subscribe, unsubscribe } from 'node:diagnostics_channel'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import { dirname, join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'

import Database from 'better-sqlite3'

import { PlainRuntime, PlainValidators } from './baseline.js'
import { exampleInput, exampleResult, intentKind, jcs, registration, request } from './fixtures.js'
import { catchupBench, catchupNotes, catchupRows, type CatchupResults } from './catchup.js'
import { pruneBench, pruneTable } from './prune.js'
import { twoHopRow } from './hops.js'
import { jsThreadAwakeRow, jsThreadRound, jsThreadRows, type JsThreadRound } from './js_thread.js'
import { perDispatchUs, threadsCpuRows, type ThreadsCpuRound } from './threads_cpu.js'
import { replaySplitRound, replaySplitRows, type ReplaySplitRound } from './replay_split.js'
import { pgBench, pgNotes, pgRows, type PgResults } from './pg.js'
import { pkg, require, ROOT } from './pkg.js'
import { pythonOnly } from './python.js'
import { drive, median, open, percentile, type SideName } from './sides.js'
import { judge, type Add } from './targets.js'

const QUICK = process.env.BENCH_QUICK === '1'
const C = QUICK
  ? { rounds: 2, durable: 600, floor: 200, replayN: 2000, validatorMs: 200, small: 5_000, large: 20_000, lookups: 500 }
  : {
      rounds: 3,
      durable: 20_000,
      floor: 1_500,
      replayN: 10_000,
      validatorMs: 1_000,
      small: 100_000,
      large: 1_000_000,
      lookups: 5_000,
    }
const INFLIGHT = 64
const perRound = (total: number) => Math.ceil(total / C.rounds)

const here = dirname(fileURLToPath(import.meta.url))
const tmp = mkdtempSync(join(os.tmpdir(), 'loopx-bench-'))
const started = new Date()
const t0 = performance.now()
const loadStart = os.loadavg()
const log = (msg: string) =>
  process.stderr.write(`[bench ${((performance.now() - t0) / 1000).toFixed(0).padStart(4)}s] ${msg}\n`)
const round2 = (x: number, d = 2) => Number(x.toFixed(d))
const orderOf = <T>(r: number, items: T[]): T[] => (r % 2 === 0 ? items : [...items].reverse())
let seq = 0
const fresh = (name: string) => join(tmp, `${name}-${seq++}.db`)
const remove = (path: string) => {
  for (const p of [path, path + '-wal', path + '-shm']) rmSync(p, { force: true })
}

// ---------------------------------------------------------------- sanity
/** Both sides must produce the same documents for the same request, or the comparison means nothing. */
async function sanity(): Promise<void> {
  const outcomes: Record<string, any> = {}
  const stored: Record<string, string> = {}
  for (const side of ['ours', 'plain'] as const) {
    const path = fresh(`sanity-${side}`)
    const runner = await open(side, path, { synchronous: 'normal' })
    outcomes[side] = await runner.dispatch(request('sanity', 0))
    await runner.close()
    // The same information must be kept: ours stores compact rows and its
    // readers rebuild the documents; the plain layout stores them whole.
    if (side === 'ours') {
      const journal = await pkg.HookJournal.open(path)
      const dispatches = (await journal.listDispatches({})).items.map((d) => d.receipt)
      const intents = (await journal.listIntents({})).items.map((i) => i.intent)
      await journal.close()
      stored[side] = jcs([dispatches, intents])
    } else {
      const db = new Database(path, { readonly: true })
      const dispatches = db
        .prepare('SELECT receipt FROM dispatches ORDER BY rowid')
        .all()
        .map((r: any) => JSON.parse(r.receipt))
      const intents = db
        .prepare('SELECT doc FROM intents ORDER BY rowid')
        .all()
        .map((r: any) => JSON.parse(r.doc))
      db.close()
      stored[side] = jcs([dispatches, intents])
    }
    remove(path)
  }
  if (jcs(outcomes.ours) !== jcs(outcomes.plain)) {
    throw new Error(`bench: the two sides disagree:\nours  ${jcs(outcomes.ours)}\nplain ${jcs(outcomes.plain)}`)
  }
  if (stored.ours !== stored.plain) {
    throw new Error(`bench: the two sides store different documents:\nours  ${stored.ours}\nplain ${stored.plain}`)
  }
}

// ---------------------------------------------------------------- disk floor
/** One-row commits/s with synchronous=FULL in WAL mode: what one fsync per commit allows on this disk now. */
function diskFloor(n: number): number {
  const path = fresh('floor')
  const db = new Database(path)
  db.pragma('journal_mode = WAL')
  db.pragma('synchronous = FULL')
  db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)')
  const insert = db.prepare('INSERT INTO t (v) VALUES (?)')
  const row = 'x'.repeat(100)
  for (let i = 0; i < 20; i++) insert.run(row)
  const start = performance.now()
  for (let i = 0; i < n; i++) insert.run(row)
  const ms = performance.now() - start
  db.close()
  remove(path)
  return (n / ms) * 1000
}

// ---------------------------------------------------------------- durable dispatches
interface DurableRound {
  floor: number
  ours1: number
  plain1: number
  ours64: number
  plain64: number
  /** Ours with the attempt ledger off, to show its cost. */
  noLedger1: number
  noLedger64: number
  /** Ours with the opt-in inline commit. */
  inline1: number
  inline64: number
  inlineBusyP50: number
  inlineBusyP99: number
  busyP50: Record<SideName, number>
  busyP99: Record<SideName, number>
  busyMean64: Record<SideName, number>
  cpuMean1: Record<SideName, number>
  /** Ours at 64 in flight: the JS thread's time, split by addon call. */
  jsThread: JsThreadRound
  /** The same split at 1 in flight. */
  jsThread1: JsThreadRound
  /** The same at 1 in flight, the event loop kept awake meanwhile. */
  jsThread1Awake: JsThreadRound
  /** Ours: wake-ups per dispatch of the writer thread and of the JS thread, at 1 and 64 in flight. */
  wakes: { writer1: number; js1: number; writer64: number; js64: number }
  /** CPU per dispatch by thread at 64 in flight, each side. */
  cpu64: ThreadsCpuRound
}

async function durableRun(
  side: SideName,
  inflight: number,
  n: number,
  r: number,
  { attemptLedger = true, inlineCommit = false } = {},
) {
  const path = fresh(`durable-${side}-${inflight}`)
  const runner = await open(side, path, { synchronous: 'full', attemptLedger, inlineCommit })
  // A few dispatches to warm the JIT and the file before the clock starts.
  await drive(runner, `warm${r}${side}${inflight}`, 20, Math.min(inflight, 20), 'recorded')
  // Wake-ups per dispatch, thread by thread: the writer's from its own
  // counter; the JS thread's are the group-commit callbacks (one message
  // each on `loopx-hooks:commit`).
  let callbacks = 0
  const onCommit = () => void callbacks++
  subscribe('loopx-hooks:commit', onCommit)
  const wakes0 = runner.writerWakes?.() ?? 0
  let res
  try {
    res = await drive(runner, `d${r}${side}${inflight}`, n, inflight, 'recorded', { measureBusy: inflight === 1 })
  } finally {
    unsubscribe('loopx-hooks:commit', onCommit)
  }
  const writerWakes = ((runner.writerWakes?.() ?? 0) - wakes0) / n
  await runner.close()
  remove(path)
  return { ...res, writerWakes, jsWakes: callbacks / n }
}

async function durable(): Promise<DurableRound[]> {
  const n = perRound(C.durable)
  const rounds: DurableRound[] = []
  for (let r = 0; r < C.rounds; r++) {
    const out: any = { busyP50: {}, busyP99: {}, busyMean64: {}, cpuMean1: {}, wakes: {}, cpu64: {} }
    const steps: Array<[string, () => Promise<void>]> = [
      ['floor', async () => void (out.floor = diskFloor(perRound(C.floor * C.rounds)))],
      ...(['ours', 'plain'] as const).flatMap((side): Array<[string, () => Promise<void>]> => [
        [
          `${side} 1 in flight`,
          async () => {
            const res = await durableRun(side, 1, n, r)
            if (side === 'ours') Object.assign(out.wakes, { writer1: res.writerWakes, js1: res.jsWakes })
            out[`${side}1`] = (n / res.ms) * 1000
            out.busyP50[side] = percentile(res.busy!, 0.5)
            out.busyP99[side] = percentile(res.busy!, 0.99)
            out.cpuMean1[side] = res.threads.main / n
          },
        ],
        [
          `${side} ${INFLIGHT} in flight`,
          async () => {
            const res = await durableRun(side, INFLIGHT, n, r)
            if (side === 'ours') Object.assign(out.wakes, { writer64: res.writerWakes, js64: res.jsWakes })
            out[`${side}64`] = (n / res.ms) * 1000
            out.busyMean64[side] = res.activeMs / n
            out.cpu64[side] = perDispatchUs(res.threads, n)
            out.cpu64[`${side}Rate`] = (n / res.ms) * 1000
          },
        ],
      ]),
      ...([1, INFLIGHT] as const).map((inflight): [string, () => Promise<void>] => [
        `ours without the attempt ledger, ${inflight} in flight`,
        async () => {
          const res = await durableRun('ours', inflight, n, r, { attemptLedger: false })
          out[inflight === 1 ? 'noLedger1' : 'noLedger64'] = (n / res.ms) * 1000
        },
      ]),
      [
        `ours ${INFLIGHT} in flight, the JS thread's time split by addon call`,
        async () => void (out.jsThread = await jsThreadRound(tmp, n, INFLIGHT, `jt${r}`)),
      ],
      [
        `ours 1 in flight, the JS thread's time split by addon call`,
        async () => void (out.jsThread1 = await jsThreadRound(tmp, n, 1, `jo${r}`)),
      ],
      [
        `ours 1 in flight, the event loop kept awake, the JS thread's time split by addon call`,
        async () => void (out.jsThread1Awake = await jsThreadRound(tmp, n, 1, `ja${r}`, true)),
      ],
      ...([1, INFLIGHT] as const).map((inflight): [string, () => Promise<void>] => [
        `ours with the inline commit, ${inflight} in flight`,
        async () => {
          const res = await durableRun('ours', inflight, n, r, { inlineCommit: true })
          out[inflight === 1 ? 'inline1' : 'inline64'] = (n / res.ms) * 1000
          if (inflight === 1) {
            out.inlineBusyP50 = percentile(res.busy!, 0.5)
            out.inlineBusyP99 = percentile(res.busy!, 0.99)
          }
        },
      ]),
    ]
    for (const [name, step] of orderOf(r, steps)) {
      await step()
      log(`durable round ${r + 1}/${C.rounds}: ${name} done`)
    }
    rounds.push(out)
  }
  return rounds
}

// ---------------------------------------------------------------- replays
interface ReplayRound {
  return: Record<SideName, number>
  verify: Record<SideName, number>
  /** 'return' mode, each request a second time in the same process. */
  again: Record<SideName, number>
  /** Ours' first 'return' replays split, after the rounds above (bench/replay_split.ts). */
  split: ReplaySplitRound
}

async function replays(): Promise<ReplayRound[]> {
  const n = C.replayN
  const paths = { ours: fresh('replay-ours'), plain: fresh('replay-plain') }
  for (const side of ['ours', 'plain'] as const) {
    const runner = await open(side, paths[side], { synchronous: 'normal' })
    await drive(runner, 'replay', n, INFLIGHT, 'recorded')
    await runner.close()
  }
  log(`replay journals built (${n} dispatches each)`)
  const rounds: ReplayRound[] = []
  for (let r = 0; r < C.rounds; r++) {
    const out: any = { return: {}, verify: {}, again: {} }
    const steps = (['return', 'verify'] as const).flatMap((mode) =>
      (['ours', 'plain'] as const).map((side) => [mode, side] as const),
    )
    for (const [mode, side] of orderOf(r, steps)) {
      const runner = await open(side, paths[side], { synchronous: 'full', replay: mode })
      await drive(runner, 'replay', 200, INFLIGHT, 'replayed') // warm-up
      // A different slice of identities each round, same slice for both sides.
      const res = await drive(runner, 'replay', n, INFLIGHT, 'replayed', { order: (k) => (k * 7919 + r * 1013) % n })
      out[mode][side] = (n / res.ms) * 1000
      if (mode === 'return') {
        // The same requests again in the same process: ours answers them from its replay table.
        const again = await drive(runner, 'replay', n, INFLIGHT, 'replayed', { order: (k) => (k * 104729 + r) % n })
        out.again[side] = (n / again.ms) * 1000
      }
      await runner.close()
    }
    // Timed apart from the rounds above: the timing around each call costs time of its own.
    out.split = await replaySplitRound(paths.ours, n, INFLIGHT, (k) => (k * 6007 + r * 211) % n)
    log(`replay round ${r + 1}/${C.rounds} done`)
    rounds.push(out)
  }
  for (const p of Object.values(paths)) remove(p)
  return rounds
}

// ---------------------------------------------------------------- validators
/** ns per call of `fn`, measured for about `ms` milliseconds after a warm-up. */
function nsPerCall(fn: () => unknown, ms: number): number {
  for (let i = 0; i < 2_000; i++) fn()
  let calls = 0
  const start = performance.now()
  let elapsed = 0
  while (elapsed < ms) {
    for (let i = 0; i < 200; i++) fn()
    calls += 200
    elapsed = performance.now() - start
  }
  return (elapsed * 1e6) / calls
}

type ValidatorRound = Record<string, number>

function validators(): { rounds: ValidatorRound[]; probe: boolean } {
  const kinds = new pkg.IntentKinds([intentKind])
  const plain = new PlainValidators(true)
  plain.defineIntentKind(intentKind)
  const dispatchId: string = exampleInput.dispatch_id
  const reg = registration
  const result = exampleResult
  const regText = JSON.stringify(reg)
  let crossing: ((text: string) => number) | undefined
  try {
    if (process.env.LOOPX_BENCH_PROBE) crossing = require(process.env.LOOPX_BENCH_PROBE).crossing
  } catch {
    crossing = undefined
  }
  const expectOk = (name: string, v: any) => {
    if (!v || v.ok !== true) throw new Error(`bench: ${name} rejected the example: ${JSON.stringify(v).slice(0, 300)}`)
  }
  expectOk('ours registration', pkg.validateRegistration(reg, kinds))
  expectOk('ours result', pkg.validateHookResult(result, reg, dispatchId, kinds))
  expectOk('plain registration', plain.validateRegistration(reg))
  expectOk('plain result', plain.validateHookResult(result, reg, dispatchId))
  if (!plain.ajvRegistration(reg)) throw new Error('bench: Ajv rejected the example registration')
  const cases: Array<[string, () => unknown]> = [
    ['registration.ours', () => pkg.validateRegistration(reg, kinds)],
    ['registration.oursText', () => pkg.validateRegistration(JSON.stringify(reg), kinds)],
    ['registration.plain', () => plain.validateRegistration(reg)],
    ['registration.ajv', () => plain.ajvRegistration(reg)],
    ['result.ours', () => pkg.validateHookResult(result, reg, dispatchId, kinds)],
    ['result.oursText', () => pkg.validateHookResult(JSON.stringify(result), regText, dispatchId, kinds)],
    ['result.plain', () => plain.validateHookResult(result, reg, dispatchId)],
    ['registration.stringify', () => JSON.stringify(reg)],
    ['result.stringify', () => JSON.stringify(result)],
  ]
  if (crossing) {
    const cross = crossing
    cases.push(
      ['registration.crossing', () => cross(JSON.stringify(reg))],
      ['result.crossing', () => cross(JSON.stringify(result))],
    )
  }
  const rounds: ValidatorRound[] = []
  for (let r = 0; r < C.rounds; r++) {
    const out: ValidatorRound = {}
    for (const [name, fn] of orderOf(r, cases)) out[name] = nsPerCall(fn, C.validatorMs)
    rounds.push(out)
  }
  log('validators done')
  return { rounds, probe: crossing !== undefined }
}

// ---------------------------------------------------------------- napi-rs floor
interface Floor {
  latencyP50: number[]
  busyP50: number[]
}

/**
 * The no-work floor of one dispatch's machinery with this napi-rs: an async
 * napi call that calls one JS function from tokio and resolves with its
 * reply (bench/probe `Caller.call`), one in flight. Its main-thread busy time
 * is what any design with these two hops pays before doing anything.
 */
async function napiFloor(): Promise<Floor | undefined> {
  if (!process.env.LOOPX_BENCH_PROBE) return undefined
  let Caller: any
  try {
    Caller = require(process.env.LOOPX_BENCH_PROBE).Caller
  } catch {
    return undefined
  }
  if (typeof Caller !== 'function') return undefined
  const caller = new Caller((text: string) => text)
  const text = JSON.stringify(exampleInput)
  const out: Floor = { latencyP50: [], busyP50: [] }
  for (let i = 0; i < 500; i++) await caller.call(text)
  for (let r = 0; r < C.rounds; r++) {
    const lat: number[] = []
    const busy: number[] = []
    for (let i = 0; i < 3000; i++) {
      const e = performance.eventLoopUtilization()
      const t = performance.now()
      await caller.call(text)
      lat.push(performance.now() - t)
      busy.push(performance.eventLoopUtilization(e).active)
    }
    out.latencyP50.push(percentile(lat, 0.5))
    out.busyP50.push(percentile(busy, 0.5))
  }
  log('napi-rs floor done')
  return out
}

// ---------------------------------------------------------------- big journals (child processes)
function child(args: string[]): any {
  const script = join(here, 'child.js')
  const res = spawnSync(process.execPath, [script, ...args], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    maxBuffer: 1 << 24,
  })
  const line = (res.stdout ?? '').trim().split('\n').pop() ?? ''
  if (res.status !== 0 || !line.startsWith('{'))
    throw new Error(`bench: child ${args.join(' ')} failed (status ${res.status})`)
  return JSON.parse(line).result
}

/** Bytes per table and index (SQLite's dbstat), per dispatch. */
function breakdown(path: string, n: number): Record<string, number> | undefined {
  try {
    const db = new Database(path, { readonly: true })
    const rows = db
      .prepare('SELECT name, sum(pgsize) AS bytes FROM dbstat GROUP BY name ORDER BY bytes DESC')
      .all() as Array<{ name: string; bytes: number }>
    db.close()
    return Object.fromEntries(rows.map((r) => [r.name, round2(r.bytes / n, 1)]))
  } catch {
    return undefined
  }
}

interface Big {
  build: Record<string, { side: SideName; n: number; ms: number; maxRssKiB: number; bytes: number }>
  copyMs: number
  lookup: Record<SideName, { p50: number[]; p99: number[] }>
  breakdown: Record<string, Record<string, number> | undefined>
}

/**
 * The plain path's large journal: ours' rows copied into the plain layout.
 * The documents are byte-identical on both sides (checked by `sanity`), and
 * building it through the plain path would take longer than the whole
 * benchmark may. Bulk-built B-trees are denser than grown ones, so the
 * plain journal can only look better for it.
 */
function copyIntoPlain(from: string, to: string): number {
  const start = performance.now()
  PlainRuntime.open({ journalPath: to, synchronous: 'normal' }).close()
  const db = new Database(to)
  db.pragma('synchronous = OFF')
  db.prepare('ATTACH DATABASE ? AS o').run(from)
  // Ours stores no receipt document and a compact intent (src/dispatch/stored.rs
  // rebuilds both); the plain layout keeps whole documents, so they are
  // rebuilt here in SQL from the same columns.
  db.exec(`BEGIN;
    INSERT INTO dispatches (dispatch_id, state, attempts, hook_id, capability_id, receipt_id, effect_id, event_kind,
        registration_digest, result_digest, created_at, updated_at, request, receipt)
      SELECT d.dispatch_id, d.state, d.attempts, d.hook_id, d.capability_id, d.receipt_id, d.effect_id, d.event_kind,
        d.registration_digest, d.result_digest, d.created_at, d.updated_at,
        (SELECT r.request FROM o.requests r WHERE r.seq = d.seq),
        CASE WHEN d.state IN ('proposed', 'not_applicable', 'exhausted') THEN json_object(
          'schema_version', 'loopx_post_writeback_dispatch_receipt_v0',
          'dispatch_id', d.dispatch_id, 'hook_id', d.hook_id, 'capability_id', d.capability_id,
          'receipt_id', d.receipt_id, 'effect_id', d.effect_id, 'event_kind', d.event_kind,
          'registration_digest', d.registration_digest, 'status', d.state, 'attempt', d.attempts,
          'intent_ids', json((SELECT json_group_array(x.intent_id) FROM
            (SELECT i.intent_id FROM o.intents i WHERE i.dispatch_id = d.dispatch_id ORDER BY i.seq) x)),
          'result_digest', d.result_digest,
          'failure', json(CASE WHEN d.state = 'exhausted' THEN '{"code":"dispatch_budget_exhausted","rule":null}' END)
        ) END
      FROM o.dispatches d ORDER BY d.seq;
    INSERT INTO intents (intent_id, dispatch_id, capability_id, intent_kind, decision, executor_id, reason_code, decided_at, done_at, doc)
      SELECT i.intent_id, i.dispatch_id, i.capability_id, i.intent_kind, i.decision, i.executor_id, i.reason_code, i.decided_at, i.done_at,
        json_object('schema_version', 'loopx_post_writeback_intent_v0', 'intent_id', i.intent_id,
          'hook_id', (SELECT d.hook_id FROM o.dispatches d WHERE d.dispatch_id = i.dispatch_id),
          'capability_id', i.capability_id, 'source_dispatch_id', i.dispatch_id, 'intent_kind', i.intent_kind,
          'operation', i.doc ->> 0, 'policy_version', i.doc ->> 1, 'payload', json(i.doc -> 2), 'budget', json(i.doc -> 3),
          'requested_write_scope', json(i.doc -> 4), 'failure_policy', 'isolate',
          'grants_new_action_authority', json('false'), 'external_write_performed', json('false'))
      FROM o.intents i ORDER BY i.seq;
    COMMIT;`)
  db.exec('DETACH DATABASE o')
  db.close()
  return performance.now() - start
}

function big(): Big {
  const build: Big['build'] = {}
  const bd: Big['breakdown'] = {}
  let large = ''
  for (const [side, n] of [
    ['ours', C.small],
    ['plain', C.small],
    ['ours', C.large],
  ] as const) {
    const path = fresh(`big-${side}-${n}`)
    log(`child: ${n.toLocaleString('en-US')} dispatches, ${side} (synchronous=NORMAL, ${INFLIGHT} in flight)...`)
    build[`${side}${n}`] = child(['build', side, String(n), path])
    bd[`${side}${n}`] = breakdown(path, n)
    if (n === C.large) large = path
    else remove(path)
  }
  const plainLarge = fresh(`big-plain-${C.large}`)
  log(`copying the ${C.large.toLocaleString('en-US')} rows into the plain layout...`)
  const copyMs = copyIntoPlain(large, plainLarge)
  log(`child: ${C.lookups} x ${C.rounds} random replays on each ${C.large.toLocaleString('en-US')}-dispatch journal...`)
  const lookup = child(['lookup', large, plainLarge, String(C.large), String(C.lookups), String(C.rounds)])
  remove(large)
  remove(plainLarge)
  return { build, copyMs, lookup, breakdown: bd }
}

// ---------------------------------------------------------------- report
interface Row {
  metric: string
  ours: string
  plain: string
  ratio: number
  target: string
  met: boolean | null
  key: string
  figures: Record<string, unknown>
}

const fmt = (x: number, unit = '') => {
  const s = x >= 100 ? Math.round(x).toLocaleString('en-US') : x >= 10 ? x.toFixed(1) : x.toFixed(2)
  return unit ? `${s} ${unit}` : s
}

/** The durable-dispatch rows (fresh dispatches, SQLite, synchronous=FULL). */
function durableRows(d: DurableRound[], floor: Floor | undefined, add: Add): void {
  const ratioMed = <T>(rounds: T[], f: (r: T) => number) => median(rounds.map(f))
  const o64 = median(d.map((r) => r.ours64))
  const p64 = median(d.map((r) => r.plain64))
  const r64 = ratioMed(d, (r) => r.ours64 / r.plain64)
  add('durable64', `durable dispatches/s, ${INFLIGHT} in flight`, fmt(o64), fmt(p64), r64, {
    rounds: d.map((r) => [r.ours64, r.plain64]),
  })
  const o1 = median(d.map((r) => r.ours1))
  const p1 = median(d.map((r) => r.plain1))
  const r1 = ratioMed(d, (r) => r.ours1 / r.plain1)
  add('durable1', 'durable dispatches/s, 1 in flight', fmt(o1), fmt(p1), r1, {
    rounds: d.map((r) => [r.ours1, r.plain1]),
  })
  if (floor) {
    const h = twoHopRow(d, median(floor.latencyP50))
    add(h.key, h.metric, fmt(h.ours), fmt(h.bound), h.ratio, h.figures)
  }
  for (const inflight of [1, INFLIGHT] as const) {
    const writer = median(d.map((r) => (inflight === 1 ? r.wakes.writer1 : r.wakes.writer64)))
    const js = median(d.map((r) => (inflight === 1 ? r.wakes.js1 : r.wakes.js64)))
    add(
      `wakes${inflight}`,
      `wake-ups per dispatch, ${inflight} in flight (first column: the writer thread's; second: the JS thread's, one per group-commit callback; ratio: their sum)`,
      writer.toFixed(3),
      js.toFixed(3),
      writer + js,
      { rounds: d.map((r) => (inflight === 1 ? [r.wakes.writer1, r.wakes.js1] : [r.wakes.writer64, r.wakes.js64])) },
    )
  }
  for (const [key, inflight, on, off] of [
    ['ledger1', 1, (r: DurableRound) => r.ours1, (r: DurableRound) => r.noLedger1],
    ['ledger64', INFLIGHT, (r: DurableRound) => r.ours64, (r: DurableRound) => r.noLedger64],
  ] as const) {
    add(
      key,
      `attempt ledger: durable dispatches/s with it vs without, ${inflight} in flight (plain column: ours without)`,
      fmt(median(d.map(on))),
      fmt(median(d.map(off))),
      ratioMed(d, (r) => on(r) / off(r)),
      { rounds: d.map((r) => [on(r), off(r)]) },
    )
  }
  // The opt-in inline commit against the same plain path: what it buys in
  // throughput and what it costs the event loop, to decide its default.
  for (const [key, metric, on, plain, unit] of [
    [
      'inline1',
      'inline commit: durable dispatches/s, 1 in flight',
      (r: DurableRound) => r.inline1,
      (r: DurableRound) => r.plain1,
      '',
    ],
    [
      'inline64',
      `inline commit: durable dispatches/s, ${INFLIGHT} in flight`,
      (r: DurableRound) => r.inline64,
      (r: DurableRound) => r.plain64,
      '',
    ],
    [
      'inlineBusyP50',
      'inline commit: main-thread blocked per dispatch, p50 (1 in flight)',
      (r: DurableRound) => r.inlineBusyP50,
      (r: DurableRound) => r.busyP50.plain,
      'µs',
    ],
    [
      'inlineBusyP99',
      'inline commit: main-thread blocked per dispatch, p99 (1 in flight)',
      (r: DurableRound) => r.inlineBusyP99,
      (r: DurableRound) => r.busyP99.plain,
      'µs',
    ],
  ] as const) {
    const scale = unit === 'µs' ? 1000 : 1
    add(
      key,
      metric,
      fmt(median(d.map(on)) * scale, unit),
      fmt(median(d.map(plain)) * scale, unit),
      ratioMed(d, (r) => on(r) / plain(r)),
      {
        rounds: d.map((r) => [on(r) * scale, plain(r) * scale]),
      },
    )
  }
  const fl = median(d.map((r) => r.floor))
  const rf = ratioMed(d, (r) => r.ours1 / r.floor)
  const beyond = (rate: number, floorRate: number) => (1 / rate - 1 / floorRate) * 1e6
  add('durable1VsFloor', '1 in flight vs the disk floor (plain column: one-row FULL commits/s)', fmt(o1), fmt(fl), rf, {
    rounds: d.map((r) => [r.ours1, r.floor]),
    plainVsFloor: round2(
      ratioMed(d, (r) => r.plain1 / r.floor),
      3,
    ),
  })
  {
    const ours = median(d.map((r) => beyond(r.ours1, r.floor)))
    const plain = median(d.map((r) => beyond(r.plain1, r.floor)))
    add(
      'beyondFsync1',
      'time per dispatch beyond one one-row commit, 1 in flight (1/rate - 1/floor)',
      fmt(ours, 'µs'),
      fmt(plain, 'µs'),
      ratioMed(d, (r) => beyond(r.ours1, r.floor) / beyond(r.plain1, r.floor)),
      {
        floorCommitUs: median(d.map((r) => 1e6 / r.floor)),
      },
    )
  }
  for (const q of ['P50', 'P99'] as const) {
    const key = `busy${q}` as 'busyP50' | 'busyP99'
    const ours = median(d.map((r) => r[key].ours)) * 1000
    const plain = median(d.map((r) => r[key].plain)) * 1000
    const ratio = ratioMed(d, (r) => r[key].ours / r[key].plain)
    add(
      key,
      `main-thread blocked per dispatch, ${q.toLowerCase()} (1 in flight)`,
      fmt(ours, 'µs'),
      fmt(plain, 'µs'),
      ratio,
      {
        roundsUs: d.map((r) => [r[key].ours * 1000, r[key].plain * 1000]),
      },
    )
  }
  {
    const ours = median(d.map((r) => r.busyMean64.ours)) * 1000
    const plain = median(d.map((r) => r.busyMean64.plain)) * 1000
    add(
      'busyMean64',
      `main-thread busy per dispatch, mean (${INFLIGHT} in flight)`,
      fmt(ours, 'µs'),
      fmt(plain, 'µs'),
      ratioMed(d, (r) => r.busyMean64.ours / r.busyMean64.plain),
      {},
    )
  }
  if (floor) {
    const ours = median(d.map((r) => r.busyP50.ours)) * 1000
    const f = median(floor.busyP50) * 1000
    add(
      'busyVsFloor',
      'main-thread blocked per dispatch p50 vs the napi-rs floor (plain column: async napi call + one JS callback, no work)',
      fmt(ours, 'µs'),
      fmt(f, 'µs'),
      ours / f,
      {
        floorLatencyP50Us: median(floor.latencyP50) * 1000,
      },
    )
  }
  {
    const ours = median(d.map((r) => r.cpuMean1.ours)) * 1000
    const plain = median(d.map((r) => r.cpuMean1.plain)) * 1000
    add(
      'cpuMean1',
      'main-thread CPU per dispatch, mean (1 in flight, /proc)',
      fmt(ours, 'µs'),
      fmt(plain, 'µs'),
      ratioMed(d, (r) => r.cpuMean1.ours / r.cpuMean1.plain),
      {},
    )
  }
  threadsCpuRows(
    d.map((r) => r.cpu64),
    INFLIGHT,
    add,
  )
  jsThreadRows(
    d.map((r) => r.jsThread),
    INFLIGHT,
    add,
  )
  jsThreadRows(
    d.map((r) => r.jsThread1),
    1,
    add,
  )
  jsThreadAwakeRow(
    d.map((r) => r.jsThread1),
    d.map((r) => r.jsThread1Awake),
    add,
  )
}

function report(
  d: DurableRound[],
  rp: ReplayRound[],
  v: { rounds: ValidatorRound[]; probe: boolean },
  b: Big,
  floor: Floor | undefined,
  pgr?: PgResults | { error: string },
  cu?: CatchupResults,
) {
  const rows: Row[] = []
  const ratioMed = <T>(rounds: T[], f: (r: T) => number) => median(rounds.map(f))
  const add: Add = (key, metric, ours, plain, ratio, figures) =>
    rows.push({ key, metric, ours, plain, ratio: round2(ratio, 3), ...judge(key, ratio), figures })

  durableRows(d, floor, add)
  replayRows(rp, add)
  for (const doc of ['registration', 'result'] as const) {
    // The issue's targets: registration against Ajv's schema check alone, a
    // one-intent result against the whole plain path (Ajv + its hand-written checks).
    const label = doc === 'registration' ? 'registration' : 'one-intent result'
    const baseline = doc === 'registration' ? ' (plain column: Ajv alone)' : ''
    const against = doc === 'registration' ? 'ajv' : 'plain'
    const ns = (k: string) => median(v.rounds.map((r) => r[`${doc}.${k}`]!))
    for (const [form, k, how] of [
      ['', 'ours', 'JS object in'],
      ['_text', 'oursText', 'JSON.stringify + text in'],
    ] as const) {
      add(
        `validate_${doc}${form}`,
        `validation time per call, ${label}${baseline}, ${how} (lower is better)`,
        fmt(ns(k) / 1000, 'µs'),
        fmt(ns(against) / 1000, 'µs'),
        ratioMed(v.rounds, (r) => r[`${doc}.${k}`]! / r[`${doc}.${against}`]!),
        form
          ? {}
          : {
              nsPerCall: Object.fromEntries(
                ['ours', 'oursText', 'plain', 'ajv', 'stringify', 'crossing']
                  .filter((x) => v.rounds[0]![`${doc}.${x}`] !== undefined)
                  .map((x) => [x, ns(x)]),
              ),
            },
      )
    }
    if (v.probe) {
      const best = (r: ValidatorRound) => Math.min(r[`${doc}.ours`]!, r[`${doc}.oursText`]!)
      const ratio = ratioMed(v.rounds, (r) => r[`${doc}.ours`]! / r[`${doc}.crossing`]!)
      add(
        `validate_${doc}_vs_crossing`,
        `${label}: validation cost vs a bare crossing (plain column: JSON.stringify + 1 napi call)`,
        fmt(ns('ours') / 1000, 'µs'),
        fmt(ns('crossing') / 1000, 'µs'),
        ratio,
        {
          bestFormRatio: round2(
            ratioMed(v.rounds, (r) => best(r) / r[`${doc}.crossing`]!),
            3,
          ),
          crossingNs: ns('crossing'),
        },
      )
    }
  }
  const L = C.large
  const S = C.small
  const bo = b.build[`ours${S}`]!
  const bp = b.build[`plain${S}`]!
  const bytesO = bo.bytes / S
  const bytesP = bp.bytes / S
  add(
    'journalBytes',
    `journal bytes per dispatch (${S.toLocaleString('en-US')} dispatches)`,
    fmt(bytesO, 'B'),
    fmt(bytesP, 'B'),
    bytesO / bytesP,
    {
      oursLarge: b.build[`ours${L}`]!.bytes / L,
      breakdownPerDispatch: b.breakdown,
    },
  )
  for (const q of ['p50', 'p99'] as const) {
    const ours = median(b.lookup.ours[q]) * 1000
    const plain = median(b.lookup.plain[q]) * 1000
    const ratio = median(b.lookup.ours[q].map((x, i) => x / b.lookup.plain[q][i]!))
    add(
      `lookup_${q}`,
      `replay lookup ${q} at ${L.toLocaleString('en-US')} dispatches`,
      fmt(ours, 'µs'),
      fmt(plain, 'µs'),
      ratio,
      {
        roundsUs: b.lookup.ours[q].map((x, i) => [x * 1000, b.lookup.plain[q][i]! * 1000]),
      },
    )
  }
  const mib = (kib: number) => kib / 1024
  {
    const o = b.build[`ours${S}`]!.maxRssKiB
    const p = b.build[`plain${S}`]!.maxRssKiB
    add(
      'rssSmall',
      `peak RSS after ${S.toLocaleString('en-US')} dispatches`,
      fmt(mib(o), 'MiB'),
      fmt(mib(p), 'MiB'),
      o / p,
      {},
    )
  }
  {
    const small = b.build[`ours${S}`]!.maxRssKiB
    const large = b.build[`ours${L}`]!.maxRssKiB
    add(
      'rssGrowth',
      `peak RSS after ${L.toLocaleString('en-US')} dispatches (plain column: after ${S.toLocaleString('en-US')}; ratio: ours at ${L.toLocaleString('en-US')} / at ${S.toLocaleString('en-US')})`,
      fmt(mib(large), 'MiB'),
      fmt(mib(small), 'MiB'),
      large / small,
      {},
    )
  }
  {
    const o = (S / bo.ms) * 1000
    const p = (S / bp.ms) * 1000
    add(
      'build',
      `dispatches/s building the ${S.toLocaleString('en-US')} journals (synchronous=NORMAL, ${INFLIGHT} in flight)`,
      fmt(o),
      fmt(p),
      o / p,
      {
        oursLarge: (L / b.build[`ours${L}`]!.ms) * 1000,
      },
    )
  }
  if (pgr && !('error' in pgr)) pgRows(pgr, add, fmt)
  if (cu) catchupRows(cu, add, fmt)
  return rows
}

function table(rows: Row[]): string {
  const lines = [
    '| metric | loopx-hooks | plain TS | ratio | target | met? |',
    '| --- | ---: | ---: | ---: | --- | --- |',
    ...rows.map(
      (r) =>
        `| ${r.metric} | ${r.ours} | ${r.plain} | ${Number.isFinite(r.ratio) ? `${r.ratio.toFixed(r.ratio < 0.1 ? 3 : 2)}x` : 'n/a'} | ${r.target} | ${r.met === null ? (r.target === 'none' ? '-' : 'n/a') : r.met ? 'yes' : '**no**'} |`,
    ),
  ]
  return lines.join('\n')
}

function machine() {
  const cpus = os.cpus()
  return {
    cpus: cpus.length,
    cpuModel: cpus[0]?.model ?? 'unknown',
    memGiB: round2(os.totalmem() / 2 ** 30, 1),
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    node: process.version,
    tmpdir: os.tmpdir(),
    loadavgStart: loadStart.map((x) => round2(x)),
    loadavgEnd: os.loadavg().map((x) => round2(x)),
    addon: process.env.NAPI_RS_NATIVE_LIBRARY_PATH ? 'release build (bench/bench.mjs)' : 'package default',
  }
}

const NOTES = `Notes:
- Ratios are loopx-hooks / plain TS (for busy time, bytes, latency and RSS lower is better; for validation time the "plain" column is Ajv's schema check alone for a registration and the whole plain path for a result, and for the rows against a bare crossing it is that crossing). Each figure is the median of ${C.rounds} rounds that alternate the two sides and their order; each ratio is the median of the per-round ratios.
- Plain TS (\`bench/baseline.ts\`): Ajv 2020 compiled from \`schemas/\` plus the hand-written checks ours make, node:crypto sha256 over canonicalize@4, better-sqlite3@12 in WAL; its checkpoint commits with synchronous=NORMAL and its final record with FULL, so it too pays one fsync per dispatch, but on the JS thread and never shared. Both sides call the same provider and store the same documents (checked at start: identical outcomes for the same request).
- Durable runs use synchronous=FULL with ${perRound(C.durable).toLocaleString('en-US')} fresh receipts per side per round. Main-thread blocked time is the change of \`performance.eventLoopUtilization().active\` across each dispatch at 1 in flight (wall time minus time in epoll, so it also counts time the JS thread was runnable but descheduled); the CPU row is the JS thread's own CPU time from /proc over the same runs.
- The JS thread's split (\`bench/js_thread.ts\`) times each of the addon's three calls in runs of their own. At 1 in flight it runs twice: as is, and with a \`setImmediate\` loop keeping the event loop turning, so that the thread never waits in epoll between dispatches. The same calls' time with and without that wait is what running them on a core that went idle during each commit costs.
- Replays: each side's journal is built with ${C.replayN.toLocaleString('en-US')} dispatches, then each round opens it afresh per mode and replays every identity once (a first replay: nothing in the process has answered it) and, in 'return' mode, once more. After the rounds, ours' first replays are timed again with a timer around each \`prepare\` (\`bench/replay_split.ts\`), and the same number of point reads of the row (every column) run through better-sqlite3 on ours' journal file with nothing around them: a first replay cannot cost less than that read, so one second divided by it is the most any first replay can reach.
- Big journals: ${C.small.toLocaleString('en-US')} dispatches per side and ${C.large.toLocaleString('en-US')} through ours, each built with synchronous=NORMAL (a million fsyncs would take most of an hour), ${INFLIGHT} in flight, in its own child process (peak RSS = \`process.resourceUsage().maxRSS\` at its end). Journal bytes compare the two ${C.small.toLocaleString('en-US')}-dispatch journals. The plain ${C.large.toLocaleString('en-US')}-dispatch journal is ours' rows copied into the plain layout (identical documents; a bulk-built B-tree is if anything denser). Lookups replay random identities of both ('return' mode, 1 in flight) in one more child that opens both and alternates them.
- The fsync-bound targets (${INFLIGHT} in flight >= 5x, 1 in flight >= 0.8x the floor, blocked time <= 1/20) depend on what one commit costs on the disk at that moment: read them with the floor row and the "time beyond one commit" row. When a commit costs milliseconds, the fsync dominates both sides; when the disk commits thousands per second, each side's fixed cost per dispatch decides. This disk swings between the two within a day.
- A checkpoint costs no fsync of its own: it commits with synchronous=NORMAL and the next FULL commit (a final record, necessarily later in the WAL) syncs it. A power cut can lose a checkpoint row but never a final record. The lost row is recovered from the committed primary receipt: the orchestrator admits a dispatch only for a receipt that is committed and checkpointed in its own store, so after the cut it dispatches that receipt again, the content-derived dispatch_id is the same, the checkpoint is written afresh and the hook runs (a re-invocation the contract allows: intent ids are content-derived and recorded once).`

/** BENCH_REPORT_FROM=<results.json>: re-render the table of an earlier run from its raw figures. */
function rerender(path: string): void {
  const old = JSON.parse(readFileSync(path, 'utf8'))
  const raw = old.raw
  const v = { rounds: raw.validators, probe: raw.validators.every((r: ValidatorRound) => 'registration.crossing' in r) }
  const rows = report(raw.durable, raw.replays, v, raw.big, raw.napiFloor, raw.pg, raw.catchup)
  const m = old.machine
  const header = headerOf(old.date, m, old.quick)
  const md = table(rows)
  process.stdout.write(`\n${header}\n\n${md}\n`)
  writeFileSync(path, JSON.stringify({ ...old, metrics: rows }, null, 2) + '\n')
  writeFileSync(
    join(dirname(path), old.quick ? 'RESULTS-quick.md' : 'RESULTS.md'),
    resultsMd(header, md, raw.pg, raw.catchup),
  )
}

function headerOf(when: string, m: ReturnType<typeof machine>, quick: boolean): string {
  return `loopx-hooks benchmark, ${when}${quick ? " (BENCH_QUICK smoke run: sizes are not the issue's)" : ''}: ${m.cpus} x ${m.cpuModel}, ${m.memGiB} GiB, ${m.platform}, Node ${m.node}, load average ${m.loadavgStart.join(' ')} at start, ${m.loadavgEnd.join(' ')} at end.`
}

function resultsMd(header: string, md: string, pgr?: PgResults | { error: string }, cu?: CatchupResults): string {
  return `# Benchmark results\n\nProduced by \`npm run bench\` (\`bench/\`); figures in \`bench/results.json\`.\n\n${header}\n\n${md}\n\n${NOTES}${pgNotes(pgr)}${catchupNotes(cu)}\n`
}

/** The PostgreSQL rows; a server that cannot be had leaves them out with the reason, not the rest of the run. */
async function postgres(): Promise<PgResults | { error: string }> {
  try {
    return await pgBench(log)
  } catch (e: any) {
    const error = `${e?.code ?? 'error'}: ${String(e?.message ?? e).split('\n')[0]}`
    log(`PostgreSQL rows left out: ${error}`)
    return { error }
  }
}

/** BENCH_ONLY=pg: the PostgreSQL rows alone, printed and written to .bench/results-pg.json. */
async function pgOnly(): Promise<void> {
  const pgr = await pgBench(log)
  const rows: Row[] = []
  pgRows(
    pgr,
    (key, metric, ours, plain, ratio, figures) =>
      rows.push({ key, metric, ours, plain, ratio: round2(ratio, 3), ...judge(key, ratio), figures }),
    fmt,
  )
  process.stdout.write(`\n${table(rows)}\n${pgNotes(pgr)}\n`)
  mkdirSync(join(ROOT, '.bench'), { recursive: true })
  writeFileSync(join(ROOT, '.bench', 'results-pg.json'), JSON.stringify({ metrics: rows, raw: pgr }, null, 2) + '\n')
}

/** BENCH_ONLY=catchup: the catch-up rows alone, printed and written to .bench/results-catchup.json. */
async function catchupOnly(): Promise<void> {
  const cu = await catchupBench(tmp, log)
  const rows: Row[] = []
  catchupRows(
    cu,
    (key, metric, ours, plain, ratio, figures) =>
      rows.push({ key, metric, ours, plain, ratio: round2(ratio, 3), ...judge(key, ratio), figures }),
    fmt,
  )
  process.stdout.write(`\n${table(rows)}\n${catchupNotes(cu)}\n`)
  mkdirSync(join(ROOT, '.bench'), { recursive: true })
  writeFileSync(
    join(ROOT, '.bench', 'results-catchup.json'),
    JSON.stringify({ metrics: rows, raw: cu }, null, 2) + '\n',
  )
}

/** The replay rows: first replays of each mode, and 'return' replays of the same requests again. */
function replayRows(rp: ReplayRound[], add: Add): void {
  const ratioMed = <T>(rounds: T[], f: (r: T) => number) => median(rounds.map(f))
  for (const mode of ['return', 'verify'] as const) {
    const ours = median(rp.map((r) => r[mode].ours))
    const plain = median(rp.map((r) => r[mode].plain))
    const ratio = ratioMed(rp, (r) => r[mode].ours / r[mode].plain)
    add(`replay_${mode}`, `replays/s, '${mode}' mode (${INFLIGHT} in flight)`, fmt(ours), fmt(plain), ratio, {
      rounds: rp.map((r) => [r[mode].ours, r[mode].plain]),
    })
  }
  add(
    'replay_return_again',
    `replays/s, 'return' mode, each request a second time in the same process (${INFLIGHT} in flight; ours: its replay table)`,
    fmt(median(rp.map((r) => r.again.ours))),
    fmt(median(rp.map((r) => r.again.plain))),
    ratioMed(rp, (r) => r.again.ours / r.again.plain),
    { rounds: rp.map((r) => [r.again.ours, r.again.plain]) },
  )
  replaySplitRows(
    rp.map((r) => r.split),
    INFLIGHT,
    add,
  )
  // What the read alone allows: a first replay costs at least its row's read.
  const bound = (r: ReplayRound) => 1e6 / r.split.readUs
  add(
    'replay_return_read_bound',
    `replays/s, 'return' mode: the most the row's read alone allows (first column: 1 / the bare read above; plain column: plain's replays/s; ratio: the highest ratio a first replay can reach)`,
    fmt(median(rp.map(bound))),
    fmt(median(rp.map((r) => r.return.plain))),
    ratioMed(rp, (r) => bound(r) / r.return.plain),
    { rounds: rp.map((r) => [bound(r), r.return.plain]) },
  )
}

/** BENCH_ONLY=replays: the replay rows alone, printed. */
async function replaysOnly(): Promise<void> {
  await new Promise((r) => setImmediate(r))
  const rp = await replays()
  const rows: Row[] = []
  replayRows(rp, (key, metric, ours, plain, ratio, figures) =>
    rows.push({ key, metric, ours, plain, ratio: round2(ratio, 3), ...judge(key, ratio), figures }),
  )
  process.stdout.write(`\n${table(rows)}\n`)
}

/** BENCH_ONLY=prune: the retention rows (bench/prune.ts), printed and written to .bench/results-prune.json. */
async function pruneOnly(): Promise<void> {
  const res = await pruneBench(tmp, log)
  process.stdout.write(`\n${pruneTable(res)}\n`)
  mkdirSync(join(ROOT, '.bench'), { recursive: true })
  writeFileSync(join(ROOT, '.bench', 'results-prune.json'), JSON.stringify(res, null, 2) + '\n')
}

/** BENCH_ONLY=durable: the durable-dispatch rows alone (with the napi-rs floor when the probe is built), printed. */
async function durableOnly(): Promise<void> {
  await new Promise((r) => setImmediate(r)) // the event loop is running: ELU is defined
  const floor = await napiFloor()
  const d = await durable()
  const rows: Row[] = []
  durableRows(d, floor, (key, metric, ours, plain, ratio, figures) =>
    rows.push({ key, metric, ours, plain, ratio: round2(ratio, 3), ...judge(key, ratio), figures }),
  )
  process.stdout.write(`\n${table(rows)}\n`)
}

/** BENCH_ONLY=validators: the validator rows alone (same-run medians), printed, nothing written. */
function validatorsOnly(): void {
  const v = validators()
  const med = (k: string) => median(v.rounds.map((r) => r[k]!))
  const ratio = (a: string, b: string) => round2(median(v.rounds.map((r) => r[a]! / r[b]!)), 2)
  const lines = [
    '| document | ours µs | text µs | plain µs | Ajv alone µs | crossing µs | stringify µs | ours / plain | ours / Ajv | text / Ajv | ours / crossing |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ]
  for (const doc of ['registration', 'result']) {
    const us = (k: string) => (v.rounds[0]![`${doc}.${k}`] === undefined ? '-' : round2(med(`${doc}.${k}`) / 1000, 2))
    const cross = v.probe ? ratio(`${doc}.ours`, `${doc}.crossing`) : '-'
    lines.push(
      `| ${doc} | ${us('ours')} | ${us('oursText')} | ${us('plain')} | ${us('ajv')} | ${us('crossing')} | ${us('stringify')} | ${ratio(`${doc}.ours`, `${doc}.plain`)} | ${doc === 'registration' ? ratio(`${doc}.ours`, `${doc}.ajv`) : '-'} | ${doc === 'registration' ? ratio(`${doc}.oursText`, `${doc}.ajv`) : '-'} | ${cross} |`,
    )
  }
  process.stdout.write(`\n${lines.join('\n')}\n`)
}

async function main() {
  if (process.env.BENCH_REPORT_FROM) return rerender(process.env.BENCH_REPORT_FROM)
  if (process.env.BENCH_ONLY === 'validators') return validatorsOnly()
  if (process.env.BENCH_ONLY === 'durable') return durableOnly()
  if (process.env.BENCH_ONLY === 'replays') return replaysOnly()
  if (process.env.BENCH_ONLY === 'pg') return pgOnly()
  if (process.env.BENCH_ONLY === 'catchup') return catchupOnly()
  if (process.env.BENCH_ONLY === 'prune') return pruneOnly()
  if (process.env.BENCH_ONLY === 'python') return pythonOnly(log)
  await new Promise((r) => setImmediate(r)) // the event loop is running: ELU is defined
  log(`${QUICK ? 'QUICK ' : ''}run; journals in ${tmp}`)
  await sanity()
  log('sanity: both sides produce identical outcomes and store identical documents')
  const v = validators()
  const floor = await napiFloor()
  const rp = await replays()
  const d = await durable()
  const b = big()
  const pgr = await postgres()
  const cu = await catchupBench(tmp, log)
  const rows = report(d, rp, v, b, floor, pgr, cu)
  const md = table(rows)
  const when = started.toISOString()
  const m = machine()
  const header = headerOf(when, m, QUICK)
  process.stdout.write(`\n${header}\n\n${md}\n\n${NOTES}${pgNotes(pgr)}${catchupNotes(cu)}\n`)
  const results = {
    date: when,
    quick: QUICK,
    machine: m,
    config: { ...C, inflight: INFLIGHT },
    durationS: round2((performance.now() - t0) / 1000, 1),
    metrics: rows,
    raw: { durable: d, replays: rp, validators: v.rounds, napiFloor: floor, big: b, pg: pgr, catchup: cu },
  }
  const outDir = QUICK ? join(ROOT, '.bench') : join(ROOT, 'bench')
  mkdirSync(outDir, { recursive: true })
  writeFileSync(join(outDir, QUICK ? 'results-quick.json' : 'results.json'), JSON.stringify(results, null, 2) + '\n')
  writeFileSync(join(outDir, QUICK ? 'RESULTS-quick.md' : 'RESULTS.md'), resultsMd(header, md, pgr, cu))
  log(`done in ${results.durationS} s; wrote ${join(outDir, QUICK ? 'results-quick.json' : 'results.json')}`)
}

try {
  await main()
} finally {
  rmSync(tmp, { recursive: true, force: true })
}
