// The hot path (issue 8): providers are called on the JS thread and their
// timeout counts from the call (start-to-close), so a hook that blocks the
// event loop does not time out the good hooks behind it; each provider gets
// an AbortSignal; dispatches in flight are bounded (backpressure, coded
// refusal on request); dispatchMany equals one dispatch per request.
import { execFileSync } from 'node:child_process'
import { join } from 'node:path'

import { afterEach, describe, expect, it } from 'vitest'

import { readFileSync } from 'node:fs'

import {
  HookJournal,
  LoopxHooksError,
  TurnStartKernel,
  type DispatchOutcome,
  type PostWritebackHookInput,
  type TurnStartHookInput,
  type TurnStartHookRegistration,
  type TurnStartReceipt,
} from '../lib/index.js'
import { Fixtures, goodProvider, hookOutcome, registration, request, signalResult, sleep } from './support/runtime'
import { turnStartReceipt } from './support/turn_start'

const fx = new Fixtures()
afterEach(() => fx.cleanup())

function busy(ms: number): void {
  const until = Date.now() + ms
  while (Date.now() < until) {
    // the JS thread is blocked, as by a CPU-bound hook
  }
}

/** Outcomes without their clock-free but order-dependent noise: what a caller compares. */
function shape(o: DispatchOutcome) {
  return o.hooks.map((h) => [h.hookId, h.outcome, h.failureCode, h.receipt?.intent_ids ?? null])
}

describe('providers on the JS thread, timed from their call', () => {
  it('a hook that busy-loops 1.5 s does not time out the fast hook after it', async () => {
    const { runtime } = await fx.runtime({ capabilities: ['aslow', 'bfast'] })
    runtime.register({
      registration: registration('aslow.hook', { budget: { timeout_ms: 5000 } }),
      provider: (input: PostWritebackHookInput) => {
        busy(1500)
        return signalResult(input)
      },
    })
    const fast = goodProvider()
    runtime.register({ registration: registration('bfast.hook', { budget: { timeout_ms: 50 } }), provider: fast })
    // A second dispatch queued behind the blocked thread: its fast hook is called only once the thread is free.
    const [first, second] = await Promise.all([
      runtime.dispatch(request({ receipt: { receipt_id: 'receipt_busy_1' } })),
      runtime.dispatch(request({ receipt: { receipt_id: 'receipt_busy_2' } })),
    ])
    for (const out of [first, second]) {
      expect(hookOutcome(out, 'aslow.hook').outcome).toBe('recorded')
      expect(hookOutcome(out, 'bfast.hook').outcome).toBe('recorded')
      expect(hookOutcome(out, 'bfast.hook').receipt?.status).toBe('proposed')
    }
    expect(fast.calls).toBe(2)
  })

  it('a synchronous provider that overruns its timeout is producer_timed_out', async () => {
    const { runtime } = await fx.runtime({ capabilities: ['slow'] })
    runtime.register({
      registration: registration('slow.hook', { budget: { timeout_ms: 20 } }),
      provider: (input: PostWritebackHookInput) => {
        busy(60)
        return signalResult(input)
      },
    })
    const out = await runtime.dispatch(request())
    expect(hookOutcome(out, 'slow.hook').failureCode).toBe('producer_timed_out')
  })

  it('a provider observes its AbortSignal abort at its timeout', async () => {
    const { runtime } = await fx.runtime({ capabilities: ['wait'] })
    const seen: { aborted: boolean; reason: string | undefined; afterMs: number }[] = []
    runtime.register({
      registration: registration('wait.hook', { budget: { timeout_ms: 40 } }),
      provider: (_input, { signal }) => {
        const start = performance.now()
        return new Promise<never>((_resolve, reject) => {
          signal.addEventListener('abort', () => {
            seen.push({
              aborted: signal.aborted,
              reason: (signal.reason as DOMException | undefined)?.name,
              afterMs: performance.now() - start,
            })
            reject(new Error('aborted'))
          })
        })
      },
    })
    const out = await runtime.dispatch(request())
    expect(hookOutcome(out, 'wait.hook').failureCode).toBe('producer_timed_out')
    expect(seen).toHaveLength(1)
    expect(seen[0]!.aborted).toBe(true)
    expect(seen[0]!.reason).toBe('TimeoutError')
    expect(seen[0]!.afterMs).toBeGreaterThanOrEqual(35)
  })

  it('close() aborts the signal of a provider in flight and still records its outcome', async () => {
    const { runtime } = await fx.runtime({ capabilities: ['wait'] })
    let reason: string | undefined
    runtime.register({
      registration: registration('wait.hook', { budget: { timeout_ms: 5000 } }),
      provider: (input, { signal }) =>
        new Promise<ReturnType<typeof signalResult>>((resolve) => {
          signal.addEventListener('abort', () => {
            reason = (signal.reason as DOMException).name
            resolve(signalResult(input))
          })
        }),
    })
    const pending = runtime.dispatch(request())
    await sleep(20)
    await runtime.close()
    expect(reason).toBe('AbortError')
    expect(hookOutcome(await pending, 'wait.hook').outcome).toBe('recorded')
  })
})

