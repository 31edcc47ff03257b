/**
 * Child-process jobs, so that one measurement's memory never pollutes
 * another's. Prints one JSON line on stdout.
 *
 *   child.js build <ours|plain> <n> <journal>
 *     n dispatches into a fresh journal (synchronous=NORMAL: a million
 *     fsyncs would take the better part of an hour on this disk), 64 in
 *     flight; reports wall time, peak RSS and journal bytes.
 *   child.js lookup <ours journal> <plain journal> <n> <samples> <rounds>
 *     replays random identities of both built journals ('return' mode, one
 *     in flight), interleaving the two sides round by round.
 */
import { performance } from 'node:perf_hooks'

import { drive, journalBytes, lookups, open, percentile, type SideName } from './sides.js'

export const BIG_TAG = 'big'

async function build(side: SideName, n: number, path: string) {
  await new Promise((r) => setImmediate(r))
  const runner = await open(side, path, { synchronous: 'normal' })
  const { ms } = await drive(runner, BIG_TAG, n, 64, 'recorded')
  await runner.close()
  return { side, n, ms, maxRssKiB: process.resourceUsage().maxRSS, bytes: journalBytes(path) }
}

async function lookup(oursPath: string, plainPath: string, n: number, samples: number, rounds: number) {
  await new Promise((r) => setImmediate(r))
  const runners = {
    ours: await open('ours', oursPath, { synchronous: 'normal', replay: 'return' }),
    plain: await open('plain', plainPath, { synchronous: 'normal', replay: 'return' }),
  }
  const out: Record<SideName, { p50: number[]; p99: number[] }> = {
    ours: { p50: [], p99: [] },
    plain: { p50: [], p99: [] },
  }
  // Warm both a little (page cache, JIT) before the first timed round.
  for (const side of ['ours', 'plain'] as const) await lookups(runners[side], BIG_TAG, n, Math.min(500, samples), 7)
  for (let r = 0; r < rounds; r++) {
    const order: SideName[] = r % 2 === 0 ? ['ours', 'plain'] : ['plain', 'ours']
    for (const side of order) {
      // The same random identities for both sides in a round.
      const ms = await lookups(runners[side], BIG_TAG, n, samples, 1000 + r)
      out[side].p50.push(percentile(ms, 0.5))
      out[side].p99.push(percentile(ms, 0.99))
    }
  }
  for (const r of Object.values(runners)) await r.close()
  return out
}

const [mode, ...args] = process.argv.slice(2)
const t0 = performance.now()
let result: unknown
if (mode === 'build') {
  result = await build(args[0] as SideName, Number(args[1]), args[2]!)
} else if (mode === 'lookup') {
  result = await lookup(args[0]!, args[1]!, Number(args[2]), Number(args[3]), Number(args[4]))
} else {
  throw new Error(`child: unknown mode ${mode}`)
}
process.stdout.write(JSON.stringify({ ok: true, wallMs: performance.now() - t0, result }) + '\n')
