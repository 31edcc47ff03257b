// Crash safety (issue: "a child node process dispatching in a loop is killed
// with SIGKILL at random moments, at least 50 times; after each kill a new
// process opens the journal, runs recover(), and the test shows that every
// dispatch whose promise had resolved is there, every checkpointed one
// completes with the same ids, no intent appears twice, and
// PRAGMA integrity_check is ok"; issue 11: the same on PostgreSQL).
//
// On each backend (support/backends.ts), one journal accumulates across all kills. Each round:
//   1. a dispatcher child (children/crash-dispatcher.mjs) dispatches receipts
//      8 at a time and prints a line as each dispatch promise resolves; it is
//      SIGKILLed 5..150 ms after it is ready;
//   2. the parent reads the journal as the crash left it with an independent
//      client (better-sqlite3 read-only / node-postgres): every resolved
//      dispatch must already be final with the printed receipt, and the
//      unfinished (checkpointed) rows are noted;
//   3. a fresh recovery child (children/crash-recover.mjs) runs recover();
//   4. the parent checks the whole journal: every row final and `proposed`,
//      ids equal to their recomputation from the receipt, the recovered rows
//      are the ones that were checkpointed, one intent row per intent id,
//      integrity ok (SQLite's integrity_check; on PostgreSQL our invariant
//      SQL) and the journal's own integrity() verdict ok.
// The next round starts a few receipts back, so replays of final identities
// and re-dispatches of never-checkpointed ones happen too.
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import type { DispatchReceipt, RecoverReport } from '../lib/index.js'
import { BACKENDS, Targets, type Backend } from './support/backends'

const CHILDREN = join(__dirname, 'children')
const KILLS = 60
const INFLIGHT = 8
/** How far back the next round starts (more than INFLIGHT, so it reaches before the crash's unfinished work). */
const OVERLAP = 12

interface Fixture {
  expected(rid: string): { dispatchId: string; intentIds: string[] }
}

type Line =
  | { t: 'ready' }
  | { t: 'started'; r: string }
  | {
      t: 'resolved'
      r: string
      admitted: boolean
      hooks: number
      d: string
      o: string
      receipt: DispatchReceipt | null
    }
  | { t: 'recovered'; report: RecoverReport; integrity: boolean; messages: string[] }
  | { t: 'error'; r?: string; code: string | null; message: string }

interface ChildRun {
  lines: Line[]
  code: number | null
  signal: NodeJS.Signals | null
  stderr: string
  /** ms from `ready` to the kill, when killed */
  killDelay: number | null
  /** What `beforeKill` returned just before the SIGKILL (the journal's server sessions of the child). */
  sessions: number[]
}

/**
 * Runs a child script; with `killAfterReady`, SIGKILLs it that many ms after
 * its `ready` line, calling `beforeKill(pid)` synchronously just before.
 * Resolves once its pipes are drained.
 */
function runChild(
  script: string,
  args: string[],
  killAfterReady?: number,
  beforeKill: (pid: number) => number[] = () => [],
): Promise<ChildRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(CHILDREN, script), ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
    const lines: Line[] = []
    let pending = ''
    let stderr = ''
    let killDelay: number | null = null
    let sessions: number[] = []
    const guard = setTimeout(() => child.kill('SIGKILL'), 60_000)
    child.stdout.setEncoding('utf8')
    child.stdout.on('data', (chunk: string) => {
      pending += chunk
      let nl: number
      while ((nl = pending.indexOf('\n')) >= 0) {
        const text = pending.slice(0, nl)
        pending = pending.slice(nl + 1)
        const line = JSON.parse(text) as Line
        lines.push(line)
        if (line.t === 'ready' && killAfterReady !== undefined) {
          killDelay = killAfterReady
          setTimeout(() => {
            sessions = beforeKill(child.pid!)
            child.kill('SIGKILL')
          }, killAfterReady)
        }
      }
    })
    child.stderr.setEncoding('utf8')
    child.stderr.on('data', (chunk: string) => (stderr += chunk))
    child.on('error', reject)
    child.on('close', (code, signal) => {
      clearTimeout(guard)
      // A partial last line is a line the kill cut short: never a resolved one,
      // since each line is written with one synchronous write of a few hundred bytes.
      resolve({ lines, code, signal, stderr, killDelay, sessions })
    })
  })
}