describe('backpressure', () => {
  it('past maxInFlight, { wait: false } is refused with ERR_LOOPX_BACKPRESSURE; waiting calls run in turn', async () => {
    const { runtime } = await fx.runtime({ capabilities: ['slow'], profile: { maxInFlight: 2 } })
    let release!: () => void
    const gate = new Promise<void>((r) => (release = r))
    runtime.register({
      registration: registration('slow.hook', { budget: { timeout_ms: 5000 } }),
      provider: async (input: PostWritebackHookInput) => {
        await gate
        return signalResult(input)
      },
    })
    const a = runtime.dispatch(request({ receipt: { receipt_id: 'receipt_bp_1' } }))
    const b = runtime.dispatch(request({ receipt: { receipt_id: 'receipt_bp_2' } }))
    const c = runtime.dispatch(request({ receipt: { receipt_id: 'receipt_bp_3' } }))
    const refused = await runtime
      .dispatch(request({ receipt: { receipt_id: 'receipt_bp_4' } }), { wait: false })
      .catch((e: unknown) => e)
    expect(refused).toBeInstanceOf(LoopxHooksError)
    expect((refused as LoopxHooksError).code).toBe('ERR_LOOPX_BACKPRESSURE')
    release()
    const outs = await Promise.all([a, b, c])
    expect(outs.map((o) => o.hooks[0]!.outcome)).toEqual(['recorded', 'recorded', 'recorded'])
    expect((await runtime.journal.stats()).proposed).toBe(3)
  })

  it('20,000 concurrent dispatches of instant providers: no producer_timed_out, bounded memory', () => {
    // In a child process, so that the heap and RSS it measures are its own.
    const dir = fx.tempDir()
    const script = join(__dirname, 'children', 'many-dispatches.mjs')
    const out = execFileSync(process.execPath, [script, dir.path('j.sqlite'), '20000'], {
      encoding: 'utf8',
      timeout: 240_000,
    })
    const r = JSON.parse(out.trim().split('\n').pop()!) as {
      n: number
      outcomes: Record<string, number>
      failures: Record<string, number>
      rssGrowthMb: number
      heapGrowthMb: number
      proposed: number
    }
    expect(r.failures).toEqual({})
    expect(r.outcomes).toEqual({ recorded: 40_000 })
    expect(r.proposed).toBe(40_000)
    // Generous: the old path grew to ~1.5 GB at 100k; 20k requests themselves are a few MB.
    expect(r.heapGrowthMb).toBeLessThan(200)
    expect(r.rssGrowthMb).toBeLessThan(400)
  }, 300_000)
})

describe('dispatchMany', () => {
  it('equals one dispatch per request, in order, replays included', async () => {
    const many = await fx.runtime({ capabilities: ['alpha', 'beta'] })
    const one = await fx.runtime({ capabilities: ['alpha', 'beta'] })
    for (const { runtime } of [many, one]) {
      runtime.register({ registration: registration('alpha.hook'), provider: goodProvider() })
      runtime.register({
        registration: registration('beta.hook'),
        provider: async (input: PostWritebackHookInput) => {
          await sleep(1)
          if (input.source.receipt_id.endsWith('3')) throw new Error('no')
          return signalResult(input, { level: 2 })
        },
      })
    }
    const requests = ['receipt_m_1', 'receipt_m_2', 'receipt_m_3', 'receipt_m_1'].map((id) =>
      request({ receipt: { receipt_id: id } }),
    )
    const batched = await many.runtime.dispatchMany(requests)
    const single: DispatchOutcome[] = []
    for (const r of requests) single.push(await one.runtime.dispatch(r))
    expect(batched.map(shape)).toEqual(single.map(shape))
    expect(batched[2]!.hooks.map((h) => h.outcome)).toEqual(['recorded', 'failed'])
    expect(batched[3]!.hooks.map((h) => h.outcome)).toEqual(['replayed', 'replayed'])
    expect(await many.runtime.journal.stats()).toEqual(await one.runtime.journal.stats())
  })
})

