// loopx-hooks/loopx, the sidecar folder: the receipts a finalize writes under
// `<runtime_root>/goals/<goal>/post_writeback_hooks/`, LoopX's lock files
// (`<file>.ts-effect.lock`, held here by hand as LoopX's writer holds them)
// within the finalize's 1,000 ms lock budget, two finalizes racing for one
// receipt, and a sidecar that changed between preflight and finalize. Each
// `follows "..."` case re-expresses the LoopX test of that name
// (tests/control_plane_ts/post_writeback_hook_transaction.test.ts).
import { spawnSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

import { afterEach, describe, expect, it } from 'vitest'

import {
  HOOK,
  Roots,
  appears,
  evaluate,
  failureCodes,
  finalize,
  finalized,
  folderEntries,
  holdLock,
  intentResult,
  notApplicableResult,
  notReturned,
  plantReceipt,
  readReceipt,
  receiptFile,
  receiptFolder,
  registration,
  request,
  retryableReceipt,
  returned,
  source,
  type Dispatch,
  type Doc,
} from './support/loopx_transaction.js'

const roots = new Roots()
afterEach(() => roots.cleanup())

const hooks = (...ids: string[]) => ids.map((id) => registration(`periodic_report.${id}`))

describe("LoopX's transaction scenarios: the sidecar folder", () => {
  it('follows "durable finalize writes terminal sidecars and one preflight replays the batch"', async () => {
    const root = roots.make()
    const pre = await evaluate(request(root))
    const first = await finalized(finalize(root, pre, [returned(pre.provider_plan[0]!)]))
    expect(first).toMatchObject({ intent_count: 1, invoked_count: 1 })
    expect(folderEntries(root)).toEqual([`${pre.provider_plan[0]!.dispatch_id}.json`])
    expect(readReceipt(root, pre.provider_plan[0]!)).toMatchObject({ status: 'intent_recorded', attempt_count: 1 })

    const replay = await evaluate(request(root))
    expect(replay.provider_plan).toEqual([])
    expect(replay.dispatch).toMatchObject({ invoked_count: 0, replayed_hooks: [HOOK], intents: first.intents })
  })

  it('follows "concurrent finalize uses terminal CAS for exact replay and divergent conflict"', async () => {
    const root = roots.make()
    const pre = await evaluate(request(root))
    const plan = pre.provider_plan[0]!
    const withKey = (key: string) => finalize(root, pre, [returned(plan, intentResult(plan, key))])
    const both = await Promise.all([finalized(withKey('intent-a')), finalized(withKey('intent-b'))])
    const winner = both.find((d) => d.intent_count === 1)
    const loser = both.find((d) => d.intent_count === 0)
    expect(winner).toBeDefined()
    expect(loser).toBeDefined()
    expect(loser!.failures[0]!.error_code).toBe('receipt_conflict')
    expect(loser!.replayed_hooks).toEqual([])

    const exact = await finalized(withKey(winner!.intents[0]!.idempotency_key as string))
    expect(exact).toMatchObject({ intent_count: 1, intents: winner!.intents, replayed_hooks: [HOOK] })
  })

  it('follows "exact finalize replay admits deeply nested results without collapsing siblings"', async () => {
    const root = roots.make()
    const registrations = [
      registration('periodic_report.a_deep', ['stage_completion'], 65_536),
      registration('periodic_report.b_sibling'),
    ]
    const pre = await evaluate(request(root, { registrations }))
    const [deep, sibling] = pre.provider_plan
    let payload: Doc = { leaf: true }
    for (let depth = 0; depth < 2_000; depth++) payload = { next: payload }
    const req = finalize(
      root,
      pre,
      [
        returned(deep!, intentResult(deep!, 'deep-key', payload)),
        returned(sibling!, intentResult(sibling!, 'sibling-key')),
      ],
      { registrations },
    )
    const first = await finalized(req)
    const bytes = () => [deep!, sibling!].map((p) => readFileSync(receiptFile(root, p), 'utf8'))
    const firstBytes = bytes()
    const replay = await finalized(req)
    expect(first).toMatchObject({ intent_count: 2, failures: [] })
    expect(replay).toMatchObject({ intent_count: 2, failures: [] })
    expect(JSON.stringify(replay.intents)).toBe(JSON.stringify(first.intents))
    expect(replay.replayed_hooks).toEqual(['periodic_report.a_deep', 'periodic_report.b_sibling'])
    expect(bytes()).toEqual(firstBytes)
  })

  it('follows "an earlier failed receipt write still reserves its duplicate intent key"', async () => {
    const root = roots.make()
    const registrations = hooks('a_locked', 'b_duplicate')
    const pre = await evaluate(request(root, { registrations }))
    const [locked, duplicate] = pre.provider_plan
    const lock = holdLock(receiptFile(root, locked!))
    try {
      const started = Date.now()
      const dispatch = await finalized(
        finalize(
          root,
          pre,
          [
            returned(locked!, intentResult(locked!, 'shared-key')),
            returned(duplicate!, intentResult(duplicate!, 'shared-key')),
          ],
          { registrations },
        ),
      )
      expect(Date.now() - started).toBeLessThan(4_000)
      // The lock is still ours: the finalize waited for it and never took it.
      expect(JSON.parse(readFileSync(lock.path, 'utf8'))).toEqual({ pid: process.pid, token: lock.token })
      expect(dispatch).toMatchObject({ invoked_count: 2, intent_count: 0, intents: [] })
      expect(failureCodes(dispatch)).toEqual([
        ['periodic_report.a_locked', 'journal_write_failed'],
        ['periodic_report.b_duplicate', 'intent_key_conflict'],
      ])
      expect(existsSync(receiptFile(root, locked!))).toBe(false)
      expect(readReceipt(root, duplicate!)).toMatchObject({
        status: 'retryable_failure',
        error_code: 'intent_key_conflict',
      })
    } finally {
      lock.release()
    }
  })

  it('follows "a divergent CAS winner reserves its intent key for later hooks"', async () => {
    const root = roots.make()
    const registrations = hooks('a_marker', 'b_blocker', 'c_race', 'd_duplicate')
    const pre = await evaluate(request(root, { registrations }))
    const [marker, blocker, race, duplicate] = pre.provider_plan
    const lock = holdLock(receiptFile(root, blocker!))
    let losing: Promise<Dispatch> | undefined
    try {
      losing = finalized(
        finalize(
          root,
          pre,
          [
            returned(marker!, notApplicableResult(marker!)),
            returned(blocker!, notApplicableResult(blocker!)),
            returned(race!, intentResult(race!, 'divergent-key')),
            returned(duplicate!, intentResult(duplicate!, 'shared-winner-key')),
          ],
          { registrations },
        ),
      )
      // The loser wrote its first receipt and now waits on the blocker's lock.
      expect(await appears(receiptFile(root, marker!))).toBe(true)
      const alone = { registrations: [registrations[2]] }
      const winnerPre = await evaluate(request(root, alone))
      const winnerPlan = winnerPre.provider_plan[0]!
      await finalized(
        finalize(root, winnerPre, [returned(winnerPlan, intentResult(winnerPlan, 'shared-winner-key'))], alone),
      )
    } finally {
      lock.release()
    }
    const dispatch = await losing!
    expect(dispatch.intent_count).toBe(0)
    expect(dispatch.replayed_hooks).toEqual([])
    expect(failureCodes(dispatch)).toEqual([
      ['periodic_report.c_race', 'receipt_conflict'],
      ['periodic_report.d_duplicate', 'intent_key_conflict'],
    ])
    expect(readReceipt(root, race!).intent).toMatchObject({ idempotency_key: 'shared-winner-key' })
    expect(readReceipt(root, duplicate!)).toMatchObject({
      status: 'retryable_failure',
      error_code: 'intent_key_conflict',
    })
  })

  it('follows "a stale deferred outcome does not block a later current plan"', async () => {
    const root = roots.make()
    const registrations = hooks('a_deferred', 'b_committed')
    const pre = await evaluate(request(root, { registrations }))
    const [deferred, committed] = pre.provider_plan
    const newer = retryableReceipt(deferred!, 3)
    plantReceipt(root, deferred!, newer)

    const dispatch = await finalized(
      finalize(
        root,
        pre,
        [notReturned(deferred!, 'receipt_changed'), returned(committed!, intentResult(committed!, 'committed-key'))],
        { registrations },
      ),
    )
    expect(dispatch.invoked_count).toBe(1)
    expect(dispatch.intents.map((i) => i.idempotency_key)).toEqual(['committed-key'])
    expect(dispatch.failures[0]!.error_code).toBe('receipt_conflict')
    expect(readReceipt(root, deferred!)).toEqual(newer)
    expect(readReceipt(root, committed!).status).toBe('intent_recorded')
  })

  it('follows "duplicate intent keys isolate the later hook and persist a retryable receipt"', async () => {
    const root = roots.make()
    const registrations = hooks('a', 'b')
    const pre = await evaluate(request(root, { registrations }))
    const outcomes = pre.provider_plan.map((p) => returned(p, intentResult(p, 'same-intent-key')))
    const dispatch = await finalized(finalize(root, pre, outcomes, { registrations }))
    expect(dispatch.intent_count).toBe(1)
    expect(dispatch.failures[0]!.error_code).toBe('intent_key_conflict')
    expect(pre.provider_plan.map((p) => readReceipt(root, p).status).sort()).toEqual([
      'intent_recorded',
      'retryable_failure',
    ])
    expect(folderEntries(root)).toHaveLength(2)
  })

  it('follows "committed receipt ids separate same-clock phases and recover the original intent"', async () => {
    const root = roots.make()
    const ordinarySource = { ...source(), receipt_id: 'completion-ordinary', state_version: 'completion-ordinary' }
    const ordinary = await evaluate(request(root, { source: ordinarySource }))
    const ordinaryPlan = ordinary.provider_plan[0]!
    await finalized(
      finalize(root, ordinary, [returned(ordinaryPlan, notApplicableResult(ordinaryPlan))], { source: ordinarySource }),
    )

    const closeoutSource = {
      ...ordinarySource,
      receipt_id: 'completion-closeout',
      state_version: 'completion-closeout',
    }
    const closeout = await evaluate(request(root, { source: closeoutSource }))
    const closeoutPlan = closeout.provider_plan[0]!
    expect(closeoutPlan.dispatch_id).not.toBe(ordinaryPlan.dispatch_id)
    const recorded = await finalized(finalize(root, closeout, [returned(closeoutPlan)], { source: closeoutSource }))
    expect(recorded.intent_count).toBe(1)

    // A later read-model clock does not redefine the committed receipt.
    const replay = await evaluate(
      request(root, { source: { ...closeoutSource, committed_at: '2026-09-03T12:00:00Z' } }),
    )
    expect(replay.provider_plan).toEqual([])
    expect(replay.dispatch).toMatchObject({ intents: recorded.intents, replayed_hooks: [HOOK] })
  })

  it('follows "malformed durable sidecar is isolated before provider execution"', async () => {
    const root = roots.make()
    const plan = (await evaluate(request(root))).provider_plan[0]!
    const file = plantReceipt(root, plan, '{}\n')
    const isolated = await evaluate(request(root))
    expect(isolated.provider_plan).toEqual([])
    expect(isolated.dispatch!.failures[0]!.error_code).toBe('journal_read_failed')
    expect(readFileSync(file, 'utf8')).toBe('{}\n')
  })

  it.each(['malformed', 'contract_conflict'] as const)(
    'follows "finalize isolates a sidecar that changed after preflight" (%s)',
    async (fixture) => {
      const root = roots.make()
      const registrations = hooks('a_blocked', 'b_committed')
      const pre = await evaluate(request(root, { registrations }))
      const [blocked, committed] = pre.provider_plan
      // contract_conflict: a terminal receipt for this dispatch, bound to another source.
      const planted: Doc =
        fixture === 'malformed'
          ? {}
          : {
              ...retryableReceipt(blocked!, 1),
              source_receipt_id: 'wrong-source',
              status: 'not_applicable',
              error_code: null,
              recorded_at: '2026-09-02T12:00:00Z',
            }
      plantReceipt(root, blocked!, planted)

      const outcomes = pre.provider_plan.map((p) => returned(p, intentResult(p, `${p.hook_id}-key`)))
      const dispatch = await finalized(finalize(root, pre, outcomes, { registrations }))
      expect(dispatch).toMatchObject({ invoked_count: 2, intent_count: 1 })
      expect(dispatch.intents).toEqual([intentResult(committed!, 'periodic_report.b_committed-key').intent])
      expect(dispatch.failures[0]!.error_code).toBe(
        fixture === 'malformed' ? 'journal_read_failed' : 'receipt_conflict',
      )
      expect(readReceipt(root, blocked!)).toEqual(planted)
      expect(readReceipt(root, committed!).status).toBe('intent_recorded')
    },
  )
})

describe('only the two-phase protocol: the sidecar folder', () => {
  it("a recorded receipt is LoopX's sidecar receipt, written as LoopX's writer writes it, no lock left behind", async () => {
    const root = roots.make()
    const pre = await evaluate(request(root))
    const plan = pre.provider_plan[0]!
    await finalized(finalize(root, pre, [returned(plan)]))
    const text = readFileSync(receiptFile(root, plan), 'utf8')
    expect(JSON.parse(text)).toEqual({
      schema_version: 'loopx_post_writeback_capability_hook_receipt_v0',
      dispatch_id: plan.dispatch_id,
      hook_id: HOOK,
      capability_id: 'periodic-report',
      source_receipt_id: plan.hook_input.receipt.event_id,
      status: 'intent_recorded',
      intent: intentResult(plan).intent,
      error_code: null,
      attempt_count: 1,
      recorded_at: '2026-09-02T12:00:00Z',
    })
    expect(text).toBe(`${JSON.stringify(JSON.parse(text), null, 2)}\n`)
    expect(folderEntries(root)).toEqual([`${plan.dispatch_id}.json`])
  })

  it('a re-sent finalize is idempotent: the same answer, replayed, and the same bytes on disk', async () => {
    const root = roots.make()
    const registrations = hooks('a_intent', 'b_quiet')
    const pre = await evaluate(request(root, { registrations }))
    const [withIntent, quiet] = pre.provider_plan
    const req = finalize(root, pre, [returned(withIntent!), returned(quiet!, notApplicableResult(quiet!))], {
      registrations,
    })
    const first = await finalized(req)
    const bytes = () => folderEntries(root)!.map((name) => readFileSync(join(receiptFolder(root), name), 'utf8'))
    const files = bytes()
    const again = await finalized(req)
    expect(again).toEqual({
      ...first,
      replayed_hooks: ['periodic_report.a_intent', 'periodic_report.b_quiet'],
    })
    expect(first.replayed_hooks).toEqual([])
    expect(bytes()).toEqual(files)
    expect(folderEntries(root)).toHaveLength(2)
  })

  it('a lock held by a live process costs that hook journal_write_failed within the budget; the rest records', async () => {
    const root = roots.make()
    const registrations = hooks('a_held', 'b_free')
    const pre = await evaluate(request(root, { registrations }))
    const [held, free] = pre.provider_plan
    const req = finalize(
      root,
      pre,
      [returned(held!, intentResult(held!, 'held-key')), returned(free!, intentResult(free!, 'free-key'))],
      {
        registrations,
      },
    )
    const lock = holdLock(receiptFile(root, held!))
    try {
      const started = Date.now()
      const dispatch = await finalized(req)
      expect(Date.now() - started).toBeLessThan(4_000)
      expect(failureCodes(dispatch)).toEqual([['periodic_report.a_held', 'journal_write_failed']])
      expect(dispatch.intents.map((i) => i.idempotency_key)).toEqual(['free-key'])
      expect(existsSync(receiptFile(root, held!))).toBe(false)
      expect(JSON.parse(readFileSync(lock.path, 'utf8'))).toEqual({ pid: process.pid, token: lock.token })
    } finally {
      lock.release()
    }
    // Once LoopX's writer let go, the same finalize records the held hook.
    const retried = await finalized(req)
    expect(retried.failures).toEqual([])
    expect(retried.intents.map((i) => i.idempotency_key)).toEqual(['held-key', 'free-key'])
    expect(readReceipt(root, held!).status).toBe('intent_recorded')
  })

  it('a lock left by a process that died is reclaimed, as LoopX reclaims it', async () => {
    const root = roots.make()
    const pre = await evaluate(request(root))
    const plan = pre.provider_plan[0]!
    const dead = spawnSync(process.execPath, ['-e', '']).pid
    const lock = holdLock(receiptFile(root, plan), dead)
    try {
      const dispatch = await finalized(finalize(root, pre, [returned(plan)]))
      expect(dispatch).toMatchObject({ intent_count: 1, failures: [] })
      expect(readReceipt(root, plan).status).toBe('intent_recorded')
      expect(existsSync(lock.path)).toBe(false)
    } finally {
      lock.release()
    }
  })
})
