// Failure isolation (RFC section 10, contract-v0 section 5): a provider that
// throws, rejects, never settles, returns malformed or oversize output,
// returns a non-JSON value (function, BigInt, cycle, undefined, Symbol),
// mutates its input, or calls dispatch re-entrantly fails alone with its code,
// and every other hook's outcome is what it would be without it. Plus budgets,
// retries, exhaustion, recover(), a closed runtime, foreign files and profile
// ceilings, against the built addon and real journal files.
import { execFileSync } from 'node:child_process'
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

import Database from 'better-sqlite3'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'

import {
  HookJournal,
  HookRuntime,
  LoopxHooksError,
  type DispatchOutcome,
  type HookOutcome,
  type PostWritebackHookInput,
} from '../lib/index.js'
import {
  EMPTY_STATS,
  Fixtures,
  counted,
  eligible,
  goodProvider,
  hookOutcome,
  identityRecord,
  intent,
  journalContents,
  notApplicable,
  proposed,
  registration,
  request,
  signalKind,
  signalResult,
  sleep,
  snapshotPrimary,
  type RegistrationOptions,
} from './support/runtime'

const fx = new Fixtures()
afterEach(() => fx.cleanup())

const GOOD = 'good.m_hook'
const BAD_FIRST = 'abad.first'
const BAD_LAST = 'zbad.last'
const CAPABILITIES = ['good', 'abad', 'zbad']

/** A runtime whose provider may need the runtime itself (re-entrant cases). */
interface BadCase {
  name: string
  provider: (runtime: HookRuntime) => (input: PostWritebackHookInput) => unknown
  budget?: RegistrationOptions['budget']
  code: string
  rule: string | null
  /** What the provider observed, checked after the dispatch. */
  check?: () => void
}

const TYPE_ERRORS: unknown[] = []
const REENTRANT_ERRORS: unknown[] = []

function cycle() {
  const r: Record<string, unknown> = {
    schema_version: 'loopx_post_writeback_hook_result_v0',
    status: 'not_applicable',
    intents: [],
  }
  r.self = r
  return r
}

/** A valid result inflated past `max_result_bytes` with opaque refs of 120 characters. */
function oversize(input: PostWritebackHookInput) {
  // ~1.7 KiB canonical: over the budget of 1024, under the pre-parse cut-off (2 * 1024 + 1024).
  const refs = Array.from({ length: 10 }, (_, i) => `r${i}`.padEnd(100, 'x'))
  return proposed([
    intent(input, signalKind(input.capability_id), {
      operation: 'evaluate',
      policyVersion: 'v0',
      payload: { ref: 'ref', refs, level: 1 },
    }),
  ])
}

