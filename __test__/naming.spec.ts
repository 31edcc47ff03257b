import type { PostWritebackIntent } from '../lib/index.js'
// The one naming rule (README "Naming"): contract documents keep the RFC's
// snake_case; every other object the API returns is camelCase. This walks
// what the runtime, the journal's readers, the outbox and the CLI's --json
// output actually return (not their types) and checks every key, skipping
// only the embedded contract documents.
import { afterAll, describe, expect, it } from 'vitest'

import { join } from 'node:path'

import { main, type Io } from '../lib/cli.js'
import { TurnSettlement } from '../lib/orchestrator/index.js'
import { Fixtures, goodProvider, registration, request } from './support/runtime.js'

const fx = new Fixtures()
afterAll(() => fx.cleanup())

/**
 * Members that hold a contract document, spelled as the RFC spells it (the
 * orchestrator's `settlement` and `receipts` are the dispatch request's).
 */
const CONTRACT_MEMBERS = new Set(['request', 'receipt', 'intent', 'settlement', 'receipts'])
/** Records keyed by a value (a code or an outcome kind), not by field names. */
const VALUE_KEYED = new Set(['errors', 'failureCodes', 'providerReplies'])
const CAMEL = /^[a-z][a-zA-Z0-9]*$/

/** Every key path under `value` that is not camelCase, contract documents skipped. */
function offenders(value: unknown, path = ''): string[] {
  if (Array.isArray(value)) return value.flatMap((v, i) => offenders(v, `${path}/${i}`))
  if (value === null || typeof value !== 'object') return []
  return Object.entries(value).flatMap(([k, v]) => [
    ...(CAMEL.test(k) ? [] : [`${path}/${k}`]),
    ...(CONTRACT_MEMBERS.has(k) || VALUE_KEYED.has(k) ? [] : offenders(v, `${path}/${k}`)),
  ])
}

async function cliJson(args: string[]): Promise<unknown> {
  let out = ''
  const io: Io = {
    stdout: { write: (chunk: string) => (out += chunk) },
    stderr: { write: () => true },
    stdin: (async function* () {})(),
    env: { NO_COLOR: '1' },
  }
  const status = await main(args, io)
  expect(status, args.join(' ')).toBeLessThanOrEqual(1)
  return JSON.parse(out)
}

describe('one naming rule', () => {
  it('returns every non-contract object camelCase, embedded contract documents as the RFC spells them', async () => {
    const { runtime, journalPath } = await fx.runtime({ capabilities: ['alpha', 'beta'] })
    runtime.register({ registration: registration('alpha.good'), provider: goodProvider() })
    runtime.register({
      registration: registration('beta.broken'),
      provider: () => {
        throw new Error('broken')
      },
    })
    const outcome = await runtime.dispatch(request())
    const journal = runtime.journal
    const dispatches = await journal.listDispatches()
    const failed = dispatches.items.find((d) => d.state === 'failed')!
    const [claimed] = await journal.claim({ executorId: 'naming.one', leaseMs: 60_000 })
    const decided = await journal.decide({
      intentId: claimed!.intentId,
      executorId: 'naming.one',
      decision: 'admit',
      reasonCode: 'ok',
    })
    const conflict = await journal.decide({
      intentId: claimed!.intentId,
      executorId: 'naming.one',
      decision: 'reject',
      reasonCode: 'changed_mind',
    })
    expect(conflict).toMatchObject({
      outcome: 'conflict',
      existing: { decision: 'admit', executorId: 'naming.one', reasonCode: 'ok', decidedAt: expect.any(Number) },
    })
    const returned = {
      outcome,
      dispatches,
      row: await journal.getDispatch(failed.dispatchId),
      failures: await journal.listFailures(failed.dispatchId),
      intents: await journal.listIntents(),
      claimed,
      decided,
      conflict,
      stats: await journal.stats(),
      integrity: await journal.integrity(),
      metrics: runtime.metrics(),
    }
    expect(offenders(returned)).toEqual([])
    // Not vacuous: the rows hold camelCase ids and the embedded documents snake_case ones.
    expect(claimed).toMatchObject({
      intentId: (claimed!.intent as PostWritebackIntent).intent_id,
      dispatchId: (claimed!.intent as PostWritebackIntent).source_dispatch_id,
    })
    expect(returned.stats).toMatchObject({ proposed: 1, failed: 1, notApplicable: 0, intentsOpen: 1 })
    expect(offenders({ intent: claimed!.intent, x: { intent_id: 1 } })).toEqual(['/x/intent_id'])
    expect(returned.metrics.failureCodes).toMatchObject({ producer_failed: 1 })

    await runtime.close()
    for (const command of ['show', 'dispatches', 'intents', 'recover']) {
      expect(offenders(await cliJson(['journal', command, '--db', journalPath, '--json'])), command).toEqual([])
    }
  })

  it("returns the orchestrator seam's rows, results and markers camelCase", async () => {
    const { runtime, dir } = await fx.runtime({ capabilities: ['alpha'] })
    runtime.register({ registration: registration('alpha.good'), provider: goodProvider() })
    const seam = await TurnSettlement.open({ turnJournalPath: join(dir, 'turn.journal'), hooks: runtime })
    try {
      const settled = await seam.settle({
        kind: 'todo_completed',
        goalId: 'goal_0001',
        agentId: 'agent_0001',
        todoId: 'todo_1',
        turnInstanceId: 'turn_1',
        effectId: 'effect_1',
        stateRevision: 'rev_1',
        factRefs: ['fact_1'],
      })
      const contents = seam.contents()
      expect(contents.dispatchMarkers).toHaveLength(1)
      expect(contents.settlements[0]).toMatchObject({ effectId: 'effect_1', factRefs: ['fact_1'] })
      expect(offenders({ settled, contents, report: await seam.recover() })).toEqual([])
    } finally {
      await seam.close()
    }
  })
})
