/**
 * The PostgreSQL rows of `npm run bench` (issue 11): loopx-hooks with its
 * PostgreSQL journal against the plain path on node-postgres (`plain_pg.ts`),
 * same server, same durability (the server's defaults: fsync and
 * synchronous_commit on). Durable dispatches/s at 1 and 64 in flight, and 4
 * processes at once against 1 (child processes, `pg_child.ts`, each its own
 * runtime on one schema with its own identities). Rounds alternate the sides
 * and their order; each measurement gets a fresh schema, dropped after.
 *
 * The server: LOOPX_BENCH_PG_URL, else LOOPX_TEST_PG_URL, else a throwaway one
 * from scripts/pg-server.mjs, stopped at the end. The role must be allowed to
 * CREATE SCHEMA. When this build of loopx-hooks cannot open a PostgreSQL
 * journal, its rows are left out and the reason is reported.
 */
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { createInterface } from 'node:readline'
import { dirname, join } from 'node:path'
import { monitorEventLoopDelay, performance } from 'node:perf_hooks'
import { fileURLToPath, pathToFileURL } from 'node:url'

import Database from 'better-sqlite3'
import pg from 'pg'

import { jcs, request } from './fixtures.js'
import { pkg, ROOT } from './pkg.js'
import { ddl } from './plain_pg.js'
import { cpuBound, pgCost, type PgCost } from './pg_costs.js'
import { drive, median, open, openPg, type Runner, type SideName } from './sides.js'
import type { Add } from './targets.js'

const QUICK = process.env.BENCH_QUICK === '1'
const P = QUICK
  ? { rounds: 2, n1: 150, n64: 600, perProc: 300, floor: 200, nFar: 100 }
  : { rounds: 3, n1: 1_500, n64: 6_000, perProc: 3_000, floor: 1_000, nFar: 1_000 }
const INFLIGHT = 64
/** Added each way per chunk in the latency rows. */
const LATENCY_MS = 5
const PROCS = 4
const here = dirname(fileURLToPath(import.meta.url))

export interface PgRound {
  floor: number
  one: Partial<Record<SideName, number>>
  many: Partial<Record<SideName, number>>
  /** Event-loop delay (ms) while the many-in-flight run ran: p50 and p99. */
  delay?: Partial<Record<SideName, { p50: number; p99: number }>>
  /** The same with a reader paging meanwhile: on the local server, and with added latency. */
  delayReads?: Partial<Record<SideName, { p50: number; p99: number }>>
  delayFar?: Partial<Record<SideName, { p50: number; p99: number; rate: number }>>
  proc1: Partial<Record<SideName, number>>
  proc4: Partial<Record<SideName, number>>
  /** Ours with `attemptLedger: false` (its attempts not committed before each call): at 1 and at 64 in flight. */
  uncounted?: { one?: number; many?: number }
}

export interface PgResults {
  server: 'throwaway' | 'given'
  version: string
  /** Why the loopx-hooks rows are left out (no PostgreSQL journal in this build), else null. */
  oursMissing: string | null
  config: typeof P & { inflight: number; procs: number; latencyMs: number }
  rounds: PgRound[]
  /** What one dispatch costs the server and this process, per side, at 1 and at 64 in flight (bench/pg_costs.ts). */
  costs: Partial<Record<SideName, { one: PgCost; many: PgCost }>>
}

type Log = (msg: string) => void
const schemaName = (what: string) => `bench_${what}_${randomBytes(4).toString('hex')}`

async function sql(url: string, text: string): Promise<pg.QueryResult> {
  const c = new pg.Client({ connectionString: url })
  await c.connect()
  try {
    return await c.query(text)
  } finally {
    await c.end()
  }
}

/** A fresh schema for one measurement; the plain side's tables are made here, ours makes its own on open. */
async function withSchema<T>(url: string, side: SideName, body: (schema: string) => Promise<T>): Promise<T> {
  const schema = schemaName(side)
  if (side === 'plain') await sql(url, ddl(schema))
  try {
    return await body(schema)
  } finally {
    await sql(url, `DROP SCHEMA IF EXISTS ${schema} CASCADE`)
  }
}

