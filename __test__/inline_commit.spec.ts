// The opt-in inline commit (`HookRuntime.open({ inlineCommit: true })`, a
// SQLite journal only): a dispatch alone in flight, with the writer idle and
// providers that answer synchronously, commits on the calling thread and
// settles while only microtasks run (no event-loop turn, no thread
// wake-up), in one transaction with its checkpoint, with the outcome and
// the journal rows a runtime without it gives; with many in flight the
// writer thread still group-commits and nothing is lost or reordered; a
// PostgreSQL journal refuses the option.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'

import { afterAll, describe, expect, it } from 'vitest'

import { HookJournal, HookRuntime, LoopxHooksError, type DispatchOutcome } from '../lib/index.js'
import { registration, request, signalKind, signalResult } from './support/runtime'

const dir = mkdtempSync(join(tmpdir(), 'loopx-hooks-inline-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let files = 0

/** A runtime on a fresh file with one synchronous and one asynchronous hook. */
async function open(inlineCommit: boolean) {
  const journalPath = join(dir, `j${files++}.sqlite`)
  const runtime = await HookRuntime.open({ journal: journalPath, inlineCommit, profile: { enabled: true } })
  runtime.defineIntentKind(signalKind('alpha'))
  runtime.defineIntentKind(signalKind('beta'))
  runtime.register({ registration: registration('alpha.one'), provider: (input) => signalResult(input) })
  return { runtime, journalPath }
}

const receipt = (n: number) =>
  request({
    receipt: { receipt_id: `receipt_${n}`, effect_id: `effect_${n}` },
    settlement: { effect_id: `effect_${n}` },
  })

/** children/fixture.mjs's test of an inline commit, shared with the children. */
const { settlesInMicrotasks } = (await import(pathToFileURL(join(__dirname, 'children', 'fixture.mjs')).href)) as {
  settlesInMicrotasks(promise: Promise<unknown>): Promise<boolean>
}

/** The journal's rows, without the times each was written. */
async function rows(journalPath: string) {
  const journal = await HookJournal.openReadOnly(journalPath)
  try {
    const dispatches = (await journal.listDispatches({ limit: 1000 })).items.map(
      ({ createdAt: _created, updatedAt: _updated, ...rest }) => rest,
    )
    const intents = (await journal.listIntents({ limit: 1000 })).items
    return { dispatches, intents }
  } finally {
    await journal.close()
  }
}

describe('inline commit', () => {
  it('one dispatch at a time: settled without an event-loop turn, with the outcome and rows of the writer thread', async () => {
    const inline = await open(true)
    const queued = await open(false)
    try {
      const outcomes: DispatchOutcome[][] = [[], []]
      for (let n = 0; n < 20; n++) {
        const a = inline.runtime.dispatch(receipt(n))
        const b = queued.runtime.dispatch(receipt(n))
        expect(await settlesInMicrotasks(a), `dispatch ${n} inline`).toBe(true)
        expect(await settlesInMicrotasks(b), `dispatch ${n} through the writer thread`).toBe(false)
        outcomes[0]!.push(await a)
        outcomes[1]!.push(await b)
      }
      expect(outcomes[0]).toStrictEqual(outcomes[1])
      expect(outcomes[0]!.every((o) => o.hooks[0]!.outcome === 'recorded')).toBe(true)
      // The attempt ledger counted each attempt before its provider ran, so
      // its checkpoint waited for its record: one transaction per dispatch.
      for (const { runtime } of [inline, queued]) {
        const { count, durable, commands } = runtime.metrics().commits
        expect({ count, durable, commands }).toStrictEqual({ count: 20, durable: 20, commands: 20 })
      }
      // A replay of an inline-committed dispatch is the same replay.
      expect(await inline.runtime.dispatch(receipt(3))).toStrictEqual(await queued.runtime.dispatch(receipt(3)))
    } finally {
      await inline.runtime.close()
      await queued.runtime.close()
    }
    expect(await rows(inline.journalPath)).toStrictEqual(await rows(queued.journalPath))
  })

  it('an asynchronous provider: its flight settles with the inline commit', async () => {
    const journalPath = join(dir, `j${files++}.sqlite`)
    const runtime = await HookRuntime.open({ journal: journalPath, inlineCommit: true, profile: { enabled: true } })
    try {
      runtime.defineIntentKind(signalKind('beta'))
      runtime.register({
        registration: registration('beta.one'),
        provider: async (input) => {
          await new Promise((go) => setTimeout(go, 2))
          return signalResult(input)
        },
      })
      const out = await runtime.dispatch(receipt(1))
      expect(out.hooks.map((h) => h.outcome)).toStrictEqual(['recorded'])
      expect((await runtime.journal.getDispatch(out.hooks[0]!.dispatchId))?.state).toBe('proposed')
    } finally {
      await runtime.close()
    }
  })

  it('many in flight: every dispatch recorded once, the writer still group-commits', async () => {
    const { runtime, journalPath } = await open(true)
    const N = 400
    try {
      const outs = await Promise.all(Array.from({ length: N }, (_, n) => runtime.dispatch(receipt(n))))
      expect(outs.map((o) => o.hooks[0]!.outcome)).toStrictEqual(Array(N).fill('recorded'))
      const commits = runtime.metrics().commits
      // One command per dispatch: its checkpoint went inside its record,
      // whether that committed inline or on the writer thread.
      expect(commits.commands).toBe(N)
      expect(commits.maxBatch, 'some commands were batched by the writer thread').toBeGreaterThan(1)
      expect(await runtime.journal.integrity()).toEqual({ ok: true, messages: [] })
    } finally {
      await runtime.close()
    }
    const { dispatches, intents } = await rows(journalPath)
    expect(dispatches.map((d) => d.state)).toStrictEqual(Array(N).fill('proposed'))
    expect(new Set(intents.map((i) => i.intentId)).size).toBe(N)
  })

  it('callers that each await their own dispatch: the writer thread group-commits, no caller chains inline commits', async () => {
    // Solo inline commits settle within microtasks, so a caller whose
    // dispatch found itself alone starts its next one before the event loop
    // turns. Outcomes the writer thread committed but not yet handed to their
    // callers keep it from counting as alone; otherwise one caller would run
    // the rest of the load alone, one fsync per dispatch.
    const { runtime } = await open(true)
    const callers = 64
    const N = 640
    const byCaller = new Array<number>(callers).fill(0)
    try {
      let next = 0
      await Promise.all(
        Array.from({ length: callers }, async (_, c) => {
          while (next < N) {
            const out = await runtime.dispatch(receipt(next++))
            expect(out.hooks[0]!.outcome).toBe('recorded')
            byCaller[c]!++
          }
        }),
      )
      expect(byCaller.reduce((a, b) => a + b)).toBe(N)
      expect(Math.max(...byCaller), `dispatches per caller: ${byCaller.join(' ')}`).toBeLessThanOrEqual(N / 8)
      const commits = runtime.metrics().commits
      expect(commits.commands).toBe(N)
      expect(commits.maxBatch).toBeGreaterThan(1)
    } finally {
      await runtime.close()
    }
  })

  it('a PostgreSQL journal refuses it, coded, before connecting', async () => {
    const error = await HookRuntime.open({
      journal: { postgres: { connectionString: 'postgres://nobody@127.0.0.1:1/none', schema: 'inline' } },
      inlineCommit: true,
    }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(LoopxHooksError)
    expect((error as LoopxHooksError).code).toBe('ERR_LOOPX_INVALID_ARGUMENT')
    const typo = await HookRuntime.open({
      journal: join(dir, 'typo.sqlite'),
      inlineCommit: 'yes' as unknown as boolean,
    }).catch((e: unknown) => e)
    expect((typo as LoopxHooksError).code).toBe('ERR_LOOPX_INVALID_ARGUMENT')
  })
})
