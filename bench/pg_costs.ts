/**
 * What one PostgreSQL dispatch costs, per side, to say what bounds the
 * PostgreSQL rows (bench/pg.ts): the transactions the server commits and the
 * WAL it writes per dispatch (pg_stat_database, pg_current_wal_lsn), the CPU
 * the server's processes and this process spend per dispatch (/proc; only
 * when the server runs on this host), and how many dispatches settle in one
 * event-loop turn (a turn that settles many is one long task, which is what
 * the event-loop delay's p99 sees).
 */
import { readdirSync, readFileSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { performance } from 'node:perf_hooks'

import pg from 'pg'

import { drive, percentile, type Runner } from './sides.js'

/** utime, stime, cutime, cstime and ppid of one process, in clock ticks; undefined when it is gone. */
function procStat(
  pid: number,
): { ticks: number; sys: number; children: number; childrenSys: number; ppid: number; comm: string } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'))
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return {
      ticks: Number(f[11]) + Number(f[12]),
      sys: Number(f[12]),
      children: Number(f[13]) + Number(f[14]),
      childrenSys: Number(f[14]),
      ppid: Number(f[1]),
      comm,
    }
  } catch {
    return undefined
  }
}

/** Milliseconds of CPU the server has used, and of it in the kernel: the postmaster's children alive, plus those it has reaped. */
function serverCpuMs(postmaster: number): { all: number; sys: number } {
  const top = procStat(postmaster)
  if (!top) return { all: NaN, sys: NaN }
  let ticks = top.ticks + top.children
  let sys = top.sys + top.childrenSys
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry)
    if (!Number.isInteger(pid) || pid === postmaster) continue
    const s = procStat(pid)
    if (s?.ppid !== postmaster) continue
    ticks += s.ticks
    sys += s.sys
  }
  return { all: ticks * 10, sys: sys * 10 }
}

/** The postmaster's pid when the server runs on this host (its backend's parent is a postgres process), else undefined. */
async function localPostmaster(url: string): Promise<number | undefined> {
  const c = new pg.Client({ connectionString: url })
  await c.connect()
  try {
    const backend = Number((await c.query('SELECT pg_backend_pid() AS pid')).rows[0].pid)
    const s = procStat(backend)
    if (!s || !/postgres/.test(s.comm)) return undefined
    return /postgres/.test(procStat(s.ppid)?.comm ?? '') ? s.ppid : undefined
  } finally {
    await c.end()
  }
}

/** The database's committed transactions and the WAL position, from a fresh session. */
async function serverCounters(url: string): Promise<{ commits: number; lsn: string }> {
  const c = new pg.Client({ connectionString: url })
  await c.connect()
  try {
    const row = (
      await c.query(
        `SELECT xact_commit::text AS commits, pg_current_wal_lsn()::text AS lsn
           FROM pg_stat_database WHERE datname = current_database()`,
      )
    ).rows[0]
    return { commits: Number(row.commits), lsn: String(row.lsn) }
  } finally {
    await c.end()
  }
}

function lsnBytes(lsn: string): bigint {
  const [hi, lo] = lsn.split('/')
  return (BigInt(`0x${hi}`) << 32n) + BigInt(`0x${lo}`)
}

export interface PgCost {
  inflight: number
  n: number
  /** Wall µs per dispatch. */
  wallUs: number
  /** Transactions the server committed per dispatch (its statistics, so also each read's). */
  commits: number
  walBytes: number
  /** CPU µs per dispatch: this process (all its threads) and the server's processes; NaN for a remote server. */
  clientCpuUs: number
  serverCpuUs: number
  /** Of those, µs in the kernel (system time). */
  clientSysUs: number
  serverSysUs: number
  /** Dispatches settled in one event-loop turn: p50, p99 and the most, over the turns that settled any. */
  perTurn: { p50: number; p99: number; max: number }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/**
 * One measured run on a runner of a fresh schema: `n` dispatches with
 * `inflight` callers. The runner is closed here, since a session's statistics
 * reach pg_stat_database when it ends.
 */
export async function pgCost(
  url: string,
  open: () => Promise<Runner>,
  tag: string,
  n: number,
  inflight: number,
): Promise<PgCost> {
  const postmaster = await localPostmaster(url)
  const inner = await open()
  // Dispatches settled since the last check phase; a check is scheduled only
  // when one settles, so the count never keeps the loop from sleeping.
  const turns: number[] = []
  let counting = false
  let inTurn = 0
  const settle = () => {
    if (!counting) return
    if (inTurn++ === 0)
      setImmediate(() => {
        turns.push(inTurn)
        inTurn = 0
      })
  }
  const runner: Runner = { ...inner, dispatch: (r) => inner.dispatch(r).then((o) => (settle(), o)) }
  let closed = false
  try {
    await drive(runner, `${tag}w`, 20, Math.min(inflight, 20), 'recorded')
    // Idle sessions flush their statistics within a second; the warm-up's then count before the start.
    await sleep(1_500)
    const before = await serverCounters(url)
    const server0 = postmaster ? serverCpuMs(postmaster) : { all: NaN, sys: NaN }
    const cpu0 = process.cpuUsage()
    counting = true
    const t0 = performance.now()
    await drive(runner, tag, n, inflight, 'recorded')
    const wallMs = performance.now() - t0
    counting = false
    const cpu = process.cpuUsage(cpu0)
    const server1 = postmaster ? serverCpuMs(postmaster) : { all: NaN, sys: NaN }
    closed = true
    await inner.close()
    await sleep(500)
    const after = await serverCounters(url)
    return {
      inflight,
      n,
      wallUs: (wallMs * 1000) / n,
      commits: (after.commits - before.commits) / n,
      walBytes: Number(lsnBytes(after.lsn) - lsnBytes(before.lsn)) / n,
      clientCpuUs: (cpu.user + cpu.system) / n,
      serverCpuUs: ((server1.all - server0.all) * 1000) / n,
      clientSysUs: cpu.system / n,
      serverSysUs: ((server1.sys - server0.sys) * 1000) / n,
      perTurn: { p50: percentile(turns, 0.5), p99: percentile(turns, 0.99), max: Math.max(0, ...turns) },
    }
  } finally {
    if (!closed) await inner.close()
  }
}

/** The CPU bound of a rate: the cores of this host over the CPU both processes spend per dispatch. */
export function cpuBound(cost: PgCost): number {
  return (availableParallelism() * 1e6) / (cost.clientCpuUs + cost.serverCpuUs)
}
