// Issue 12 items 1, 2 and 5: RFC §10 "no hook is silently lost" (the matrix
// row "Multiple hooks": one hook's failure must not consume another's slot),
// contract-v0 §1 "max_invocations_per_dispatch bounds an identity's whole
// life", crashes included, and the per-dispatch intent and byte ceilings.
import { existsSync } from 'node:fs'

import Database from 'better-sqlite3'
import { afterAll, afterEach, describe, expect, it } from 'vitest'

import {
  Fixtures,
  HookRuntime,
  counted,
  goodProvider,
  journalContents,
  registration,
  request,
  signalKind,
  signalResult,
  sleep,
} from './support/runtime'
import { BACKENDS, Targets, type Backend } from './support/backends'
import { runChildScript } from './support/child'

const fx = new Fixtures()
afterEach(() => fx.cleanup())

describe('RFC §10: no hook is silently lost', () => {
  it("one hook hanging until the wall ceiling does not consume another hook's slot: recover() runs it once", async () => {
    const { runtime } = await fx.runtime({ profile: { maxDispatchWallMs: 60 }, capabilities: ['alpha', 'beta'] })
    const a = counted(() => new Promise(() => {}))
    const b = goodProvider()
    runtime.register({
      registration: registration('alpha.a', { budget: { timeout_ms: 5000, max_invocations_per_dispatch: 2 } }),
      provider: a,
    })
    runtime.register({ registration: registration('beta.b'), provider: b })
    const outcome = await runtime.dispatch(request())
    expect(outcome.hooks.map((h) => [h.hookId, h.outcome, h.attempt, h.failureCode])).toStrictEqual([
      ['alpha.a', 'failed', 1, 'dispatch_budget_exhausted'],
      ['beta.b', 'failed', 0, 'dispatch_budget_exhausted'],
    ])
    expect([a.calls, b.calls]).toStrictEqual([1, 0])
    // The journal holds b before recover(): owed, with no attempt used.
    const before = await journalContents(runtime)
    const owed = before.dispatches.find((d) => d.hookId === 'beta.b')
    expect([owed?.state, owed?.attempts]).toStrictEqual(['checkpointed', 0])

    const report = await runtime.recover()
    const bOut = report.outcomes.find((o) => o.hookId === 'beta.b')
    expect([bOut?.outcome, bOut?.attempt]).toStrictEqual(['recorded', 1])
    expect(b.calls).toBe(1)
    const after = await journalContents(runtime)
    expect(after.dispatches.find((d) => d.hookId === 'beta.b')?.state).toBe('proposed')
  })

  it('hooks past maxHooksPerDispatch are journaled as owed and a later dispatch of the same receipt runs them', async () => {
    const { runtime } = await fx.runtime({ profile: { maxHooksPerDispatch: 1 }, capabilities: ['alpha', 'beta'] })
    const a = goodProvider()
    const b = goodProvider()
    runtime.register({ registration: registration('alpha.a'), provider: a })
    runtime.register({ registration: registration('beta.b'), provider: b })
    const first = await runtime.dispatch(request())
    expect(first.hooks.map((h) => [h.outcome, h.attempt])).toStrictEqual([
      ['recorded', 1],
      ['failed', 0],
    ])
    const j = await journalContents(runtime)
    expect(j.dispatches.map((d) => [d.hookId, d.state, d.attempts])).toStrictEqual([
      ['alpha.a', 'proposed', 1],
      ['beta.b', 'checkpointed', 0],
    ])
    // a replays without an invocation, so b has the one slot.
    const again = await runtime.dispatch(request())
    expect(again.hooks.map((h) => [h.outcome, h.attempt])).toStrictEqual([
      ['replayed', 1],
      ['recorded', 1],
    ])
    expect([a.calls, b.calls]).toStrictEqual([1, 1])
  })
})

describe('RFC §10: per-dispatch ceilings on intents and result bytes', () => {
  it('a result past maxIntentsPerDispatch is deferred, not lost: the identity stays owed and recover() records it', async () => {
    const { runtime } = await fx.runtime({ profile: { maxIntentsPerDispatch: 1 }, capabilities: ['alpha', 'beta'] })
    const b = counted((input) => signalResult(input, { level: 7 }))
    runtime.register({ registration: registration('alpha.a'), provider: goodProvider() })
    runtime.register({
      registration: registration('beta.b', { budget: { max_invocations_per_dispatch: 2 } }),
      provider: b,
    })
    const outcome = await runtime.dispatch(request())
    expect(outcome.hooks.map((h) => [h.outcome, h.attempt, h.failureCode])).toStrictEqual([
      ['recorded', 1, null],
      ['failed', 1, 'dispatch_budget_exhausted'],
    ])
    const report = await runtime.recover()
    expect(report.outcomes.map((o) => [o.hookId, o.outcome, o.attempt])).toStrictEqual([['beta.b', 'recorded', 2]])
    expect(b.calls).toBe(2)
    expect((await runtime.journal.stats()).intents).toBe(2)
  })

  it('a result past maxResultBytesPerDispatch is deferred like the hook-count ceiling', async () => {
    // One proposed signal result is a few hundred canonical bytes: the second does not fit.
    const { runtime } = await fx.runtime({
      profile: { maxResultBytesPerDispatch: 900 },
      capabilities: ['alpha', 'beta'],
    })
    runtime.register({ registration: registration('alpha.a'), provider: goodProvider() })
    runtime.register({
      registration: registration('beta.b', { budget: { max_invocations_per_dispatch: 2 } }),
      provider: goodProvider({ level: 3 }),
    })
    const outcome = await runtime.dispatch(request())
    expect(outcome.hooks.map((h) => [h.outcome, h.failureCode])).toStrictEqual([
      ['recorded', null],
      ['failed', 'dispatch_budget_exhausted'],
    ])
    const j = await journalContents(runtime)
    expect(j.dispatches.find((d) => d.hookId === 'beta.b')?.state).toBe('failed')
  })
})

