// loopx-hooks/loopx with `{ journal }`: the package's journal kept in step
// with LoopX's sidecar folder. After each transaction every admitted hook's
// receipt, as the folder holds it, is imported into the journal (its rows
// and outbox follow the folder); a receipt the journal holds otherwise is
// published on loopx-hooks:transaction-journal and the answer stands.
import diagnostics_channel from 'node:diagnostics_channel'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterEach, describe, expect, it } from 'vitest'

import { HookJournal } from '../lib/index.js'
import {
  TRANSACTION_JOURNAL_CHANNEL,
  evaluatePostWritebackHookTransaction,
  type TransactionJournalMessage,
} from '../lib/loopx.js'
import { finalize, notReturned, request, returned, type TransactionResult } from './support/loopx_transaction.js'

const dirs: string[] = []
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

function scratch(): string {
  const dir = mkdtempSync(join(tmpdir(), 'loopx-tx-journal-'))
  dirs.push(dir)
  return dir
}

describe('evaluatePostWritebackHookTransaction with a journal', () => {
  it('imports each receipt the folder holds: an intent into the outbox, a retryable failure as an attempt', async () => {
    const root = scratch()
    const journal = await HookJournal.open(join(root, 'hooks.sqlite'))
    try {
      const preflight = (await evaluatePostWritebackHookTransaction(request(root), {
        journal,
      })) as unknown as TransactionResult
      const plan = preflight.provider_plan[0]!
      expect(await journal.getDispatch(plan.dispatch_id)).toBeNull()

      const failed = await evaluatePostWritebackHookTransaction(
        finalize(root, preflight, [notReturned(plan, 'producer_failed')]),
        { journal },
      )
      expect((failed as unknown as TransactionResult).dispatch!.failures[0]!.error_code).toBe('producer_failed')
      expect(await journal.getDispatch(plan.dispatch_id)).toMatchObject({ state: 'failed', attempts: 1 })

      const retry = (await evaluatePostWritebackHookTransaction(request(root), {
        journal,
      })) as unknown as TransactionResult
      const second = retry.provider_plan[0]!
      expect(second.attempt_count).toBe(2)
      await evaluatePostWritebackHookTransaction(finalize(root, retry, [returned(second)]), { journal })
      expect(await journal.getDispatch(plan.dispatch_id)).toMatchObject({ state: 'proposed', attempts: 2 })
      const intents = await journal.listIntents()
      expect(intents.items).toHaveLength(1)
    } finally {
      await journal.close()
    }
  })

  it('publishes a receipt the journal holds otherwise, and the answer stands', async () => {
    const root = scratch()
    const other = scratch()
    const journal = await HookJournal.open(join(root, 'hooks.sqlite'))
    const published: TransactionJournalMessage[] = []
    const listen = (m: unknown) => published.push(m as TransactionJournalMessage)
    diagnostics_channel.subscribe(TRANSACTION_JOURNAL_CHANNEL, listen)
    try {
      // The journal learns one receipt from another folder ...
      const elsewhere = (await evaluatePostWritebackHookTransaction(request(other), {
        journal,
      })) as unknown as TransactionResult
      const plan = elsewhere.provider_plan[0]!
      await evaluatePostWritebackHookTransaction(finalize(other, elsewhere, [returned(plan)]), { journal })
      // ... and this folder holds a different terminal receipt for the same identity.
      const here = (await evaluatePostWritebackHookTransaction(request(root))) as unknown as TransactionResult
      const notApplicable = {
        ...returned(here.provider_plan[0]!),
        result: { ...(returned(here.provider_plan[0]!).result as object), status: 'not_applicable', intent: null },
      }
      const answer = (await evaluatePostWritebackHookTransaction(finalize(root, here, [notApplicable]), {
        journal,
      })) as unknown as TransactionResult
      expect(answer.dispatch!.failures).toEqual([])
      expect(published).toEqual([{ dispatchId: plan.dispatch_id, outcome: 'conflict' }])
      expect(JSON.stringify(published)).not.toContain(root)
    } finally {
      diagnostics_channel.unsubscribe(TRANSACTION_JOURNAL_CHANNEL, listen)
      await journal.close()
    }
  })

  it('refuses a journal that is not a HookJournal', async () => {
    await expect(
      evaluatePostWritebackHookTransaction(request(null), { journal: {} as unknown as HookJournal }),
    ).rejects.toMatchObject({ code: 'ERR_LOOPX_INVALID_ARGUMENT' })
  })
})
