/**
 * Drives the addon's dispatch steps on the JS thread: `prepare` (admission,
 * identities, standings, replays), then each provider called here directly
 * after `begin` (which queues its checkpoint and gives its limit), then
 * `complete` (validation, one record command). A dispatch whose records need
 * a commit is finished by `onFinished`, which the addon calls once per group
 * commit with every dispatch that commit finished.
 */
import type { NativeHookRuntime, NativePlan } from '../index.js'
import type { DispatchOutcome } from '../bindings/index'
import { LoopxHooksError, sync, type LoopxHooksErrorCode } from './errors.js'
import { CallContext, FAILED, NOT_STARTED, callProvider, type RawProvider } from './provider.js'

interface Flight {
  promise: Promise<DispatchOutcome>
  resolve: (outcome: DispatchOutcome) => void
  reject: (error: unknown) => void
}

type FinishedItem = [number, DispatchOutcome | null, [string, string] | null]

export class Flights {
  readonly #native: NativeHookRuntime
  readonly providers = new Map<string, RawProvider>()
  /** Signals handed out and not yet settled, for `close()`. */
  readonly active = new Set<CallContext>()
  readonly #flights = new Map<number, Flight>()
  #keepAlive: ReturnType<typeof setInterval> | undefined
  closing = false

  constructor(native: NativeHookRuntime) {
    this.#native = native
    native.onFinished((text) => this.#finished(text))
  }

  /** Runs one request (JSON text), waiting its turn behind a run of the same identity in this process. */
  async one(requestJson: string, onlyHookId?: string): Promise<DispatchOutcome> {
    for (;;) {
      const plan = sync(() =>
        onlyHookId === undefined
          ? this.#native.prepare(requestJson)
          : this.#native.prepareMany([requestJson], [onlyHookId])[0]!,
      )
      if (plan.wait == null) return this.#run(plan)
      await this.#after(plan.wait)
    }
  }

  /** Runs many requests, prepared in one call; outcomes in request order. */
  many(requestsJson: string[], onlyHookIds?: string[]): Promise<DispatchOutcome[]> {
    const plans = sync(() => this.#native.prepareMany(requestsJson, onlyHookIds))
    return Promise.all(
      plans.map((plan, i) =>
        plan.wait == null
          ? this.#run(plan)
          : this.#after(plan.wait).then(() => this.one(requestsJson[i]!, onlyHookIds?.[i])),
      ),
    )
  }

  /** Settles when every dispatch in flight has. */
  async drain(): Promise<void> {
    await Promise.allSettled([...this.#flights.values()].map((f) => f.promise))
  }

  abortAll(): void {
    for (const context of this.active) context.abort(new DOMException('the runtime is closing', 'AbortError'))
  }

  async #after(ticket: number): Promise<void> {
    const flight = this.#flights.get(ticket)
    if (flight) await flight.promise.catch(() => undefined)
    else await new Promise((go) => setImmediate(go))
  }

  #run(plan: NativePlan): Promise<DispatchOutcome> {
    if (plan.done != null) return Promise.resolve(JSON.parse(plan.done) as DispatchOutcome)
    const ticket = plan.ticket
    let flight!: Flight
    const promise = new Promise<DispatchOutcome>((resolve, reject) => {
      flight = { promise: undefined as unknown as Promise<DispatchOutcome>, resolve, reject }
    })
    flight.promise = promise
    this.#flights.set(ticket, flight)
    // The addon's callback does not keep the process alive; this does while a dispatch is in flight.
    this.#keepAlive ??= setInterval(() => undefined, 1 << 30)
    const finish = (replies: string[]): void => {
      const done = sync(() => this.#native.complete(ticket, replies))
      if (done != null) this.#settle(ticket, JSON.parse(done) as DispatchOutcome, null)
    }
    const fail = (error: unknown): void => {
      this.#native.cancel(ticket)
      this.#settle(ticket, null, error)
    }
    try {
      const replies = this.#calls(plan, 0, [])
      if (Array.isArray(replies)) finish(replies)
      else replies.then(finish).catch(fail)
    } catch (error) {
      fail(error)
    }
    return promise
  }

  /** The providers of a plan in order; synchronous while they answer synchronously. */
  #calls(plan: NativePlan, from: number, replies: string[]): string[] | Promise<string[]> {
    const calls = plan.calls ?? []
    for (let i = from; i < calls.length; i++) {
      const call = calls[i]!
      const limit = sync(() => this.#native.begin(plan.ticket, call.slot))
      if (limit == null) {
        replies.push(NOT_STARTED)
        continue
      }
      const provider = this.providers.get(call.hookId)
      const context = new CallContext(this.active, this.closing)
      const reply = provider ? callProvider(provider, call.inputJson, limit, call.maxReplyLength, context) : FAILED
      if (typeof reply !== 'string') {
        return reply.then((text) => {
          replies.push(text)
          return this.#calls(plan, i + 1, replies)
        })
      }
      replies.push(reply)
    }
    return replies
  }

  /** One group commit's finished dispatches. Never throws: it runs as the addon's callback. */
  #finished(text: string): void {
    try {
      for (const [ticket, outcome, error] of JSON.parse(text) as FinishedItem[]) {
        this.#settle(ticket, outcome, error && new LoopxHooksError(error[0] as LoopxHooksErrorCode, error[1]))
      }
    } catch {
      // JSON the addon wrote always parses; nothing to recover here.
    }
  }

  #settle(ticket: number, outcome: DispatchOutcome | null, error: unknown): void {
    const flight = this.#flights.get(ticket)
    if (!flight) return
    this.#flights.delete(ticket)
    if (this.#flights.size === 0 && this.#keepAlive) {
      clearInterval(this.#keepAlive)
      this.#keepAlive = undefined
    }
    if (outcome) flight.resolve(outcome)
    else flight.reject(error)
  }
}
