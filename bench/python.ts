/**
 * BENCH_ONLY=python: a Python host's dispatch (python/loopx_hooks
 * `HookRegistry.dispatch`: serve's prepare, begin and finish, the producer
 * called in Python) against the same dispatch from Node (`HookRuntime.dispatch`,
 * the producer called on the JS thread). Both dispatch one writeback at a
 * time (a Python host is synchronous), with the same registration, requests
 * and producer, on a durable journal (synchronous 'full'), once fresh
 * (recorded) and once again (replayed: no commit, so the crossing's own cost
 * shows). Rounds alternate the sides; the figures are medians, the ratios
 * same-run medians.
 */
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'

import { request } from './fixtures.js'
import { ROOT } from './pkg.js'
import { median, open } from './sides.js'

const QUICK = process.env.BENCH_QUICK === '1'
const N = QUICK ? 100 : 1_000
const ROUNDS = QUICK ? 2 : 3

type Phase = 'fresh' | 'replay'
type Round = Record<`${'python' | 'node'}.${Phase}`, number>

/** Dispatches per second from a Python host process (its own clock, start-up excluded). */
function python(db: string, tag: string, expected: string): number {
  const done = spawnSync('python3', [join(ROOT, 'bench', 'python_host.py'), db, tag, String(N)], {
    encoding: 'utf8',
    env: process.env,
    timeout: 600_000,
  })
  if (done.status !== 0)
    throw new Error(`bench: python_host.py failed (status ${done.status}): ${done.stderr.slice(-300)}`)
  const r = JSON.parse(done.stdout) as { ms: number; n: number; outcome: string[] }
  if (r.outcome.join() !== expected) throw new Error(`bench: python side answered ${r.outcome.join()}`)
  return (r.n / r.ms) * 1000
}

/** Dispatches per second from Node, one at a time, on the same kind of journal. */
async function node(db: string, tag: string, expected: string): Promise<number> {
  const runner = await open('ours', db, { synchronous: 'full' })
  try {
    for (let i = 0; i < 20; i++) await runner.dispatch(request(`warm_${tag}`, i))
    const t = performance.now()
    for (let i = 0; i < N; i++) {
      const outcome = await runner.dispatch(request(tag, i))
      if (outcome.hooks[0]?.outcome !== expected)
        throw new Error(`bench: node side answered ${outcome.hooks[0]?.outcome}`)
    }
    return (N / (performance.now() - t)) * 1000
  } finally {
    await runner.close()
  }
}

export async function pythonOnly(log: (msg: string) => void): Promise<void> {
  const tmp = mkdtempSync(join(os.tmpdir(), 'loopx-bench-python-'))
  const rounds: Round[] = []
  try {
    for (let r = 0; r < ROUNDS; r++) {
      const round = {} as Round
      const sides = r % 2 === 0 ? (['python', 'node'] as const) : (['node', 'python'] as const)
      for (const side of sides) {
        const db = join(tmp, `${side}-${r}.db`)
        const tag = `r${r}`
        const run = (expected: string) => (side === 'python' ? python(db, tag, expected) : node(db, tag, expected))
        round[`${side}.fresh`] = await run('recorded')
        // The same identities again: answered from the journal, nothing to commit.
        round[`${side}.replay`] = await run('replayed')
      }
      log(`python round ${r + 1}/${ROUNDS}: ${JSON.stringify(round)}`)
      rounds.push(round)
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true })
  }
  const fig = (k: keyof Round) => Math.round(median(rounds.map((r) => r[k])))
  const ratio = (p: Phase) => median(rounds.map((r) => r[`python.${p}`] / r[`node.${p}`])).toFixed(2)
  const lines = [
    `| dispatch, one at a time (${N} per round, ${ROUNDS} rounds) | Python host /s | Node host /s | Python / Node |`,
    '| --- | ---: | ---: | ---: |',
    `| fresh (recorded, durable commit) | ${fig('python.fresh')} | ${fig('node.fresh')} | ${ratio('fresh')} |`,
    `| replayed (no commit) | ${fig('python.replay')} | ${fig('node.replay')} | ${ratio('replay')} |`,
  ]
  process.stdout.write(`\n${lines.join('\n')}\n`)
  mkdirSync(join(ROOT, '.bench'), { recursive: true })
  writeFileSync(join(ROOT, '.bench', 'results-python.json'), JSON.stringify({ n: N, rounds }, null, 2) + '\n')
}
