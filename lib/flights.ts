/**
 * Drives the addon's dispatch steps on the JS thread: `prepare` (admission,
 * identities, standings, replays; off this thread when the journal's reads
 * are network round trips), then each provider called here directly
 * after `beginDeferred` (which notes the attempt in the attempt ledger and
 * gives its limit; where the journal's server counts attempts,
 * `beginCounted` commits the checkpoint there first), then `complete`
 * (validation, one record command, queued with the checkpoints held back so
 * that the writer takes them at one wake-up). A dispatch whose records need
 * a commit is finished by `onFinished`, which the addon calls once per group
 * commit with every dispatch that commit finished.
 *
 * A dispatch that needs no commit is answered without the event loop
 * turning: a `return` replay or a refusal is settled when `dispatch` returns
 * (its outcome comes from `prepare`), a verified replay in the same turn
 * (from `complete`); no flight or timer is made for either. Plans and
 * outcomes cross as JSON text (a plan with its inputs and outcome embedded,
 * see plan.ts): `JSON.parse` here measured cheaper than the addon building
 * the objects property by property. On a local journal each
 * dispatch is prepared when it is called; where reads are round trips the
 * dispatches one JS turn starts are prepared together, off this thread.
 *
 * Diagnostics (see diagnostics.ts) are published here, only while someone
 * subscribes; the runtime's tally is kept always.
 */
import { prepareRetryDelayMs, type NativeHookRuntime } from './addon.js'
import type { DispatchOutcome } from '../bindings/index'
import { LoopxHooksError, type LoopxHooksErrorCode } from './errors.js'
import { CallContext, FAILED, NOT_STARTED, callProvider, type RawProvider } from './provider.js'
import {
  Tally,
  commitChannel,
  dispatchChannel,
  hookChannel,
  replyKind,
  type CommitMessage,
  type DispatchMessage,
  type HookMessage,
} from './diagnostics.js'
import { callLimit, planOf, plansOf, type Plan } from './plan.js'
import { ReplayTable } from './replay_table.js'

interface Flight {
  promise: Promise<DispatchOutcome>
  resolve: (outcome: DispatchOutcome) => void
  reject: (error: unknown) => void
}

type FinishedItem = [number, DispatchOutcome | null, [string, string] | null]

/** An outcome now, or once its records committed. */
export type Answer = DispatchOutcome | Promise<DispatchOutcome>

/** `run`'s answer as a promise; what it throws, rejected. */
function promised(run: () => Answer): Promise<DispatchOutcome> {
  try {
    return Promise.resolve(run())
  } catch (error) {
    return Promise.reject(error)
  }
}

interface BatchInfo {
  size: number
  micros: number
  durable: boolean
  busyRetries: number
  committed: boolean
}

/** The dispatch trace's context: ids from the request, read only when someone subscribes. */
function dispatchMessage(runtime: object, requestJson: string): DispatchMessage {
  const r = JSON.parse(requestJson) as {
    settlement?: { goal_id?: string; turn_instance_id?: string }
    receipt?: { receipt_id?: string; effect_id?: string }
  }
  return {
    runtime,
    effectId: String(r.receipt?.effect_id ?? ''),
    receiptId: String(r.receipt?.receipt_id ?? ''),
    goalId: String(r.settlement?.goal_id ?? ''),
    turnInstanceId: String(r.settlement?.turn_instance_id ?? ''),
  }
}

export class Flights {
  readonly #native: NativeHookRuntime
  /** The journal's reads are network round trips: prepare off this thread. */
  readonly #remote: boolean
  /** Each attempt is committed on the journal's server before its provider runs (`beginCounted`). */
  readonly #counted: boolean
  readonly providers = new Map<string, RawProvider>()
  /** Signals handed out and not yet settled, for `close()`. */
  readonly active = new Set<CallContext>()
  readonly #flights = new Map<number, Flight>()
  #keepAlive: ReturnType<typeof setInterval> | undefined
  /** A `flushCheckpoints` is scheduled (see `#flushSoon`). */
  #flushing = false
  closing = false
  /** The `HookRuntime` named in diagnostics messages. */
  readonly #owner: object
  readonly tally = new Tally()
  /** Final replays by request text (see replay_table.ts); emptied when a hook or an intent kind is added. */
  readonly replays = new ReplayTable()
  /** Dispatches waiting for this turn's `prepareMany` (see `#prepareWithOthers`). */
  #queued: { requestJson: string; resolve: (plan: Plan) => void; reject: (error: unknown) => void }[] = []