describe.each(BACKENDS.map((b): [string, Backend] => [b.name, b]))('crash safety under SIGKILL on %s', (_, backend) => {
  const targets = new Targets(backend)
  let fixture: Fixture
  beforeAll(async () => {
    fixture = (await import(pathToFileURL(join(CHILDREN, 'fixture.mjs')).href)) as Fixture
  })
  afterAll(() => targets.cleanup())

  it(`survives ${KILLS} SIGKILLs of a dispatching process, recovering every checkpointed dispatch`, async () => {
    const target = targets.fresh('crash')
    const targetArg = target.childArg({ synchronous: 'full' })
    const readJournal = () => target.readRaw()
    const expectedOf = new Map<string, { dispatchId: string; intentIds: string[] }>()
    const expected = (rid: string) => {
      let e = expectedOf.get(rid)
      if (!e) expectedOf.set(rid, (e = fixture.expected(rid)))
      return e
    }
    /** Every receipt a resolved dispatch promise returned, by dispatch id (all rounds). */
    const resolvedReceipts = new Map<string, DispatchReceipt>()
    const stats = {
      kills: 0,
      midRunRounds: 0,
      recovered: 0,
      foldedFromLedger: 0,
      resolved: 0,
      replayed: 0,
      started: 0,
      unrecordedAtKill: 0,
      sessionsAtKill: 0,
    }
    let start = 0

    for (let round = 0; round < KILLS; round++) {
      const delay = 5 + Math.floor(Math.random() * 146)
      const where = `round ${round} (kill ${delay} ms after ready, start r${start})`

      // 1. dispatch until killed
      const run = await runChild('crash-dispatcher.mjs', [targetArg, String(start), String(INFLIGHT)], delay, (pid) =>
        target.sessionsOf(pid),
      )
      expect(run.signal, `${where}: dispatcher must die by our SIGKILL; stderr: ${run.stderr}`).toBe('SIGKILL')
      expect(run.lines[0]?.t, where).toBe('ready')
      stats.kills++
      const errors = run.lines.filter((l) => l.t === 'error')
      expect(errors, `${where}: dispatch errors`).toEqual([])
      const started = run.lines.flatMap((l) => (l.t === 'started' ? [l.r] : []))
      const resolved = run.lines.flatMap((l) => (l.t === 'resolved' ? [l] : []))
      stats.started += started.length
      stats.resolved += resolved.length
      for (const l of resolved) {
        expect(l.admitted && l.hooks === 1, where).toBe(true)
        expect(['recorded', 'replayed'], `${where}: ${l.r}`).toContain(l.o)
        if (l.o === 'replayed') stats.replayed++
        const e = expected(l.r)
        expect(l.d, `${where}: ${l.r}`).toBe(e.dispatchId)
        expect(l.receipt?.status, `${where}: ${l.r}`).toBe('proposed')
        expect(l.receipt?.intent_ids, `${where}: ${l.r}`).toEqual(e.intentIds)
        const earlier = resolvedReceipts.get(l.d)
        if (earlier) expect(l.receipt, `${where}: ${l.r} replay differs from its first receipt`).toEqual(earlier)
        else resolvedReceipts.set(l.d, l.receipt!)
      }

      // 2. the journal as the crash left it (on PostgreSQL: once the server settled what the dead process sent)
      await target.sessionsGone(run.sessions)
      stats.sessionsAtKill += run.sessions.length
      const before = await readJournal()
      expect(before.integrity, `${where}: integrity_check after the kill`).toBe('ok')
      const beforeById = new Map(before.rows.map((r) => [r.dispatch_id, r]))
      for (const l of resolved) {
        const row = beforeById.get(l.d)
        expect(row?.state, `${where}: ${l.r} resolved but not final in the journal after the kill`).toBe('proposed')
        expect(JSON.parse(row!.receipt!), `${where}: ${l.r}`).toEqual(l.receipt)
      }
      const unfinished = before.rows.filter((r) => r.state === 'checkpointed' || r.state === 'failed')
      expect(
        unfinished.every((r) => r.state === 'checkpointed' && r.attempts === 1),
        `${where}: unfinished rows`,
      ).toBe(true)
      if (unfinished.length > 0) stats.midRunRounds++
      stats.unrecordedAtKill += started.filter((rid) => !beforeById.has(expected(rid).dispatchId)).length

      // 3. a fresh process recovers
      const rec = await runChild('crash-recover.mjs', [targetArg])
      expect(rec.code, `${where}: recovery child; stderr: ${rec.stderr}`).toBe(0)
      const report = rec.lines.find((l) => l.t === 'recovered')
      expect(report, `${where}: recovery output ${JSON.stringify(rec.lines)}`).toBeDefined()
      if (report?.t !== 'recovered') throw new Error('unreachable')
      expect({ ok: report.integrity, messages: report.messages }, `${where}: the journal's integrity()`).toEqual({
        ok: true,
        messages: [],
      })
      expect(report.report.skipped, where).toBe(0)
      // The checkpointed rows, oldest first; then the attempts the killed
      // process had begun whose checkpoints had not committed yet, which the
      // recovery process folded in from its attempt ledger: each one of a
      // receipt that was started and never resolved.
      const recoveredIds = report.report.outcomes.map((o) => o.dispatchId)
      expect(
        recoveredIds.slice(0, unfinished.length),
        `${where}: recovered the checkpointed rows, oldest first`,
      ).toEqual(unfinished.map((r) => r.dispatch_id))
      const resolvedIds = new Set(resolved.map((l) => l.d))
      const begun = new Map(
        started
          .map((rid) => [expected(rid).dispatchId, rid] as const)
          .filter(([id]) => !beforeById.has(id) && !resolvedIds.has(id)),
      )
      for (const id of recoveredIds.slice(unfinished.length)) {
        expect(begun.has(id), `${where}: recovered ${id}, which no killed attempt had begun`).toBe(true)
      }
      stats.foldedFromLedger += recoveredIds.length - unfinished.length
      for (const o of report.report.outcomes) {
        const rid = beforeById.get(o.dispatchId)?.receipt_id ?? begun.get(o.dispatchId)!
        const e = expected(rid)
        expect(o.outcome, `${where}: recovery of ${rid}`).toBe('recorded')
        expect(o.receipt?.intent_ids, `${where}: recovery of ${rid}`).toEqual(e.intentIds)
      }
      stats.recovered += report.report.outcomes.length

      // 4. the whole journal after recovery
      const after = await readJournal()
      expect(after.integrity, `${where}: integrity_check after recovery`).toBe('ok')
      // One failed attempt (producer_failed) per attempt a killed process had
      // begun and not finished: the recovery folded each from its attempt ledger.
      expect(after.failures, `${where}: failure rows`).toBe(stats.recovered)
      const notFinal = after.rows.filter((r) => r.state !== 'proposed')
      expect(notFinal, `${where}: rows not final (proposed) after recover()`).toEqual([])
      const intentOwner = new Map<string, string>()
      for (const r of after.rows) {
        const e = expected(r.receipt_id)
        const receipt = JSON.parse(r.receipt!) as DispatchReceipt
        expect(r.dispatch_id, `${where}: ${r.receipt_id}`).toBe(e.dispatchId)
        expect(receipt.dispatch_id, `${where}: ${r.receipt_id}`).toBe(e.dispatchId)
        expect(receipt.intent_ids, `${where}: ${r.receipt_id}`).toEqual(e.intentIds)
        const first = resolvedReceipts.get(r.dispatch_id)
        if (first)
          expect(receipt, `${where}: ${r.receipt_id} differs from the receipt its dispatch resolved with`).toEqual(
            first,
          )
        for (const id of receipt.intent_ids) intentOwner.set(id, r.dispatch_id)
      }
      expect(new Set(after.rows.map((r) => r.receipt_id)).size, `${where}: one row per receipt`).toBe(after.rows.length)
      expect(after.intents.length, `${where}: intent rows`).toBe(intentOwner.size)
      expect(new Set(after.intents.map((i) => i.intent_id)).size, `${where}: distinct intent ids`).toBe(
        after.intents.length,
      )
      for (const i of after.intents)
        expect(i.dispatch_id, `${where}: owner of ${i.intent_id}`).toBe(intentOwner.get(i.intent_id))
      for (const d of resolvedReceipts.keys())
        expect(
          after.rows.some((r) => r.dispatch_id === d),
          `${where}: ${d} lost`,
        ).toBe(true)

      const highest = Math.max(start - 1, ...started.map((rid) => Number(rid.slice(1))))
      start = Math.max(0, highest + 1 - OVERLAP)
    }

    const final = await readJournal()
    console.log(
      `crash on ${backend.name}: ${stats.kills} kills, ${stats.midRunRounds} with checkpointed rows at the kill, ${stats.recovered} recovered (${stats.foldedFromLedger} from the attempt ledger), ` +
        `${stats.started} dispatches started, ${stats.resolved} resolved (${stats.replayed} replays), ` +
        `${stats.unrecordedAtKill} started without a row at the kill, ${stats.sessionsAtKill} server sessions cut; journal: ${final.rows.length} dispatches, ${final.intents.length} intents`,
    )
    expect(stats.kills).toBeGreaterThanOrEqual(50)
    // Not vacuous: kills land between checkpoint and final record.
    expect(stats.midRunRounds).toBeGreaterThan(0)
    expect(stats.recovered).toBeGreaterThan(0)
    // The wait for a killed client's server sessions saw them (PostgreSQL); SQLite has none.
    expect(stats.sessionsAtKill > 0).toBe(backend.name === 'postgres')
  }, 240_000)
})
