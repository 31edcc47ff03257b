// loopx-hooks/loopx never writes what it must not: a credential-like value
// planted in every string member of the source (its projection's unread
// keys included) and of a provider's result, one member at a time, reaches
// no byte under the runtime root (sidecar receipts, lock and temporary
// files) nor of the journal kept in step, and no rejection's message.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterAll, describe, expect, it } from 'vitest'

import { HookJournal } from '../lib/index.js'
import { evaluatePostWritebackHookTransaction } from '../lib/loopx.js'
import { filesUnder } from './support/backends.js'
import {
  finalize,
  intentResult,
  request,
  returned,
  source,
  type Doc,
  type TransactionResult,
} from './support/loopx_transaction.js'
import { findPlanted, randomTag } from './support/runtime.js'

const dirs: string[] = []
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

/** Every JSON Pointer to a string member of `doc`. */
function stringMembers(doc: unknown, at = ''): string[] {
  if (typeof doc === 'string') return [at]
  if (Array.isArray(doc)) return doc.flatMap((v, i) => stringMembers(v, `${at}/${i}`))
  if (doc && typeof doc === 'object') return Object.entries(doc).flatMap(([k, v]) => stringMembers(v, `${at}/${k}`))
  return []
}

function plantAt<T>(doc: T, pointer: string, value: string): T {
  const copy = structuredClone(doc) as Record<string, unknown>
  const keys = pointer.split('/').slice(1)
  let node = copy
  for (const k of keys.slice(0, -1)) node = node[k] as Record<string, unknown>
  node[keys.at(-1)!] = value
  return copy as T
}

const secret = () => {
  const tag = randomTag(24)
  return { value: `sk_live_${tag}`, needle: tag }
}

/** The source with an unread projection key beside the read one. */
function planted(): Doc {
  return {
    ...source(),
    projection: { stage_completion: { transition: 'goal_terminal' }, private_notes: { text: 'x' } },
  }
}

async function transact(root: string, journal: HookJournal, src: Doc, plant?: (result: Doc) => Doc): Promise<string[]> {
  const messages: string[] = []
  try {
    const preflight = (await evaluatePostWritebackHookTransaction(request(root, { source: src }), {
      journal,
    })) as unknown as TransactionResult
    const outcomes = preflight.provider_plan.map((plan) => {
      const result = intentResult(plan)
      return returned(plan, plant ? plant(result) : result)
    })
    if (outcomes.length > 0) {
      await evaluatePostWritebackHookTransaction(finalize(root, preflight, outcomes, { source: src }), { journal })
    }
  } catch (error) {
    messages.push((error as Error).message)
  }
  return messages
}

describe('a credential planted anywhere in a transaction', () => {
  it('reaches no file under the runtime root, no byte of the journal and no message', async () => {
    const root = mkdtempSync(join(tmpdir(), 'loopx-tx-planted-'))
    dirs.push(root)
    const journal = await HookJournal.open(join(root, 'hooks.sqlite'))
    const needles: string[] = []
    const messages: string[] = []
    try {
      for (const pointer of stringMembers(planted())) {
        const s = secret()
        needles.push(s.needle)
        messages.push(...(await transact(root, journal, plantAt(planted(), pointer, s.value))))
      }
      const probe = intentResult({
        dispatch_id: 'pwh_x',
        hook_id: 'periodic_report.stage_completion',
        capability_id: 'periodic-report',
        attempt_count: 1,
        retry: false,
        receipt_snapshot: 'missing',
        hook_input: { receipt: { event_id: 'pwr_x', recorded_at: 'x' }, identity: {}, projection: {} },
      })
      for (const pointer of stringMembers(probe)) {
        const s = secret()
        needles.push(s.needle)
        const src = { ...planted(), state_version: `state-${randomTag(8)}` }
        messages.push(...(await transact(root, journal, src, (result) => plantAt(result, pointer, s.value))))
      }
      expect(needles.length).toBeGreaterThan(20)
    } finally {
      await journal.close()
    }
    expect(findPlanted(filesUnder(root), needles)).toEqual([])
    expect(messages.filter((m) => needles.some((n) => m.includes(n)))).toEqual([])
    // The scan reads what was written: receipts for the unplanted runs are there.
    expect(filesUnder(join(root, 'goals')).length).toBeGreaterThan(0)
  })
})