  constructor(addon: NativeHookRuntime, owner: object) {
    this.#native = addon
    this.#remote = addon.readsAreRemote
    this.#counted = addon.countsAttemptsOnServer
    this.#owner = owner
    addon.onFinished((text) => this.#finished(text))
  }

  /**
   * A `prepare` step, whose coded error (closed, invalid request) counts as a
   * dispatch error. Its standing reads never sleep, so the core says which
   * failures are tried again and after how long, and the wait is a timer:
   * the event loop is never blocked. Synchronous on a local journal unless
   * it has to wait.
   */
  #prepare<T>(step: () => T | Promise<T>, tries = 0): T | Promise<T> {
    const retry = (error: unknown): T | Promise<T> => {
      const code = (error as { code?: unknown } | null)?.code
      const wait = typeof code === 'string' && !this.closing ? prepareRetryDelayMs(code, tries) : null
      if (wait !== null) {
        return new Promise((go) => setTimeout(go, wait)).then(() => this.#prepare(step, tries + 1))
      }
      this.tally.error(error)
      throw error
    }
    let out: T | Promise<T>
    try {
      out = step()
    } catch (error) {
      return retry(error)
    }
    return out instanceof Promise ? out.catch(retry) : out
  }

  /**
   * `prepareMany` where the journal's reads are: on this thread for a local
   * file (a WAL read costs less than a hop), off it when each read is a
   * network round trip (PostgreSQL), so the event loop never waits on one.
   */
  #prepareStep(requestsJson: string[], onlyHookIds?: string[]): Plan[] | Promise<Plan[]> {
    return this.#remote
      ? this.#native.prepareManyOffThread(requestsJson, onlyHookIds).then(plansOf)
      : plansOf(this.#native.prepareMany(requestsJson, onlyHookIds))
  }

  /** Runs `run` as a `loopx-hooks:dispatch` trace when someone subscribes. */
  #traced(requestJson: string, run: (trace: DispatchMessage | undefined) => Answer): Answer {
    if (!dispatchChannel.hasSubscribers) return run(undefined)
    const trace = dispatchMessage(this.#owner, requestJson)
    return dispatchChannel.tracePromise(() => promised(() => run(trace)), trace)
  }

  /**
   * Runs one request (JSON text), waiting its turn behind a run of the same
   * identity in this process. Throws a misuse or journal error synchronously
   * when it fails before any provider was called.
   */
  one(requestJson: string, onlyHookId?: string): Answer {
    return this.#traced(requestJson, (trace) => this.#one(requestJson, onlyHookId, trace))
  }

  #one(requestJson: string, onlyHookId: string | undefined, trace?: DispatchMessage): Answer {
    // Once closing, the addon answers (journal_closed), not the table.
    const kept = onlyHookId === undefined && !this.closing ? this.replays.get(requestJson) : undefined
    if (kept !== undefined) {
      this.tally.outcome(kept)
      return kept
    }
    let plan: Plan | Promise<Plan>
    if (onlyHookId !== undefined) {
      const plans = this.#prepare(() => this.#prepareStep([requestJson], [onlyHookId]))
      plan = plans instanceof Promise ? plans.then((p) => p[0]!) : plans[0]!
    } else {
      plan = this.#remote
        ? this.#prepareWithOthers(requestJson)
        : this.#prepare(() => planOf(this.#native.prepare(requestJson)))
    }
    if (plan instanceof Promise) return plan.then((p) => this.#planned(p, requestJson, onlyHookId, trace))
    return this.#planned(plan, requestJson, onlyHookId, trace)
  }

  #planned(plan: Plan, requestJson: string, onlyHookId: string | undefined, trace?: DispatchMessage): Answer {
    if (plan.wait != null) return this.#after(plan.wait).then(() => this.#one(requestJson, onlyHookId, trace))
    if (plan.done != null && plan.replayed && onlyHookId === undefined) {
      const outcome = this.replays.keep(requestJson, plan.done as DispatchOutcome, plan.chars)
      this.tally.outcome(outcome)
      return outcome
    }
    if (plan.done != null) return this.#run(plan, trace)
    // Providers are called once the caller's synchronous code has run (a
    // burst of dispatches does not eat into their timeouts), in this turn.
    return Promise.resolve().then(() => this.#run(plan, trace))
  }

  /**
   * Prepares `requestJson` together with every other dispatch started in
   * this turn of the event loop: one `prepareMany` call reads all their
   * identities' standings at once (one round trip on PostgreSQL, where each
   * read is otherwise a round trip that holds this thread).
   */
  #prepareWithOthers(requestJson: string): Promise<Plan> {
    return new Promise((resolve, reject) => {
      if (this.#queued.push({ requestJson, resolve, reject }) === 1) queueMicrotask(() => this.#prepareQueued())
    })
  }

  #prepareQueued(): void {
    // All of them (at most maxInFlight: dispatch() waits at the gate first).
    // Measured: one call per turn beats groups of 16 by half again with 4
    // processes on one PostgreSQL server, and costs one process alone about
    // a tenth (its whole turn's records then reach the writer together).
    const queued = this.#queued
    this.#queued = []
    const each = () => {
      // A malformed request prepares none, and an unavailable or closed
      // journal fails them all: each is prepared on its own instead, so each
      // gets its own plan or error (and its own retries).
      for (const q of queued) {
        new Promise<Plan[]>((go) => go(this.#prepare(() => this.#prepareStep([q.requestJson])))).then(
          (plans) => q.resolve(plans[0]!),
          q.reject,
        )
      }
    }
    const all = (plans: Plan[]) => {
      for (let i = 0; i < queued.length; i++) queued[i]!.resolve(plans[i]!)
    }
    let plans: Plan[] | Promise<Plan[]>
    try {
      plans = this.#prepareStep(queued.map((q) => q.requestJson))
    } catch {
      return each()
    }
    if (plans instanceof Promise) plans.then(all, each)
    else all(plans)
  }

  /** Runs many requests, prepared in one call; outcomes in request order. */
  async many(requestsJson: string[], onlyHookIds?: string[]): Promise<DispatchOutcome[]> {
    const prepared = this.#prepare(() => this.#prepareStep(requestsJson, onlyHookIds))
    const plans = prepared instanceof Promise ? await prepared : prepared
    // Each plan runs even when one before it failed at once: every ticket
    // prepared here is completed or cancelled.
    return Promise.all(
      plans.map((plan, i) =>
        promised(() =>
          this.#traced(requestsJson[i]!, (trace) =>
            plan.wait == null
              ? this.#run(plan, trace)
              : this.#after(plan.wait).then(() => this.#one(requestsJson[i]!, onlyHookIds?.[i], trace)),
          ),
        ),
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

  /**
   * Calls the plan's providers and completes it: the outcome itself when
   * nothing needs a commit and every provider answered synchronously,
   * otherwise the promise of its flight.
   */
  #run(plan: Plan, trace: DispatchMessage | undefined): Answer {
    if (plan.done != null) {
      const outcome = plan.done as DispatchOutcome
      this.tally.outcome(outcome)
      return outcome
    }
    const ticket = plan.ticket
    let replies: string[] | Promise<string[]>
    try {
      replies = this.#calls(plan, 0, [], trace)
    } catch (error) {
      this.#native.cancel(ticket)
      this.tally.error(error)
      throw error
    }
    if (Array.isArray(replies)) return this.#complete(ticket, replies)
    const flight = this.#fly(ticket)
    replies
      .then((r) => {
        const done = this.#native.complete(ticket, r)
        if (done != null) this.#settle(ticket, JSON.parse(done) as DispatchOutcome, null)
      })
      .catch((error: unknown) => {
        this.#native.cancel(ticket)
        this.#settle(ticket, null, error)
      })
    return flight.promise
  }

  /** `complete` after synchronous providers: the outcome, or its flight's promise when it awaits a commit. */
  #complete(ticket: number, replies: string[]): Answer {
    let done: string | null
    try {
      done = this.#native.complete(ticket, replies)
    } catch (error) {
      this.#native.cancel(ticket)
      this.tally.error(error)
      throw error
    }
    if (done == null) return this.#fly(ticket).promise
    const outcome = JSON.parse(done) as DispatchOutcome
    this.tally.outcome(outcome)
    return outcome
  }

  /** A flight `onFinished` settles; made before control returns to the event loop, so no commit can beat it. */
  #fly(ticket: number): Flight {
    let flight!: Flight
    const promise = new Promise<DispatchOutcome>((resolve, reject) => {
      flight = { promise: undefined as unknown as Promise<DispatchOutcome>, resolve, reject }
    })
    flight.promise = promise
    this.#flights.set(ticket, flight)
    // The addon's callback does not keep the process alive; this does while a dispatch is in flight.
    this.#keepAlive ??= setInterval(() => undefined, 1 << 30)
    return flight
  }

