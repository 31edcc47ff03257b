/**
 * The dispatcher's life on `node:diagnostics_channel`, so any tracer can
 * subscribe (as undici, fastify and pg publish theirs), plus the per-runtime
 * figures behind `runtime.metrics()`.
 *
 * Every publish is guarded by `hasSubscribers`, so nobody listening costs one
 * property read; the message objects are built only when someone listens.
 * A provider's thrown error reaches hook subscribers as `error`, in memory
 * only: the journal, outcomes and receipts never see it.
 */
import diagnostics_channel from 'node:diagnostics_channel'
import type { Decision, DispatchOutcome, HookOutcomeKind, RetentionStats, StoredIntent } from '../bindings/index'
import { FAILED, NOT_JSON, TIMED_OUT, TOO_LARGE, WALL } from './provider.js'

/** The channel names (stable). */
export const channels = {
  /** `TracingChannel`: one trace per dispatch (start, end, asyncStart, asyncEnd, error). */
  dispatch: 'loopx-hooks:dispatch',
  /** `TracingChannel`: one trace per provider call. */
  hook: 'loopx-hooks:hook',
  /** One message per group commit that finished dispatches of a runtime. */
  commit: 'loopx-hooks:commit',
  /** One message per outbox claim, decision or mark-done. */
  outbox: 'loopx-hooks:outbox',
  /** `TracingChannel`: one trace per `TurnStartKernel.dispatchTurnStart`. */
  turnStart: 'loopx-hooks:turn-start',
  /** `TracingChannel`: one trace per turn-start provider call. */
  turnStartHook: 'loopx-hooks:turn-start-hook',
} as const

/** The context object of a `loopx-hooks:dispatch` trace. */
export interface DispatchMessage {
  /** The `HookRuntime` dispatching. */
  runtime: object
  /** From the request (contract fields, as the RFC spells them). */
  effectId: string
  /** The committed primary receipt's id, from the request. */
  receiptId: string
  /** The Goal's id, from the request. */
  goalId: string
  /** The Turn instance's id, from the request. */
  turnInstanceId: string
  /** Set at asyncEnd when the dispatch resolved. */
  result?: DispatchOutcome
  /** Set at error when it rejected (a `LoopxHooksError`). */
  error?: unknown
}

/** How a provider call ended, as the JS side saw it (before validation). */
export type ProviderReply = 'replied' | 'threw' | 'not_json' | 'timed_out' | 'wall' | 'too_large'

const REPLY_KINDS: Record<string, ProviderReply> = {
  [FAILED]: 'threw',
  [NOT_JSON]: 'not_json',
  [TIMED_OUT]: 'timed_out',
  [WALL]: 'wall',
  [TOO_LARGE]: 'too_large',
}

/** What a provider's reply text (or marker) says about how the call ended. */
export function replyKind(text: string): ProviderReply {
  return text.charCodeAt(0) === 0 ? (REPLY_KINDS[text] ?? 'threw') : 'replied'
}

/** The context object of a `loopx-hooks:hook` trace. */
export interface HookMessage {
  /** The `HookRuntime` dispatching. */
  runtime: object
  /** The dispatch trace this call belongs to, when that trace was published. */
  dispatch: DispatchMessage | undefined
  /** The hook called. */
  hookId: string
  /** The dispatch's `pwh_` id. */
  dispatchId: string
  /** Milliseconds the provider took (set at end or asyncEnd). */
  durationMs?: number
  /** Set at end or asyncEnd. */
  reply?: ProviderReply
  /** The provider's thrown or rejected value, in memory only (set at error). */
  error?: unknown
}

/** A `loopx-hooks:commit` message. */
export interface CommitMessage {
  /** The `HookRuntime` whose writer committed. */
  runtime: object
  /** Commands in the transaction (checkpoints, records, decisions of every caller). */
  size: number
  /** BEGIN to end of COMMIT, retries included. */
  latencyMs: number
  /** Committed with `synchronous=FULL`. */
  durable: boolean
  /** Whole-batch retries after SQLITE_BUSY. */
  busyRetries: number
  /** Whether the transaction committed (`false`: it failed and was rolled back). */
  committed: boolean
  /** Dispatches of this runtime it finished. */
  dispatches: number
}

/** A `loopx-hooks:outbox` message. */
export interface OutboxMessage {
  /** The `HookJournal`. */
  journal: object
  /** Which outbox call this is. */
  action: 'claim' | 'decide' | 'done'
  /** The executor that called it. */
  executorId: string
  /** For decide and done. */
  intentId?: string
  /** For decide. */
  decision?: Decision
  /** For claim: the intents claimed. */
  intents?: readonly StoredIntent[]
  /** The outcome document (decide, done) when it resolved. */
  result?: unknown
  /** The error when it rejected (a `LoopxHooksError`). */
  error?: unknown
}

export const dispatchChannel = diagnostics_channel.tracingChannel<unknown, DispatchMessage>(channels.dispatch)
export const hookChannel = diagnostics_channel.tracingChannel<unknown, HookMessage>(channels.hook)
export const commitChannel = diagnostics_channel.channel(channels.commit)
export const outboxChannel = diagnostics_channel.channel(channels.outbox)