describe('the checkpoint is queued, not awaited, before the provider is called', () => {
  it('a crash before it commits still spends the attempt (the attempt ledger): the same request then records once', async () => {
    const dir = fx.tempDir()
    const journalPath = dir.path('crash.journal')
    const lib = join(__dirname, '..', 'dist', 'index.js')
    // A long timeout: the re-dispatch below starts well within it; the crashed attempt is known ended all the same.
    const reg = registration('alpha.crash', { budget: { timeout_ms: 20_000, max_invocations_per_dispatch: 2 } })
    const { signalKind } = await import('./support/runtime')
    // The provider kills its process in the very turn it is called.
    const script = `
      const { HookRuntime } = require(${JSON.stringify(lib)});
      (async () => {
        const runtime = await HookRuntime.open({ journal: ${JSON.stringify(journalPath)}, profile: { enabled: true } });
        runtime.defineIntentKind(${JSON.stringify(signalKind('alpha'))});
        runtime.register({ registration: ${JSON.stringify(reg)}, provider: () => { process.kill(process.pid, 'SIGKILL') } });
        await runtime.dispatch(${JSON.stringify(request())});
      })();
    `
    const killed = (() => {
      try {
        execFileSync(process.execPath, ['-e', script], { stdio: 'pipe', timeout: 20_000 })
        return null
      } catch (e) {
        return (e as { signal: string | null }).signal
      }
    })()
    expect(killed).toBe('SIGKILL')
    const { runtime } = await fx.runtime({ journalPath, capabilities: ['alpha'] })
    const rows = (await runtime.journal.listDispatches()).items
    // Whether or not the checkpoint reached the file, the attempt noted before the call
    // is folded in when the journal is opened: a failed attempt 1, never a final record.
    expect(rows).toHaveLength(1)
    expect(rows[0]).toMatchObject({ state: 'failed', attempts: 1, receipt: null })
    const provider = goodProvider()
    runtime.register({ registration: reg, provider })
    // The orchestrator re-dispatches from its committed primary receipt (or recover() finds the checkpoint).
    const out = await runtime.dispatch(request())
    expect(out.hooks[0]).toMatchObject({ outcome: 'recorded', attempt: 2 })
    expect(provider.calls).toBe(1)
    expect(await runtime.journal.stats()).toMatchObject({ proposed: 1, checkpointed: 0, failed: 0 })
  })
})

describe('a checkpoint waits for its record only while the provider answers within its turn', () => {
  it('a provider still running after its turn has its attempt counted where another handle sees it', async () => {
    // SQLite: its attempt ledger file is what lets a checkpoint wait for its record.
    const journalPath = fx.tempDir().path('slow.journal')
    const { runtime } = await fx.runtime({ journalPath, capabilities: ['alpha'] })
    let release!: () => void
    const running = new Promise<void>((go) => (release = go))
    runtime.register({
      registration: registration('alpha.slow', { budget: { timeout_ms: 20_000 } }),
      provider: async (input: PostWritebackHookInput) => {
        await running
        return signalResult(input)
      },
    })
    const fast = goodProvider()
    runtime.register({ registration: registration('alpha.fast'), provider: fast })
    const pending = runtime.dispatch(request())
    // Another handle on the same file: what another process would see.
    const other = await HookJournal.open(journalPath)
    try {
      let rows = (await other.listDispatches()).items
      for (let i = 0; i < 500 && rows.length < 2; i++) {
        await sleep(10)
        rows = (await other.listDispatches()).items
      }
      expect(rows.map((r) => [r.hookId, r.state, r.attempts]).sort()).toEqual([
        ['alpha.fast', 'checkpointed', 1],
        ['alpha.slow', 'checkpointed', 1],
      ])
      release()
      const out = await pending
      expect(out.hooks.map((h) => [h.hookId, h.outcome, h.attempt])).toEqual([
        ['alpha.fast', 'recorded', 1],
        ['alpha.slow', 'recorded', 1],
      ])
      expect((await other.stats()).proposed).toBe(2)
    } finally {
      release()
      await other.close()
    }
  })
})

describe('the turn-start kernel calls its providers on the JS thread too', () => {
  const example = JSON.parse(
    readFileSync(join(__dirname, '..', 'examples', 'turn_start_registration.json'), 'utf8'),
  ) as TurnStartHookRegistration
  const reg = (capability: string, timeoutMs: number): TurnStartHookRegistration => {
    const r = structuredClone(example)
    r.capability_id = capability
    r.hook_id = `${capability}.turn_start_read`
    r.budget.timeout_ms = timeoutMs
    return r
  }
  const receipt = (input: TurnStartHookInput): TurnStartReceipt => turnStartReceipt(input)
  const request = {
    turn: { goal_id: 'goal_opaque', agent_id: 'agent_opaque', turn_instance_id: 'turn_opaque' },
    quota: { max_units: 3 },
  }

  it('a hook that busy-loops 1.5 s does not time out the fast hook after it', async () => {
    const kernel = new TurnStartKernel({ profile: { enabled: true } })
    kernel.register({
      registration: reg('aslow', 5000),
      provider: (input) => {
        busy(1500)
        return receipt(input)
      },
    })
    kernel.register({ registration: reg('bfast', 50), provider: async (input) => receipt(input) })
    const out = await kernel.dispatchTurnStart(request)
    expect(out.hooks.map((h) => [h.hookId, h.receipt.status, h.kernelFailure])).toEqual([
      ['aslow.turn_start_read', 'empty', null],
      ['bfast.turn_start_read', 'empty', null],
    ])
  })

  it('a turn-start provider observes its AbortSignal abort at its timeout', async () => {
    const kernel = new TurnStartKernel({ profile: { enabled: true } })
    let reason: string | undefined
    kernel.register({
      registration: reg('wait', 40),
      provider: (_input, { signal }) =>
        new Promise((_resolve, reject) => {
          signal.addEventListener('abort', () => {
            reason = (signal.reason as DOMException).name
            reject(new Error('aborted'))
          })
        }),
    })
    const out = await kernel.dispatchTurnStart(request)
    expect(out.hooks[0]!.receipt.status).toBe('timed_out')
    expect(reason).toBe('TimeoutError')
  })
})
