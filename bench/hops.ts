/**
 * The two-hop bound beside the 1-in-flight figure. A fresh durable dispatch
 * here crosses to the writer thread and back (its records go to the writer,
 * its outcome returns through a threadsafe function), while the plain path
 * commits on the JS thread and pays no crossing. So at 1 in flight the best
 * this design can reach is one disk commit plus one such round trip: the
 * disk floor's commit time plus the napi-rs floor's latency (bench/probe:
 * an async napi call that calls one JS function from another thread and
 * resolves with its reply, no work). The row shows how close the
 * 1-in-flight figure is to that bound, and what ratio the bound itself
 * allows against the plain path.
 */
export interface HopRound {
  ours1: number
  plain1: number
  floor: number
}

export interface HopRow {
  key: string
  metric: string
  /** Ours at 1 in flight, dispatches/s. */
  ours: number
  /** The two-hop bound, dispatches/s. */
  bound: number
  /** Ours / bound, median of the rounds. */
  ratio: number
  figures: Record<string, unknown>
}

const median = (xs: number[]): number => {
  const s = Float64Array.from(xs).sort()
  return s[Math.floor(s.length / 2)] ?? NaN
}

/** The bound of each round: 1 / (1 / disk floor + two-hop latency). */
export function twoHopRow(rounds: HopRound[], hopLatencyMs: number): HopRow {
  const bound = (r: HopRound) => 1 / (1 / r.floor + hopLatencyMs / 1000)
  return {
    key: 'durable1VsTwoHops',
    metric:
      '1 in flight vs the two-hop bound (plain column: 1 / (1/disk floor + napi-rs floor latency), the best a writer thread allows)',
    ours: median(rounds.map((r) => r.ours1)),
    bound: median(rounds.map(bound)),
    ratio: median(rounds.map((r) => r.ours1 / bound(r))),
    figures: {
      hopLatencyUs: hopLatencyMs * 1000,
      // What the bound itself gives against the plain path at 1 in flight.
      boundVsPlain: median(rounds.map((r) => bound(r) / r.plain1)),
      rounds: rounds.map((r) => [r.ours1, bound(r), r.plain1]),
    },
  }
}
