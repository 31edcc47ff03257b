/**
 * Where the JS thread's time goes in one fresh dispatch: the addon's three
 * synchronous calls (`prepare` validates the request, derives the ids and
 * reads the standing rows; `beginDeferred` notes the attempt in the attempt
 * ledger and holds its checkpoint back; `complete` validates the result and
 * queues the checkpoint and the record), timed around each call, and
 * everything else (the TypeScript layer, the provider, promise resolution).
 * At 64 in flight the JS thread is what bounds the throughput, so this
 * split says what a faster dispatch has to shrink; at 1 in flight it is one
 * link of a serial chain (this work, the writer's commit, the wake-ups).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'

import { require } from './pkg.js'
import { drive, median, open } from './sides.js'
import type { Add } from './targets.js'

/** The addon's calls a fresh dispatch makes on the JS thread. */
const CALLS = ['prepare', 'beginDeferred', 'complete'] as const

export interface JsThreadRound {
  /** Main-thread busy µs per dispatch, all of it. */
  busyUs: number
  /** µs per dispatch inside each addon call. */
  calls: Record<(typeof CALLS)[number], number>
}

type Method = (...args: unknown[]) => unknown

/** Times every call of `calls` on the addon's runtime class until the returned function restores them. */
export function timeCalls(spent: Record<string, number>, calls: readonly string[] = CALLS): () => void {
  const proto = (require('./index.js') as { NativeHookRuntime: { prototype: Record<string, Method> } })
    .NativeHookRuntime.prototype
  const saved = calls.map((name) => [name, proto[name]!] as const)
  for (const [name, fn] of saved) {
    proto[name] = function (this: unknown, ...args: unknown[]): unknown {
      const t0 = performance.now()
      try {
        return fn.apply(this, args)
      } finally {
        spent[name] = (spent[name] ?? 0) + performance.now() - t0
      }
    }
  }
  return () => {
    for (const [name, fn] of saved) proto[name] = fn
  }
}

/**
 * One run of `n` fresh dispatches, `inflight` at a time, synchronous=FULL, on
 * a fresh journal in `dir`. With `awake`, a `setImmediate` loop keeps the
 * event loop turning while they run, so the JS thread never waits in epoll
 * between dispatches (its busy time then counts the loop too: only the
 * calls' times mean anything).
 */
export async function jsThreadRound(
  dir: string,
  n: number,
  inflight: number,
  tag: string,
  awake = false,
): Promise<JsThreadRound> {
  const work = mkdtempSync(join(dir, 'js-thread-'))
  try {
    const runner = await open('ours', join(work, 'journal.sqlite'), { synchronous: 'full' })
    await drive(runner, `${tag}warm`, 20, 20, 'recorded')
    const spent: Record<string, number> = {}
    const restore = timeCalls(spent)
    let spinning = awake
    const spin = (): void => {
      if (spinning) setImmediate(spin)
    }
    if (awake) setImmediate(spin)
    let res
    try {
      res = await drive(runner, tag, n, inflight, 'recorded')
    } finally {
      spinning = false
      restore()
      await runner.close()
    }
    const perDispatch = (ms: number): number => (ms * 1000) / n
    return {
      busyUs: perDispatch(res.activeMs),
      calls: Object.fromEntries(CALLS.map((c) => [c, perDispatch(spent[c] ?? 0)])) as JsThreadRound['calls'],
    }
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
}

/** µs with one decimal, as the split rows show them. */
export const us = (x: number): string => `${x.toFixed(1)} µs`

/** The split's rows: each call's µs per dispatch against the whole busy time, and the rest. */
export function jsThreadRows(rounds: JsThreadRound[], inflight: number, add: Add): void {
  if (rounds.length === 0) return
  const busy = median(rounds.map((r) => r.busyUs))
  const share = (f: (r: JsThreadRound) => number): number => median(rounds.map((r) => f(r) / r.busyUs))
  const inAddon = (r: JsThreadRound): number => CALLS.reduce((s, c) => s + r.calls[c], 0)
  // The keys at 64 in flight predate the split at 1.
  const key = inflight === 1 ? 'jsThread1' : 'jsThread'
  const what = `main-thread time per fresh dispatch, ${inflight} in flight`
  const whole = '(plain column: ours, all main-thread busy time; ratio: the share)'
  for (const c of CALLS) {
    const f = (r: JsThreadRound): number => r.calls[c]
    add(`${key}_${c}`, `${what}, inside the addon's \`${c}\` ${whole}`, us(median(rounds.map(f))), us(busy), share(f), {
      rounds: rounds.map((r) => [f(r), r.busyUs]),
    })
  }
  const rest = (r: JsThreadRound): number => r.busyUs - inAddon(r)
  add(
    `${key}_rest`,
    `${what}, outside the addon (TypeScript layer, provider, promises) ${whole}`,
    us(median(rounds.map(rest))),
    us(busy),
    share(rest),
    {
      rounds: rounds.map((r) => [rest(r), r.busyUs]),
    },
  )
}

/**
 * The addon's three calls at 1 in flight with the event loop kept awake,
 * against the same calls with it waiting in epoll between dispatches: what
 * the same work costs on a core that went idle during each commit.
 */
export function jsThreadAwakeRow(asleep: JsThreadRound[], awake: JsThreadRound[], add: Add): void {
  const pairs = asleep.map((a, i) => [a, awake[i]] as const).filter((p): p is [JsThreadRound, JsThreadRound] => !!p[1])
  if (pairs.length === 0) return
  const inAddon = (r: JsThreadRound): number => CALLS.reduce((s, c) => s + r.calls[c], 0)
  add(
    'jsThread1_awake',
    "main-thread time per fresh dispatch, 1 in flight, inside the addon's three calls, the event loop kept awake by a `setImmediate` loop (plain column: the same calls, the loop waiting in epoll between dispatches, as in the rows above; ratio: awake / waiting)",
    us(median(pairs.map(([, w]) => inAddon(w)))),
    us(median(pairs.map(([a]) => inAddon(a)))),
    median(pairs.map(([a, w]) => inAddon(w) / inAddon(a))),
    { rounds: pairs.map(([a, w]) => [inAddon(w), inAddon(a)]) },
  )
}
