/**
 * The one JS wrapper around every provider: the input crosses as JSON text
 * and is parsed into a frozen object of the provider's own; the result goes
 * back as JSON text, or as a compact failure marker when the provider threw,
 * rejected, or returned something JSON cannot hold. The provider's message
 * and stack never leave this function.
 */
import { AsyncLocalStorage } from 'node:async_hooks'

const FAILED = '\u0000threw'
const NOT_JSON = '\u0000not_json'

/** Set while a provider runs, so a re-entrant dispatch can be refused. */
export const providerScope = new AsyncLocalStorage<true>()

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object') {
    for (const member of Object.values(value)) deepFreeze(member)
    Object.freeze(value)
  }
  return value
}

/** JSON text of `value`, or undefined when JSON cannot hold all of it. */
function strictJson(value: unknown): string | undefined {
  let lossy = false
  const text = JSON.stringify(value, (_key, member: unknown) => {
    const t = typeof member
    if (t === 'function' || t === 'symbol' || t === 'undefined' || (t === 'number' && !Number.isFinite(member)))
      lossy = true
    return member
  })
  return lossy || text === undefined ? undefined : text
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any input type, so every typed provider is assignable
export type RawProvider = (input: any) => unknown

/** The reply for a provider's (settled) result: its JSON text or the not-JSON marker. */
function reply(result: unknown): string {
  try {
    return strictJson(result) ?? NOT_JSON
  } catch {
    // a cycle, a BigInt, or a toJSON/getter that throws
    return NOT_JSON
  }
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    value !== null &&
    (typeof value === 'object' || typeof value === 'function') &&
    typeof (value as { then?: unknown }).then === 'function'
  )
}

/**
 * A provider that answers synchronously is answered synchronously: the addon
 * receives the text in the same call, with no promise to attach to and wait
 * for (one main-thread round trip less per dispatch). A thenable is awaited
 * exactly as before.
 */
export function wrapProvider(provider: RawProvider): (inputJson: string) => Promise<string> | string {
  return (inputJson: string) => {
    let result: unknown
    try {
      const input = deepFreeze(JSON.parse(inputJson))
      result = providerScope.run(true, () => provider(input))
      if (!isThenable(result)) return reply(result)
    } catch {
      return FAILED
    }
    return Promise.resolve(result).then(reply, () => FAILED)
  }
}