const BAD: BadCase[] = [
  {
    name: 'throws an Error',
    provider: () => () => {
      throw new Error('boom')
    },
    code: 'producer_failed',
    rule: null,
  },
  {
    name: 'throws a non-Error value',
    provider: () => () => {
      throw 'a string'
    },
    code: 'producer_failed',
    rule: null,
  },
  {
    name: 'throws undefined',
    provider: () => () => {
      throw undefined
    },
    code: 'producer_failed',
    rule: null,
  },
  {
    name: 'rejects',
    provider: () => async () => {
      await sleep(1)
      throw new RangeError('later boom')
    },
    code: 'producer_failed',
    rule: null,
  },
  {
    name: 'returns a rejected promise of undefined',
    provider: () => () => Promise.reject(undefined),
    code: 'producer_failed',
    rule: null,
  },
  {
    name: 'never settles',
    provider: () => () => new Promise(() => {}),
    budget: { timeout_ms: 30 },
    code: 'producer_timed_out',
    rule: null,
  },
  {
    name: 'settles with a valid result after its timeout',
    provider: () => async (input) => {
      await sleep(120)
      return signalResult(input)
    },
    budget: { timeout_ms: 20 },
    code: 'producer_timed_out',
    rule: null,
  },
  {
    name: 'returns malformed output (wrong status)',
    provider: () => () => ({ schema_version: 'loopx_post_writeback_hook_result_v0', status: 'done', intents: [] }),
    code: 'result_contract_rejected',
    rule: 'not_allowed_value',
  },
  {
    name: 'returns malformed output (not an object)',
    provider: () => () => 42,
    code: 'result_contract_rejected',
    rule: 'wrong_type',
  },
  {
    name: 'returns malformed output (null)',
    provider: () => () => null,
    code: 'result_contract_rejected',
    rule: 'wrong_type',
  },
  {
    name: 'returns malformed output (tampered intent_id)',
    provider: () => (input) => {
      const r = signalResult(input)
      return { ...r, intents: [{ ...r.intents[0]!, intent_id: `pwi_${'0'.repeat(64)}` }] }
    },
    code: 'result_contract_rejected',
    rule: 'intent_id_mismatch',
  },
  {
    name: 'returns malformed output (another dispatch)',
    provider: () => (input) => signalResult({ ...input, dispatch_id: `pwh_${'1'.repeat(64)}` }),
    code: 'result_contract_rejected',
    rule: 'dispatch_mismatch',
  },
  {
    name: 'returns oversize output',
    provider: () => oversize,
    budget: { max_result_bytes: 1024 },
    code: 'result_contract_rejected',
    rule: 'result_too_large',
  },
  {
    name: 'returns grossly oversize output (8 MiB)',
    provider: () => (input) => ({ ...signalResult(input), padding: 'x'.repeat(8 << 20) }),
    budget: { max_result_bytes: 1024 },
    code: 'result_contract_rejected',
    rule: 'result_too_large',
  },
  {
    name: 'returns more intents than its budget',
    provider: () => (input) => {
      const a = signalResult(input, { level: 1 }).intents[0]!
      const b = signalResult(input, { level: 2 }).intents[0]!
      return { schema_version: 'loopx_post_writeback_hook_result_v0', status: 'proposed', intents: [a, b] }
    },
    code: 'result_contract_rejected',
    rule: 'intent_budget_exceeded',
  },
  {
    name: 'returns a function',
    provider: () => () => () => notApplicable(),
    code: 'result_contract_rejected',
    rule: 'not_json_value',
  },
  {
    name: 'returns a result holding a function',
    provider: () => () => ({ ...notApplicable(), toString: () => 'x' }),
    code: 'result_contract_rejected',
    rule: 'not_json_value',
  },
  {
    name: 'returns a BigInt',
    provider: () => () => ({ ...notApplicable(), n: BigInt(1) }),
    code: 'result_contract_rejected',
    rule: 'not_json_value',
  },
  {
    name: 'returns a cycle',
    provider: () => cycle,
    code: 'result_contract_rejected',
    rule: 'not_json_value',
  },
  {
    name: 'returns undefined',
    provider: () => () => undefined,
    code: 'result_contract_rejected',
    rule: 'not_json_value',
  },
  {
    name: 'resolves to undefined',
    provider: () => async () => {},
    code: 'result_contract_rejected',
    rule: 'not_json_value',
  },
  {
    name: 'returns a Symbol',
    provider: () => () => Symbol('result'),
    code: 'result_contract_rejected',
    rule: 'not_json_value',
  },
  {
    name: 'returns a result holding a Symbol',
    provider: () => () => ({ ...notApplicable(), s: Symbol('x') }),
    code: 'result_contract_rejected',
    rule: 'not_json_value',
  },
  {
    name: 'returns a result with a throwing getter',
    provider: () => () =>
      Object.defineProperty(notApplicable(), 'status', {
        enumerable: true,
        get() {
          throw new Error('getter')
        },
      }),
    code: 'result_contract_rejected',
    rule: 'not_json_value',
  },
  {
    name: 'returns NaN inside its result',
    provider: () => () => ({ ...notApplicable(), n: Number.NaN }),
    code: 'result_contract_rejected',
    rule: 'not_json_value',
  },
  {
    name: 'returns a result nested 10 000 levels deep',
    provider: () => () => {
      let deep: unknown = 'leaf'
      for (let i = 0; i < 10_000; i++) deep = [deep]
      return { ...notApplicable(), deep }
    },
    code: 'result_contract_rejected',
    rule: 'not_json_value',
  },
  {
    name: 'returns a Proxy whose ownKeys trap throws',
    provider: () => () =>
      new Proxy(notApplicable(), {
        ownKeys() {
          throw new Error('trap')
        },
      }),
    code: 'result_contract_rejected',
    rule: 'not_json_value',
  },
  {
    name: 'blocks the event loop past its timeout, then answers validly',
    provider: () => (input) => {
      const until = Date.now() + 80
      while (Date.now() < until) {
        // busy
      }
      return signalResult(input)
    },
    budget: { timeout_ms: 20 },
    code: 'producer_timed_out',
    rule: null,
  },
  {
    name: 'mutates its input',
    provider: () => (input) => {
      try {
        ;(input as { hook_id: string }).hook_id = 'good.m_hook'
        ;(input.source as { receipt_id: string }).receipt_id = 'receipt_forged'
        ;(input.projection.fact_refs as string[]).push('fact_forged')
      } catch (e) {
        TYPE_ERRORS.push(e)
        throw e
      }
      return signalResult(input)
    },
    code: 'producer_failed',
    rule: null,
    check: () => {
      expect(TYPE_ERRORS.length).toBeGreaterThan(0)
      for (const e of TYPE_ERRORS) expect(e).toBeInstanceOf(TypeError)
      TYPE_ERRORS.length = 0
    },
  },
  {
    name: 'calls dispatch re-entrantly',
    provider: (runtime) => async () => {
      try {
        return await runtime.dispatch(request())
      } catch (e) {
        REENTRANT_ERRORS.push(e)
        throw e
      }
    },
    code: 'producer_failed',
    rule: null,
    check: () => {
      expect(REENTRANT_ERRORS.length).toBeGreaterThan(0)
      for (const e of REENTRANT_ERRORS) expect(e).toMatchObject({ code: 'ERR_LOOPX_REENTRANT_DISPATCH' })
      REENTRANT_ERRORS.length = 0
    },
  },
  {
    name: 'calls recover re-entrantly',
    provider: (runtime) => async () => {
      try {
        return await runtime.recover()
      } catch (e) {
        REENTRANT_ERRORS.push(e)
        throw e
      }
    },
    code: 'producer_failed',
    rule: null,
    check: () => {
      expect(REENTRANT_ERRORS.length).toBeGreaterThan(0)
      for (const e of REENTRANT_ERRORS) expect(e).toMatchObject({ code: 'ERR_LOOPX_REENTRANT_DISPATCH' })
      REENTRANT_ERRORS.length = 0
    },
  },
  {
    name: 'calls dispatch re-entrantly from a timer inside its call',
    provider: (runtime) => () =>
      new Promise((resolve, reject) => {
        setTimeout(() => {
          runtime.dispatch(request()).then(resolve, (e) => {
            REENTRANT_ERRORS.push(e)
            reject(e)
          })
        }, 1)
      }),
    code: 'producer_failed',
    rule: null,
    check: () => {
      expect(REENTRANT_ERRORS).toHaveLength(2)
      for (const e of REENTRANT_ERRORS) expect(e).toMatchObject({ code: 'ERR_LOOPX_REENTRANT_DISPATCH' })
      REENTRANT_ERRORS.length = 0
    },
  },
]

