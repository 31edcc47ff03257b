// loopx-hooks/loopx, retries, replays and the envelope: a retryable receipt
// advances the attempt on the next preflight (up to LoopX's 10,000), a batch
// mixing terminal, retried, fresh and refused hooks answers in canonical hook
// order, and the worst case of an answer is admitted against LoopX's
// 1,750,000-byte envelope before any provider runs or any receipt is written.
// Each `follows "..."` case re-expresses the LoopX test of that name
// (tests/control_plane_ts/post_writeback_hook_transaction.test.ts).
import { readdirSync } from 'node:fs'

import { afterEach, describe, expect, it } from 'vitest'

import { LoopxHooksError } from '../lib/index.js'
import {
  HOOK,
  Roots,
  evaluate,
  failureCodes,
  finalize,
  finalized,
  folderEntries,
  intentResult,
  notReturned,
  plantReceipt,
  readReceipt,
  registration,
  rejection,
  request,
  retryableReceipt,
  returned,
  type Doc,
} from './support/loopx_transaction.js'

const roots = new Roots()
afterEach(() => roots.cleanup())

const ENVELOPE = 'post-writeback hook transaction result may exceed the transport envelope'

/** `count` hooks allowed LoopX's largest result (65,536 bytes), named `<prefix>_00`... */
const wide = (prefix: string, count: number) =>
  Array.from({ length: count }, (_, i) =>
    registration(`periodic_report.${prefix}_${String(i).padStart(2, '0')}`, ['stage_completion'], 65_536),
  )

async function expectEnvelopeRefusal(req: Doc) {
  const error = await rejection(req)
  expect(error).toBeInstanceOf(LoopxHooksError)
  expect({ code: error.code, message: error.message }).toEqual({
    code: 'ERR_LOOPX_TRANSACTION_ENVELOPE',
    message: ENVELOPE,
  })
}

/** Records `hook`'s receipt (an intent, or a retryable failure) in a transaction of its own. */
async function recordAlone(root: string, hook: Doc, outcome: 'intent' | 'producer_failed', key = 'key') {
  const alone = { registrations: [hook] }
  const pre = await evaluate(request(root, alone))
  const plan = pre.provider_plan[0]!
  const sent = outcome === 'intent' ? returned(plan, intentResult(plan, key)) : notReturned(plan, 'producer_failed')
  await finalized(finalize(root, pre, [sent], alone))
  return plan
}

