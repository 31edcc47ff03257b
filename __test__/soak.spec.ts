// The kill soak in short, on both backends (soak/engine.ts, the code `npm run
// soak` runs at scale): several processes dispatch overlapping receipts into
// one journal and are SIGKILLed at seeded random moments, a fresh process
// recovers after each round, and nothing resolved is lost, nothing is
// duplicated or changed, and integrity holds after every round and at the end.
// LOOPX_SOAK_SEED replays a failing run's choices (the seed is in the message).
// Also: the checks themselves catch a lost, changed or unfinished record.
import { afterAll, describe, expect, it } from 'vitest'

import type { DispatchReceipt } from '../lib/index.js'
import { Books, loadFixture } from '../soak/books'
import { DEFAULTS, runSoak } from '../soak/engine'
import type { Row } from '../soak/reader'
import { summaryLine } from '../soak/summary'
import { BACKENDS, Targets, type Backend } from './support/backends'

const KILLS = 40
const PROCESSES = 4
const seed = () => Number(process.env.LOOPX_SOAK_SEED ?? Math.floor(Math.random() * 2 ** 32))

describe.each(BACKENDS.map((b): [string, Backend] => [b.name, b]))('kill soak on %s', (_, backend) => {
  const targets = new Targets(backend)
  afterAll(() => targets.cleanup())

  it(`${KILLS} SIGKILLs of ${PROCESSES} processes dispatching overlapping receipts: 0 lost, duplicated or changed`, async () => {
    const s = await runSoak(targets.fresh('soak'), { ...DEFAULTS, kills: KILLS, processes: PROCESSES, seed: seed() })
    console.log(summaryLine(s))
    expect(s.violations, summaryLine(s)).toEqual([])
    expect(s.kills).toBeGreaterThanOrEqual(KILLS)
    // Not vacuous: dispatches resolved before kills, kills landed between checkpoint and final record, and replays happened.
    expect(s.resolved, summaryLine(s)).toBeGreaterThan(0)
    expect(s.midRunRounds, summaryLine(s)).toBeGreaterThan(0)
    expect(s.recovered, summaryLine(s)).toBeGreaterThan(0)
    expect(s.replayed, summaryLine(s)).toBeGreaterThan(0)
    // The wait for a killed client's server sessions saw them (PostgreSQL); SQLite has none.
    expect(s.sessionsCut > 0).toBe(backend.name === 'postgres')
  }, 300_000)
})

describe('the soak checks', () => {
  async function fixtureBooks() {
    const books = new Books(await loadFixture())
    const e = books.expected('r1')
    const receipt = {
      schema_version: 'loopx_post_writeback_dispatch_receipt_v0',
      dispatch_id: e.dispatchId,
      receipt_id: 'r1',
      status: 'proposed',
      attempt: 1,
      intent_ids: e.intentIds,
    } as unknown as DispatchReceipt
    const row: Row = {
      seq: 1,
      dispatch_id: e.dispatchId,
      state: 'proposed',
      attempts: 1,
      receipt_id: 'r1',
      receipt: JSON.stringify(receipt),
    }
    return { books, e, receipt, row, resolved: [{ r: 'r1', d: e.dispatchId, receipt }] }
  }

  it('accept a journal that kept what resolved', async () => {
    const { books, e, receipt, row, resolved } = await fixtureBooks()
    books.receipt('r1', receipt, 'resolved')
    books.kept(resolved, new Map([[e.dispatchId, row]]), 'after')
    books.finalRow(row, e.intentIds, 'after')
    expect(books.violations).toEqual([])
  })

  it('catch a resolved dispatch missing or unfinished (lost)', async () => {
    const { books, e, row, resolved } = await fixtureBooks()
    books.kept(resolved, new Map(), 'after')
    books.kept(resolved, new Map([[e.dispatchId, { ...row, state: 'checkpointed', receipt: null }]]), 'after')
    expect(books.counts()).toMatchObject({ lost: 2 })
  })

  it('catch a receipt other than the first, and ids other than their recomputation (changed)', async () => {
    const { books, e, receipt, row, resolved } = await fixtureBooks()
    books.receipt('r1', receipt, 'resolved')
    books.receipt('r1', { ...receipt, attempt: 2 }, 'replayed')
    books.kept(
      resolved,
      new Map([[e.dispatchId, { ...row, receipt: JSON.stringify({ ...receipt, attempt: 2 }) }]]),
      'after',
    )
    books.finalRow({ ...row, dispatch_id: 'pwh_other' }, e.intentIds, 'after')
    books.finalRow(row, [...e.intentIds, 'pwi_extra'], 'after')
    books.receipt('r1', { ...receipt, intent_ids: ['pwi_other'] }, 'resolved')
    expect(books.counts()).toMatchObject({ changed: 5, lost: 0 })
  })

  it('catch a row left unfinished after recovery', async () => {
    const { books, e, row } = await fixtureBooks()
    books.finalRow({ ...row, state: 'checkpointed', receipt: null }, e.intentIds, 'after')
    expect(books.counts()).toMatchObject({ unrecovered: 1 })
  })
})