/** One-row commits/s, one in flight, synchronous_commit on: what one WAL flush per commit allows now. */
async function commitFloor(url: string, n: number): Promise<number> {
  const schema = schemaName('floor')
  const c = new pg.Client({ connectionString: url })
  await c.connect()
  try {
    await c.query(`CREATE SCHEMA ${schema}; CREATE TABLE ${schema}.t (id bigserial PRIMARY KEY, v text NOT NULL)`)
    const insert = { name: 'floor', text: `INSERT INTO ${schema}.t (v) VALUES ($1)`, values: ['x'.repeat(100)] }
    for (let i = 0; i < 20; i++) await c.query(insert)
    const t0 = performance.now()
    for (let i = 0; i < n; i++) await c.query(insert)
    return (n / (performance.now() - t0)) * 1000
  } finally {
    await c.query(`DROP SCHEMA ${schema} CASCADE`)
    await c.end()
  }
}

/** null when ours opens a PostgreSQL journal and records a dispatch; else why not (a code, never the URL). */
async function oursMissing(url: string): Promise<string | null> {
  try {
    await withSchema(url, 'ours', async (schema) => {
      const runner = await openPg('ours', { connectionString: url, schema })
      try {
        await drive(runner, 'probe', 1, 1, 'recorded')
      } finally {
        await runner.close()
      }
    })
    return null
  } catch (e: any) {
    return `HookRuntime.open({ journal: { postgres } }) failed: ${e?.code ?? 'no code'}`
  }
}

/** What a journal answers and keeps for one request dispatched twice (recorded, then replayed). */
async function twice(runner: Runner): Promise<string> {
  const first = await runner.dispatch(request('pgsanity', 0))
  const again = await runner.dispatch(request('pgsanity', 0))
  await runner.close()
  return jcs([first, again])
}

/**
 * Every PostgreSQL side gives the same outcomes and stores the same documents
 * as the SQLite plain path (itself checked against ours by run.ts), or the
 * rows compare different work.
 */