describe("LoopX's transaction scenarios: retries and replays", () => {
  it('follows "retryable provider failure advances the durable attempt on restart"', async () => {
    const root = roots.make()
    const pre = await evaluate(request(root))
    const plan = pre.provider_plan[0]!
    const failing = finalize(root, pre, [notReturned(plan, 'producer_failed')])
    const failed = await finalized(failing)
    expect(failed.intent_count).toBe(0)
    expect(failed.failures).toEqual([
      {
        hook_id: HOOK,
        capability_id: 'periodic-report',
        error_code: 'producer_failed',
        durable_receipt_ref: `post-writeback-hook:${plan.dispatch_id}`,
      },
    ])
    expect((await finalized(failing)).failures[0]!.error_code).toBe('producer_failed')

    const retry = await evaluate(request(root))
    const retryPlan = retry.provider_plan[0]!
    expect(retryPlan).toMatchObject({ dispatch_id: plan.dispatch_id, attempt_count: 2, retry: true })
    const recovered = await finalized(finalize(root, retry, [returned(retryPlan)]))
    expect(recovered).toMatchObject({ retried_hooks: [HOOK], intent_count: 1 })
    expect(readReceipt(root, retryPlan)).toMatchObject({ status: 'intent_recorded', attempt_count: 2 })
  })

  it('follows "an exhausted retry receipt isolates its hook before provider execution"', async () => {
    const root = roots.make()
    const registrations = [registration('periodic_report.a_exhausted'), registration('periodic_report.b_fresh')]
    const [exhausted, fresh] = (await evaluate(request(root, { registrations }))).provider_plan
    const spent = retryableReceipt(exhausted!, 10_000)
    plantReceipt(root, exhausted!, spent)

    const pre = await evaluate(request(root, { registrations }))
    expect(pre.provider_plan.map((p) => p.hook_id)).toEqual(['periodic_report.b_fresh'])
    expect(pre.dispatch).toBeNull()
    const freshPlan = pre.provider_plan[0]!
    expect(freshPlan.dispatch_id).toBe(fresh!.dispatch_id)

    const dispatch = await finalized(
      finalize(root, pre, [returned(freshPlan, intentResult(freshPlan, 'fresh-key'))], { registrations }),
    )
    expect(dispatch.invoked_count).toBe(1)
    expect(dispatch.retried_hooks).toEqual(['periodic_report.a_exhausted'])
    expect(failureCodes(dispatch)).toEqual([['periodic_report.a_exhausted', 'journal_write_failed']])
    expect(readReceipt(root, exhausted!)).toEqual(spent)
    expect(readReceipt(root, freshPlan).status).toBe('intent_recorded')
  })

  it('follows "the final admitted retry remains idempotent after response loss"', async () => {
    const root = roots.make()
    const initial = (await evaluate(request(root))).provider_plan[0]!
    plantReceipt(root, initial, retryableReceipt(initial, 9_999))

    const pre = await evaluate(request(root))
    const plan = pre.provider_plan[0]!
    expect(plan.attempt_count).toBe(10_000)
    const last = finalize(root, pre, [notReturned(plan, 'producer_failed')])
    const first = await evaluate(last)
    const again = await evaluate(last)
    expect(again.dispatch).toEqual(first.dispatch)
    expect(again.dispatch!.failures[0]!.error_code).toBe('producer_failed')
    expect(readReceipt(root, plan).attempt_count).toBe(10_000)
  })

  it('follows "mixed batch replays terminal hooks and retries only unfinished work"', async () => {
    const root = roots.make()
    const terminal = registration('periodic_report.terminal')
    const retried = registration('periodic_report.retry')
    await recordAlone(root, terminal, 'intent', 'terminal-intent')
    await recordAlone(root, retried, 'producer_failed')

    const invalid = { ...registration('periodic_report.invalid'), requested_write_scope: ['forbidden'] }
    const registrations = [registration('periodic_report.fresh'), terminal, retried, invalid]
    const pre = await evaluate(request(root, { registrations }))
    expect(pre.provider_plan.map((p) => [p.hook_id, p.attempt_count])).toEqual([
      ['periodic_report.fresh', 1],
      ['periodic_report.retry', 2],
    ])
    const outcomes = pre.provider_plan.map((p) => returned(p, intentResult(p, `${p.hook_id}-intent`)))
    const dispatch = await finalized(finalize(root, pre, outcomes, { registrations }))
    expect(dispatch).toMatchObject({
      replayed_hooks: ['periodic_report.terminal'],
      retried_hooks: ['periodic_report.retry'],
      invoked_count: 2,
      intent_count: 3,
    })
    expect(dispatch.failures[0]!.error_code).toBe('registration_or_input_rejected')
  })

  it('follows "mixed terminal and fresh hooks reduce intents in canonical hook order"', async () => {
    const root = roots.make()
    const registrations = [
      registration('periodic_report.c'),
      registration('periodic_report.b'),
      registration('periodic_report.a'),
    ]
    await recordAlone(root, registrations[1]!, 'intent', 'key-b')

    const pre = await evaluate(request(root, { registrations }))
    expect(pre.provider_plan.map((p) => p.hook_id)).toEqual(['periodic_report.a', 'periodic_report.c'])
    const outcomes = pre.provider_plan.map((p) =>
      returned(p, intentResult(p, p.hook_id === 'periodic_report.a' ? 'key-a' : 'key-c')),
    )
    const dispatch = await finalized(finalize(root, pre, outcomes, { registrations }))
    expect(dispatch.intents.map((i) => i.idempotency_key)).toEqual(['key-a', 'key-b', 'key-c'])
    expect(dispatch.replayed_hooks).toEqual(['periodic_report.b'])
  })

  it('follows "an earlier fresh hook keeps a duplicate intent key ahead of terminal replay"', async () => {
    const root = roots.make()
    const early = registration('periodic_report.a')
    const terminal = registration('periodic_report.b')
    await recordAlone(root, terminal, 'intent', 'shared-key')

    const registrations = [terminal, early]
    const pre = await evaluate(request(root, { registrations }))
    const earlyPlan = pre.provider_plan[0]!
    const dispatch = await finalized(
      finalize(root, pre, [returned(earlyPlan, intentResult(earlyPlan, 'shared-key'))], { registrations }),
    )
    expect(dispatch.intents.map((i) => i.source_receipt_id)).toEqual([earlyPlan.hook_input.receipt.event_id])
    expect(dispatch.replayed_hooks).toEqual([])
    expect(failureCodes(dispatch)).toEqual([['periodic_report.b', 'intent_key_conflict']])
  })
})

