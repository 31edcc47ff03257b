// The kill soak: several processes dispatch overlapping receipts into one
// journal and are SIGKILLed at seeded random moments; a fresh process
// recovers after each round; the journal is checked after the kills, after
// the recovery, and whole at the end. `npm run soak` (soak/cli.ts),
// __test__/soak.spec.ts and __test__/crash.spec.ts all run this one code.
//
// One round:
//   1. P warm processes (soak/proc.ts) open the journal; once all are ready,
//      each dispatches from its own start near the frontier (so they race on
//      the same identities and replay final ones) with its own in-flight
//      count, and is SIGKILLed its own delay after the start;
//   2. the journal as the kills left it (PostgreSQL: once the server settled
//      what the dead sessions sent): every resolved dispatch final with the
//      receipt it resolved with, the unfinished rows checkpointed;
//   3. another process recovers: the checkpointed rows oldest first, then
//      the attempts the killed processes had begun whose checkpoints never
//      committed, folded in from their attempt ledgers (each one of a receipt
//      started and neither resolved nor in the journal), all `recorded`, each
//      with a failed attempt when a killed process had called its provider;
//   4. the journal after recovery: the round's rows final, ids equal to their
//      recomputation, receipts equal to the first ones, one row per receipt,
//      one intent row per intent id, no row unfinished, integrity ok.
import type { RecoverReport } from '../lib/index.js'
import type { JournalTarget } from '../__test__/support/backends'
import { Books, loadFixture, same } from './books'
import { Pool, type Line, type Proc } from './proc'
import { readerOf, type Reader } from './reader'
import type { SoakSummary } from './summary'

export interface SoakOptions {
  /** At least this many SIGKILLs (whole rounds of `processes` kills each). */
  kills: number
  /** Dispatching processes per round, all on the one journal. */
  processes: number
  seed: number
  /** Each process's in-flight count is drawn from 1..maxInflight (a fixed `inflight` overrides). */
  maxInflight: number
  inflight?: number
  /** Each kill lands this many ms after the round's start, drawn from the range. */
  minDelayMs: number
  maxDelayMs: number
  /** How far behind the frontier a round's processes start, so they replay final identities. */
  overlap: number
  /** Progress, one line every `every` rounds. */
  log?: (line: string) => void
  every?: number
}

export const DEFAULTS: Omit<SoakOptions, 'kills' | 'seed'> = {
  processes: 4,
  maxInflight: 16,
  minDelayMs: 5,
  maxDelayMs: 300,
  overlap: 12,
}

/** mulberry32: a small seeded generator, so a run's choices can be replayed from its seed. */
export function rng(seed: number): () => number {
  let s = seed >>> 0
  return () => {
    s = (s + 0x6d2b79f5) >>> 0
    let t = s
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

type Resolved = Extract<Line, { t: 'resolved' }>

interface Killed {
  lines: Line[]
  sessions: number[]
  signal: string | null
}

export async function runSoak(target: JournalTarget, options: SoakOptions): Promise<SoakSummary> {
  const o = { ...DEFAULTS, ...options }
  const t0 = Date.now()
  const random = rng(o.seed)
  const between = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1))
  const books = new Books(await loadFixture())
  const targetArg = target.childArg({ synchronous: 'full' })
  const reader = readerOf(target)
  const pool = new Pool()
  const s = {
    rounds: 0,
    kills: 0,
    midRunRounds: 0,
    started: 0,
    resolved: 0,
    replayed: 0,
    recovered: 0,
    foldedFromLedger: 0,
    unrecordedAtKill: 0,
    uncounted: 0,
    sessionsCut: 0,
  }
  let frontier = 0
  try {
    pool.fill(o.processes + 1)
    while (s.kills < o.kills && books.violations.length === 0) {
      books.round = s.rounds
      const base = Math.max(0, frontier - o.overlap)
      const plan = Array.from({ length: o.processes }, () => ({
        start: base + between(0, o.overlap),
        inflight: o.inflight ?? between(1, o.maxInflight),
        delay: between(o.minDelayMs, o.maxDelayMs),
      }))
      try {
        const killed = await killRound(pool, targetArg, target, plan)
        s.rounds++
        s.kills += killed.length
        const highest = await checkRound(books, reader, pool, targetArg, killed, s)
        frontier = Math.max(frontier, highest + 1)
      } catch (e) {
        // A process that hung or failed: reported like any violation, with the seed.
        books.flag('unexpected', (e as Error).message)
      }
      if (o.log && s.rounds % (o.every ?? 25) === 0)
        o.log(`${target.backend}: ${s.kills} kills, ${s.resolved} resolved, ${s.recovered} recovered`)
    }
    const totals = await finalCheck(books, reader)
    return {
      backend: target.backend,
      seed: o.seed,
      ...s,
      dispatches: totals.rows,
      intents: totals.intents,
      counts: books.counts(),
      violations: books.violations.slice(0, 20).map((v) => `round ${v.round}: ${v.kind}: ${v.message}`),
      ms: Date.now() - t0,
    }
  } finally {
    await pool.end()
    await reader.close()
  }
}

