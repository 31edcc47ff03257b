/**
 * Where the CPU of a durable dispatch at 64 in flight goes, thread by
 * thread, and the most the machine's cores allow at that cost. Ours spends
 * it on two busy threads (the JS thread and the journal's writer), the plain
 * path on one. Throughput times CPU per dispatch cannot pass the cores, so
 * `cores / CPU per dispatch` bounds any schedule of the same work: a target
 * above it needs less work per dispatch, not a better overlap.
 */
import { availableParallelism } from 'node:os'

import { median, type ThreadsCpu } from './sides.js'
import type { Add } from './targets.js'

export interface ThreadsCpuRound {
  /** CPU µs per dispatch, by thread, each side. */
  ours: ThreadsCpu
  plain: ThreadsCpu
  /** Dispatches per second in the same runs. */
  oursRate: number
  plainRate: number
}

const total = (t: ThreadsCpu): number => t.main + t.writer + t.other
const us = (x: number): string => `${Math.round(x).toLocaleString('en-US')} µs`

/** A run's CPU ms by thread as µs per dispatch. */
export function perDispatchUs(t: ThreadsCpu, n: number): ThreadsCpu {
  return { main: (t.main / n) * 1000, writer: (t.writer / n) * 1000, other: (t.other / n) * 1000 }
}

export function threadsCpuRows(rounds: ThreadsCpuRound[], inflight: number, add: Add): void {
  const med = (f: (r: ThreadsCpuRound) => number) => median(rounds.map(f))
  const split = (side: 'ours' | 'plain') =>
    `${us(med((r) => total(r[side])))} (JS ${Math.round(med((r) => r[side].main))}, writer ${Math.round(
      med((r) => r[side].writer),
    )}, other ${Math.round(med((r) => r[side].other))})`
  add(
    'cpu64',
    `CPU per durable dispatch, ${inflight} in flight, every thread of the process (/proc; in brackets: the JS thread, the journal's writer thread, the rest)`,
    split('ours'),
    split('plain'),
    med((r) => total(r.ours) / total(r.plain)),
    { roundsUs: rounds.map((r) => [r.ours, r.plain]) },
  )
  const cores = availableParallelism()
  const bound = (r: ThreadsCpuRound) => (cores * 1e6) / total(r.ours)
  add(
    'cores64',
    `durable dispatches/s, ${inflight} in flight: the most ${cores} cores allow at ours' CPU per dispatch (first column: cores / the CPU above; plain column: plain's rate; ratio: the highest ratio to plain such CPU allows)`,
    Math.round(med(bound)).toLocaleString('en-US'),
    Math.round(med((r) => r.plainRate)).toLocaleString('en-US'),
    med((r) => bound(r) / r.plainRate),
    { cores, rounds: rounds.map((r) => [bound(r), r.plainRate, r.oursRate]) },
  )
}
