// The OpenTelemetry bridge (issue 10, item 1): `loopx-hooks/otel`'s
// instrument() turns the diagnostics channels into spans (dispatch, and each
// provider call as its child, with ids and outcome codes as attributes) and
// metrics (dispatches by outcome, hook outcomes and failure codes, provider
// latency, commit batch size and latency, writer queue depth and busy
// retries), checked with the SDK's in-memory span exporter and a metric
// reader. No planted secret reaches any attribute, event or status. Turn-start
// dispatches get a span with a child per provider call in the same way.
import { afterEach, describe, expect, it } from 'vitest'

import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { MeterProvider, MetricReader, type ResourceMetrics } from '@opentelemetry/sdk-metrics'

import { TurnStartKernel } from '../lib/index.js'
import { instrument, type Instrumentation } from '../lib/otel.js'
import { Fixtures, goodProvider, hookOutcome, registration, request, signalResult } from './support/runtime'
import { turnStartReceipt, turnStartRegistration, turnStartRequest } from './support/turn_start'

class TestReader extends MetricReader {
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}

const fx = new Fixtures()
const live: Instrumentation[] = []
afterEach(async () => {
  for (const i of live.splice(0)) i.dispose()
  await fx.cleanup()
})

function sdk() {
  const exporter = new InMemorySpanExporter()
  const tracer = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }).getTracer('test')
  const reader = new TestReader()
  const meter = new MeterProvider({ readers: [reader] }).getMeter('test')
  return { exporter, tracer, reader, meter }
}

interface Point {
  attributes: Record<string, unknown>
  value: unknown
}

async function collect(reader: TestReader): Promise<Map<string, Point[]>> {
  const { resourceMetrics } = (await reader.collect()) as { resourceMetrics: ResourceMetrics }
  const out = new Map<string, Point[]>()
  for (const scope of resourceMetrics.scopeMetrics) {
    for (const metric of scope.metrics) {
      out.set(
        metric.descriptor.name,
        metric.dataPoints.map((p) => ({ attributes: p.attributes, value: p.value })),
      )
    }
  }
  return out
}

const sum = (points: Point[] | undefined, match: Record<string, unknown> = {}) =>
  (points ?? [])
    .filter((p) => Object.entries(match).every(([k, v]) => p.attributes[k] === v))
    .reduce((n, p) => n + (p.value as number), 0)