/** The good hook's outcome and journal record with no bad hook installed. */
let baseline: {
  outcome: HookOutcome
  record: Awaited<ReturnType<typeof identityRecord>>
  input: PostWritebackHookInput
}
const baselineFx = new Fixtures()
beforeAll(async () => {
  const { runtime } = await baselineFx.runtime({ capabilities: CAPABILITIES })
  const good = goodProvider()
  runtime.register({ registration: registration(GOOD), provider: good })
  const outcome = await runtime.dispatch(request())
  expect(outcome.hooks).toHaveLength(1)
  const o = outcome.hooks[0]!
  expect(o.outcome).toBe('recorded')
  baseline = { outcome: o, record: await identityRecord(runtime, o.dispatchId), input: good.inputs[0]! }
})
afterAll(() => baselineFx.cleanup())

describe('a bad provider fails alone with its code', () => {
  it.each(BAD)('$name', async (bad) => {
    const { runtime } = await fx.runtime({ capabilities: CAPABILITIES })
    const good = goodProvider()
    const first = counted((input) => bad.provider(runtime)(input))
    const last = counted((input) => bad.provider(runtime)(input))
    runtime.register({ registration: registration(BAD_LAST, { budget: bad.budget }), provider: last })
    runtime.register({ registration: registration(GOOD), provider: good })
    runtime.register({ registration: registration(BAD_FIRST, { budget: bad.budget }), provider: first })

    const req = request()
    const before = snapshotPrimary(req)
    const outcome = await runtime.dispatch(req)
    expect(req.receipt).toStrictEqual(before.receipt)
    expect(req.settlement).toStrictEqual(before.settlement)
    expect(eligible(req.receipt, req.settlement)).toBe(before.eligible)

    expect(outcome.hooks.map((h) => h.hookId)).toStrictEqual([BAD_FIRST, GOOD, BAD_LAST])
    // The good hook: exactly what it is without the bad ones.
    expect(hookOutcome(outcome, GOOD)).toStrictEqual(baseline.outcome)
    expect(await identityRecord(runtime, baseline.outcome.dispatchId)).toStrictEqual(baseline.record)
    expect(good.calls).toBe(1)
    expect(good.inputs[0]).toStrictEqual(baseline.input)
    // Each bad one: failed alone, with its code and rule, invoked once, recorded compactly.
    for (const [id, p] of [
      [BAD_FIRST, first],
      [BAD_LAST, last],
    ] as const) {
      const o = hookOutcome(outcome, id)
      expect(o).toMatchObject({
        outcome: 'failed',
        attempt: 1,
        receipt: null,
        failureCode: bad.code,
        failureRule: bad.rule,
      })
      expect(p.calls).toBe(1)
      expect(await runtime.journal.listFailures(o.dispatchId)).toMatchObject([
        { attempt: 1, code: bad.code, rule: bad.rule },
      ])
      expect(await runtime.journal.getDispatch(o.dispatchId)).toMatchObject({
        state: 'failed',
        attempts: 1,
        receipt: null,
      })
    }
    bad.check?.()
    // Late settlements (if any) change nothing.
    await sleep(bad.budget?.timeout_ms ? 150 : 0)
    const j = await journalContents(runtime)
    expect(j.stats).toStrictEqual({ ...EMPTY_STATS, proposed: 1, failed: 2, intents: 1, intentsOpen: 1 })
    expect(j.intents.map((i) => i.intentId)).toStrictEqual(baseline.outcome.receipt!.intent_ids)
    // The process and the runtime survive: the next dispatch runs normally.
    const next = await runtime.dispatch(req)
    expect(hookOutcome(next, GOOD)).toMatchObject({ outcome: 'replayed', receipt: baseline.outcome.receipt })
    expect(hookOutcome(next, BAD_FIRST)).toMatchObject({
      outcome: 'exhausted',
      failureCode: 'dispatch_budget_exhausted',
    })
    expect((await runtime.journal.integrity()).ok).toBe(true)
  })

  it('a re-entrant dispatch that the provider catches is refused and the provider goes on', async () => {
    const { runtime } = await fx.runtime({ capabilities: CAPABILITIES })
    const errors: unknown[] = []
    const polite = counted(async (input) => {
      try {
        await runtime.dispatch(request({ receipt: { receipt_id: 'receipt_inner' } }))
      } catch (e) {
        errors.push(e)
      }
      return signalResult(input)
    })
    runtime.register({ registration: registration(BAD_FIRST), provider: polite })
    runtime.register({ registration: registration(GOOD), provider: goodProvider() })
    const outcome = await runtime.dispatch(request())
    expect(outcome.hooks.map((h) => h.outcome)).toStrictEqual(['recorded', 'recorded'])
    expect(hookOutcome(outcome, GOOD)).toStrictEqual(baseline.outcome)
    expect(errors).toHaveLength(1)
    expect(errors[0]).toBeInstanceOf(LoopxHooksError)
    expect(errors[0]).toMatchObject({ code: 'ERR_LOOPX_REENTRANT_DISPATCH' })
    // The refused inner dispatch recorded nothing.
    expect((await runtime.journal.listDispatches()).items.map((d) => d.receiptId)).toStrictEqual([
      'receipt_0001',
      'receipt_0001',
    ])
  })
})

