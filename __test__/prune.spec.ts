// Retention: dispatch across a window, prune, then replay every pruned
// identity (no provider runs, the same outcome and receipt, `prunedAt` set;
// `verify` with a changed result is still a conflict), recover what is owed,
// and check integrity; the CLI's prune and JSONL export; both backends, real
// journals.
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'

import { afterEach, describe, expect, it } from 'vitest'

import {
  HookRuntime,
  LoopxHooksError,
  type DispatchOutcome,
  type HookJournal,
  type ShippedHookInput,
} from '../lib/index.js'
import { BACKENDS, type Backend } from './support/backends'
import { STAGE, periodicRegistration, periodicResult, periodicSource } from './support/periodic_report'
import { Fixtures, counted, registration, request, signalResult, sleep } from './support/runtime'

const BIN = join(__dirname, '..', 'bin', 'loopx-hooks.js')
const EXECUTOR = 'executor.audit'

/** Closes an intent as an executor would: admitted and done, or rejected. */
async function close(journal: HookJournal, intentId: string, decision: 'admit' | 'reject'): Promise<void> {
  const reasonCode = decision === 'admit' ? 'ok' : 'no'
  await journal.decide({ intentId, executorId: EXECUTOR, decision, reasonCode })
  if (decision === 'admit') await journal.markDone(intentId, EXECUTOR)
}
describe.each(BACKENDS.map((b): [string, Backend] => [b.name, b]))('journal prune on %s', (_, backend) => {
  const fx = new Fixtures(backend)
  afterEach(() => fx.cleanup())

  it('a pruned identity replays without a provider call, verify still sees a changed result, recover and integrity hold', async () => {
    const target = fx.target()
    const { runtime } = await fx.runtime({ target, capabilities: ['alpha', 'beta'] })
    let level = 1
    let down = true
    const alpha = counted((input) => signalResult(input, { level }))
    const beta = counted((input) => {
      if (down && input.source.receipt_id === 'receipt_owed') throw new Error('downstream unavailable')
      return signalResult(input)
    })
    runtime.register({ registration: registration('alpha.one'), provider: alpha })
    runtime.register({
      registration: registration('beta.one', { budget: { max_invocations_per_dispatch: 2 } }),
      provider: beta,
    })

    const ids = [...Array.from({ length: 8 }, (_, i) => `receipt_old_${i}`), 'receipt_open', 'receipt_owed']
    const first = new Map<string, DispatchOutcome>()
    for (const id of ids) first.set(id, await runtime.dispatch(request({ receipt: { receipt_id: id } })))
    // The executor closes every intent but those of receipt_open: half admitted and done, half rejected.
    const intents = (await runtime.journal.listIntents({ limit: 1000 })).items
    const open = new Set(first.get('receipt_open')!.hooks.map((h) => h.dispatchId))
    let n = 0
    for (const i of intents) {
      if (open.has(i.dispatchId)) continue
      await close(runtime.journal, i.intentId, n++ % 2 === 0 ? 'admit' : 'reject')
    }
    await sleep(5)
    // Nothing is old enough for an hour's window.
    expect((await runtime.journal.prune({ olderThanMs: 3_600_000 })).dispatches).toBe(0)

    const report = await runtime.journal.prune({ olderThanMs: 0, batchSize: 3 })
    // 10 requests x 2 hooks, less receipt_open's alpha.one (open intent) and
    // beta.one (open intent), less receipt_owed's beta.one (owed).
    expect(report.dispatches).toBe(17)
    expect(report.intents).toBe(17)
    expect(report.batches).toBeGreaterThanOrEqual(6)
    expect(report.longestBatchMs).toBeLessThan(1000)
    expect((await runtime.journal.storage()).pruned).toBe(17)
    expect((await runtime.journal.integrity()).ok).toBe(true)

    // Every pruned identity replays: no provider call, the same receipt, marked pruned.
    const calls = [alpha.calls, beta.calls]
    for (const id of ids.filter((i) => i !== 'receipt_owed')) {
      const again = await runtime.dispatch(request({ receipt: { receipt_id: id } }))
      for (const [k, hook] of again.hooks.entries()) {
        const before = first.get(id)!.hooks[k]!
        expect(hook.outcome, `${id} ${hook.hookId}`).toBe('replayed')
        expect(hook.receipt).toStrictEqual(before.receipt)
        expect(hook.prunedAt !== null, `${id} ${hook.hookId}`).toBe(id !== 'receipt_open')
      }
    }
    expect([alpha.calls, beta.calls]).toStrictEqual(calls)
    const row = await runtime.journal.getDispatch(first.get('receipt_old_0')!.hooks[0]!.dispatchId)
    expect(typeof row?.prunedAt).toBe('number')
    expect(row?.receipt).toStrictEqual(first.get('receipt_old_0')!.hooks[0]!.receipt)

    // recover() still runs the owed hook, once.
    down = false
    const recovered = await runtime.recover()
    expect(recovered.outcomes.map((o) => [o.hookId, o.outcome])).toStrictEqual([['beta.one', 'recorded']])
    expect(beta.calls).toBe(calls[1]! + 1)
    expect(await runtime.recover()).toStrictEqual({ outcomes: [], skipped: 0, ledgersSkipped: 0 })
    await runtime.close()

    // verify: a provider answering differently is a conflict, from the tombstone's digest.
    const verifying = await HookRuntime.open({
      ...target.runtimeOptions({ synchronous: 'normal' }),
      profile: { enabled: true, replay: 'verify' },
    })
    try {
      verifying.defineIntentKind((await import('./support/runtime')).signalKind('alpha'))
      verifying.defineIntentKind((await import('./support/runtime')).signalKind('beta'))
      level = 2
      verifying.register({ registration: registration('alpha.one'), provider: alpha })
      verifying.register({
        registration: registration('beta.one', { budget: { max_invocations_per_dispatch: 2 } }),
        provider: beta,
      })
      const changed = await verifying.dispatch(request({ receipt: { receipt_id: 'receipt_old_3' } }))
      expect(changed.hooks.map((h) => [h.hookId, h.outcome])).toStrictEqual([
        ['alpha.one', 'conflict'],
        ['beta.one', 'replayed'],
      ])
      expect(changed.hooks[0]!.receipt).toStrictEqual(first.get('receipt_old_3')!.hooks[0]!.receipt)
      expect(typeof changed.hooks[0]!.prunedAt).toBe('number')
      expect((await verifying.journal.integrity()).ok).toBe(true)
    } finally {
      await verifying.close()
    }
    const raw = await target.readRaw()
    expect(raw.integrity).toBe('ok')
    expect(raw.intents.length).toBe(intents.length + 1 - 17)
  })

  it('a loopx-shipped-v0 dispatch prunes to a tombstone that keeps its receipt, intent and all', async () => {
    const target = fx.target()
    const open = (replay: 'return' | 'verify') =>
      HookRuntime.open({
        ...target.runtimeOptions({ synchronous: 'normal' }),
        dialect: 'loopx-shipped-v0',
        profile: { enabled: true, replay },
      })
    const registration = periodicRegistration()
    let marker = 'first'
    const producer = {
      calls: [] as ShippedHookInput[],
      fn: (input: ShippedHookInput) => (producer.calls.push(input), periodicResult(input, { marker })),
    }
    const runtime = await open('return')
    const stages = ['s1', 's2', 's3', 'open']
    const first = new Map<string, Awaited<ReturnType<typeof runtime.dispatch>>>()
    try {
      runtime.register({ registration, provider: producer.fn })
      for (const stage of stages) first.set(stage, await runtime.dispatch(periodicSource(stage)))
      for (const i of (await runtime.journal.listIntents()).items) {
        if (JSON.stringify(i.intent).includes('"stage":"open"')) continue
        await close(runtime.journal, i.intentId, 'admit')
      }
      const rows = new Map((await runtime.journal.listDispatches({})).items.map((r) => [r.dispatchId, r.receipt]))
      await sleep(5)
      const report = await runtime.journal.prune({ olderThanMs: 0 })
      expect([report.dispatches, report.intents]).toStrictEqual([3, 3])
      expect((await runtime.journal.integrity()).ok).toBe(true)
      const calls = producer.calls.length
      for (const stage of stages) {
        const again = await runtime.dispatch(periodicSource(stage))
        expect(again.replayed_hooks, stage).toStrictEqual([STAGE])
        expect(again.intents, stage).toStrictEqual(first.get(stage)!.intents)
      }
      expect(producer.calls.length).toBe(calls)
      for (const row of (await runtime.journal.listDispatches({})).items) {
        expect(row.receipt, row.dispatchId).toStrictEqual(rows.get(row.dispatchId))
        expect(typeof row.prunedAt, row.dispatchId).toBe(
          JSON.stringify(row.receipt).includes('"open"') ? 'object' : 'number',
        )
      }
    } finally {
      await runtime.close()
    }

    // verify: the same answer replays; a different one is a receipt_conflict, from the tombstone's receipt.
    const verifying = await open('verify')
    try {
      verifying.register({ registration, provider: producer.fn })
      const same = await verifying.dispatch(periodicSource('s1'))
      expect([same.replayed_hooks, same.failures]).toStrictEqual([[STAGE], []])
      marker = 'second'
      const changed = await verifying.dispatch(periodicSource('s2'))
      expect(changed.failures).toStrictEqual([
        { hook_id: STAGE, capability_id: 'periodic-report', error_code: 'receipt_conflict' },
      ])
      expect((await verifying.journal.integrity()).ok).toBe(true)
    } finally {
      await verifying.close()
    }
  })

  it('bad options are typed errors; a read-only journal refuses', async () => {
    const target = fx.target()
    const { runtime } = await fx.runtime({ target })
    const bads = [
      { olderThanMs: -1 },
      { olderThanMs: 1.5 },
      { olderThanMs: 0, batchSize: 0 },
      { olderThanMs: 0, batchSize: 5000 },
    ]
    for (const bad of bads) {
      const error = await runtime.journal.prune(bad).catch((e: unknown) => e)
      expect(error).toBeInstanceOf(LoopxHooksError)
      expect((error as LoopxHooksError).code).toBe('ERR_LOOPX_INVALID_ARGUMENT')
    }
    const misspelt = await runtime.journal.prune({ olderThanMs: 0, olderThan: 1 } as never).catch((e: unknown) => e)
    expect((misspelt as LoopxHooksError).code).toBe('ERR_LOOPX_INVALID_ARGUMENT')
    const reader = await (await import('../lib/index.js')).HookJournal.openReadOnly(target.journal)
    try {
      const refused = await reader.prune({ olderThanMs: 0 }).catch((e: unknown) => e)
      expect((refused as LoopxHooksError).code).toBe('ERR_LOOPX_JOURNAL_READONLY')
    } finally {
      await reader.close()
    }
  })

  it('the CLI prunes and exports the pruned rows as JSON Lines before removing them', async () => {
    const target = fx.target()
    const { runtime } = await fx.runtime({ target, capabilities: ['alpha'] })
    runtime.register({ registration: registration('alpha.one'), provider: counted((input) => signalResult(input)) })
    for (let i = 0; i < 3; i++) await runtime.dispatch(request({ receipt: { receipt_id: `receipt_cli_${i}` } }))
    for (const i of (await runtime.journal.listIntents()).items) {
      await runtime.journal.decide({ intentId: i.intentId, executorId: EXECUTOR, decision: 'reject', reasonCode: 'no' })
    }
    await runtime.close()
    const out = join(fx.tempDir().dir, 'pruned.jsonl')
    const cli = (args: string[]) =>
      spawnSync(process.execPath, [BIN, 'journal', ...args, ...target.cliArgs], { encoding: 'utf8', timeout: 20_000 })
    const usage = cli(['export', '--older-than', '0'])
    expect(usage.status).toBe(2)
    expect(usage.stderr).toMatch(/needs --out FILE/)
    expect(cli(['prune', '--older-than', 'soon']).status).toBe(2)
    const run = cli(['export', '--older-than', '0', '--out', out, '--json'])
    expect(run.status, run.stderr).toBe(0)
    const report = JSON.parse(run.stdout)
    expect([report.dispatches, report.intents]).toStrictEqual([3, 3])
    const lines = readFileSync(out, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
    expect(lines.map((l) => l.kind)).toStrictEqual(['dispatch', 'dispatch', 'dispatch', 'intent', 'intent', 'intent'])
    expect(lines[0].row.receipt.status).toBe('proposed')
    expect(lines[3].row.intent.schema_version).toBe('loopx_post_writeback_intent_v0')
    expect(lines[3].row.decision).toBe('reject')
    // Nothing left to prune.
    const again = cli(['prune', '--older-than', '0s', '--json'])
    expect(JSON.parse(again.stdout).dispatches).toBe(0)
  })
})