describe('instrument(runtime, { tracer, meter })', () => {
  it('makes a dispatch span with one child span per provider call, ids and outcome codes as attributes', async () => {
    const { exporter, tracer, meter } = sdk()
    const { runtime } = await fx.runtime({ capabilities: ['alpha', 'beta'] })
    runtime.register({ registration: registration('alpha.hook'), provider: goodProvider() })
    runtime.register({
      registration: registration('beta.hook'),
      provider: async (input: Parameters<typeof signalResult>[0]) => {
        await new Promise((go) => setTimeout(go, 3))
        return { ...signalResult(input), status: 'bogus' } as never
      },
    })
    live.push(instrument(runtime, { tracer, meter }))
    const outcome = await runtime.dispatch(request({ receipt: { receipt_id: 'receipt_otel_1' } }))

    const spans = exporter.getFinishedSpans()
    const dispatch = spans.find((s) => s.name === 'loopx-hooks dispatch')!
    expect(dispatch.attributes).toMatchObject({
      'loopx.effect_id': 'effect_0001',
      'loopx.receipt_id': 'receipt_otel_1',
      'loopx.goal_id': 'goal_0001',
      'loopx.turn_instance_id': 'turn_0001',
      'loopx.dispatch.admitted': true,
      'loopx.dispatch.hooks': 2,
    })
    const hooks = spans.filter((s) => s.name === 'loopx-hooks hook')
    expect(hooks.map((s) => s.attributes['loopx.hook_id']).sort()).toEqual(['alpha.hook', 'beta.hook'])
    for (const h of hooks) {
      expect(h.parentSpanContext?.spanId).toBe(dispatch.spanContext().spanId)
      expect(h.spanContext().traceId).toBe(dispatch.spanContext().traceId)
      const id = h.attributes['loopx.hook_id'] as string
      expect(h.attributes['loopx.dispatch_id']).toBe(hookOutcome(outcome, id).dispatchId)
      expect(h.attributes['loopx.provider.reply']).toBe('replied')
      expect(h.attributes['loopx.hook.outcome']).toBe(hookOutcome(outcome, id).outcome)
    }
    const beta = hooks.find((s) => s.attributes['loopx.hook_id'] === 'beta.hook')!
    expect(beta.attributes['loopx.failure_code']).toBe('result_contract_rejected')
    expect(beta.status.code).toBe(2) // ERROR
    expect(beta.attributes['loopx.provider.duration_ms']).toBeGreaterThanOrEqual(2)
  })

  it('records failures as codes, never the provider’s error text or a credential', async () => {
    const secrets = ['sk_live_PLANTED_otel_51c2', 'Bearer eyJPLANTED.otel.token', 'postgres://admin:PLANTEDpw@db']
    const { exporter, tracer, reader, meter } = sdk()
    const { runtime } = await fx.runtime({ capabilities: ['gamma', 'delta'] })
    runtime.register({
      registration: registration('gamma.hook'),
      provider: () => {
        const e = new Error(`failed: ${secrets[0]} ${secrets[2]}`)
        ;(e as Error & { code: string }).code = secrets[1]!
        throw e
      },
    })
    runtime.register({
      registration: registration('delta.hook'),
      provider: () => Promise.reject(new Error(secrets.join(' '))),
    })
    live.push(instrument(runtime, { tracer, meter }))
    await runtime.dispatch(request({ receipt: { receipt_id: 'receipt_otel_2' } }))
    // A dispatch that rejects: its span carries the stable code only.
    await runtime.close()
    await expect(runtime.dispatch(request({ receipt: { receipt_id: 'receipt_otel_3' } }))).rejects.toThrow()

    const spans = exporter.getFinishedSpans()
    const hooks = spans.filter((s) => s.name === 'loopx-hooks hook')
    expect(hooks).toHaveLength(2)
    for (const h of hooks) {
      expect(h.attributes['loopx.provider.reply']).toBe('threw')
      expect(h.attributes['loopx.failure_code']).toBe('producer_failed')
      expect(h.status).toEqual({ code: 2 })
      expect(h.events).toEqual([])
    }
    const metrics = await collect(reader)
    const everything = JSON.stringify({
      spans: spans.map((s) => ({
        name: s.name,
        attributes: s.attributes,
        events: s.events,
        status: s.status,
        links: s.links,
      })),
      metrics: [...metrics.entries()],
    })
    for (const secret of [...secrets, 'PLANTED']) expect(everything).not.toContain(secret)
  })

  it('counts dispatches, hook outcomes, provider latency, commits and the writer queue', async () => {
    const { tracer, reader, meter } = sdk()
    const { runtime } = await fx.runtime({ capabilities: ['eta', 'theta'] })
    runtime.register({ registration: registration('eta.hook'), provider: goodProvider() })
    runtime.register({
      registration: registration('theta.hook'),
      provider: () => {
        throw new Error('no')
      },
    })
    live.push(instrument(runtime, { tracer, meter }))
    await Promise.all([1, 2, 3].map((i) => runtime.dispatch(request({ receipt: { receipt_id: `receipt_om_${i}` } }))))
    await runtime.dispatch(request({ receipt: { receipt_id: 'receipt_om_x', status: 'prepared' } }))
    const [intent] = await runtime.journal.claim({ executorId: 'eta.exec', leaseMs: 5000, batch: 1 })
    await runtime.journal.decide({
      intentId: intent!.intentId,
      executorId: 'eta.exec',
      decision: 'reject',
      reasonCode: 'no',
    })
    await new Promise((r) => setTimeout(r, 5))
    const pruned = await runtime.journal.prune({ olderThanMs: 0 })
    expect(pruned.dispatches).toBe(1)

    const m = await collect(reader)
    expect(sum(m.get('loopx.hooks.dispatches'), { outcome: 'admitted' })).toBe(3)
    expect(sum(m.get('loopx.hooks.dispatches'), { outcome: 'refused' })).toBe(1)
    expect(sum(m.get('loopx.hooks.hook_outcomes'), { outcome: 'recorded' })).toBe(3)
    expect(sum(m.get('loopx.hooks.hook_outcomes'), { outcome: 'failed', failure_code: 'producer_failed' })).toBe(3)
    const latency = m.get('loopx.hooks.provider.duration')!
    const count = (match: Record<string, unknown>) =>
      latency
        .filter((p) => Object.entries(match).every(([k, v]) => p.attributes[k] === v))
        .reduce((n, p) => n + (p.value as { count: number }).count, 0)
    expect(count({ reply: 'replied' })).toBe(3)
    expect(count({ reply: 'threw' })).toBe(3)
    const batches = m.get('loopx.hooks.commit.batch_size')!
    expect(batches.reduce((n, p) => n + (p.value as { count: number }).count, 0)).toBeGreaterThanOrEqual(1)
    expect(m.get('loopx.hooks.commit.duration')!.length).toBeGreaterThanOrEqual(1)
    expect(sum(m.get('loopx.hooks.writer.queue_depth'))).toBe(0)
    expect(sum(m.get('loopx.hooks.writer.commits'))).toBe(runtime.metrics().commits.count)
    expect(sum(m.get('loopx.hooks.writer.busy_retries'))).toBe(0)
    // Retention: what this runtime pruned, and the journal's size the prune read afterwards.
    expect(sum(m.get('loopx.hooks.journal.pruned'))).toBe(1)
    expect(sum(m.get('loopx.hooks.journal.size'))).toBe(runtime.metrics().journal.storage!.bytes)
    expect(runtime.metrics().journal).toMatchObject({ prunes: 1, dispatches: 1, intents: 1, storage: { pruned: 1 } })
    expect(sum(m.get('loopx.hooks.outbox.actions'), { action: 'claim', claimed: 1 })).toBe(1)
    expect(sum(m.get('loopx.hooks.outbox.actions'), { action: 'decide', result: 'decided' })).toBe(1)
  })

  it('listens to its runtime only, and dispose() unsubscribes', async () => {
    const { exporter, tracer, meter } = sdk()
    const { runtime: mine } = await fx.runtime({ capabilities: ['iota'] })
    const { runtime: other } = await fx.runtime({ capabilities: ['iota'] })
    for (const r of [mine, other]) r.register({ registration: registration('iota.hook'), provider: goodProvider() })
    const handle = instrument(mine, { tracer, meter })
    live.push(handle)
    await other.dispatch(request({ receipt: { receipt_id: 'receipt_other' } }))
    await mine.dispatch(request({ receipt: { receipt_id: 'receipt_mine' } }))
    const dispatches = () => exporter.getFinishedSpans().filter((s) => s.name === 'loopx-hooks dispatch')
    expect(dispatches().map((s) => s.attributes['loopx.receipt_id'])).toEqual(['receipt_mine'])
    handle.dispose()
    await mine.dispatch(request({ receipt: { receipt_id: 'receipt_after' } }))
    expect(dispatches()).toHaveLength(1)
  })
})

