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
    if (t === 'function' || t === 'symbol' || t === 'undefined' || (t === 'number' && !Number.isFinite(member))) lossy = true
    return member
  })
  return lossy || text === undefined ? undefined : text
}

export type RawProvider = (input: any) => unknown

export function wrapProvider(provider: RawProvider): (inputJson: string) => Promise<string> {
  return async (inputJson: string) => {
    let result: unknown
    try {
      const input = deepFreeze(JSON.parse(inputJson))
      result = await providerScope.run(true, () => provider(input))
    } catch {
      return FAILED
    }
    try {
      return strictJson(result) ?? NOT_JSON
    } catch {
      // a cycle, a BigInt, or a toJSON/getter that throws
      return NOT_JSON
    }
  }
}