async function sanity(url: string, sides: SideName[]): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'loopx-bench-pg-'))
  const path = join(dir, 'plain.db')
  let reference: { outcomes: string; stored: string }
  try {
    const outcomes = await twice(await open('plain', path, { synchronous: 'normal' }))
    const db = new Database(path, { readonly: true })
    const receipts = db.prepare('SELECT receipt FROM dispatches ORDER BY rowid').all() as Array<{ receipt: string }>
    const docs = db.prepare('SELECT doc FROM intents ORDER BY rowid').all() as Array<{ doc: string }>
    db.close()
    reference = {
      outcomes,
      stored: jcs([receipts.map((r) => JSON.parse(r.receipt)), docs.map((r) => JSON.parse(r.doc))]),
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
  for (const side of sides) {
    await withSchema(url, side, async (schema) => {
      const outcomes = await twice(await openPg(side, { connectionString: url, schema }))
      let stored: string
      if (side === 'ours') {
        const journal = await pkg.HookJournal.open({ postgres: { connectionString: url, schema } })
        const dispatches = (await journal.listDispatches({})).items.map((d) => d.receipt)
        const intents = (await journal.listIntents({})).items.map((i) => i.intent)
        await journal.close()
        stored = jcs([dispatches, intents])
      } else {
        const d = await sql(url, `SELECT receipt FROM ${schema}.dispatches ORDER BY created_at, dispatch_id`)
        const i = await sql(url, `SELECT doc FROM ${schema}.intents ORDER BY intent_id`)
        stored = jcs([d.rows.map((r) => JSON.parse(r.receipt)), i.rows.map((r) => JSON.parse(r.doc))])
      }
      if (outcomes !== reference.outcomes)
        throw new Error(`bench pg: ${side} on PostgreSQL answers differently:\n${outcomes}\n${reference.outcomes}`)
      if (stored !== reference.stored)
        throw new Error(`bench pg: ${side} on PostgreSQL stores different documents:\n${stored}\n${reference.stored}`)
    })
  }
}

/**
 * Dispatches/s of one runtime in this process on a fresh schema, and the
 * event-loop delay meanwhile (what every other task of the control plane
 * waits): `monitorEventLoopDelay` at 1 ms resolution, p50 and p99 in ms.
 * With `reads`, an inspecting reader pages the journal in a loop meanwhile.
 */
async function inProcess(
  url: string,
  side: SideName,
  n: number,
  inflight: number,
  tag: string,
  reads = false,
  attemptLedger?: boolean,
): Promise<{ rate: number; p50: number; p99: number }> {
  return withSchema(url, side, async (schema) => {
    const runner = await openPg(side, { connectionString: url, schema, attemptLedger })
    try {
      await drive(runner, `${tag}w`, 20, Math.min(inflight, 20), 'recorded')
      let done = false
      const reader = async () => {
        while (!done) await runner.read!()
      }
      const h = monitorEventLoopDelay({ resolution: 1 })
      h.enable()
      const reading = reads ? reader() : undefined
      const res = await drive(runner, tag, n, inflight, 'recorded')
      done = true
      await reading
      h.disable()
      return { rate: (n / res.ms) * 1000, p50: h.percentile(50) / 1e6, p99: h.percentile(99) / 1e6 }
    } finally {
      await runner.close()
    }
  })
}

/**
 * `inProcess` with a reader paging meanwhile, through a TCP proxy that holds
 * each chunk `LATENCY_MS` each way: a server in another zone.
 */
async function withLatency(url: string, side: SideName, n: number, tag: string) {
  // Reached from the repository, as the server script is: the bench compiles elsewhere.
  const { TcpProxy }: typeof import('../scripts/tcp-proxy.mjs') = await import(
    pathToFileURL(join(ROOT, 'scripts', 'tcp-proxy.mjs')).href
  )
  const proxy = await TcpProxy.start(Number(new URL(url).port))
  try {
    await proxy.set({ kind: 'delay', ms: LATENCY_MS })
    const far = new URL(url)
    far.port = String(proxy.port)
    return await inProcess(far.toString(), side, n, INFLIGHT, tag, true)
  } finally {
    await proxy.stop()
  }
}

/** Dispatches/s of `procs` child processes together (from the first start to the last end), one schema. */
async function processes(url: string, side: SideName, procs: number, perProc: number, tag: string): Promise<number> {
  return withSchema(url, side, async (schema) => {
    if (side === 'ours') await (await openPg('ours', { connectionString: url, schema })).close() // creates the schema once
    const env = { ...process.env, LOOPX_BENCH_PG_URL: url }
    const kids = Array.from({ length: procs }, (_, k) =>
      spawn(
        process.execPath,
        [join(here, 'pg_child.js'), side, schema, `${tag}p${k}`, String(perProc), String(INFLIGHT)],
        {
          env,
          stdio: ['pipe', 'pipe', 'inherit'],
        },
      ),
    )
    const lines = kids.map((kid) => createInterface({ input: kid.stdout })[Symbol.asyncIterator]())
    const exits = kids.map((kid) => new Promise<number | null>((resolve) => kid.on('exit', resolve)))
    try {
      for (const it of lines)
        if ((await it.next()).value !== 'ready') throw new Error('bench pg: a child did not get ready')
      for (const kid of kids) kid.stdin.write('go\n')
      const runs = await Promise.all(lines.map(async (it) => JSON.parse((await it.next()).value as string)))
      const codes = await Promise.all(exits)
      if (codes.some((c) => c !== 0)) throw new Error(`bench pg: child exit codes ${codes.join(',')}`)
      const span = Math.max(...runs.map((r) => r.end)) - Math.min(...runs.map((r) => r.start))
      return ((procs * perProc) / span) * 1000
    } finally {
      for (const kid of kids) if (kid.exitCode === null) kid.kill('SIGKILL')
    }
  })
}

export async function pgBench(log: Log): Promise<PgResults> {
  const given = process.env.LOOPX_BENCH_PG_URL || process.env.LOOPX_TEST_PG_URL
  const server: typeof import('../scripts/pg-server.mjs') = await import(
    pathToFileURL(join(ROOT, 'scripts', 'pg-server.mjs')).href
  )
  const own = given ? undefined : server.start()
  const url = given ?? own!.url
  // A run that dies on an exception (or a closed stdout) still stops its server; stop() is synchronous.
  const cleanup = () => own && server.stop(own.dir)
  process.once('exit', cleanup)
  try {
    const version = String((await sql(url, 'SHOW server_version')).rows[0].server_version)
    const sync = String((await sql(url, 'SHOW synchronous_commit')).rows[0].synchronous_commit)
    if (sync !== 'on') throw new Error(`bench pg: the server's synchronous_commit is '${sync}', not 'on'`)
    log(`PostgreSQL ${version} (${own ? 'throwaway server' : 'given server'})`)
    const missing = await oursMissing(url)
    const sides: SideName[] = missing ? ['plain'] : ['ours', 'plain']
    if (missing) log(`PostgreSQL: loopx-hooks rows left out: ${missing}`)
    await sanity(url, sides)
    log(`PostgreSQL sanity: ${sides.join(' and ')} answer and store as the SQLite plain path does`)
    const rounds: PgRound[] = []
    for (let r = 0; r < P.rounds; r++) {
      const out: PgRound = {
        floor: 0,
        one: {},
        many: {},
        delay: {},
        delayReads: {},
        delayFar: {},
        proc1: {},
        proc4: {},
        uncounted: {},
      }
      const steps: Array<[string, () => Promise<void>]> = [
        ['commit floor', async () => void (out.floor = await commitFloor(url, P.floor))],
        ...sides.flatMap((side): Array<[string, () => Promise<void>]> => [
          [
            `${side} 1 in flight`,
            async () => void (out.one[side] = (await inProcess(url, side, P.n1, 1, `o${r}`)).rate),
          ],
          [
            `${side} ${INFLIGHT} in flight`,
            async () => {
              const m = await inProcess(url, side, P.n64, INFLIGHT, `m${r}`)
              out.many[side] = m.rate
              out.delay![side] = { p50: m.p50, p99: m.p99 }
            },
          ],
          [
            `${side} ${INFLIGHT} in flight and a reader`,
            async () => {
              const m = await inProcess(url, side, P.n64, INFLIGHT, `q${r}`, true)
              out.delayReads![side] = { p50: m.p50, p99: m.p99 }
            },
          ],
          [
            `${side} ${INFLIGHT} in flight and a reader, ${LATENCY_MS} ms added`,
            async () => void (out.delayFar![side] = await withLatency(url, side, P.nFar, `f${r}`)),
          ],
          [`${side} 1 process`, async () => void (out.proc1[side] = await processes(url, side, 1, P.perProc, `a${r}`))],
          [
            `${side} ${PROCS} processes`,
            async () => void (out.proc4[side] = await processes(url, side, PROCS, P.perProc, `b${r}`)),
          ],
        ]),
        // What committing each attempt on the server before its call costs: ours without it.
        ...(sides.includes('ours')
          ? ([
              [
                'ours 1 in flight, attempts not counted',
                async () =>
                  void (out.uncounted!.one = (await inProcess(url, 'ours', P.n1, 1, `u${r}`, false, false)).rate),
              ],
              [
                `ours ${INFLIGHT} in flight, attempts not counted`,
                async () =>
                  void (out.uncounted!.many = (
                    await inProcess(url, 'ours', P.n64, INFLIGHT, `v${r}`, false, false)
                  ).rate),
              ],
            ] as Array<[string, () => Promise<void>]>)
          : []),
      ]
      for (const [name, step] of r % 2 === 0 ? steps : [...steps].reverse()) {
        await step()
        log(`PostgreSQL round ${r + 1}/${P.rounds}: ${name} done`)
      }
      rounds.push(out)
    }
    const costs: PgResults['costs'] = {}
    for (const side of sides) {
      const run = (n: number, inflight: number, tag: string) =>
        withSchema(url, side, (schema) =>
          pgCost(url, () => openPg(side, { connectionString: url, schema }), tag, n, inflight),
        )
      costs[side] = { one: await run(P.n1, 1, 'c1'), many: await run(P.n64, INFLIGHT, 'c64') }
      log(`PostgreSQL costs per dispatch: ${side} done`)
    }
    return {
      server: own ? 'throwaway' : 'given',
      version,
      oursMissing: missing,
      config: { ...P, inflight: INFLIGHT, procs: PROCS, latencyMs: LATENCY_MS },
      rounds,
      costs,
    }
  } finally {
    process.off('exit', cleanup)
    cleanup()
  }
}

/** The table rows (their targets: bench/targets.ts); `fmt` formats a rate as the rest of the table does. */
export function pgRows(res: PgResults, add: Add, fmt: (x: number) => string): void {
  const rounds = res.rounds
  const med = (f: (r: PgRound) => number | undefined) => median(rounds.map((r) => f(r) ?? NaN))
  const have = res.oursMissing === null
  const show = (x: number) => (Number.isFinite(x) ? fmt(x) : 'n/a')
  const vs = (key: 'one' | 'many', label: string) => {
    const ratio = have ? med((r) => r[key].ours! / r[key].plain!) : NaN
    add(
      `pg_${key}`,
      `PostgreSQL: durable dispatches/s, ${label}`,
      show(med((r) => r[key].ours)),
      fmt(med((r) => r[key].plain)),
      ratio,
      {
        rounds: rounds.map((r) => [r[key].ours ?? null, r[key].plain]),
      },
    )
  }
  vs('one', '1 in flight')
  vs('many', `${res.config.inflight} in flight`)
  if (have) {
    for (const [key, label] of [
      ['one', '1 in flight'],
      ['many', `${res.config.inflight} in flight`],
    ] as const) {
      const off = (r: PgRound) => r.uncounted?.[key]
      add(
        `pg_counted_${key}`,
        `PostgreSQL, attempts committed on the server before each call: durable dispatches/s with it vs without (attemptLedger: false), ${label} (plain column: ours without)`,
        show(med((r) => r[key].ours)),
        show(med(off)),
        med((r) => r[key].ours! / off(r)!),
        { rounds: rounds.map((r) => [r[key].ours ?? null, off(r) ?? null]) },
      )
    }
  }
  const p = res.config.procs
  {
    const ratio = have ? med((r) => r.proc4.ours! / r.proc1.ours!) : NaN
    add(
      'pg_procs_ours',
      `PostgreSQL, loopx-hooks: ${p} processes vs 1 (${res.config.inflight} in flight each; ${p}-process figure in the first column, 1-process in the second)`,
      show(med((r) => r.proc4.ours)),
      show(med((r) => r.proc1.ours)),
      ratio,
      { rounds: rounds.map((r) => [r.proc4.ours ?? null, r.proc1.ours ?? null]) },
    )
  }
  add(
    'pg_procs_plain',
    `PostgreSQL, plain TS: ${p} processes vs 1 (same layout as the row above)`,
    fmt(med((r) => r.proc4.plain)),
    fmt(med((r) => r.proc1.plain)),
    med((r) => r.proc4.plain! / r.proc1.plain!),
    { rounds: rounds.map((r) => [r.proc4.plain, r.proc1.plain]) },
  )
  {
    const ratio = have ? med((r) => r.proc4.ours! / r.proc4.plain!) : NaN
    add(
      'pg_procs4',
      `PostgreSQL: durable dispatches/s, ${p} processes together`,
      show(med((r) => r.proc4.ours)),
      fmt(med((r) => r.proc4.plain)),
      ratio,
      {},
    )
  }
  const delays: Array<[string, string, (r: PgRound) => PgRound['delay']]> = [
    ['pg_loop_delay', `${res.config.inflight} dispatches are in flight`, (r) => r.delay],
    ['pg_loop_delay_reads', `${res.config.inflight} dispatches are in flight and a reader pages`, (r) => r.delayReads],
    [
      'pg_loop_delay_far',
      `${res.config.inflight} dispatches are in flight and a reader pages, ${res.config.latencyMs} ms added each way`,
      (r) => r.delayFar,
    ],
  ]
  for (const [key, during, of] of delays)
    for (const q of ['p50', 'p99'] as const) {
      const d = (r: PgRound, side: SideName) => of(r)?.[side]?.[q]
      const ratio = have ? med((r) => d(r, 'ours')! / d(r, 'plain')!) : NaN
      add(
        `${key}_${q}`,
        `PostgreSQL: event-loop delay ${q} (ms) while ${during} (lower is better)`,
        have ? med((r) => d(r, 'ours')).toFixed(2) : 'n/a',
        med((r) => d(r, 'plain')).toFixed(2),
        ratio,
        { rounds: rounds.map((r) => [d(r, 'ours') ?? null, d(r, 'plain') ?? null]) },
      )
    }
  {
    const rate = (r: PgRound, side: SideName) => r.delayFar?.[side]?.rate
    const ratio = have ? med((r) => rate(r, 'ours')! / rate(r, 'plain')!) : NaN
    add(
      'pg_far',
      `PostgreSQL, ${res.config.latencyMs} ms added each way: durable dispatches/s, ${res.config.inflight} in flight and a reader`,
      show(med((r) => rate(r, 'ours'))),
      fmt(med((r) => rate(r, 'plain'))),
      ratio,
      { rounds: rounds.map((r) => [rate(r, 'ours') ?? null, rate(r, 'plain') ?? null]) },
    )
  }
  add(
    'pg_floor',
    'PostgreSQL: 1 in flight vs the server floor (plain column: one-row synchronous commits/s, 1 in flight)',
    show(med((r) => r.one.ours)),
    fmt(med((r) => r.floor)),
    have ? med((r) => r.one.ours! / r.floor) : NaN,
    { plainVsFloor: med((r) => r.one.plain! / r.floor) },
  )
  pgCostRows(res, add)
}

export function pgNotes(res: PgResults | { error: string } | undefined): string {
  if (!res) return ''
  if ('error' in res) return `\n- PostgreSQL rows left out: ${res.error}`
  const c = res.config
  return `\n- PostgreSQL rows: PostgreSQL ${res.version}, ${res.server === 'throwaway' ? 'a throwaway server (scripts/pg-server.mjs) on the same disk' : 'the server named by LOOPX_BENCH_PG_URL / LOOPX_TEST_PG_URL'}, fsync and synchronous_commit on. Plain TS on PostgreSQL (\`bench/plain_pg.ts\`): the same validation, digests and documents through node-postgres 8 (a pool), its checkpoint committed with synchronous_commit off (flushed by the final record's commit, like the SQLite plain path's NORMAL checkpoint) and the final record in one synchronous transaction. ${c.n1.toLocaleString('en-US')} / ${c.n64.toLocaleString('en-US')} fresh receipts per side per round at 1 / ${c.inflight} in flight; the process rows run ${c.perProc.toLocaleString('en-US')} receipts per process (${c.inflight} in flight each, distinct identities, one schema), timed from the first child's start to the last one's end. Every measurement uses a fresh schema. The per-dispatch cost rows (\`bench/pg_costs.ts\`) are one more run per side after the rounds (the same counts of receipts at 1 and at ${c.inflight} in flight): the server's committed transactions (pg_stat_database, read after the runtime closed, so every session's statistics are in) and WAL bytes, the CPU of this process (\`process.cpuUsage\`, all threads) and of the server's processes (/proc: the postmaster's children, alive and reaped), and the dispatches that settle in one event-loop turn (counted between two \`setImmediate\`s).${res.oursMissing ? ` loopx-hooks rows: n/a (${res.oursMissing}).` : ''}`
}

/** The rows of what one dispatch costs (no targets: they say what bounds the rows above). */
export function pgCostRows(res: PgResults, add: Add): void {
  const ours = res.costs.ours
  const plain = res.costs.plain
  if (!ours || !plain) return
  const m = res.config.inflight
  // The CPU figures are NaN when the server runs on another host.
  const num = (x: number, digits: number) =>
    Number.isFinite(x)
      ? x.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })
      : 'n/a'
  const per = (key: string, what: string, of: (c: PgCost) => number, digits: number) => {
    for (const [at, label] of [
      ['one', '1 in flight'],
      ['many', `${m} in flight`],
    ] as const)
      add(
        `pg_cost_${key}_${at}`,
        `PostgreSQL, per dispatch at ${label}: ${what} (lower is better)`,
        num(of(ours[at]), digits),
        num(of(plain[at]), digits),
        of(ours[at]) / of(plain[at]),
        { ours: ours[at], plain: plain[at] },
      )
  }
  per('wall', 'wall µs', (c) => c.wallUs, 0)
  per('commits', 'transactions the server commits', (c) => c.commits, 2)
  per('wal', 'WAL bytes', (c) => c.walBytes, 0)
  per('client_cpu', 'CPU µs of this process, all threads', (c) => c.clientCpuUs, 0)
  per('server_cpu', "CPU µs of the server's processes", (c) => c.serverCpuUs, 0)
  for (const [key, side, cost] of [
    ['ours', 'loopx-hooks', ours.many],
    ['plain', 'plain TS', plain.many],
  ] as const)
    add(
      `pg_cpu_bound_${key}`,
      `PostgreSQL, ${side}, ${m} in flight: dispatches/s against the CPU bound (second column: this host's cores / (client + server CPU per dispatch); ratio: the share of the bound reached)`,
      num(1e6 / cost.wallUs, 0),
      num(cpuBound(cost), 0),
      1e6 / cost.wallUs / cpuBound(cost),
      {},
    )
  add(
    'pg_turn_p99',
    `PostgreSQL, ${m} in flight: dispatches settled in one event-loop turn, p99 (lower is better)`,
    String(ours.many.perTurn.p99),
    String(plain.many.perTurn.p99),
    ours.many.perTurn.p99 / plain.many.perTurn.p99,
    { ours: ours.many.perTurn, plain: plain.many.perTurn },
  )
}