describe("LoopX's transaction scenarios: the envelope", () => {
  it('follows "result envelope admission happens before providers and durable writes"', async () => {
    const root = roots.make()
    const registrations = wide('envelope', 27)
    await expectEnvelopeRefusal(request(root, { registrations }))
    expect(folderEntries(root)).toBeNull()

    let planned = 0
    for (let offset = 0; offset < registrations.length; offset += 8) {
      const chunk = { registrations: registrations.slice(offset, offset + 8) }
      const pre = await evaluate(request(root, chunk))
      planned += pre.provider_plan.length
      const outcomes = pre.provider_plan.map((p, i) =>
        returned(
          p,
          intentResult(p, `${p.hook_id}-key`, offset + i < 24 ? { evidence: 'x'.repeat(60_000) } : undefined),
        ),
      )
      expect((await finalized(finalize(root, pre, outcomes, chunk))).intent_count).toBe(chunk.registrations.length)
    }
    expect(planned).toBe(27)
    expect(folderEntries(root)).toHaveLength(27)

    const replay = await evaluate(request(root, { registrations }))
    expect(replay.provider_plan).toEqual([])
    expect(replay.dispatch!.intent_count).toBe(27)
    expect(replay.dispatch!.replayed_hooks).toHaveLength(27)

    // Replayed intents count at their real size, a fresh hook at its budget.
    await expectEnvelopeRefusal(request(root, { registrations: [...registrations, ...wide('mixed_fresh', 5)] }))
    expect(folderEntries(root)).toHaveLength(27)
  })
})

describe('only the two-phase protocol: the envelope', () => {
  it('27 hooks allowed 65,536 bytes each are refused at preflight, nothing written; 26 are admitted', async () => {
    const root = roots.make()
    await expectEnvelopeRefusal(request(root, { registrations: wide('hook', 27) }))
    expect(readdirSync(root)).toEqual([])
    const admitted = await evaluate(request(root, { registrations: wide('hook', 26) }))
    expect(admitted.provider_plan).toHaveLength(26)
    expect(readdirSync(root)).toEqual([])
  })

  it('a chunk of 8 hooks each returning a 60,000-byte payload records all 8, payloads whole', async () => {
    const root = roots.make()
    const chunk = { registrations: wide('chunk', 8) }
    const pre = await evaluate(request(root, chunk))
    expect(pre.provider_plan).toHaveLength(8)
    const evidence = (i: number) => String(i).repeat(60_000)
    const outcomes = pre.provider_plan.map((p, i) =>
      returned(p, intentResult(p, `chunk-${i}`, { evidence: evidence(i) })),
    )
    const dispatch = await finalized(finalize(root, pre, outcomes, chunk))
    expect(dispatch).toMatchObject({ invoked_count: 8, intent_count: 8, failures: [] })
    expect(dispatch.intents.map((i) => i.payload)).toEqual(pre.provider_plan.map((_, i) => ({ evidence: evidence(i) })))
    expect(pre.provider_plan.map((p) => readReceipt(root, p).status)).toEqual(Array(8).fill('intent_recorded'))
    expect(folderEntries(root)).toHaveLength(8)
  })
})
