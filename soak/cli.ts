// `npm run soak -- [--kills N] [--backend sqlite|postgres|both] [--seed N]
//   [--processes P] [--max-inflight K] [--max-delay MS]`: the kill soak
// (soak/engine.ts) on each backend asked for, one summary line each; exits 1
// on any violation, printing the seed that reproduces the run's choices, and 2
// on bad arguments. PostgreSQL: LOOPX_TEST_PG_URL when set, else a throwaway
// server (scripts/pg-server.mjs), stopped at the end.
import { parseArgs } from 'node:util'

import { postgresTarget, SQLITE, type JournalTarget } from '../__test__/support/backends'
import { start, stop } from '../scripts/pg-server.mjs'
import { DEFAULTS, runSoak } from './engine'
import { summaryLine } from './summary'

const USAGE =
  'usage: npm run soak -- [--kills N] [--backend sqlite|postgres|both] [--seed N] [--processes P] [--max-inflight K] [--max-delay MS]'

function positive(name: string, text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback
  const n = Number(text)
  if (!Number.isInteger(n) || n < 1)
    throw new Error(`--${name} must be a positive integer, not ${JSON.stringify(text)}`)
  return n
}

function options() {
  const { values } = parseArgs({
    options: {
      kills: { type: 'string' },
      backend: { type: 'string' },
      seed: { type: 'string' },
      processes: { type: 'string' },
      'max-inflight': { type: 'string' },
      'max-delay': { type: 'string' },
    },
    strict: true,
  })
  const backend = values.backend ?? 'both'
  if (!['sqlite', 'postgres', 'both'].includes(backend))
    throw new Error(`--backend must be sqlite, postgres or both, not ${JSON.stringify(backend)}`)
  const seed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 32) : Number(values.seed)
  if (!Number.isInteger(seed) || seed < 0 || seed >= 2 ** 32)
    throw new Error(`--seed must be an integer in 0..2^32-1, not ${JSON.stringify(values.seed)}`)
  const maxDelayMs = positive('max-delay', values['max-delay'], DEFAULTS.maxDelayMs)
  return {
    backends: backend === 'both' ? ['sqlite', 'postgres'] : [backend],
    soak: {
      kills: positive('kills', values.kills, 1000),
      seed,
      processes: positive('processes', values.processes, DEFAULTS.processes),
      maxInflight: positive('max-inflight', values['max-inflight'], DEFAULTS.maxInflight),
      minDelayMs: Math.min(DEFAULTS.minDelayMs, maxDelayMs),
      maxDelayMs,
      overlap: DEFAULTS.overlap,
    },
  }
}

async function main(): Promise<number> {
  let o: ReturnType<typeof options>
  try {
    o = options()
  } catch (e) {
    process.stderr.write(`${(e as Error).message}\n${USAGE}\n`)
    return 2
  }
  const say = (line: string) => process.stderr.write(`[soak] ${line}\n`)
  say(`seed ${o.soak.seed}, ${o.soak.kills} kills per backend, ${o.soak.processes} processes per round`)
  let server: { url: string; dir: string } | null = null
  let failed = false
  // An interrupted run still stops the server it started.
  for (const [signal, code] of [
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const)
    process.once(signal, () => {
      if (server) stop(server.dir)
      process.exit(code)
    })
  try {
    for (const name of o.backends) {
      let target: JournalTarget
      if (name === 'sqlite') target = SQLITE.target('soak')
      else {
        const url = process.env.LOOPX_TEST_PG_URL ?? (server ??= start()).url
        target = postgresTarget(url, 'soak')
      }
      try {
        const s = await runSoak(target, { ...o.soak, log: say })
        process.stdout.write(summaryLine(s) + '\n')
        for (const v of s.violations) process.stdout.write(`  ${v}\n`)
        if (s.violations.length > 0) {
          failed = true
          process.stdout.write(
            `soak ${name} FAILED; reproduce with: npm run soak -- --backend ${name} --seed ${s.seed} --kills ${o.soak.kills} --processes ${o.soak.processes} --max-inflight ${o.soak.maxInflight} --max-delay ${o.soak.maxDelayMs}\n`,
          )
        }
      } finally {
        await target.cleanup()
      }
    }
  } finally {
    if (server) stop(server.dir)
  }
  return failed ? 1 : 0
}

process.exitCode = await main()
