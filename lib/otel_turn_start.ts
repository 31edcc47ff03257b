/**
 * The turn-start half of `loopx-hooks/otel`: a span per `dispatchTurnStart`
 * with one child span per provider call, and counters for turn-start
 * dispatches and hook statuses and a provider latency histogram. As for
 * post-writeback hooks, attributes are ids, statuses and codes only, and a
 * provider's thrown error is never recorded. The Turn's ids come from the
 * request, so they become attributes only once the kernel admitted it (a
 * refused request may hold anything).
 */
import diagnostics_channel from 'node:diagnostics_channel'
import { SpanStatusCode, context, trace } from '@opentelemetry/api'
import type { Attributes, Meter, Span, Tracer } from '@opentelemetry/api'
import { channels } from './diagnostics.js'
import type { TurnStartHookMessage, TurnStartMessage } from './turn_start_trace.js'

const TOKEN = /^[a-z_]+$/

/** Only stable codes reach attributes, never free text. */
function codeOf(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code
  return typeof code === 'string' && /^ERR_LOOPX_[A-Z_]+$/.test(code) ? code : 'unknown'
}

const now = (): number => performance.timeOrigin + performance.now()

interface OpenCall {
  message: TurnStartHookMessage
  span: Span
  endedAt?: number
}

/** Subscribes to the turn-start channels for the kernels `mine` accepts; returns the unsubscriber. */
export function instrumentTurnStart(tracer: Tracer, meter: Meter, mine: (kernel: object) => boolean): () => void {
  const dispatches = meter.createCounter('loopx.hooks.turn_start.dispatches', {
    description: 'Turn-start dispatches by outcome',
  })
  const statuses = meter.createCounter('loopx.hooks.turn_start.hook_statuses', {
    description: 'Turn-start hook receipts by status and kernel failure code',
  })
  const duration = meter.createHistogram('loopx.hooks.turn_start.provider.duration', {
    description: 'Turn-start provider call latency',
    unit: 'ms',
  })
  const turns = new WeakMap<TurnStartMessage, { span: Span; calls: OpenCall[] }>()
  const calls = new WeakMap<TurnStartHookMessage, OpenCall>()
  const open = new Set<Span>()
  const endSpan = (span: Span, at?: number): void => {
    if (open.delete(span)) span.end(at)
  }

  const turnHandlers = {
    start(m: TurnStartMessage) {
      if (!mine(m.kernel)) return
      const span = tracer.startSpan('loopx-hooks turn-start')
      open.add(span)
      turns.set(m, { span, calls: [] })
    },
    end() {},
    asyncStart() {},
    error() {},
    asyncEnd(m: TurnStartMessage) {
      const t = turns.get(m)
      if (!t) return
      turns.delete(m)
      const outcome = m.result
      if (outcome) {
        if (outcome.admitted) {
          t.span.setAttributes({
            'loopx.goal_id': m.goalId,
            'loopx.agent_id': m.agentId,
            'loopx.turn_instance_id': m.turnInstanceId,
            'loopx.turn_start.lane': outcome.lane.decision,
            'loopx.turn_start.lane_reason': outcome.lane.reason,
            'loopx.turn_start.required_reads': outcome.requiredReads.length,
          })
        }
        t.span.setAttributes({
          'loopx.turn_start.admitted': outcome.admitted,
          'loopx.turn_start.phase_enabled': outcome.phaseEnabled,
          'loopx.turn_start.hooks': outcome.hooks.length,
        })
        dispatches.add(1, { outcome: outcome.admitted ? 'admitted' : 'refused' })
        for (const h of outcome.hooks) {
          const failure = h.kernelFailure?.code
          const attrs: Attributes = { status: h.receipt.status }
          if (failure) attrs.failure_code = failure
          statuses.add(1, attrs)
          const called = t.calls.find((c) => c.message.hookId === h.hookId)
          if (!called) continue
          called.span.setAttribute('loopx.turn_start.status', h.receipt.status)
          called.span.setAttribute('loopx.turn_start.pending_standing', h.pendingStanding)
          const code = h.receipt.error_code
          if (code && TOKEN.test(code)) called.span.setAttribute('loopx.turn_start.error_code', code)
          if (failure) called.span.setAttribute('loopx.failure_code', failure)
          if (failure || (h.receipt.status !== 'ok' && h.receipt.status !== 'empty'))
            called.span.setStatus({ code: SpanStatusCode.ERROR })
        }
      } else {
        const code = codeOf(m.error)
        t.span.setAttribute('loopx.error_code', code)
        t.span.setStatus({ code: SpanStatusCode.ERROR })
        dispatches.add(1, { outcome: 'error', error_code: code })
      }
      for (const c of t.calls) endSpan(c.span, c.endedAt)
      endSpan(t.span)
    },
  }

  /** A provider call ended: note its reply now; the span ends with its dispatch (or now, without one). */
  const callEnded = (m: TurnStartHookMessage): void => {
    const c = calls.get(m)
    if (!c || m.reply === undefined || c.endedAt !== undefined) return
    c.endedAt = now()
    c.span.setAttribute('loopx.provider.reply', m.reply)
    if (m.durationMs !== undefined) {
      c.span.setAttribute('loopx.provider.duration_ms', m.durationMs)
      duration.record(m.durationMs, { reply: m.reply })
    }
    if (m.reply !== 'replied') c.span.setStatus({ code: SpanStatusCode.ERROR })
    if (!m.turnStart || !turns.has(m.turnStart)) endSpan(c.span, c.endedAt)
  }

  const callHandlers = {
    start(m: TurnStartHookMessage) {
      if (!mine(m.kernel)) return
      const parent = m.turnStart && turns.get(m.turnStart)
      const ctx = parent ? trace.setSpan(context.active(), parent.span) : context.active()
      const span = tracer.startSpan('loopx-hooks turn-start hook', { attributes: { 'loopx.hook_id': m.hookId } }, ctx)
      open.add(span)
      const c: OpenCall = { message: m, span }
      calls.set(m, c)
      parent?.calls.push(c)
    },
    end: callEnded,
    asyncStart() {},
    asyncEnd: callEnded,
    // The thrown value is deliberately not recorded.
    error() {},
  }

  const turnChannel = diagnostics_channel.tracingChannel<unknown, TurnStartMessage>(channels.turnStart)
  const callChannel = diagnostics_channel.tracingChannel<unknown, TurnStartHookMessage>(channels.turnStartHook)
  turnChannel.subscribe(turnHandlers)
  callChannel.subscribe(callHandlers)
  return () => {
    turnChannel.unsubscribe(turnHandlers)
    callChannel.unsubscribe(callHandlers)
    for (const span of [...open]) endSpan(span)
  }
}
