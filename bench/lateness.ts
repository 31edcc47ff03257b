/**
 * Event-loop lateness, as the catch-up and retention rows measure it.
 */
import { performance } from 'node:perf_hooks'

/**
 * The lateness (ms) of a 1 ms timer re-armed at each firing, one sample per
 * firing plus the lateness still open when stopped. Unlike
 * `monitorEventLoopDelay`, which only records when its timer gets to run, a
 * loop held until the very end shows here as one long delay.
 */
export function lateness(): () => number[] {
  const samples: number[] = []
  let due = performance.now() + 1
  let timer: NodeJS.Timeout
  const tick = () => {
    const now = performance.now()
    samples.push(Math.max(0, now - due))
    due = now + 1
    timer = setTimeout(tick, 1)
  }
  timer = setTimeout(tick, 1)
  return () => {
    clearTimeout(timer)
    samples.push(Math.max(0, performance.now() - due))
    return samples
  }
}

/** The `q` quantile of `xs` (nearest rank); NaN for none. */
export const pct = (xs: number[], q: number): number => {
  const s = Float64Array.from(xs).sort()
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? NaN
}