type Line = { t: 'ready' } | { t: 'invoked'; attempts: number } | { t: 'done'; hooks: unknown[] } | { t: 'error' }

const runChild = (args: string[]) => runChildScript<Line>('self-killer.mjs', args)

describe("contract-v0 §1: max_invocations_per_dispatch bounds an identity's whole life, crashes included", () => {
  it('a provider that SIGKILLs its own process ends exhausted after its budget and is not called again', async () => {
    const journal = fx.tempDir().path('self-killer.journal')
    const invocations = 3
    // The child's timeout_ms is 300: past it plus the 250 ms grace a crashed
    // attempt can no longer be live in another process, and counts as spent.
    const presumedLost = 300 + 250 + 150
    for (let attempt = 1; attempt <= invocations; attempt++) {
      if (attempt > 1) await sleep(presumedLost)
      const run = await runChild([journal, attempt === 1 ? 'dispatch' : 'recover', String(attempt)])
      expect(run.signal, run.stderr).toBe('SIGKILL')
      expect(run.lines.filter((l) => l.t === 'invoked')).toStrictEqual([{ t: 'invoked', attempts: attempt }])
      const db = new Database(journal, { readonly: true, fileMustExist: true })
      const rows = db.prepare('SELECT state, attempts FROM dispatches').all()
      db.close()
      // The next opener folds the killed process's attempt ledger: the
      // attempt before this one is then a recorded failure.
      expect(rows).toStrictEqual([{ state: attempt === 1 ? 'checkpointed' : 'failed', attempts: attempt }])
    }
    await sleep(presumedLost)
    const last = await runChild([journal, 'recover', String(invocations + 1)])
    expect(last.signal, last.stderr).toBeNull()
    expect(last.lines.filter((l) => l.t === 'invoked')).toStrictEqual([])
    expect(last.lines.at(-1)).toStrictEqual({
      t: 'done',
      hooks: [{ outcome: 'exhausted', attempt: invocations, code: 'dispatch_budget_exhausted' }],
    })
  })
})

const runInstantKiller = (args: string[]) => runChildScript<Line>('instant-killer.mjs', args)

describe.each(BACKENDS.map((b): [string, Backend] => [b.name, b]))(
  'contract-v0 §1 on %s: a provider that ends its process before its checkpoint commits still spends its attempt',
  (_, backend) => {
    const targets = new Targets(backend)
    afterAll(() => targets.cleanup())
    // The inline commit holds the checkpoint back for its record as the writer thread does.
    const ways = (['sigkill', 'exit'] as const).flatMap((how) =>
      backend.name === 'sqlite'
        ? [
            { how, inline: false },
            { how, inline: true },
          ]
        : [{ how, inline: false }],
    )
    for (const { how, inline } of ways) {
      it(`${how}${inline ? ', inline commit' : ''}: invoked once per attempt across immediate restarts, then exhausted without a call`, async () => {
        const target = targets.fresh(`instant-${how}${inline ? '-inline' : ''}`)
        const arg = target.childArg(inline ? { synchronous: 'full', inlineCommit: true } : { synchronous: 'full' })
        // No pause between restarts: the attempt is counted because it was
        // noted before the call, not because time passed.
        for (const mode of ['dispatch', 'recover'] as const) {
          const run = await runInstantKiller([arg, mode, how])
          expect(run.lines, run.stderr).toStrictEqual([{ t: 'invoked' }])
          if (how === 'sigkill') expect(run.signal).toBe('SIGKILL')
          else expect(run.code).toBe(0)
        }
        const last = await runInstantKiller([arg, 'dispatch', how])
        expect(last.lines, last.stderr).toStrictEqual([
          { t: 'done', hooks: [{ outcome: 'exhausted', attempt: 2, code: 'dispatch_budget_exhausted' }] },
        ])
        const raw = await target.readRaw()
        expect(raw.rows.map((d) => [d.state, d.attempts])).toStrictEqual([['exhausted', 2]])
        // SQLite folds each killed process's ledger as a failed attempt. On
        // PostgreSQL the server sees the killed process's session end, which a
        // cut connection also looks like, so it spends the next attempt without
        // recording the ended one as failed: the exhausted receipt's failure is the one row.
        expect(raw.failures).toBe(backend.name === 'sqlite' ? 2 : 1)
      })
    }
  },
)

describe('the attempt ledger on disk', () => {
  it('lives in `<journal>-attempts/` while the runtime is open, is gone after a clean close, and `attemptLedger: false` writes none', async () => {
    const dir = fx.tempDir()
    for (const attemptLedger of [undefined, false]) {
      const journalPath = dir.path(`ledger-${String(attemptLedger)}.journal`)
      const runtime = await HookRuntime.open({ journal: journalPath, profile: { enabled: true }, attemptLedger })
      runtime.defineIntentKind(signalKind('alpha'))
      runtime.register({ registration: registration('alpha.hook'), provider: goodProvider() })
      expect((await runtime.dispatch(request())).hooks[0]!.outcome).toBe('recorded')
      expect(existsSync(`${journalPath}-attempts`)).toBe(attemptLedger === undefined)
      await runtime.close()
      expect(existsSync(`${journalPath}-attempts`)).toBe(false)
    }
    await expect(
      HookRuntime.open({ journal: dir.path('x.journal'), attemptLedger: 'yes' as unknown as boolean }),
    ).rejects.toMatchObject({ code: 'ERR_LOOPX_INVALID_ARGUMENT' })
  })
})
