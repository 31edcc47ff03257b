/**
 * A quick walk of a JS value for anything `JSON.stringify` would hide or
 * change (a hole, a function, `undefined`, a symbol, a BigInt, a non-finite
 * or unsafe number, a cycle, a class instance, a Proxy, `toJSON`, nesting
 * past 127, a getter that throws). A value with none of them is "plain": its
 * `JSON.stringify` text holds exactly what the addon's exact walk would read,
 * and the fast, replacer-free stringify can make it. Anything else takes the
 * caller's exact path.
 */
import { types } from 'node:util'

const MAX_DEPTH = 127

/** `plainJsonSize`'s answer for a value that is not plain. */
export const NOT_PLAIN = -1

/**
 * For a plain `value`: a lower bound on the UTF-16 length of its JSON text
 * (a string counts its length and its quotes, a member name its quotes and
 * colon, anything else one unit). The walk stops as soon as that bound passes
 * `limit`, and answers it then, so a huge value is measured no further.
 * `NOT_PLAIN` otherwise.
 */
export function plainJsonSize(value: unknown, limit = Infinity): number {
  // An inherited toJSON (a polluted prototype) would change every text.
  if ('toJSON' in Object.prototype || 'toJSON' in Array.prototype) return NOT_PLAIN
  try {
    return size(value, 0, [], 0, limit)
  } catch {
    // A getter that threw: the exact path reports it.
    return NOT_PLAIN
  }
}

function size(value: unknown, depth: number, ancestors: object[], least: number, limit: number): number {
  if (typeof value !== 'object') {
    if (typeof value === 'string') return least + value.length + 2
    // Past 2^53 the walk and the text may pick different integer representations.
    const scalar =
      typeof value === 'boolean' ||
      (typeof value === 'number' && Number.isFinite(value) && Math.abs(value) <= Number.MAX_SAFE_INTEGER)
    return scalar ? least + 1 : NOT_PLAIN
  }
  least += 1
  if (value === null) return least
  // A Proxy may answer Array.isArray and getPrototypeOf unlike the exact walk's reads.
  if (depth >= MAX_DEPTH || ancestors.includes(value) || types.isProxy(value)) return NOT_PLAIN
  ancestors.push(value)
  least = Array.isArray(value)
    ? arraySize(value, depth, ancestors, least, limit)
    : objectSize(value, depth, ancestors, least, limit)
  ancestors.pop()
  return least
}

function arraySize(array: unknown[], depth: number, ancestors: object[], least: number, limit: number): number {
  // A subclass or an own toJSON changes what JSON.stringify writes.
  if (Object.getPrototypeOf(array) !== Array.prototype || Object.hasOwn(array, 'toJSON')) return NOT_PLAIN
  for (let i = 0; i < array.length && least <= limit; i++) {
    if (!(i in array)) return NOT_PLAIN
    least = size(array[i], depth + 1, ancestors, least, limit)
    if (least === NOT_PLAIN) return NOT_PLAIN
  }
  return least
}

function objectSize(object: object, depth: number, ancestors: object[], least: number, limit: number): number {
  const proto: unknown = Object.getPrototypeOf(object)
  if (proto !== Object.prototype && proto !== null) return NOT_PLAIN
  // An own toJSON that is a function is not plain (size refuses it); any other is data.
  const record = object as Record<string, unknown>
  for (const key of Object.keys(record)) {
    if (least > limit) break
    least = size(record[key], depth + 1, ancestors, least + key.length + 3, limit)
    if (least === NOT_PLAIN) return NOT_PLAIN
  }
  return least
}