/** Step 1: the round's processes open the journal, dispatch from their starts and are killed. */
async function killRound(
  pool: Pool,
  targetArg: string,
  target: JournalTarget,
  plan: { start: number; inflight: number; delay: number }[],
): Promise<Killed[]> {
  const procs: Proc[] = []
  for (const _ of plan) procs.push(await pool.take())
  // The next round's processes load while this one runs.
  pool.fill(plan.length + 1)
  const marks = procs.map((p) => p.lines.length)
  await Promise.all(procs.map((p) => p.ask({ c: 'open', target: targetArg }, 'ready')))
  return Promise.all(
    procs.map(async (p, i) => {
      const { start, inflight, delay } = plan[i]!
      let sessions: number[] = []
      p.send({ c: 'go', start, inflight })
      const timer = setTimeout(() => {
        try {
          sessions = target.sessionsOf(p.pid)
        } catch {
          // It ended on its own before its kill: flagged below by its signal.
        }
        p.kill()
      }, delay)
      const { signal } = await p.exited
      clearTimeout(timer)
      await target.sessionsGone(sessions)
      return { lines: p.lines.slice(marks[i]), sessions, signal }
    }),
  )
}

/** Steps 2 to 4; returns the highest receipt number started. */
async function checkRound(
  books: Books,
  reader: Reader,
  pool: Pool,
  targetArg: string,
  killed: Killed[],
  s: {
    midRunRounds: number
    started: number
    resolved: number
    replayed: number
    recovered: number
    foldedFromLedger: number
    unrecordedAtKill: number
    uncounted: number
    sessionsCut: number
  },
): Promise<number> {
  const started = new Set<string>()
  const invoked = new Set<string>()
  const resolved: Resolved[] = []
  for (const k of killed) {
    if (k.signal !== 'SIGKILL') books.flag('unexpected', `a dispatcher ended by ${k.signal}, not our SIGKILL`)
    s.sessionsCut += k.sessions.length
    for (const l of k.lines) {
      if (l.t === 'error') books.flag('unexpected', `dispatch of ${l.r}: ${l.code} ${l.message}`)
      if (l.t === 'started') started.add(l.r)
      if (l.t === 'invoked') invoked.add(l.r)
      if (l.t === 'resolved') resolved.push(l)
    }
  }
  s.started += killed.reduce((n, k) => n + k.lines.filter((l) => l.t === 'started').length, 0)
  s.resolved += resolved.length
  for (const l of resolved) {
    if (!l.admitted || l.hooks !== 1) books.flag('unexpected', `${l.r}: admitted ${l.admitted}, ${l.hooks} hooks`)
    else if (l.o === 'conflict') books.flag('changed', `${l.r}: a replay conflicts with the recorded result`)
    else if (l.o !== 'recorded' && l.o !== 'replayed') books.flag('unexpected', `${l.r}: outcome ${l.o}`)
    if (l.o === 'replayed') s.replayed++
    if (l.d !== books.expected(l.r).dispatchId)
      books.flag('changed', `${l.r}: dispatch id differs from its recomputation`)
    books.receipt(l.r, l.receipt, 'the resolved receipt')
  }
  const ids = [...started].map((rid) => books.expected(rid).dispatchId)

  // 2. the journal as the kills left it
  const integrityBefore = await reader.integrity()
  if (integrityBefore !== 'ok') books.flag('integrity', `after the kills: ${integrityBefore}`)
  const before = await reader.rowsOf(ids)
  const beforeById = new Map(before.rows.map((r) => [r.dispatch_id, r]))
  books.kept(resolved, beforeById, 'after the kills')
  const unfinished = await reader.unfinished()
  for (const r of unfinished)
    // One attempt per killed process that began it at most (PostgreSQL: a
    // process that took over a killed one's identity spent its own).
    if (r.state !== 'checkpointed' || r.attempts < 1 || r.attempts > killed.length)
      books.flag('unexpected', `${r.receipt_id} left ${r.state} with ${r.attempts} attempts by the kill`)
  s.unrecordedAtKill += ids.filter((id) => !beforeById.has(id)).length

  // 3. a fresh process recovers
  const recoverer = await pool.take()
  const rec = (await recoverer.ask({ c: 'recover', target: targetArg }, 'recovered')) as Extract<
    Line,
    { t: 'recovered' }
  >
  pool.give(recoverer)
  if (!rec.integrity) books.flag('integrity', `the journal's integrity(): ${rec.messages.join('; ')}`)
  checkRecovery(books, rec.report, unfinished, started, beforeById, new Set(resolved.map((l) => l.d)), s)
  // A kill between an attempt's start and its record left it begun: a
  // checkpointed row, or (a checkpoint held back until its record) only the
  // attempt in the process's ledger, which recover() folds in.
  if (rec.report.outcomes.length > 0) s.midRunRounds++
  // An attempt a killed process began counts once its identity is recovered: as a failure row,
  // folded from the process's ledger (SQLite), or as the attempt the server counted before the
  // call, which recover() then passes (PostgreSQL: completed under a later attempt than the
  // row held after the kills). Without either, recover() ran it again
  // under the same attempt, which is right only if the provider never ran in the killed process.
  const failed = await reader.failedOf(rec.report.outcomes.map((x) => x.dispatchId))
  const attemptsAtKill = new Map(unfinished.map((r) => [r.dispatch_id, r.attempts]))
  for (const x of rec.report.outcomes) {
    const rid = beforeById.get(x.dispatchId)?.receipt_id
    if (failed.has(x.dispatchId) || (x.receipt?.attempt ?? 0) > (attemptsAtKill.get(x.dispatchId) ?? 1)) continue
    s.uncounted++
    if (rid === undefined) books.flag('unexpected', `${x.dispatchId} was folded from a ledger without a failure row`)
    else if (invoked.has(rid))
      books.flag(
        'unexpected',
        `${rid}: a killed process invoked its provider, yet recover() completed it under attempt ${x.receipt?.attempt} with no failed attempt`,
      )
  }

  // 4. the journal after recovery
  const after = await reader.rowsOf(ids)
  const owned = new Map<string, string[]>()
  for (const i of after.intents) owned.set(i.dispatch_id, [...(owned.get(i.dispatch_id) ?? []), i.intent_id])
  for (const r of after.rows) books.finalRow(r, owned.get(r.dispatch_id) ?? [], 'after recovery')
  books.kept(resolved, new Map(after.rows.map((r) => [r.dispatch_id, r])), 'after recovery')
  const t = await reader.totals()
  if (t.notFinal !== 0) books.flag('unrecovered', `${t.notFinal} rows not final after recover()`)
  if (t.receipts !== t.rows) books.flag('duplicated', `${t.rows} rows for ${t.receipts} receipts`)
  if (t.intentIds !== t.intents) books.flag('duplicated', `${t.intents} intent rows for ${t.intentIds} intent ids`)
  if (t.intents !== t.rows) books.flag('duplicated', `${t.intents} intent rows for ${t.rows} one-intent dispatches`)
  // At most one failed attempt per identity a kill cut short (each is recovered once).
  if (t.failures > s.recovered) books.flag('unexpected', `${t.failures} failure rows for ${s.recovered} recovered`)
  const integrityAfter = await reader.integrity()
  if (integrityAfter !== 'ok') books.flag('integrity', `after recovery: ${integrityAfter}`)
  return Math.max(-1, ...[...started].map((rid) => Number(rid.slice(1))))
}

