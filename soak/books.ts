// What the soak knows independently of the journal, and the checks that
// compare the two: the identities every receipt must have (recomputed by
// children/fixture.mjs from the identity rules), the first receipt each
// dispatch returned, and the violations found, by kind.
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { isDeepStrictEqual } from 'node:util'

import type { DispatchReceipt } from '../lib/index.js'
import type { Row } from './reader'

export type ViolationKind = 'lost' | 'duplicated' | 'changed' | 'integrity' | 'unrecovered' | 'unexpected'

export interface Violation {
  kind: ViolationKind
  round: number
  message: string
}

interface Fixture {
  expected(rid: string): { dispatchId: string; intentIds: string[] }
}

const FIXTURE = join(dirname(fileURLToPath(import.meta.url)), '..', '__test__', 'children', 'fixture.mjs')

export async function loadFixture(): Promise<Fixture> {
  return (await import(pathToFileURL(FIXTURE).href)) as Fixture
}

/** Equal as JSON values (member order aside). */
export const same = (a: unknown, b: unknown) => isDeepStrictEqual(a, b)

export class Books {
  readonly violations: Violation[] = []
  /** Every receipt a dispatch returned first (resolved or recovered), by dispatch id. */
  readonly first = new Map<string, DispatchReceipt>()
  readonly #expected = new Map<string, { dispatchId: string; intentIds: string[] }>()
  round = 0

  constructor(readonly fixture: Fixture) {}

  expected(rid: string): { dispatchId: string; intentIds: string[] } {
    let e = this.#expected.get(rid)
    if (!e) this.#expected.set(rid, (e = this.fixture.expected(rid)))
    return e
  }

  flag(kind: ViolationKind, message: string): void {
    this.violations.push({ kind, round: this.round, message })
  }

  /** A receipt some dispatch returned for `rid`: ids as recomputed, and equal to the identity's first receipt. */
  receipt(rid: string, receipt: DispatchReceipt | null, what: string): void {
    const e = this.expected(rid)
    if (receipt?.status !== 'proposed') return this.flag('unexpected', `${what} of ${rid}: status ${receipt?.status}`)
    if (receipt.dispatch_id !== e.dispatchId || !same(receipt.intent_ids, e.intentIds))
      return this.flag('changed', `${what} of ${rid}: ids differ from their recomputation from the receipt`)
    const earlier = this.first.get(e.dispatchId)
    if (!earlier) this.first.set(e.dispatchId, receipt)
    else if (!same(earlier, receipt)) this.flag('changed', `${what} of ${rid}: a receipt other than the first one`)
  }

  /**
   * A final row as the journal holds it: its id is the recomputation from
   * its receipt id, its receipt the identity's first one, its intents exactly
   * the receipt's. `intentsOf` holds the intent rows owned by the row's id.
   */
  finalRow(row: Row, intentsOf: string[], what: string): void {
    const e = this.expected(row.receipt_id)
    if (row.state !== 'proposed' || row.receipt === null)
      return this.flag('unrecovered', `${what}: ${row.receipt_id} is ${row.state}, not final`)
    if (row.dispatch_id !== e.dispatchId)
      return this.flag('changed', `${what}: ${row.receipt_id}'s dispatch id differs from its recomputation`)
    const receipt = JSON.parse(row.receipt) as DispatchReceipt
    if (!same(receipt.intent_ids, e.intentIds) || !same(intentsOf, e.intentIds))
      return this.flag('changed', `${what}: ${row.receipt_id}'s intents differ from their recomputation`)
    const earlier = this.first.get(row.dispatch_id)
    if (earlier && !same(earlier, receipt))
      this.flag('changed', `${what}: ${row.receipt_id}'s receipt differs from the one its dispatch returned first`)
  }

  /** Every resolved dispatch is in `rows` (by dispatch id), final, with the receipt it resolved with. */
  kept(
    resolved: { r: string; d: string; receipt: DispatchReceipt | null }[],
    rows: Map<string, Row>,
    when: string,
  ): void {
    for (const l of resolved) {
      const row = rows.get(l.d)
      if (row?.state !== 'proposed' || row.receipt === null)
        this.flag('lost', `${when}: ${l.r} resolved but is ${row?.state ?? 'missing'}`)
      else if (!same(JSON.parse(row.receipt), l.receipt))
        this.flag('changed', `${when}: ${l.r}'s receipt differs from the one its dispatch resolved with`)
    }
  }

  counts(): Record<ViolationKind, number> {
    const c = { lost: 0, duplicated: 0, changed: 0, integrity: 0, unrecovered: 0, unexpected: 0 }
    for (const v of this.violations) c[v.kind]++
    return c
  }
}
