// The PostgreSQL server going away while dispatches are in flight (issue 11,
// "Failure behaviour" and "Tests"), on a server of this file's own
// (support/pg_own_server.ts; the suite's shared one must not be cut). 16
// workers keep dispatching fresh receipts (children/fixture.mjs: every id a
// function of the receipt) while the server is
//   - restarted (`pg_ctl restart -m fast`: every connection cut), or
//   - stopped for longer than the journal's bounded retries, then started
//     (meanwhile a timer must keep ticking: no read sleeps on the JS thread).
// Every dispatch must either end recorded (exactly once: one row per
// identity, the receipt it resolved with) or fail coded: a failure outcome,
// or a LoopxHooksError `ERR_LOOPX_JOURNAL_UNAVAILABLE` whose message and
// stack name no connection string, host or port. Nothing resolved is lost
// (the journal is read with an independent client once the server is back),
// and recover() plus a re-dispatch of every receipt on the same runtime
// completes them all.
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import {
  HookRuntime,
  LoopxHooksError,
  type DispatchReceipt,
  type DispatchRequest,
  type HookOutcome,
  type Profile,
} from '../lib/index.js'
import { postgresTarget, withPg } from './support/backends'
import {
  restartOwnServer,
  startAgain,
  startOwnServer,
  stopOnly,
  stopOwnServer,
  type OwnServer,
} from './support/pg_own_server'
import { sleep } from './support/runtime'

const CHILDREN = join(__dirname, 'children')
const WORKERS = 16
/** Dispatches settled before the server goes away, and begun after it is back. */
const BEFORE = 100
const AFTER = 64
/** Longer than the journal's retries with backoff (about 15 s in all). */
const OUTAGE_MS = 20_000
/** The event-loop probe's period during the outage. */
const TICK_MS = 100

interface Fixture {
  PROFILE: Partial<Profile>
  install(runtime: HookRuntime): void
  receiptId(n: number): string
  request(rid: string): DispatchRequest
  expected(rid: string): { dispatchId: string; intentIds: string[] }
}

type Settled = { rid: string; hook: HookOutcome } | { rid: string; error: unknown }