/** Step 3's report: the checkpointed rows oldest first, then attempts folded from the ledgers, all recorded. */
function checkRecovery(
  books: Books,
  report: RecoverReport,
  unfinished: { dispatch_id: string; receipt_id: string }[],
  started: Set<string>,
  beforeById: Map<string, { receipt_id: string }>,
  resolvedIds: Set<string>,
  s: { recovered: number; foldedFromLedger: number },
): void {
  if (report.skipped !== 0) books.flag('unrecovered', `recover() skipped ${report.skipped}`)
  const ids = report.outcomes.map((x) => x.dispatchId)
  if (
    !same(
      ids.slice(0, unfinished.length),
      unfinished.map((r) => r.dispatch_id),
    )
  )
    books.flag('unrecovered', 'recover() did not complete the checkpointed rows first, oldest first')
  const begun = new Map(
    [...started]
      .map((rid) => [books.expected(rid).dispatchId, rid] as const)
      .filter(([id]) => !beforeById.has(id) && !resolvedIds.has(id)),
  )
  const ridOf = new Map([...unfinished.map((r) => [r.dispatch_id, r.receipt_id] as const), ...begun])
  for (const id of ids.slice(unfinished.length))
    if (!begun.has(id)) books.flag('unexpected', `recover() completed ${id}, which no killed attempt had begun`)
  for (const x of report.outcomes) {
    const rid = ridOf.get(x.dispatchId)
    if (!rid) continue
    if (x.outcome !== 'recorded') books.flag('unrecovered', `recovery of ${rid}: ${x.outcome}`)
    else books.receipt(rid, x.receipt ?? null, 'the recovered receipt')
  }
  s.recovered += report.outcomes.length
  s.foldedFromLedger += Math.max(0, ids.length - unfinished.length)
}

/** The whole journal once, at the end: every row as `finalRow` wants it, every returned receipt present. */
async function finalCheck(books: Books, reader: Reader) {
  books.round = -1
  const all = await reader.all()
  const owned = new Map<string, string[]>()
  for (const i of all.intents) owned.set(i.dispatch_id, [...(owned.get(i.dispatch_id) ?? []), i.intent_id])
  const receipts = new Set<string>()
  for (const r of all.rows) {
    books.finalRow(r, owned.get(r.dispatch_id) ?? [], 'at the end')
    if (receipts.has(r.receipt_id)) books.flag('duplicated', `at the end: ${r.receipt_id} has two rows`)
    receipts.add(r.receipt_id)
  }
  const ids = new Set(all.rows.map((r) => r.dispatch_id))
  for (const d of books.first.keys()) if (!ids.has(d)) books.flag('lost', `at the end: ${d} is missing`)
  const integrity = await reader.integrity()
  if (integrity !== 'ok') books.flag('integrity', `at the end: ${integrity}`)
  return { rows: all.rows.length, intents: all.intents.length }
}
