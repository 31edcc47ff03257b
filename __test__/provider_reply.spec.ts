// A provider's result becomes its reply (JSON text, or the not-JSON or
// too-large marker) by the replacer-free JSON.stringify when a quick walk
// finds it plain, and by the exact, member-by-member path otherwise. The two
// must answer the same for every value: thousands of seeded values, plain and
// not (holes, functions, undefined, symbols, BigInts, NaN, unsafe integers,
// Dates, class instances, Maps, Proxies, toJSON, getters, cycles, nesting past
// 127), measured against bounds that cut some of them short.
import { describe, expect, it } from 'vitest'

import { NOT_PLAIN, plainJsonSize } from '../lib/plain_json.js'
import { exactReply, reply, TOO_LARGE } from '../lib/provider.js'
import { rng } from './support/rng.js'

class Point {
  x = 1
}

const SCALARS: (() => unknown)[] = [
  () => 'text',
  () => 'é"\\\n\u0001',
  () => 'a\ud800b',
  () => '',
  () => 0,
  () => -0,
  () => 1.5e300,
  () => 42,
  () => Number.MAX_SAFE_INTEGER,
  () => 2 ** 53 + 2,
  () => NaN,
  () => Infinity,
  () => true,
  () => null,
  () => undefined,
  () => () => 1,
  () => Symbol('s'),
  () => 10n,
  () => new Date(0),
  () => new Point(),
  () => new Map([[1, 2]]),
  () => new Proxy({ a: 1 }, {}),
  () => ({ toJSON: () => 'swapped' }),
  () => ({ toJSON: 5 }),
  () => Object.create(null) as object,
  () => Object.defineProperty({}, 'g', { enumerable: true, get: () => 'got' }),
  () =>
    Object.defineProperty({}, 'boom', {
      enumerable: true,
      get: () => {
        throw new Error('getter')
      },
    }),
  () => Object.defineProperty({ seen: 1 }, 'hidden', { enumerable: false, value: () => 1 }),
]

function value(r: () => number, depth: number): unknown {
  const roll = r()
  if (depth > 3 || roll < 0.45) return SCALARS[Math.floor(r() * SCALARS.length)]!()
  if (roll < 0.7) {
    const a: unknown[] = []
    const n = Math.floor(r() * 5)
    for (let i = 0; i < n; i++) a.push(value(r, depth + 1))
    if (n > 0 && r() < 0.1) delete a[Math.floor(r() * n)]
    return a
  }
  const o: Record<string, unknown> = {}
  const n = Math.floor(r() * 5)
  for (let i = 0; i < n; i++) o[r() < 0.2 ? 'a long member name '.repeat(3) + i : `k${i}`] = value(r, depth + 1)
  return o
}

function nested(depth: number): unknown {
  let v: unknown = 'leaf'
  for (let i = 0; i < depth; i++) v = { v }
  return v
}

describe("a provider's reply", () => {
  it('is the same by the fast path and the exact path, for thousands of seeded values', () => {
    const r = rng(20261207)
    let plain = 0
    let cut = 0
    for (let k = 0; k < 5000; k++) {
      const v = value(r, 0)
      const max = [8, 40, 200, 100_000][k % 4]!
      const fast = reply(v, max)
      expect(fast, `value ${k}, max ${max}`).toBe(exactReply(v, max))
      if (plainJsonSize(v, max) !== NOT_PLAIN) plain++
      if (fast === TOO_LARGE) cut++
    }
    // Both paths were taken, and bounds cut some replies short.
    expect(plain).toBeGreaterThan(500)
    expect(plain).toBeLessThan(4500)
    expect(cut).toBeGreaterThan(100)
  })

  it('is the same for cycles, deep nesting and inherited toJSON', () => {
    const cycle: Record<string, unknown> = { a: 1 }
    cycle.self = cycle
    const shared = { s: 1 }
    for (const v of [cycle, { x: [shared, shared] }, nested(126), nested(127), nested(128), [nested(200)]]) {
      for (const max of [10, 1_000_000]) expect(reply(v, max)).toBe(exactReply(v, max))
    }
    const restore = Object.getOwnPropertyDescriptor(Object.prototype, 'toJSON')
    try {
      Object.defineProperty(Object.prototype, 'toJSON', { value: () => 'polluted', configurable: true })
      expect(plainJsonSize({ a: 1 })).toBe(NOT_PLAIN)
      expect(reply({ a: 1 }, 100)).toBe(exactReply({ a: 1 }, 100))
    } finally {
      if (restore) Object.defineProperty(Object.prototype, 'toJSON', restore)
      else delete (Object.prototype as { toJSON?: unknown }).toJSON
    }
  })

  it('measures a plain value no further than its bound', () => {
    let read = 0
    const many = Array.from({ length: 1000 }, (_, i) =>
      Object.defineProperty({}, 'n', {
        enumerable: true,
        get: () => {
          read++
          return i
        },
      }),
    )
    expect(plainJsonSize(many, 50)).toBeGreaterThan(50)
    expect(read).toBeLessThan(20)
    expect(reply(many, 50)).toBe(TOO_LARGE)
  })
})
