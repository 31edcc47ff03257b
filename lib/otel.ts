/**
 * `loopx-hooks/otel`: an OpenTelemetry bridge over the diagnostics channels
 * (needs the optional peer `@opentelemetry/api`). Spans for each dispatch and
 * each provider call, counters and histograms for the figures of
 * `runtime.metrics()`.
 *
 * Turn-start dispatches and their provider calls get spans too
 * (otel_turn_start.ts). Attributes carry ids, outcome kinds and codes only. A provider's thrown
 * error is never recorded (its message may hold anything): the hook span gets
 * status ERROR without a message and `loopx.provider.reply = "threw"`; a host
 * that wants the Error object subscribes to `loopx-hooks:hook` itself.
 */
import diagnostics_channel from 'node:diagnostics_channel'
import { SpanStatusCode, context, metrics, trace } from '@opentelemetry/api'
import type { Attributes, Meter, Span, Tracer } from '@opentelemetry/api'
import {
  channels,
  type CommitMessage,
  type DispatchMessage,
  type HookMessage,
  type OutboxMessage,
} from './diagnostics.js'
import { expectArgs, expectOptions } from './args.js'
import type { HookRuntime } from './runtime.js'
import type { TurnStartKernel } from './turn_start.js'
import { instrumentTurnStart } from './otel_turn_start.js'

/** What `instrument` reports through, and which kernel it traces. */
export interface InstrumentOptions {
  /** Default: `trace.getTracer('loopx-hooks')` of the global provider. */
  tracer?: Tracer
  /** Default: `metrics.getMeter('loopx-hooks')` of the global provider. */
  meter?: Meter
  /**
   * The turn-start kernel whose dispatches to trace. Without it, `instrument()`
   * (no runtime) traces every kernel and `instrument(runtime)` none.
   */
  kernel?: TurnStartKernel
}

/** A live subscription of `instrument`; dispose it to stop reporting. */
export interface Instrumentation extends Disposable {
  /** Unsubscribes from every channel; spans still open are ended. */
  dispose(): void
}

/** Only stable codes reach attributes, never free text. */
function codeOf(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code
  return typeof code === 'string' && /^ERR_LOOPX_[A-Z_]+$/.test(code) ? code : 'unknown'
}

/** Epoch milliseconds with sub-millisecond precision, as OpenTelemetry takes them. */
const now = (): number => performance.timeOrigin + performance.now()

interface OpenHook {
  message: HookMessage
  span: Span
  endedAt?: number
}

/** How old the journal's size may be before a collection reads it again. */
const STORAGE_REFRESH_MS = 60_000

/**
 * Subscribes to the loopx-hooks channels and reports through OpenTelemetry.
 * With a runtime, only that runtime's (and its journal's) messages count and
 * the writer's queue depth, commits and busy retries are observed from
 * `runtime.metrics()`; with `null`/nothing, every runtime's. Turn-start
 * dispatches are traced for `options.kernel`, or for every kernel when no
 * runtime is given (see otel_turn_start.ts).
 */