describe('PostgreSQL server going away while dispatches are in flight', () => {
  let server: OwnServer | undefined
  let fixture: Fixture
  beforeAll(async () => {
    fixture = (await import(pathToFileURL(join(CHILDREN, 'fixture.mjs')).href)) as Fixture
    server = await startOwnServer()
  })
  afterAll(async () => {
    if (server) await stopOwnServer(server)
  })

  const startedAt = (url: string) =>
    withPg(url, async (c) => String((await c.query('SELECT pg_postmaster_start_time()::text AS t')).rows[0].t))

  /**
   * Dispatches through `outage` on a fresh journal and checks everything the
   * header promises; answers the tally of how dispatches ended.
   */
  async function dispatchThrough(label: string, outage: (srv: OwnServer) => Promise<void>) {
    const srv = server!
    const target = postgresTarget(srv.url, label)
    const runtime = await HookRuntime.open({ ...target.runtimeOptions(), profile: fixture.PROFILE })
    try {
      fixture.install(runtime)
      const settled: Settled[] = []
      let next = 0
      let inFlight = 0
      let back = false
      let afterBack = 0
      const worker = async () => {
        while (!back || afterBack < AFTER) {
          const rid = fixture.receiptId(next++)
          if (back) afterBack++
          inFlight++
          try {
            const out = await runtime.dispatch(fixture.request(rid))
            expect(out.hooks, rid).toHaveLength(1)
            settled.push({ rid, hook: out.hooks[0]! })
          } catch (error) {
            settled.push({ rid, error })
            // The server is away: do not spin through receipts while it is.
            await sleep(20)
          } finally {
            inFlight--
          }
        }
      }
      const workers = Array.from({ length: WORKERS }, worker)
      while (settled.length < BEFORE) await sleep(5)
      const before = await startedAt(srv.url)
      const inFlightAtOutage = inFlight
      await outage(srv)
      back = true
      await Promise.all(workers)
      expect(await startedAt(srv.url), 'the server did go away').not.toBe(before)
      expect(inFlightAtOutage, 'dispatches in flight when the server went away').toBeGreaterThan(0)
      expect(settled).toHaveLength(next)

      // Each one resolved recorded (or replayed by a retry of its own identity), failed as an outcome, or threw coded.
      const secrets = [srv.url, '127.0.0.1', 'postgres://', String(srv.port)]
      const resolved = new Map<string, DispatchReceipt>()
      const tally = { dispatches: next, inFlightAtOutage, recorded: 0, failedOutcome: 0, unavailable: 0, recovered: 0 }
      for (const s of settled) {
        const e = fixture.expected(s.rid)
        if ('hook' in s) {
          expect(s.hook.dispatchId, s.rid).toBe(e.dispatchId)
          if (s.hook.outcome === 'failed') {
            expect(s.hook.failureCode, `${s.rid}: a failure outcome carries its code`).not.toBeNull()
            expect(s.hook.receipt, s.rid).toBeNull()
            tally.failedOutcome++
            continue
          }
          expect(['recorded', 'replayed'], `${s.rid}: ${JSON.stringify(s.hook)}`).toContain(s.hook.outcome)
          expect(s.hook.receipt?.status, s.rid).toBe('proposed')
          expect(s.hook.receipt?.intent_ids, s.rid).toEqual(e.intentIds)
          resolved.set(e.dispatchId, s.hook.receipt!)
          tally.recorded++
        } else {
          expect(s.error, `${s.rid}: ${String(s.error)}`).toBeInstanceOf(LoopxHooksError)
          const err = s.error as LoopxHooksError
          expect(err.code, `${s.rid}: ${err.message}`).toBe('ERR_LOOPX_JOURNAL_UNAVAILABLE')
          const text = JSON.stringify({ message: err.message, stack: err.stack, code: err.code })
          for (const secret of secrets) expect(text, `${s.rid}: the error names the server`).not.toContain(secret)
          tally.unavailable++
        }
      }
      expect(tally.recorded, 'dispatches recorded around the outage').toBeGreaterThan(BEFORE / 2)

      // Nothing resolved is lost: the journal once the server is back.
      const after = await target.readRaw()
      expect(after.integrity).toBe('ok')
      const rowOf = new Map(after.rows.map((r) => [r.dispatch_id, r]))
      expect(rowOf.size, 'one row per identity').toBe(after.rows.length)
      for (const [id, receipt] of resolved) {
        const row = rowOf.get(id)
        expect(row?.state, `${receipt.receipt_id} resolved but not final after the outage`).toBe('proposed')
        expect(JSON.parse(row!.receipt!), receipt.receipt_id).toEqual(receipt)
      }
      expect(new Set(after.intents.map((i) => i.intent_id)).size, 'no intent twice').toBe(after.intents.length)

      // recover() and a re-dispatch of every receipt on the same runtime complete them all.
      const report = await runtime.recover()
      expect(report.skipped).toBe(0)
      for (const o of report.outcomes) expect(o.outcome, o.dispatchId).toBe('recorded')
      tally.recovered = report.outcomes.length
      for (let n = 0; n < next; n++) {
        const rid = fixture.receiptId(n)
        const e = fixture.expected(rid)
        const hook = (await runtime.dispatch(fixture.request(rid))).hooks[0]!
        expect(['recorded', 'replayed'], `${rid} after the outage: ${JSON.stringify(hook)}`).toContain(hook.outcome)
        expect(hook.receipt?.intent_ids, rid).toEqual(e.intentIds)
        const first = resolved.get(e.dispatchId)
        if (first)
          expect({ outcome: hook.outcome, receipt: hook.receipt }, rid).toEqual({ outcome: 'replayed', receipt: first })
      }
      const final = await target.readRaw()
      expect(final.integrity).toBe('ok')
      expect(final.rows.map((r) => r.state).filter((s) => s !== 'proposed')).toEqual([])
      expect(final.rows).toHaveLength(next)
      expect(new Set(final.intents.map((i) => i.intent_id)).size).toBe(next)
      expect(final.intents).toHaveLength(next)
      expect(await runtime.journal.integrity()).toEqual({ ok: true, messages: [] })
      console.log(`pg ${label}: ${JSON.stringify(tally)}`)
      return tally
    } finally {
      await runtime.close()
      await target.cleanup()
    }
  }

  it('a fast restart: each dispatch ends recorded exactly once or fails coded; none lost; recover and a re-dispatch complete them', async () => {
    await dispatchThrough('restart', (srv) => restartOwnServer(srv))
  }, 120_000)

  it('an outage longer than the retries: dispatches in flight fail coded, none is lost, the event loop keeps running, and the same runtime completes them once the server is back', async () => {
    let ticks = 0
    let outageMs = 0
    const tally = await dispatchThrough('outage', async (srv) => {
      await stopOnly(srv)
      const ticker = setInterval(() => ticks++, TICK_MS)
      const from = Date.now()
      await sleep(OUTAGE_MS)
      outageMs = Date.now() - from
      clearInterval(ticker)
      await startAgain(srv)
    })
    console.log(`pg outage: ${ticks} ticks of a ${TICK_MS} ms timer in ${outageMs} ms`)
    // The dispatches in flight when it went away outlive the write retries
    // (writeRetryMs, 15 s by default) and fail coded; none waits for the server.
    expect(tally.unavailable + tally.failedOutcome, 'some dispatch outlived the retries').toBeGreaterThan(0)
    // 16 workers kept dispatching into the dead server all along. A read that
    // slept through its retries on the JS thread held it for ~1.6 s per
    // dispatch, so a 100 ms timer ticked a few times in 20 s; reads that fail
    // at once, retried with timers, leave it ticking. A quarter of the
    // possible ticks is the bar (a loaded machine delays timers, never by 4x).
    expect(ticks, `ticks of a ${TICK_MS} ms timer in a ${outageMs} ms outage`).toBeGreaterThan(outageMs / TICK_MS / 4)
  }, 180_000)
})
