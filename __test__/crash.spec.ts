// Crash safety: a child node process dispatching in a loop is SIGKILLed at
// random moments, 60 times per backend; after each kill a fresh process opens
// the journal and runs recover(), and every dispatch whose promise had
// resolved is there with its receipt, every checkpointed one and every
// attempt folded from the killed process's attempt ledger completes with the
// ids recomputed from its receipt, no intent appears twice, and integrity
// holds (SQLite's integrity_check and foreign_key_check; on PostgreSQL our
// invariant SQL; and the journal's own integrity()).
//
// One process at a time with 8 dispatches in flight, on the kill soak's code
// (soak/engine.ts, which documents each round's checks); __test__/soak.spec.ts
// runs it with several processes at once, and `npm run soak` at scale.
import { afterAll, describe, expect, it } from 'vitest'

import { DEFAULTS, runSoak } from '../soak/engine'
import { summaryLine } from '../soak/summary'
import { BACKENDS, Targets, type Backend } from './support/backends'

const KILLS = 60

describe.each(BACKENDS.map((b): [string, Backend] => [b.name, b]))('crash safety under SIGKILL on %s', (_, backend) => {
  const targets = new Targets(backend)
  afterAll(() => targets.cleanup())

  it(`survives ${KILLS} SIGKILLs of a dispatching process, recovering every checkpointed dispatch`, async () => {
    const s = await runSoak(targets.fresh('crash'), {
      ...DEFAULTS,
      kills: KILLS,
      processes: 1,
      inflight: 8,
      maxDelayMs: 150,
      seed: Number(process.env.LOOPX_SOAK_SEED ?? Math.floor(Math.random() * 2 ** 32)),
    })
    console.log(summaryLine(s))
    expect(s.violations, summaryLine(s)).toEqual([])
    expect(s.kills).toBe(KILLS)
    // Not vacuous: kills land between checkpoint and final record.
    expect(s.midRunRounds, summaryLine(s)).toBeGreaterThan(0)
    expect(s.recovered, summaryLine(s)).toBeGreaterThan(0)
    expect(s.resolved, summaryLine(s)).toBeGreaterThan(0)
    // The wait for a killed client's server sessions saw them (PostgreSQL); SQLite has none.
    expect(s.sessionsCut > 0).toBe(backend.name === 'postgres')
  }, 300_000)
})
