/**
 * The turn-start phase on `node:diagnostics_channel`, as flights.ts publishes
 * the post-writeback dispatcher's: one `loopx-hooks:turn-start` trace per
 * `dispatchTurnStart`, one `loopx-hooks:turn-start-hook` trace per provider
 * call. Built only while someone subscribes. A provider's thrown error
 * reaches subscribers as `error`, in memory only; the outcome and receipts
 * carry only the code core made of it.
 */
import diagnostics_channel from 'node:diagnostics_channel'
import type { TurnStartOutcome } from '../bindings/index'
import { channels, replyKind, type ProviderReply } from './diagnostics.js'
import type { ProviderProbe } from './provider.js'

/** The context object of a `loopx-hooks:turn-start` trace. */
export interface TurnStartMessage {
  /** The `TurnStartKernel` dispatching. */
  kernel: object
  /** From the request's `turn` (unvalidated here: see `result.admitted`). */
  goalId: string
  /** The Agent's id, from the request's `turn`. */
  agentId: string
  /** The Turn instance's id, from the request's `turn`. */
  turnInstanceId: string
  /** Set at asyncEnd when the dispatch resolved. */
  result?: TurnStartOutcome
  /** Set at error when it rejected (a `LoopxHooksError`). */
  error?: unknown
}

/** The context object of a `loopx-hooks:turn-start-hook` trace. */
export interface TurnStartHookMessage {
  /** The `TurnStartKernel` dispatching. */
  kernel: object
  /** The turn-start trace this call belongs to, when that trace was published. */
  turnStart: TurnStartMessage | undefined
  /** The hook called. */
  hookId: string
  /** Milliseconds the provider took (set at end or asyncEnd). */
  durationMs?: number
  /** Set at end or asyncEnd. */
  reply?: ProviderReply
  /** The provider's thrown or rejected value, in memory only (set at error). */
  error?: unknown
}

export const turnStartChannel = diagnostics_channel.tracingChannel<unknown, TurnStartMessage>(channels.turnStart)
export const turnStartHookChannel = diagnostics_channel.tracingChannel<unknown, TurnStartHookMessage>(
  channels.turnStartHook,
)

/** The trace's context: ids from the request's JSON text (which the kernel validates next). */
export function turnStartMessage(kernel: object, requestJson: string): TurnStartMessage {
  let turn: { goal_id?: unknown; agent_id?: unknown; turn_instance_id?: unknown } | undefined
  try {
    turn = (JSON.parse(requestJson) as { turn?: typeof turn } | null)?.turn
  } catch {
    turn = undefined // not JSON: the kernel refuses it as not_json_value
  }
  const id = (v: unknown): string => (typeof v === 'string' ? v : '')
  return {
    kernel,
    goalId: id(turn?.goal_id),
    agentId: id(turn?.agent_id),
    turnInstanceId: id(turn?.turn_instance_id),
  }
}

/**
 * Publishes one provider call's trace around `call` when someone subscribes:
 * start, then error (the thrown value) when it threw, end, and for an
 * asynchronous answer asyncStart and asyncEnd.
 */
export function tracedCall(
  kernel: object,
  trace: TurnStartMessage | undefined,
  hookId: string,
  call: (probe: ProviderProbe | undefined) => string | Promise<string>,
): string | Promise<string> {
  if (!turnStartHookChannel.hasSubscribers) return call(undefined)
  const hook: TurnStartHookMessage = { kernel, turnStart: trace, hookId }
  const probe: ProviderProbe = {
    settled(text, ms, error) {
      hook.reply = replyKind(text)
      hook.durationMs = ms
      if (hook.reply === 'threw') {
        hook.error = error
        turnStartHookChannel.error.publish(hook)
      }
    },
  }
  turnStartHookChannel.start.publish(hook)
  const reply = call(probe)
  turnStartHookChannel.end.publish(hook)
  if (typeof reply === 'string') return reply
  return reply.then((text) => {
    turnStartHookChannel.asyncStart.publish(hook)
    turnStartHookChannel.asyncEnd.publish(hook)
    return text
  })
}
