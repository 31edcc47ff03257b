/**
 * The catch-up rows: after an outage of the hook's downstream, a host finishes
 * the owed dispatches. Ours: `recover()` (and `dispatchMany` of the same
 * requests); the plain path: its owed requests read from its journal and
 * dispatched again, 64 in flight. Throughput, and the event-loop delay
 * meanwhile (a 1 ms timer's lateness: what every other task
 * of the control plane waits; see `lateness` in catchup_child.ts), on SQLite
 * (synchronous=FULL) and PostgreSQL.
 *
 * The owed state is made through the public API (`catchup_child.ts owe`): the
 * provider throws for every writeback, so each identity is checkpointed with
 * one failed attempt. Every job runs in its own process. SQLite journals are
 * made once per side and copied for each round; PostgreSQL gets a fresh
 * schema per measurement.
 */
import { spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { copyFileSync, existsSync, rmSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

import pg from 'pg'

import { ROOT } from './pkg.js'
import { ddl } from './plain_pg.js'
import { median, type SideName } from './sides.js'
import type { Add } from './targets.js'

const QUICK = process.env.BENCH_QUICK === '1'
const K = QUICK ? { rounds: 2, n: 2_000, pgN: 1_000 } : { rounds: 1, n: 100_000, pgN: 100_000 }
const here = dirname(fileURLToPath(import.meta.url))

type How = 'recover' | 'many'
export interface CatchupRun {
  ms: number
  delayP99Ms: number
  delayMaxMs: number
  delaySamples: number
  monitorEventLoopDelay: { p99Ms: number; maxMs: number; samples: number }
  elu: number
  maxRssKiB: number
}
/** One round: ours by API (`recover`, `many`), and the plain path. */
export type CatchupRound = Partial<Record<'recover' | 'many' | 'plain', CatchupRun>>
export interface CatchupResults {
  config: typeof K
  sqlite: { oweMs: Record<SideName, number>; rounds: CatchupRound[] }
  pg: { rounds: CatchupRound[] } | { error: string }
}

type Log = (msg: string) => void

function job(args: string[], env: NodeJS.ProcessEnv = process.env): any {
  const res = spawnSync(process.execPath, [join(here, 'catchup_child.js'), ...args], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    maxBuffer: 1 << 24,
    env,
  })
  const line = (res.stdout ?? '').trim().split('\n').pop() ?? ''
  if (res.status !== 0 || !line.startsWith('{'))
    throw new Error(`bench: catchup ${args.slice(0, 3).join(' ')} failed (status ${res.status})`)
  return JSON.parse(line).result
}

const files = (path: string) => [path, path + '-wal', path + '-shm']
const steps = (r: number): Array<[SideName, How]> => {
  const all: Array<[SideName, How]> = [
    ['ours', 'recover'],
    ['plain', 'recover'],
    ['ours', 'many'],
  ]
  return r % 2 === 0 ? all : all.reverse()
}
const slot = (side: SideName, how: How) => (side === 'plain' ? 'plain' : how)

async function sqlite(tmp: string, log: Log): Promise<CatchupResults['sqlite']> {
  const pristine = { ours: join(tmp, 'owed-ours.db'), plain: join(tmp, 'owed-plain.db') }
  const oweMs = {} as Record<SideName, number>
  for (const side of ['ours', 'plain'] as const) {
    oweMs[side] = job(['owe', side, String(K.n), pristine[side]]).ms
    log(`catch-up: ${K.n.toLocaleString('en-US')} owed dispatches made (${side}, SQLite)`)
  }
  const rounds: CatchupRound[] = []
  for (let r = 0; r < K.rounds; r++) {
    const out: CatchupRound = {}
    for (const [side, how] of steps(r)) {
      const work = join(tmp, `catchup-${side}-${how}-${r}.db`)
      files(pristine[side]).forEach((p, i) => existsSync(p) && copyFileSync(p, files(work)[i]!))
      out[slot(side, how)] = job(['catchup', side, how, String(K.n), work])
      for (const p of files(work)) rmSync(p, { force: true })
      log(`catch-up round ${r + 1}/${K.rounds}: ${side} ${side === 'ours' ? how : 're-dispatch'} (SQLite) done`)
    }
    rounds.push(out)
  }
  for (const side of ['ours', 'plain'] as const) for (const p of files(pristine[side])) rmSync(p, { force: true })
  return { oweMs, rounds }
}

async function query(url: string, text: string): Promise<void> {
  const c = new pg.Client({ connectionString: url })
  await c.connect()
  try {
    await c.query(text)
  } finally {
    await c.end()
  }
}

async function postgres(log: Log): Promise<CatchupResults['pg']> {
  const given = process.env.LOOPX_BENCH_PG_URL || process.env.LOOPX_TEST_PG_URL
  const server: typeof import('../scripts/pg-server.mjs') = await import(
    pathToFileURL(join(ROOT, 'scripts', 'pg-server.mjs')).href
  )
  let own: ReturnType<typeof server.start> | undefined
  try {
    own = given ? undefined : server.start()
  } catch (e: any) {
    return { error: `${e?.code ?? 'error'}: no PostgreSQL server` }
  }
  const url = given ?? own!.url
  const cleanup = () => own && server.stop(own.dir)
  process.once('exit', cleanup)
  const env = { ...process.env, LOOPX_BENCH_PG_URL: url }
  try {
    const rounds: CatchupRound[] = []
    for (let r = 0; r < K.rounds; r++) {
      const out: CatchupRound = {}
      for (const [side, how] of steps(r).filter(([, h]) => h === 'recover')) {
        const schema = `bench_catchup_${side}_${randomBytes(4).toString('hex')}`
        if (side === 'plain') await query(url, ddl(schema))
        try {
          job(['owe', side, String(K.pgN), `pg:${schema}`], env)
          out[slot(side, how)] = job(['catchup', side, how, String(K.pgN), `pg:${schema}`], env)
        } finally {
          await query(url, `DROP SCHEMA IF EXISTS ${schema} CASCADE`)
        }
        log(`catch-up round ${r + 1}/${K.rounds}: ${side} (PostgreSQL) done`)
      }
      rounds.push(out)
    }
    return { rounds }
  } catch (e: any) {
    const error = `${e?.code ?? 'error'}: ${String(e?.message ?? e).split('\n')[0]}`
    log(`PostgreSQL catch-up rows left out: ${error}`)
    return { error }
  } finally {
    process.off('exit', cleanup)
    cleanup()
  }
}

export async function catchupBench(tmp: string, log: Log): Promise<CatchupResults> {
  const s = await sqlite(tmp, log)
  const p = await postgres(log)
  return { config: K, sqlite: s, pg: p }
}

/** The rows: throughput and event-loop delay, ours against the plain path, per backend and API. */
export function catchupRows(res: CatchupResults, add: Add, fmt: (x: number, unit?: string) => string): void {
  const backends: Array<[string, string, number, CatchupRound[]]> = [
    ['sqlite', 'SQLite', res.config.n, res.sqlite.rounds],
  ]
  if (!('error' in res.pg)) backends.push(['pg', 'PostgreSQL', res.config.pgN, res.pg.rounds])
  for (const [key, name, n, rounds] of backends) {
    const count = n.toLocaleString('en-US')
    const rate = (x?: CatchupRun) => (x ? (n / x.ms) * 1000 : NaN)
    const med = (f: (r: CatchupRound) => number) => median(rounds.map(f))
    for (const how of ['recover', 'many'] as const) {
      if (rounds.every((r) => r[how] === undefined)) continue
      const api = how === 'recover' ? 'recover()' : 'dispatchMany'
      add(
        `catchup_${key}_${how}`,
        `${name} catch-up: ${api} of ${count} owed dispatches, dispatches/s (plain: its owed requests dispatched again, 64 in flight)`,
        fmt(med((r) => rate(r[how]))),
        fmt(med((r) => rate(r.plain))),
        med((r) => rate(r[how]) / rate(r.plain)),
        { rounds: rounds.map((r) => [rate(r[how]), rate(r.plain)]), peakRssKiB: rounds.map((r) => r[how]?.maxRssKiB) },
      )
      for (const [q, label] of [
        ['delayP99Ms', 'p99'],
        ['delayMaxMs', 'max'],
      ] as const) {
        add(
          `catchup_${key}_${how}_delay_${label}`,
          `${name} catch-up (${api}): event-loop delay ${label} (ms) meanwhile (lower is better)`,
          med((r) => r[how]?.[q] ?? NaN).toFixed(2),
          med((r) => r.plain?.[q] ?? NaN).toFixed(2),
          med((r) => (r[how]?.[q] ?? NaN) / (r.plain?.[q] ?? NaN)),
          { rounds: rounds.map((r) => [r[how]?.[q], r.plain?.[q]]) },
        )
      }
    }
  }
}

export function catchupNotes(res: CatchupResults | undefined): string {
  if (!res) return ''
  const pgNote = 'error' in res.pg ? ` PostgreSQL catch-up rows left out: ${res.pg.error}.` : ''
  return `\n- Catch-up rows (\`bench/catchup.ts\`): ${res.config.n.toLocaleString('en-US')} owed dispatches on SQLite (synchronous=FULL while catching up), ${res.config.pgN.toLocaleString('en-US')} on PostgreSQL, made through the public API with a provider that throws (each identity checkpointed with one failed attempt; the hook allows two), then finished in a fresh process with the provider back: ours by \`recover()\` (and by \`dispatchMany\` of the same requests, SQLite), the plain path by reading its owed requests from its journal and dispatching them again, ${64} in flight. ${res.config.rounds} round(s), alternating the order when more; event-loop delay: the lateness of a 1 ms timer over the catch-up, including a delay still open at its end (\`monitorEventLoopDelay\` records only when its timer gets to run, so it shows a loop held throughout, as the plain SQLite path's is, as one short sample; its figures are in results.json); peak RSS per job in results.json.${pgNote}`
}