export function instrument(runtime?: HookRuntime | null, options?: InstrumentOptions): Instrumentation {
  if (runtime !== null) expectArgs('instrument', { runtime: [runtime, 'object?'] })
  options = expectOptions('instrument', 'options', options, { tracer: 'object?', meter: 'object?', kernel: 'object?' })
  const tracer = options.tracer ?? trace.getTracer('loopx-hooks')
  const meter = options.meter ?? metrics.getMeter('loopx-hooks')
  const mine = (owner: object): boolean => runtime == null || owner === runtime
  const mineJournal = (journal: object): boolean => runtime == null || journal === runtime.journal

  const dispatches = meter.createCounter('loopx.hooks.dispatches', { description: 'Dispatches by outcome' })
  const hookOutcomes = meter.createCounter('loopx.hooks.hook_outcomes', {
    description: 'Hook outcomes by kind and failure code',
  })
  const providerDuration = meter.createHistogram('loopx.hooks.provider.duration', {
    description: 'Provider call latency',
    unit: 'ms',
  })
  const batchSize = meter.createHistogram('loopx.hooks.commit.batch_size', {
    description: 'Commands per group commit that finished dispatches',
  })
  const commitDuration = meter.createHistogram('loopx.hooks.commit.duration', {
    description: 'Group commit latency, BEGIN to end of COMMIT',
    unit: 'ms',
  })
  const busyRetries = meter.createCounter('loopx.hooks.commit.busy_retries', {
    description: 'Whole-batch retries after SQLITE_BUSY, in commits that finished dispatches',
  })
  const outbox = meter.createCounter('loopx.hooks.outbox.actions', { description: 'Outbox claims and decisions' })

  const observables: Array<() => void> = []
  if (runtime) {
    const queueDepth = meter.createObservableGauge('loopx.hooks.writer.queue_depth', {
      description: 'Journal writer commands queued whose group commit has not finished',
    })
    const commits = meter.createObservableCounter('loopx.hooks.writer.commits', {
      description: 'Journal writer group commits (all)',
    })
    const writerBusy = meter.createObservableCounter('loopx.hooks.writer.busy_retries', {
      description: 'Journal writer whole-batch retries after SQLITE_BUSY (all)',
    })
    const journalBytes = meter.createObservableGauge('loopx.hooks.journal.size', {
      description: 'Bytes the journal occupies, as last read (refreshed at most once a minute)',
      unit: 'By',
    })
    const pruned = meter.createObservableCounter('loopx.hooks.journal.pruned', {
      description: 'Dispatches pruned to their tombstone by this runtime',
    })
    const all = [queueDepth, commits, writerBusy, journalBytes, pruned]
    let refreshing = false
    const callback = (result: import('@opentelemetry/api').BatchObservableResult): void => {
      let m
      try {
        m = runtime.metrics()
      } catch {
        return // a closed runtime has nothing more to report
      }
      result.observe(queueDepth, m.writer.queueDepth)
      result.observe(commits, m.commits.count)
      result.observe(writerBusy, m.writer.busyRetries)
      result.observe(pruned, m.journal.dispatches)
      if (m.journal.storage) result.observe(journalBytes, m.journal.storage.bytes)
      // The size is a read (a query on PostgreSQL): made off the collection, for the next one.
      if (!refreshing && (m.journal.storageAt ?? 0) < Date.now() - STORAGE_REFRESH_MS) {
        refreshing = true
        runtime.journal
          .storage()
          .catch(() => undefined)
          .finally(() => (refreshing = false))
      }
    }
    meter.addBatchObservableCallback(callback, all)
    observables.push(() => meter.removeBatchObservableCallback(callback, all))
  }

  const dispatchSpans = new WeakMap<DispatchMessage, { span: Span; hooks: OpenHook[] }>()
  const hookSpans = new WeakMap<HookMessage, OpenHook>()
  const open = new Set<Span>()

  const dispatchHandlers = {
    start(m: DispatchMessage) {
      if (!mine(m.runtime)) return
      const span = tracer.startSpan('loopx-hooks dispatch', {
        attributes: {
          'loopx.effect_id': m.effectId,
          'loopx.receipt_id': m.receiptId,
          'loopx.goal_id': m.goalId,
          'loopx.turn_instance_id': m.turnInstanceId,
        },
      })
      open.add(span)
      dispatchSpans.set(m, { span, hooks: [] })
    },
    end() {},
    asyncStart() {},
    error() {},
    asyncEnd(m: DispatchMessage) {
      const open_ = dispatchSpans.get(m)
      if (!open_) return
      dispatchSpans.delete(m)
      const { span, hooks } = open_
      const outcome = m.result
      if (outcome) {
        span.setAttributes({
          'loopx.dispatch.admitted': outcome.admitted,
          'loopx.dispatch.hooks': outcome.hooks.length,
        })
        if (outcome.refusal) span.setAttribute('loopx.dispatch.refusal', outcome.refusal)
        dispatches.add(1, { outcome: outcome.admitted ? 'admitted' : 'refused' })
        for (const h of outcome.hooks) {
          const attrs: Attributes = { outcome: h.outcome }
          if (h.failureCode) attrs.failure_code = h.failureCode
          hookOutcomes.add(1, attrs)
          // The hook's span learns its recorded outcome here, ended at the time its provider did.
          const called = hooks.find((o) => o.message.hookId === h.hookId)
          if (called) {
            called.span.setAttribute('loopx.hook.outcome', h.outcome)
            if (h.failureCode) called.span.setAttribute('loopx.failure_code', h.failureCode)
            if (h.outcome === 'failed' || h.outcome === 'exhausted')
              called.span.setStatus({ code: SpanStatusCode.ERROR })
          }
        }
      } else {
        const code = codeOf(m.error)
        span.setAttribute('loopx.error_code', code)
        span.setStatus({ code: SpanStatusCode.ERROR })
        dispatches.add(1, { outcome: 'error', error_code: code })
      }
      for (const h of hooks) endSpan(h.span, h.endedAt)
      endSpan(span)
    },
  }

  const endSpan = (span: Span, at?: number): void => {
    if (!open.delete(span)) return
    span.end(at)
  }

  /** A provider call ended: note its reply now; the span ends with its dispatch (or now, without one). */
  const hookEnded = (m: HookMessage): void => {
    const h = hookSpans.get(m)
    if (!h || m.reply === undefined || h.endedAt !== undefined) return
    h.endedAt = now()
    h.span.setAttribute('loopx.provider.reply', m.reply)
    if (m.durationMs !== undefined) {
      h.span.setAttribute('loopx.provider.duration_ms', m.durationMs)
      providerDuration.record(m.durationMs, { reply: m.reply })
    }
    if (m.reply !== 'replied') h.span.setStatus({ code: SpanStatusCode.ERROR })
    if (!m.dispatch || !dispatchSpans.has(m.dispatch)) endSpan(h.span, h.endedAt)
  }

  const hookHandlers = {
    start(m: HookMessage) {
      if (!mine(m.runtime)) return
      const parent = m.dispatch && dispatchSpans.get(m.dispatch)
      const ctx = parent ? trace.setSpan(context.active(), parent.span) : context.active()
      const span = tracer.startSpan(
        'loopx-hooks hook',
        { attributes: { 'loopx.hook_id': m.hookId, 'loopx.dispatch_id': m.dispatchId } },
        ctx,
      )
      open.add(span)
      const h: OpenHook = { message: m, span }
      hookSpans.set(m, h)
      parent?.hooks.push(h)
    },
    end: hookEnded,
    asyncStart() {},
    asyncEnd: hookEnded,
    // The thrown value is deliberately not recorded (see the module comment).
    error() {},
  }

  const onCommit = (raw: unknown): void => {
    const m = raw as CommitMessage
    if (!mine(m.runtime)) return
    const attrs = { durable: m.durable, committed: m.committed }
    batchSize.record(m.size, attrs)
    commitDuration.record(m.latencyMs, attrs)
    if (m.busyRetries > 0) busyRetries.add(m.busyRetries)
  }

  const onOutbox = (raw: unknown): void => {
    const m = raw as OutboxMessage
    if (!mineJournal(m.journal)) return
    const attrs: Attributes = { action: m.action }
    if (m.error !== undefined) attrs.error_code = codeOf(m.error)
    else if (m.action === 'claim') attrs.claimed = m.intents?.length ?? 0
    else {
      // DecideOutcome is `{ kind }`, DoneOutcome a string.
      const verdict = typeof m.result === 'string' ? m.result : (m.result as { outcome?: unknown } | undefined)?.outcome
      if (typeof verdict === 'string' && /^[a-z_]+$/.test(verdict)) attrs.result = verdict
    }
    outbox.add(1, attrs)
  }

  const dispatchChannel = diagnostics_channel.tracingChannel<unknown, DispatchMessage>(channels.dispatch)
  const hookChannel = diagnostics_channel.tracingChannel<unknown, HookMessage>(channels.hook)
  dispatchChannel.subscribe(dispatchHandlers)
  hookChannel.subscribe(hookHandlers)
  diagnostics_channel.subscribe(channels.commit, onCommit)
  diagnostics_channel.subscribe(channels.outbox, onOutbox)
  const kernel = options.kernel
  if (kernel !== undefined || runtime == null) {
    observables.push(instrumentTurnStart(tracer, meter, (k) => kernel === undefined || k === kernel))
  }

  let disposed = false
  const dispose = (): void => {
    if (disposed) return
    disposed = true
    dispatchChannel.unsubscribe(dispatchHandlers)
    hookChannel.unsubscribe(hookHandlers)
    diagnostics_channel.unsubscribe(channels.commit, onCommit)
    diagnostics_channel.unsubscribe(channels.outbox, onOutbox)
    for (const stop of observables) stop()
    for (const span of [...open]) endSpan(span)
  }
  return { dispose, [Symbol.dispose]: dispose }
}
