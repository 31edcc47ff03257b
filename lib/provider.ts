/**
 * The one JS wrapper around every provider call (post-writeback and
 * turn-start), made on the JS thread: the input arrives freshly parsed from
 * the addon's JSON text and is frozen, the provider's own; the result goes back as
 * JSON text, or as a compact marker when the provider threw, rejected,
 * returned something JSON cannot hold, ran out of time or answered too much.
 * The provider's message and stack never leave this function.
 */
import { AsyncLocalStorage } from 'node:async_hooks'

import { NOT_PLAIN, plainJsonSize } from './plain_json.js'
import { deepFreeze } from './readonly.js'

const FAILED = '\u0000threw'
const NOT_JSON = '\u0000not_json'

/** Set while a provider runs, so a re-entrant dispatch can be refused. */
export const providerScope = new AsyncLocalStorage<true>()

/** Thrown out of JSON.stringify once the text is surely longer than allowed. */
const OVER_LENGTH = new Error('over length')

/**
 * JSON text of `value`; undefined when JSON cannot hold all of it; TOO_LARGE
 * as soon as the text surely passes `maxLength` UTF-16 units. Each member is
 * measured before it is written (a string with its quotes, an object key with
 * its quotes and colon, anything else as one unit: a lower bound), so a huge
 * reply is refused without writing, or even flattening, a copy of it.
 */
function strictJson(value: unknown, maxLength: number): string | undefined {
  let lossy = false
  let least = 0
  let root = true
  const text = JSON.stringify(value, function (this: unknown, key: string, member: unknown) {
    const t = typeof member
    if (t === 'function' || t === 'symbol' || t === 'undefined' || (t === 'number' && !Number.isFinite(member))) {
      lossy = true
      return member
    }
    least += t === 'string' ? (member as string).length + 2 : 1
    if (!root && !Array.isArray(this)) least += key.length + 3
    root = false
    if (least > maxLength) throw OVER_LENGTH
    return member
  })
  return lossy || text === undefined ? undefined : text
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any input type, so every typed provider is assignable
export type RawProvider = (input: any, context: CallContext) => unknown

/**
 * The reply for a provider's (settled) result: its JSON text, or the
 * not-JSON or too-large marker. A plain result (see plain_json.ts) is written
 * by the replacer-free `JSON.stringify`; anything else by `exactReply`, and
 * both answer the same for a plain one.
 */
export function reply(result: unknown, maxLength: number): string {
  const least = plainJsonSize(result, maxLength)
  if (least > maxLength) return TOO_LARGE
  if (least !== NOT_PLAIN) {
    try {
      return bounded(JSON.stringify(result), maxLength)
    } catch {
      // A getter that throws only the second time it is read.
    }
  }
  return exactReply(result, maxLength)
}

/** `reply` for any value: each member is looked at as `JSON.stringify` writes it. */
export function exactReply(result: unknown, maxLength: number): string {
  try {
    return bounded(strictJson(result, maxLength) ?? NOT_JSON, maxLength)
  } catch (error) {
    // a cycle, a BigInt, or a toJSON/getter that throws
    return error === OVER_LENGTH ? TOO_LARGE : NOT_JSON
  }
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    value !== null &&
    (typeof value === 'object' || typeof value === 'function') &&
    typeof (value as { then?: unknown }).then === 'function'
  )
}

/** Markers for what happened instead of a reply (the addon maps each to its failure code). */
export const TIMED_OUT = '\u0000timed_out'
export const WALL = '\u0000wall'
export const TOO_LARGE = '\u0000too_large'
export const NOT_STARTED = '\u0000not_started'
export { FAILED, NOT_JSON }

/**
 * The second argument of a post-writeback provider. The AbortController is
 * made only when the provider reads `signal`, so one that never looks costs
 * nothing; `active` lets `close()` abort every signal handed out.
 */
export class CallContext {
  #controller: AbortController | undefined
  readonly #active: Set<CallContext>
  readonly #closing: boolean

  constructor(active: Set<CallContext>, closing: boolean) {
    this.#active = active
    this.#closing = closing
  }

  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController()
      this.#active.add(this)
      if (this.#closing) this.abort(new DOMException('the runtime is closing', 'AbortError'))
    }
    return this.#controller.signal
  }

  abort(reason: DOMException): void {
    this.#controller?.abort(reason)
  }

  finish(): void {
    if (this.#controller) this.#active.delete(this)
  }
}

export interface CallLimit {
  /** Milliseconds from the call (start-to-close). */
  ms: number
  /** The dispatch's wall budget, not the hook's own timeout, is the bound. */
  wall: boolean
}

/** Told once how a provider call ended, for diagnostics and metrics. */
export interface ProviderProbe {
  /** `reply` is the reply text or marker; `error` is what the provider threw or rejected with. */
  settled(reply: string, ms: number, error: unknown): void
}

function bounded(text: string, maxLength: number): string {
  // A UTF-16 length above the bound is above it in UTF-8 bytes too.
  return text.length > maxLength && text.charCodeAt(0) !== 0 ? TOO_LARGE : text
}

/**
 * Calls a provider on this thread with `input` (parsed from the addon's
 * text, and no one else's: it is frozen here): the reply's JSON text, or a
 * marker. A synchronous answer is returned synchronously. The limit counts
 * from this call; past it the signal aborts and the reply is the marker
 * (whatever the provider settles to later is dropped). A reply longer than
 * `maxLength` never crosses into the addon.
 */
export function callProvider(
  provider: RawProvider,
  input: unknown,
  limit: CallLimit,
  maxLength: number,
  context: CallContext,
  probe?: ProviderProbe,
): string | Promise<string> {
  const over = limit.wall ? WALL : TIMED_OUT
  const start = performance.now()
  const told = (text: string, error?: unknown): string => {
    probe?.settled(text, performance.now() - start, error)
    return text
  }
  let result: unknown
  try {
    const frozen = deepFreeze(input)
    result = providerScope.run(true, () => provider(frozen, context))
  } catch (error) {
    context.finish()
    return told(FAILED, error)
  }
  if (!isThenable(result)) {
    context.finish()
    return told(performance.now() - start > limit.ms ? over : reply(result, maxLength))
  }
  return new Promise<string>((resolve) => {
    let done = false
    const expire = (): void => {
      // A timer counts from the event loop's cached time, which lags the real
      // clock by the work done since the loop last woke; so it can fire before
      // the limit has really passed, and is then re-armed for the rest.
      const left = limit.ms - (performance.now() - start)
      if (left > 0) {
        timer = setTimeout(expire, Math.ceil(left))
        return
      }
      done = true
      context.abort(new DOMException('the provider ran out of time', 'TimeoutError'))
      context.finish()
      resolve(told(over))
    }
    let timer = setTimeout(expire, limit.ms)
    const settle = (text: string, error?: unknown): void => {
      // Past the limit the reply was already given; whatever came later is dropped.
      if (done) return
      clearTimeout(timer)
      context.finish()
      resolve(told(performance.now() - start > limit.ms ? over : text, error))
    }
    Promise.resolve(result).then(
      (value) => settle(reply(value, maxLength)),
      (error: unknown) => settle(FAILED, error),
    )
  })
}
