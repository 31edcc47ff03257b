/**
 * `serve --stdio`'s two-phase dispatch, for hosts whose producers live in
 * another process (the Python adapter): the engine's own steps
 * (`NativeHookRuntime.prepare/begin/complete`) over one open journal, with
 * the producers called by the caller between `prepare` and `finish`. Every
 * rule (admission, order, identities, checkpoints, validation, records,
 * replays) stays in the core; this file only converts requests and replies.
 *
 *   open    {journal, profile?, dialect?, kinds?, registrations}
 *   prepare {request, only_hook_id?} -> {done: OUTCOME} | {ticket, calls}
 *   begin   {ticket, slot}           -> {limit: {ms, wall} | null} (on PostgreSQL,
 *           answered once the attempt is committed on the server)
 *   finish  {ticket, outcomes}       -> {done: OUTCOME}
 *   cancel  {ticket}; recover_items; close
 *
 * OUTCOME is the engine's outcome, the value `HookRuntime.dispatch` resolves
 * to (in the shipped dialect it carries the shipped dispatch result under
 * `shipped`, which is what `ShippedHookRuntime.dispatch` resolves to).
 */
import type { NativeHookRuntime } from '../../index.js'
import { callLimit, planOf, type Plan } from '../plan.js'
import { optionsJson } from '../args.js'
import { RUNTIME_OPTIONS } from '../generated/options.js'
import { LoopxHooksError } from '../errors.js'
import { NOT_STARTED, TIMED_OUT, TOO_LARGE, WALL } from '../provider.js'
import type { Addon } from './io.js'
import { RequestError, badRequest, count, isObject, optionalText, text, texts, type Request } from './serve_request.js'

/** How a producer's call ended, as the caller reports it. */
const STATUSES = ['returned', 'raised', 'not_json', 'timed_out', 'not_started'] as const
const NOT_JSON = '\u0000not_json'
const RAISED = '\u0000threw'
/** A raised error crosses as a code of this shape only, never as its text. */
const CODE_SHAPE = /^[A-Za-z][A-Za-z0-9_.-]{0,63}$/

interface Prepared {
  /** Per planned call: its slot, reply bound, and whether its limit was the wall budget. */
  calls: { slot: number; maxReplyLength: number; wall: boolean }[]
}

interface Waiter {
  resolve: (outcome: unknown) => void
  reject: (error: unknown) => void
}

type FinishedItem = [number, unknown, [string, string] | null]

function open<T>(value: T | undefined): T {
  if (value === undefined) throw badRequest("no journal is open (send 'open' first)")
  return value
}

export class DispatchSession {
  #runtime: NativeHookRuntime | undefined
  readonly #prepared = new Map<number, Prepared>()
  readonly #waiting = new Map<number, Waiter>()

  constructor(private readonly addon: () => Addon) {}

  /** Answers one of this file's ops; undefined when `op` is not one of them. */
  answer(op: unknown, request: Request): Promise<unknown> | unknown {
    switch (op) {
      case 'open':
        return this.#open(request)
      case 'prepare':
        return this.#prepare(request)
      case 'begin':
        return this.#begin(request)
      case 'finish':
        return this.#finish(request)
      case 'cancel':
        return this.#cancel(request)
      case 'recover_items':
        return this.#recoverItems()
      case 'close':
        return this.close().then(() => ({ closed: true }))
      default:
        return undefined
    }
  }

  /** What `recover()` re-dispatches, read off the JS thread (each owed identity is one read), in pages. */
  async #recoverItems(): Promise<unknown> {
    const recovery = await open(this.#runtime).recovery()
    const requests: string[] = []
    const hookIds: string[] = []
    for (;;) {
      const page = recovery.take(1024)
      if (page.requests.length === 0) break
      requests.push(...page.requests)
      hookIds.push(...page.hookIds)
    }
    return { requests, hookIds, skipped: recovery.skipped, ledgersSkipped: recovery.ledgersSkipped }
  }