describe('instrument(runtime, { kernel }): turn-start spans', () => {
  it('makes a turn-start span with a child per provider call; statuses and codes only, no planted secret', async () => {
    const secrets = ['sk_live_PLANTED_ts_otel_77aa', 'Bearer eyJPLANTED.ts.token', 'postgres://admin:PLANTEDpw@db']
    const { exporter, tracer, reader, meter } = sdk()
    const k = new TurnStartKernel({ profile: { enabled: true } })
    k.register({
      registration: turnStartRegistration('alpha'),
      provider: async (i) => {
        await new Promise((go) => setTimeout(go, 3))
        return turnStartReceipt(i, { status: 'ok', agent_read_required: true, observations_new: 1, pending: 1 })
      },
    })
    k.register({
      registration: turnStartRegistration('gamma'),
      provider: () => {
        const e = new Error(`failed: ${secrets[0]} ${secrets[2]}`)
        ;(e as Error & { code: string }).code = secrets[1]!
        throw e
      },
    })
    const other = new TurnStartKernel({ profile: { enabled: true } })
    other.register({ registration: turnStartRegistration('alpha'), provider: (i) => turnStartReceipt(i) })
    const { runtime } = await fx.runtime()
    live.push(instrument(runtime, { tracer, meter, kernel: k }))
    const outcome = await k.dispatchTurnStart(turnStartRequest())
    await other.dispatchTurnStart(turnStartRequest('turn_other')) // not this instrumentation's kernel
    // A refused request whose ids hold a secret: none of them becomes an attribute.
    const refused = await k.dispatchTurnStart({
      turn: { goal_id: secrets[2]!, agent_id: secrets[1]!, turn_instance_id: secrets[0]! },
      quota: { max_units: 1 },
    })
    expect(refused.admitted).toBe(false)

    const spans = exporter.getFinishedSpans()
    const turns = spans.filter((s) => s.name === 'loopx-hooks turn-start')
    expect(turns).toHaveLength(2)
    expect(turns[0]!.attributes).toEqual({
      'loopx.goal_id': 'goal_diag',
      'loopx.agent_id': 'agent_diag',
      'loopx.turn_instance_id': 'turn_diag_1',
      'loopx.turn_start.admitted': true,
      'loopx.turn_start.phase_enabled': true,
      'loopx.turn_start.hooks': 2,
      'loopx.turn_start.lane': outcome.lane.decision,
      'loopx.turn_start.lane_reason': outcome.lane.reason,
      'loopx.turn_start.required_reads': outcome.requiredReads.length,
    })
    expect(turns[1]!.attributes).toEqual({
      'loopx.turn_start.admitted': false,
      'loopx.turn_start.phase_enabled': true,
      'loopx.turn_start.hooks': 0,
    })
    const calls = spans.filter((s) => s.name === 'loopx-hooks turn-start hook')
    expect(calls.map((s) => s.attributes['loopx.hook_id'])).toEqual(['alpha.turn_start_read', 'gamma.turn_start_read'])
    for (const c of calls) {
      expect(c.parentSpanContext?.spanId).toBe(turns[0]!.spanContext().spanId)
      expect(c.events).toEqual([])
    }
    expect(calls[0]!.attributes).toMatchObject({
      'loopx.provider.reply': 'replied',
      'loopx.turn_start.status': 'ok',
      'loopx.turn_start.pending_standing': 'reported',
    })
    expect(calls[0]!.attributes['loopx.provider.duration_ms']).toBeGreaterThanOrEqual(2)
    expect(calls[0]!.status.code).toBe(0) // UNSET
    expect(calls[1]!.attributes).toMatchObject({
      'loopx.provider.reply': 'threw',
      'loopx.failure_code': 'producer_failed',
      'loopx.turn_start.status': outcome.hooks[1]!.receipt.status,
    })
    expect(calls[1]!.status).toEqual({ code: 2 })

    const m = await collect(reader)
    expect(sum(m.get('loopx.hooks.turn_start.dispatches'), { outcome: 'admitted' })).toBe(1)
    expect(sum(m.get('loopx.hooks.turn_start.dispatches'), { outcome: 'refused' })).toBe(1)
    expect(sum(m.get('loopx.hooks.turn_start.hook_statuses'), { status: 'ok' })).toBe(1)
    expect(sum(m.get('loopx.hooks.turn_start.hook_statuses'), { failure_code: 'producer_failed' })).toBe(1)
    const latency = m.get('loopx.hooks.turn_start.provider.duration')!
    expect(latency.reduce((n, p) => n + (p.value as { count: number }).count, 0)).toBe(2)
    const everything = JSON.stringify({
      spans: spans.map((s) => ({ name: s.name, attributes: s.attributes, events: s.events, status: s.status })),
      metrics: [...m.entries()],
    })
    for (const secret of [...secrets, 'PLANTED']) expect(everything).not.toContain(secret)
  })

  it('traces every kernel with instrument(), none with instrument(runtime) alone', async () => {
    const { exporter, tracer, meter } = sdk()
    const k = new TurnStartKernel({ profile: { enabled: true } })
    k.register({ registration: turnStartRegistration('beta'), provider: (i) => turnStartReceipt(i) })
    const { runtime } = await fx.runtime()
    const onlyRuntime = instrument(runtime, { tracer, meter })
    live.push(onlyRuntime)
    await k.dispatchTurnStart(turnStartRequest())
    expect(exporter.getFinishedSpans()).toEqual([])
    onlyRuntime.dispose()
    const every = instrument(null, { tracer, meter })
    live.push(every)
    await k.dispatchTurnStart(turnStartRequest('turn_diag_2'))
    expect(exporter.getFinishedSpans().map((s) => s.name)).toEqual([
      'loopx-hooks turn-start hook',
      'loopx-hooks turn-start',
    ])
    every.dispose()
    await k.dispatchTurnStart(turnStartRequest('turn_diag_3'))
    expect(exporter.getFinishedSpans()).toHaveLength(2)
  })
})