/** Publishes an outbox action's outcome when someone listens; returns the outcome unchanged. */
export async function tracedOutbox<T>(message: () => OutboxMessage, run: () => Promise<T>): Promise<T> {
  if (!outboxChannel.hasSubscribers) return run()
  const m = message()
  try {
    const result = await run()
    if (m.action === 'claim') m.intents = result as StoredIntent[]
    else m.result = result
    outboxChannel.publish(m)
    return result
  } catch (error) {
    m.error = error
    outboxChannel.publish(m)
    throw error
  }
}

/** A histogram with fixed upper bounds; `counts` has one more bucket for the rest. */
export interface Histogram {
  /** The buckets' upper bounds, ascending. */
  bounds: number[]
  /** Observations per bucket: `counts[i]` are those `<= bounds[i]` (and above the bound before); the last, those above every bound. */
  counts: number[]
  /** Observations in all. */
  count: number
  /** The observations' sum. */
  sum: number
}

/** What `runtime.metrics()` returns (a snapshot; counts since the runtime opened). */
export interface HookRuntimeMetrics {
  /** Dispatches by how they ended. */
  dispatches: {
    /** Dispatches that resolved with an outcome. */
    resolved: number
    admitted: number
    refused: number
    /** Dispatches that rejected, by `LoopxHooksError` code. */
    errors: Record<string, number>
  }
  /** Hook outcomes by kind (`HookOutcome.outcome`, its name camelCase: `not_applicable` is `notApplicable`). */
  hookOutcomes: HookOutcomeCounts
  /** Hook outcomes by RFC failure code (`producer_failed`, ...). */
  failureCodes: Record<string, number>
  /** Provider calls by how the call ended on the JS side. */
  providerReplies: Record<string, number>
  /** Provider call latency in milliseconds. */
  providerLatencyMs: Histogram
  /** The journal writer's group commits (every batch, checkpoint-only ones too). */
  commits: {
    count: number
    durable: number
    commands: number
    maxBatch: number
    /** Commands per commit. */
    batchSize: Histogram
    /** Milliseconds per commit (fractional: bounds from 0.1 ms), BEGIN to end of COMMIT. */
    latencyMs: Histogram
  }
  /** The journal writer now. */
  writer: {
    /** Commands queued whose group commit has not finished, now. */
    queueDepth: number
    /** Whole-batch retries after SQLITE_BUSY. */
    busyRetries: number
    /**
     * Times the writer thread slept until a command came, since the runtime
     * opened. Each is a cross-thread wake-up: per dispatch, the price of its
     * hand-offs to the writer.
     */
    wakes: number
  }
  /**
   * The journal's retention: what `runtime.journal.prune()` removed since the
   * runtime opened, and the journal's size as the last `prune()` or
   * `storage()` read it (`HookJournal.retention()`).
   */
  journal: RetentionStats
}

/** Hook outcomes of a runtime's dispatches, one count per `HookOutcomeKind` (zero included). */
export interface HookOutcomeCounts {
  /** `recorded`: a result accepted and recorded. */
  recorded: number
  /** `not_applicable`: the provider answered not applicable, recorded too. */
  notApplicable: number
  /** `replayed`: a final receipt already in the journal answered. */
  replayed: number
  /** `failed`: the attempt failed (see `failureCodes`). */
  failed: number
  /** `conflict`: a different accepted result is already recorded. */
  conflict: number
  /** `exhausted`: the hook's attempts are used up. */
  exhausted: number
}

const OUTCOME_MEMBER: Record<HookOutcomeKind, keyof HookOutcomeCounts> = {
  recorded: 'recorded',
  not_applicable: 'notApplicable',
  replayed: 'replayed',
  failed: 'failed',
  conflict: 'conflict',
  exhausted: 'exhausted',
}

/** Provider latency bounds (ms). */
export const PROVIDER_LATENCY_BOUNDS_MS = [1, 5, 10, 25, 50, 100, 250, 500, 1000, 5000]

export function histogram(bounds: number[]): Histogram {
  return { bounds, counts: new Array<number>(bounds.length + 1).fill(0), count: 0, sum: 0 }
}

export function observe(h: Histogram, value: number): void {
  let at = h.bounds.findIndex((b) => value <= b)
  if (at < 0) at = h.bounds.length
  h.counts[at]!++
  h.count++
  h.sum += value
}

function bump(counts: Record<string, number>, key: string): void {
  counts[key] = (counts[key] ?? 0) + 1
}

/** The JS-side counters of one runtime (always on: a few increments per dispatch). */
export class Tally {
  resolved = 0
  admitted = 0
  refused = 0
  readonly errors: Record<string, number> = {}
  readonly hookOutcomes: HookOutcomeCounts = {
    recorded: 0,
    notApplicable: 0,
    replayed: 0,
    failed: 0,
    conflict: 0,
    exhausted: 0,
  }
  readonly failureCodes: Record<string, number> = {}
  readonly providerReplies: Record<string, number> = {}
  readonly providerLatencyMs = histogram(PROVIDER_LATENCY_BOUNDS_MS)

  outcome(o: DispatchOutcome): void {
    this.resolved++
    if (o.admitted) this.admitted++
    else this.refused++
    for (const h of o.hooks) {
      this.hookOutcomes[OUTCOME_MEMBER[h.outcome]]++
      if (h.failureCode) bump(this.failureCodes, h.failureCode)
    }
  }

  error(e: unknown): void {
    const code = (e as { code?: unknown } | null)?.code
    bump(this.errors, typeof code === 'string' ? code : 'unknown')
  }

  provider(reply: ProviderReply, ms: number): void {
    bump(this.providerReplies, reply)
    observe(this.providerLatencyMs, ms)
  }
}