  async #open(request: Request): Promise<unknown> {
    if (this.#runtime !== undefined) throw badRequest("a journal is already open (send 'close' first)")
    const registrations = texts(request, 'registrations')
    const kinds = request['kinds'] === undefined ? [] : texts(request, 'kinds')
    const options = { journal: request['journal'], profile: request['profile'], dialect: request['dialect'] }
    const runtime = await this.addon().openNativeRuntime(optionsJson('open', options, RUNTIME_OPTIONS), 'open')
    try {
      for (const [i, kind] of kinds.entries()) {
        const verdict = runtime.defineIntentKind(kind)
        if (!verdict.ok)
          throw new RequestError('ERR_LOOPX_INTENT_KIND_REJECTED', `kinds[${i}] rejected`, verdict.violations)
      }
      for (const [i, registration] of registrations.entries()) {
        const verdict = runtime.register(registration)
        if (!verdict.ok) {
          throw new RequestError('ERR_LOOPX_REGISTRATION_REJECTED', `registrations[${i}] rejected`, verdict.violations)
        }
      }
    } catch (error) {
      await runtime.close()
      throw error
    }
    runtime.onFinished((finished) => this.#finished(finished))
    this.#runtime = runtime
    return { open: true, max_in_flight: runtime.maxInFlight }
  }

  /** A prepare step, tried again after the delay the core gives for a busy journal. */
  async #retrying(step: () => Plan | Promise<Plan>): Promise<Plan> {
    for (let tries = 0; ; tries++) {
      try {
        return await step()
      } catch (error) {
        const code = (error as { code?: unknown } | null)?.code
        const wait = typeof code === 'string' ? this.addon().prepareRetryDelayMs(code, tries) : null
        if (wait === null) throw error
        await new Promise((go) => setTimeout(go, wait))
      }
    }
  }