  /** The providers of a plan in order; synchronous while they answer synchronously. */
  #calls(
    plan: Plan,
    from: number,
    replies: string[],
    trace: DispatchMessage | undefined,
  ): string[] | Promise<string[]> {
    const calls = plan.calls ?? []
    for (let i = from; i < calls.length; i++) {
      const slot = calls[i]!.slot
      if (this.#counted) {
        // The attempt commits on the journal's server before its provider runs.
        return this.#native
          .beginCounted(plan.ticket, slot)
          .then((ms) => this.#call(plan, i, ms, replies, trace) ?? this.#calls(plan, i + 1, replies, trace))
      }
      const rest = this.#call(plan, i, this.#native.beginDeferred(plan.ticket, slot), replies, trace)
      if (rest !== undefined) return rest
    }
    return replies
  }

  /** Makes call `i` within `limit`: undefined once its reply is pushed, or the promise of every reply from it on. */
  #call(
    plan: Plan,
    i: number,
    ms: number | null,
    replies: string[],
    trace: DispatchMessage | undefined,
  ): Promise<string[]> | undefined {
    if (ms == null) {
      replies.push(NOT_STARTED)
      return undefined
    }
    const call = plan.calls![i]!
    const provider = this.providers.get(call.hookId)
    const context = new CallContext(this.active, this.closing)
    const hook = hookChannel.hasSubscribers
      ? { runtime: this.#owner, dispatch: trace, hookId: call.hookId, dispatchId: call.dispatchId }
      : undefined
    if (hook) hookChannel.start.publish(hook)
    const probe = this.#probe(hook)
    const reply = provider
      ? callProvider(provider, call.input, callLimit(ms), call.maxReplyLength, context, probe)
      : probe.settled(FAILED, 0, undefined)
    if (hook) hookChannel.end.publish(hook)
    if (typeof reply !== 'string') {
      this.#flushSoon()
      return reply.then((text) => {
        if (hook) {
          hookChannel.asyncStart.publish(hook)
          hookChannel.asyncEnd.publish(hook)
        }
        replies.push(text)
        return this.#calls(plan, i + 1, replies, trace)
      })
    }
    replies.push(reply)
    return undefined
  }

  /**
   * After this turn's callbacks and microtasks: a provider that answered by
   * then had its checkpoint queued with its record (`beginDeferred`); one
   * still running has it queued now, where other processes see it counted.
   */
  #flushSoon(): void {
    if (this.#flushing) return
    this.#flushing = true
    setImmediate(() => {
      this.#flushing = false
      this.#native.flushCheckpoints()
    })
  }

  /** Counts the call; tells the hook trace how it ended (the thrown error too, in memory). */
  #probe(hook: HookMessage | undefined): { settled(reply: string, ms: number, error: unknown): string } {
    return {
      settled: (text: string, ms: number, error: unknown): string => {
        const kind = replyKind(text)
        this.tally.provider(kind, ms)
        if (hook) {
          hook.reply = kind
          hook.durationMs = ms
          if (kind === 'threw') {
            hook.error = error
            hookChannel.error.publish(hook)
          }
        }
        return text
      },
    }
  }

  /** One group commit's finished dispatches. Never throws: it runs as the addon's callback. */
  #finished(text: string): void {
    try {
      const { batch, finished } = JSON.parse(text) as { batch: BatchInfo; finished: FinishedItem[] }
      if (commitChannel.hasSubscribers) {
        const message: CommitMessage = {
          runtime: this.#owner,
          size: batch.size,
          latencyMs: batch.micros / 1000,
          durable: batch.durable,
          busyRetries: batch.busyRetries,
          committed: batch.committed,
          dispatches: finished.length,
        }
        commitChannel.publish(message)
      }
      for (const [ticket, outcome, error] of finished) {
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
    if (outcome) {
      this.tally.outcome(outcome)
      flight.resolve(outcome)
    } else {
      this.tally.error(error)
      flight.reject(error)
    }
  }
}