describe('budgets, retries and recovery', () => {
  it('budgets per hook are independent', async () => {
    const { runtime } = await fx.runtime({ capabilities: ['alpha', 'beta', 'gamma'] })
    const once = counted((): never => {
      throw new Error('x')
    })
    const thrice = counted((): never => {
      throw new Error('y')
    })
    const good = goodProvider()
    runtime.register({
      registration: registration('alpha.once', { budget: { max_invocations_per_dispatch: 1 } }),
      provider: once,
    })
    runtime.register({
      registration: registration('beta.thrice', { budget: { max_invocations_per_dispatch: 3 } }),
      provider: thrice,
    })
    runtime.register({
      registration: registration('gamma.good', { budget: { max_invocations_per_dispatch: 1 } }),
      provider: good,
    })
    const rows: string[][] = []
    for (let i = 0; i < 5; i++) {
      const o = await runtime.dispatch(request())
      rows.push(o.hooks.map((h) => `${h.outcome}:${h.attempt}`))
    }
    expect(rows).toStrictEqual([
      ['failed:1', 'failed:1', 'recorded:1'],
      ['exhausted:1', 'failed:2', 'replayed:1'],
      ['replayed:1', 'failed:3', 'replayed:1'],
      ['replayed:1', 'exhausted:3', 'replayed:1'],
      ['replayed:1', 'replayed:3', 'replayed:1'],
    ])
    expect([once.calls, thrice.calls, good.calls]).toStrictEqual([1, 3, 1])
    const j = await journalContents(runtime)
    expect(j.stats).toStrictEqual({ ...EMPTY_STATS, proposed: 1, exhausted: 2, intents: 1, intentsOpen: 1 })
  })

  it('retries up to max_invocations_per_dispatch, then exhausted on the next dispatch', async () => {
    const { runtime } = await fx.runtime({ capabilities: ['alpha', 'beta'] })
    const failing = counted((): never => {
      throw new Error('always')
    })
    runtime.register({
      registration: registration('alpha.retry', { budget: { max_invocations_per_dispatch: 4 } }),
      provider: failing,
    })
    // A flaky provider succeeds on its second try with the same identity.
    const flaky = counted((input, call) => {
      if (call === 1) throw new Error('first time')
      return signalResult(input)
    })
    runtime.register({
      registration: registration('beta.flaky', { budget: { max_invocations_per_dispatch: 2 } }),
      provider: flaky,
    })

    const outcomes: DispatchOutcome[] = []
    for (let i = 0; i < 6; i++) outcomes.push(await runtime.dispatch(request()))
    const retry = outcomes.map((o) => hookOutcome(o, 'alpha.retry'))
    expect(retry.map((o) => [o.outcome, o.attempt, o.failureCode])).toStrictEqual([
      ['failed', 1, 'producer_failed'],
      ['failed', 2, 'producer_failed'],
      ['failed', 3, 'producer_failed'],
      ['failed', 4, 'producer_failed'],
      ['exhausted', 4, 'dispatch_budget_exhausted'],
      ['replayed', 4, null],
    ])
    expect(failing.calls).toBe(4)
    expect(new Set(retry.map((o) => o.dispatchId)).size).toBe(1)
    expect(retry[4]!.receipt).toMatchObject({
      status: 'exhausted',
      attempt: 4,
      intent_ids: [],
      result_digest: null,
      failure: { code: 'dispatch_budget_exhausted', rule: null },
    })
    expect(retry[5]!.receipt).toStrictEqual(retry[4]!.receipt)
    const id = retry[0]!.dispatchId
    expect((await runtime.journal.listFailures(id)).map((f) => [f.attempt, f.code])).toStrictEqual([
      [1, 'producer_failed'],
      [2, 'producer_failed'],
      [3, 'producer_failed'],
      [4, 'producer_failed'],
    ])
    expect(await runtime.journal.getDispatch(id)).toMatchObject({ state: 'exhausted', attempts: 4 })

    const f = outcomes.map((o) => hookOutcome(o, 'beta.flaky'))
    expect(f.map((o) => [o.outcome, o.attempt])).toStrictEqual([
      ['failed', 1],
      ['recorded', 2],
      ['replayed', 2],
      ['replayed', 2],
      ['replayed', 2],
      ['replayed', 2],
    ])
    expect(flaky.calls).toBe(2)
    expect(f[1]!.receipt).toMatchObject({ status: 'proposed', attempt: 2 })
  })

  it('recover() re-dispatches failed identities and skips ones whose hook is not installed', async () => {
    const dir = fx.tempDir()
    const journalPath = dir.path('recover.journal')
    const { runtime } = await fx.runtime({ journalPath, capabilities: ['alpha', 'beta', 'gamma'] })
    let healthy = false
    const flaky = counted((input) => {
      if (!healthy) throw new Error('down')
      return signalResult(input)
    })
    const good = goodProvider()
    runtime.register({
      registration: registration('alpha.flaky', { budget: { max_invocations_per_dispatch: 3 } }),
      provider: flaky,
    })
    runtime.register({ registration: registration('beta.good'), provider: good })
    const first = await runtime.dispatch(request())
    const second = await runtime.dispatch(request({ receipt: { receipt_id: 'receipt_0002' } }))
    expect([...first.hooks, ...second.hooks].map((h) => h.outcome)).toStrictEqual([
      'failed',
      'recorded',
      'failed',
      'recorded',
    ])
    expect((await runtime.journal.stats()).failed).toBe(2)

    healthy = true
    const report = await runtime.recover()
    expect(report.skipped).toBe(0)
    expect(report.outcomes.map((o) => [o.hookId, o.outcome, o.attempt])).toStrictEqual([
      ['alpha.flaky', 'recorded', 2],
      ['alpha.flaky', 'recorded', 2],
    ])
    expect(report.outcomes.map((o) => o.dispatchId)).toStrictEqual([
      first.hooks[0]!.dispatchId,
      second.hooks[0]!.dispatchId,
    ])
    expect(flaky.calls).toBe(4)
    expect(good.calls).toBe(2)
    expect(await runtime.journal.stats()).toStrictEqual({ ...EMPTY_STATS, proposed: 4, intents: 4, intentsOpen: 4 })
    // Nothing left to recover.
    expect(await runtime.recover()).toStrictEqual({ outcomes: [], skipped: 0, ledgersSkipped: 0 })

    // An identity whose hook (with that exact registration) is not installed here is skipped, not dropped.
    const gamma = counted((): never => {
      throw new Error('down')
    })
    runtime.register({
      registration: registration('gamma.gone', { budget: { max_invocations_per_dispatch: 2 } }),
      provider: gamma,
    })
    await runtime.dispatch(request())
    await runtime.close()
    const other = await fx.runtime({ journalPath, capabilities: ['alpha', 'beta', 'gamma'] })
    other.runtime.register({
      registration: registration('gamma.gone', { budget: { max_invocations_per_dispatch: 3 } }),
      provider: goodProvider(),
    })
    expect(await other.runtime.recover()).toStrictEqual({ outcomes: [], skipped: 1, ledgersSkipped: 0 })
    expect((await other.runtime.journal.stats()).failed).toBe(1)
  })

  it('recover() re-dispatches an identity checkpointed by a process that died during invocation', async () => {
    const dir = fx.tempDir()
    const journalPath = dir.path('crash.journal')
    const lib = join(__dirname, '..', 'dist', 'index.js')
    // A long timeout: the recovery below starts well within it; the crashed attempt is known
    // ended all the same (its process's attempt ledger is folded), so it is not presumed live.
    const reg = registration('alpha.crash', { budget: { timeout_ms: 20_000, max_invocations_per_dispatch: 2 } })
    const script = `
      const { HookRuntime } = require(${JSON.stringify(lib)});
      (async () => {
        const runtime = await HookRuntime.open({ journal: ${JSON.stringify(journalPath)}, profile: { enabled: true } });
        runtime.defineIntentKind(${JSON.stringify(signalKind('alpha'))});
        // Dies mid-invocation, once its checkpoint (queued, not awaited, before the call) has committed;
        // a crash before that commit is covered by the attempt ledger (budgets.spec.ts).
        runtime.register({ registration: ${JSON.stringify(reg)}, provider: () => new Promise(() => { setTimeout(() => process.kill(process.pid, 'SIGKILL'), 200) }) });
        await runtime.dispatch(${JSON.stringify(request())});
        process.exit(3);
      })();
    `
    let status: number | null | undefined
    let signal: string | null | undefined
    try {
      execFileSync(process.execPath, ['-e', script], { stdio: 'pipe', timeout: 20_000 })
      status = 0
    } catch (e) {
      status = (e as { status: number | null }).status
      signal = (e as { signal: string | null }).signal
    }
    expect({ status, signal }).toStrictEqual({ status: null, signal: 'SIGKILL' })

    const { runtime } = await fx.runtime({ journalPath, capabilities: ['alpha'] })
    const rows = await runtime.journal.listDispatches()
    expect(rows.items).toHaveLength(1)
    // The invocation cut short counts: opening the journal folded the killed
    // process's attempt ledger, so attempt 1 is a recorded failure, not presumed live.
    expect(rows.items[0]).toMatchObject({ state: 'failed', attempts: 1, receipt: null, request: request() })
    const provider = goodProvider()
    runtime.register({ registration: reg, provider })
    const report = await runtime.recover()
    expect(report.skipped).toBe(0)
    expect(report.outcomes).toHaveLength(1)
    expect(report.outcomes[0]).toMatchObject({
      hookId: 'alpha.crash',
      dispatchId: rows.items[0]!.dispatchId,
      // Attempt 1 ended with its process: the recovery is attempt 2.
      outcome: 'recorded',
      attempt: 2,
    })
    expect(provider.calls).toBe(1)
    expect(provider.inputs[0]!.dispatch_id).toBe(rows.items[0]!.dispatchId)
    // And the primary replay afterwards returns that same receipt.
    const replay = await runtime.dispatch(request())
    expect(replay.hooks[0]).toMatchObject({ outcome: 'replayed', receipt: report.outcomes[0]!.receipt })
    expect(provider.calls).toBe(1)
  })
})