  async #prepare(request: Request): Promise<unknown> {
    const runtime = open(this.#runtime)
    const source = text(request, 'request')
    const only = optionalText(request, 'only_hook_id')
    const plan = await this.#retrying(() => {
      const only1 = only === undefined ? undefined : [only]
      // A journal whose reads are network round trips is read off the event loop's thread, as Flights does.
      if (runtime.readsAreRemote)
        return runtime.prepareManyOffThread([source], only1).then((plans) => planOf(plans[0]!))
      return planOf(only1 === undefined ? runtime.prepare(source) : runtime.prepareMany([source], only1)[0]!)
    })
    if (plan.done != null) return { done: plan.done }
    if (plan.wait != null) {
      // The holder is a dispatch this caller prepared and has not finished:
      // waiting here would wait for the caller's own next request.
      throw new RequestError('ERR_LOOPX_SERVE_IN_FLIGHT', 'an identity of this dispatch is prepared and not finished')
    }
    const calls = plan.calls ?? []
    this.#prepared.set(plan.ticket, {
      calls: calls.map((c) => ({ slot: c.slot, maxReplyLength: c.maxReplyLength, wall: false })),
    })
    return {
      ticket: plan.ticket,
      calls: calls.map((c) => ({
        slot: c.slot,
        hook_id: c.hookId,
        dispatch_id: c.dispatchId,
        attempt: c.attempt,
        input: JSON.stringify(c.input),
      })),
    }
  }

  #ticket(request: Request): [number, Prepared] {
    const ticket = count(request, 'ticket')
    const prepared = this.#prepared.get(ticket)
    if (prepared === undefined) throw badRequest('unknown ticket (not prepared, or already finished)')
    return [ticket, prepared]
  }

  /**
   * Counts a call about to be made (its checkpoint queued, or committed on
   * the journal's server where that counts attempts); its limit, or null: do not make it.
   */
  async #begin(request: Request): Promise<unknown> {
    const runtime = open(this.#runtime)
    const [ticket, prepared] = this.#ticket(request)
    const slot = count(request, 'slot')
    const call = prepared.calls.find((c) => c.slot === slot)
    if (call === undefined) throw badRequest('unknown slot for this ticket')
    const ms = runtime.countsAttemptsOnServer ? await runtime.beginCounted(ticket, slot) : runtime.begin(ticket, slot)
    const limit = ms == null ? null : callLimit(ms)
    if (limit != null) call.wall = limit.wall
    return { limit: limit == null ? null : { ms: limit.ms, wall: limit.wall } }
  }

  /** The reply string the core reads (lib/provider.ts's encoding) for one reported outcome. */
  #reply(outcome: unknown, call: Prepared['calls'][number], at: number): string {
    if (!isObject(outcome)) throw badRequest(`'outcomes[${at}]' must be an object`)
    const status = outcome['status']
    switch (status) {
      case 'returned': {
        const result = outcome['result']
        if (typeof result !== 'string') throw badRequest(`'outcomes[${at}].result' must be JSON text`)
        // JSON text never starts with NUL, so such a text is no reply (and no marker).
        if (result.charCodeAt(0) === 0) return NOT_JSON
        return result.length > call.maxReplyLength ? TOO_LARGE : result
      }
      case 'raised': {
        const code = outcome['code']
        if (typeof code !== 'string' || !CODE_SHAPE.test(code)) {
          throw badRequest(`'outcomes[${at}].code' must be a short code (letters, digits, _ . -), never a message`)
        }
        return RAISED
      }
      case 'not_json':
        return NOT_JSON
      case 'timed_out':
        return call.wall ? WALL : TIMED_OUT
      case 'not_started':
        return NOT_STARTED
      default:
        throw badRequest(`'outcomes[${at}].status' must be one of: ${STATUSES.join(', ')}`)
    }
  }

  async #finish(request: Request): Promise<unknown> {
    const runtime = open(this.#runtime)
    const [ticket, prepared] = this.#ticket(request)
    const outcomes = request['outcomes']
    if (!Array.isArray(outcomes) || outcomes.length !== prepared.calls.length) {
      throw badRequest(`'outcomes' must be an array of one outcome per planned call (${prepared.calls.length})`)
    }
    const replies = outcomes.map((o, i) => this.#reply(o, prepared.calls[i]!, i))
    this.#prepared.delete(ticket)
    const settled = new Promise<unknown>((resolve, reject) => {
      const done = runtime.complete(ticket, replies)
      if (done != null) resolve(JSON.parse(done) as unknown)
      else this.#waiting.set(ticket, { resolve, reject })
    })
    // The addon's callback does not keep the process alive: once the input
    // ended, nothing else would while the commit is awaited.
    const keepAlive = setInterval(() => undefined, 1 << 30)
    try {
      return { done: await settled }
    } finally {
      clearInterval(keepAlive)
    }
  }

  #cancel(request: Request): unknown {
    const runtime = open(this.#runtime)
    const [ticket] = this.#ticket(request)
    this.#prepared.delete(ticket)
    runtime.cancel(ticket)
    return { cancelled: true }
  }

  /** One group commit's finished dispatches (the addon's callback: never throws). */
  #finished(finishedJson: string): void {
    try {
      const { finished } = JSON.parse(finishedJson) as { finished: FinishedItem[] }
      for (const [ticket, outcome, error] of finished) {
        const waiter = this.#waiting.get(ticket)
        if (waiter === undefined) continue
        this.#waiting.delete(ticket)
        if (error === null) waiter.resolve(outcome)
        else waiter.reject(new RequestError(error[0], error[1]))
      }
    } catch {
      // JSON the addon wrote always parses.
    }
  }

  /** Drops what was prepared and never finished (its checkpoints stay owed), then closes the journal. */
  async close(): Promise<void> {
    const runtime = this.#runtime
    if (runtime === undefined) return
    this.#runtime = undefined
    for (const ticket of this.#prepared.keys()) runtime.cancel(ticket)
    this.#prepared.clear()
    await runtime.close()
    for (const waiter of this.#waiting.values()) {
      waiter.reject(new LoopxHooksError('ERR_LOOPX_JOURNAL_CLOSED', 'the journal closed before the dispatch recorded'))
    }
    this.#waiting.clear()
  }
}