describe('runtime and journal misuse', () => {
  it('a closed runtime rejects with ERR_LOOPX_JOURNAL_CLOSED', async () => {
    const { runtime } = await fx.runtime({ capabilities: ['alpha'] })
    const provider = goodProvider()
    runtime.register({ registration: registration('alpha.one'), provider })
    await runtime.close()
    const attempts: [string, () => Promise<unknown>][] = [
      ['dispatch', () => runtime.dispatch(request())],
      ['recover', () => runtime.recover()],
      ['stats', () => runtime.journal.stats()],
      ['listDispatches', () => runtime.journal.listDispatches()],
      ['listIntents', () => runtime.journal.listIntents()],
      ['getDispatch', () => runtime.journal.getDispatch(`pwh_${'0'.repeat(64)}`)],
    ]
    for (const [name, call] of attempts) {
      const err = await call().then(
        () => undefined,
        (e: unknown) => e,
      )
      expect(err, name).toBeInstanceOf(LoopxHooksError)
      expect((err as LoopxHooksError).code, name).toBe('ERR_LOOPX_JOURNAL_CLOSED')
    }
    expect(provider.calls).toBe(0)
  })

  it('a text file or a foreign SQLite file is not a journal and is left byte-identical', async () => {
    const dir = fx.tempDir()
    const text = dir.path('notes.txt')
    writeFileSync(text, 'these are my notes\nnot a journal\n')
    const empty = dir.path('empty.sqlite')
    new Database(empty).close()
    const foreign = dir.path('app.sqlite')
    const db = new Database(foreign)
    db.exec(
      "CREATE TABLE dispatches (id INTEGER PRIMARY KEY, note TEXT); INSERT INTO dispatches (note) VALUES ('mine');",
    )
    db.close()
    const foreignWal = dir.path('wal.sqlite')
    const dbw = new Database(foreignWal)
    dbw.pragma('journal_mode = WAL')
    dbw.exec('CREATE TABLE t (x); INSERT INTO t VALUES (1);')
    dbw.close()
    const otherId = dir.path('other-app.sqlite')
    const dbo = new Database(otherId)
    dbo.pragma('application_id = 1234')
    dbo.close()

    for (const file of [text, foreign, foreignWal, otherId]) {
      const listing = readdirSync(dir.dir).sort()
      const bytes = readFileSync(file)
      for (const open of [
        () => HookRuntime.open({ journal: file, profile: { enabled: true } }),
        () => HookJournal.open(file),
      ]) {
        const err = await open().then(
          async (r) => {
            await r.close()
            return undefined
          },
          (e: unknown) => e,
        )
        expect(err, file).toBeInstanceOf(LoopxHooksError)
        expect((err as LoopxHooksError).code, file).toBe('ERR_LOOPX_NOT_A_JOURNAL')
        expect(readFileSync(file).equals(bytes), `${file} changed`).toBe(true)
        expect(readdirSync(dir.dir).sort(), `files beside ${file}`).toStrictEqual(listing)
      }
    }
    // An empty SQLite file (no schema, no application_id) is ours to create.
    const { runtime } = await fx.runtime({ journalPath: empty, capabilities: ['alpha'] })
    expect(await runtime.journal.stats()).toStrictEqual(EMPTY_STATS)
  })

  it('the profile allowlist admits only listed hooks', async () => {
    const { runtime } = await fx.runtime({
      profile: { allowlist: ['beta.listed', 'gamma.not_installed'] },
      capabilities: ['alpha', 'beta'],
    })
    const unlisted = goodProvider()
    const listed = goodProvider()
    runtime.register({ registration: registration('alpha.unlisted'), provider: unlisted })
    runtime.register({ registration: registration('beta.listed'), provider: listed })
    const outcome = await runtime.dispatch(request())
    expect(outcome.hooks.map((h) => [h.hookId, h.outcome])).toStrictEqual([['beta.listed', 'recorded']])
    expect(unlisted.calls).toBe(0)
    expect(listed.calls).toBe(1)
    const j = await journalContents(runtime)
    expect(j.dispatches.map((d) => d.hookId)).toStrictEqual(['beta.listed'])
    expect(j.intents.map((i) => i.capabilityId)).toStrictEqual(['beta'])
  })

  it('maxHooksPerDispatch: hooks past the ceiling fail with dispatch_budget_exhausted, attempt 0, not invoked, owed', async () => {
    const dir = fx.tempDir()
    const journalPath = dir.path('ceiling.journal')
    const { runtime } = await fx.runtime({
      journalPath,
      profile: { maxHooksPerDispatch: 2 },
      capabilities: ['alpha', 'beta', 'gamma', 'delta'],
    })
    const ids = ['delta.d', 'gamma.c', 'beta.b', 'alpha.a']
    const providers: Record<string, ReturnType<typeof goodProvider>> = {}
    for (const id of ids) {
      providers[id] = goodProvider()
      runtime.register({ registration: registration(id), provider: providers[id]! })
    }
    const outcome = await runtime.dispatch(request())
    expect(outcome.hooks.map((h) => [h.hookId, h.outcome, h.attempt, h.failureCode, h.receipt])).toStrictEqual([
      ['alpha.a', 'recorded', 1, null, outcome.hooks[0]!.receipt],
      ['beta.b', 'recorded', 1, null, outcome.hooks[1]!.receipt],
      ['delta.d', 'failed', 0, 'dispatch_budget_exhausted', null],
      ['gamma.c', 'failed', 0, 'dispatch_budget_exhausted', null],
    ])
    expect(ids.map((id) => providers[id]!.calls)).toStrictEqual([0, 0, 1, 1])
    const j = await journalContents(runtime)
    // Issue 12 item 1: the hooks that did not get their turn are journaled as owed (deferred, no attempt used).
    expect(j.dispatches.map((d) => [d.hookId, d.state, d.attempts])).toStrictEqual([
      ['alpha.a', 'proposed', 1],
      ['beta.b', 'proposed', 1],
      ['delta.d', 'checkpointed', 0],
      ['gamma.c', 'checkpointed', 0],
    ])
    expect(j.failures).toStrictEqual([])
    // Nothing was spent: a dispatch with room runs them normally, on their first attempt.
    await runtime.close()
    const roomy = await fx.runtime({
      journalPath,
      profile: { maxHooksPerDispatch: 16 },
      capabilities: ['alpha', 'beta', 'gamma', 'delta'],
    })
    for (const id of ids) roomy.runtime.register({ registration: registration(id), provider: providers[id]! })
    const again = await roomy.runtime.dispatch(request())
    expect(again.hooks.map((h) => [h.hookId, h.outcome, h.attempt])).toStrictEqual([
      ['alpha.a', 'replayed', 1],
      ['beta.b', 'replayed', 1],
      ['delta.d', 'recorded', 1],
      ['gamma.c', 'recorded', 1],
    ])
    expect(ids.map((id) => providers[id]!.calls)).toStrictEqual([1, 1, 1, 1])
  })

  it('maxDispatchWallMs: a slow hook spends the dispatch wall, later hooks are not started', async () => {
    const { runtime } = await fx.runtime({ profile: { maxDispatchWallMs: 60 }, capabilities: ['alpha', 'beta'] })
    const slow = counted(() => new Promise(() => {}))
    const after = goodProvider()
    runtime.register({
      registration: registration('alpha.slow', { budget: { timeout_ms: 5000, max_invocations_per_dispatch: 2 } }),
      provider: slow,
    })
    runtime.register({ registration: registration('beta.after'), provider: after })
    const started = Date.now()
    const outcome = await runtime.dispatch(request())
    expect(Date.now() - started).toBeLessThan(2000)
    expect(outcome.hooks.map((h) => [h.hookId, h.outcome, h.attempt, h.failureCode])).toStrictEqual([
      ['alpha.slow', 'failed', 1, 'dispatch_budget_exhausted'],
      ['beta.after', 'failed', 0, 'dispatch_budget_exhausted'],
    ])
    expect(slow.calls).toBe(1)
    expect(after.calls).toBe(0)
  })

  it('a limit is counted on the real clock: the signal never aborts before timeout_ms has passed', async () => {
    // The event loop's timers count from a cached, millisecond-truncated time and
    // can fire up to a millisecond early; an early cut of the wall let a later hook start.
    const { runtime } = await fx.runtime({ capabilities: ['alpha'] })
    const waited: number[] = []
    runtime.register({
      registration: registration('alpha.cut', { budget: { timeout_ms: 7, max_invocations_per_dispatch: 1 } }),
      provider: (_input, { signal }) =>
        new Promise<never>(() => {
          const start = performance.now()
          signal.addEventListener('abort', () => waited.push(performance.now() - start))
        }),
    })
    for (let i = 0; i < 100; i++) {
      const outcome = await runtime.dispatch(request({ settlement: { effect_id: `effect_${1000 + i}` } }))
      expect(outcome.hooks[0]?.failureCode).toBe('producer_timed_out')
    }
    expect(waited).toHaveLength(100)
    // The provider's clock starts a few microseconds after the runtime's; an early timer is up to a millisecond early.
    expect(waited.filter((ms) => ms < 6.9)).toStrictEqual([])
  })
})
