// The prune soak: in each round two processes dispatch overlapping runs of
// fresh receipts and replay older ones (final, pruned ones included) while
// a third closes intents and prunes every final dispatch in small batches;
// all three are SIGKILLed at a seeded random moment, and a fresh runtime
// recovers. Nothing lost: every dispatch that resolved is final in the
// journal with the receipt it resolved with. Nothing run twice: no provider
// is called for an identity that was final before the round began. Integrity
// holds after every round; both backends (children/prune-soak.mjs).
import { spawn, type ChildProcess } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { pathToFileURL } from 'node:url'

import { afterAll, describe, expect, it } from 'vitest'

import { HookJournal, HookRuntime, type DispatchReceipt } from '../lib/index.js'
import { rng } from '../soak/engine'
import { BACKENDS, Targets, type Backend, type JournalTarget } from './support/backends'
import { TempDir } from './support/runtime'

/** What the test uses of children/fixture.mjs, the children's own fixture. */
interface Fixture {
  PROFILE: Record<string, unknown>
  expected(rid: string): { dispatchId: string }
  install(runtime: HookRuntime, onInvoke: (rid: string) => void): void
}
const fixture = (): Promise<Fixture> =>
  import(pathToFileURL(join(__dirname, 'children', 'fixture.mjs')).href) as Promise<Fixture>

const ROUNDS = 8
const CHILD = join(__dirname, 'children', 'prune-soak.mjs')
const seed = () => Number(process.env.LOOPX_SOAK_SEED ?? Math.floor(Math.random() * 2 ** 32))

interface Resolved {
  t: 'resolved'
  r: string
  o: string
  d: string
  receipt: DispatchReceipt
  pruned: boolean
}
type Line = Resolved | { t: 'ready' } | { t: 'pruned'; n: number } | { t: 'error'; r?: string; code: string }

interface Child {
  proc: ChildProcess
  lines: Line[]
  ready: Promise<void>
  exited: Promise<string | null>
}

function start(args: string[]): Child {
  const proc = spawn(process.execPath, [CHILD, ...args], { stdio: ['ignore', 'pipe', 'inherit'] })
  const lines: Line[] = []
  let onReady = () => {}
  const ready = new Promise<void>((resolve) => (onReady = resolve))
  createInterface({ input: proc.stdout! }).on('line', (text) => {
    const line = JSON.parse(text) as Line
    lines.push(line)
    if (line.t === 'ready') onReady()
  })
  const exited = new Promise<string | null>((resolve) => proc.on('exit', (_, signal) => resolve(signal)))
  return { proc, lines, ready, exited }
}

/** Every row of the journal by dispatch id. */
async function rows(journal: HookJournal) {
  const all = new Map<string, { state: string; receipt: unknown; prunedAt: number | null }>()
  let after: number | undefined
  for (;;) {
    const page = await journal.listDispatches({ limit: 1000, ...(after !== undefined ? { after } : {}) })
    for (const r of page.items) all.set(r.dispatchId, r)
    if (page.nextCursor === null) return all
    after = page.nextCursor
  }
}

async function recover(target: JournalTarget, callsLog: string) {
  const { PROFILE, install } = await fixture()
  const runtime = await HookRuntime.open({ ...target.runtimeOptions({ synchronous: 'full' }), profile: PROFILE })
  try {
    install(runtime, (rid: string) => writeFileSync(callsLog, `${rid}\n`, { flag: 'a' }))
    const report = await runtime.recover()
    return { report, integrity: await runtime.journal.integrity() }
  } finally {
    await runtime.close()
  }
}

describe.each(BACKENDS.map((b): [string, Backend] => [b.name, b]))('prune soak on %s', (_, backend) => {
  const targets = new Targets(backend)
  const dir = new TempDir()
  afterAll(async () => {
    await targets.cleanup()
    dir.cleanup()
  })

  it(`${ROUNDS} rounds of dispatching, pruning and SIGKILL: nothing lost, nothing run twice`, async () => {
    const { expected } = await fixture()
    const s = seed()
    const random = rng(s)
    const target = targets.fresh('prune_soak')
    const arg = target.childArg({ synchronous: 'full' })
    const violations: string[] = []
    const first = new Map<string, DispatchReceipt>()
    let finalBefore = new Set<string>()
    let replayedPruned = 0
    let pruned = 0
    let resolvedTotal = 0
    let recovered = 0
    let frontier = 0
    for (let round = 0; round < ROUNDS; round++) {
      const callsLog = dir.path(`calls-${round}.log`)
      writeFileSync(callsLog, '')
      // Both start a little below the frontier: they race on the same fresh
      // identities, and replay older ones, final and pruned by now.
      const base = Math.max(0, frontier - 20)
      const children = [
        start([arg, 'dispatch', String(base), callsLog]),
        start([arg, 'dispatch', String(base + 3), callsLog]),
        start([arg, 'prune']),
      ]
      await Promise.all(children.map((c) => c.ready))
      await new Promise((resolve) => setTimeout(resolve, 150 + Math.floor(random() * 450)))
      const sessions = children.flatMap((c) => target.sessionsOf(c.proc.pid!))
      for (const c of children) c.proc.kill('SIGKILL')
      const signals = await Promise.all(children.map((c) => c.exited))
      await target.sessionsGone(sessions)
      if (signals.some((sig) => sig !== 'SIGKILL')) violations.push(`round ${round}: a child ended by ${signals}`)

      const resolved = children.flatMap((c) => c.lines).filter((l): l is Resolved => l.t === 'resolved')
      for (const l of children.flatMap((c) => c.lines)) {
        if (l.t === 'error') violations.push(`round ${round}: ${l.code}`)
        if (l.t === 'pruned') pruned += l.n
      }
      resolvedTotal += resolved.length
      for (const l of resolved) frontier = Math.max(frontier, Number(l.r.slice(1)) + 1)
      for (const l of resolved) {
        if (l.o !== 'recorded' && l.o !== 'replayed') violations.push(`round ${round}: ${l.r} ${l.o}`)
        if (l.o === 'replayed' && l.pruned) replayedPruned++
        if (l.d !== expected(l.r).dispatchId) violations.push(`round ${round}: ${l.r} has another dispatch id`)
        const had = first.get(l.d)
        if (had === undefined) first.set(l.d, l.receipt)
        else if (JSON.stringify(had) !== JSON.stringify(l.receipt)) violations.push(`${l.r}: its receipt changed`)
      }
      // Nothing run twice: no provider call for an identity final before the round.
      const calls = readFileSync(callsLog, 'utf8').split('\n').filter(Boolean)
      for (const rid of calls)
        if (finalBefore.has(expected(rid).dispatchId)) violations.push(`round ${round}: ${rid} was run again`)

      const { report, integrity } = await recover(target, dir.path(`recover-${round}.log`))
      if (!integrity.ok) violations.push(`round ${round}: integrity ${integrity.messages.join('; ')}`)
      if (report.outcomes.some((o) => o.outcome !== 'recorded')) violations.push(`round ${round}: recovery failed`)
      recovered += report.outcomes.length
      const journal = await HookJournal.open(target.journal)
      try {
        const all = await rows(journal)
        // Nothing lost: every resolved dispatch is final with its receipt.
        for (const [d, receipt] of first) {
          const row = all.get(d)
          if (row === undefined) violations.push(`round ${round}: ${d} is lost`)
          else if (JSON.stringify(row.receipt) !== JSON.stringify(receipt))
            violations.push(`${d}: stored receipt changed`)
        }
        for (const [d, row] of all) if (row.receipt === null) violations.push(`round ${round}: ${d} left ${row.state}`)
        finalBefore = new Set(all.keys())
        const receipts = new Set([...all.values()].map((r) => (r.receipt as DispatchReceipt).receipt_id))
        if (receipts.size !== all.size) violations.push(`round ${round}: two rows for one receipt`)
      } finally {
        await journal.close()
      }
      if (violations.length > 0) break
    }
    const summary = `seed ${s}: ${resolvedTotal} resolved, ${pruned} pruned, ${replayedPruned} replays of pruned identities, ${recovered} recovered`
    console.log(`prune soak on ${backend.name}: ${summary}`)
    expect(violations, summary).toEqual([])
    const journal = await HookJournal.open(target.journal)
    try {
      expect((await journal.integrity()).ok).toBe(true)
      // Not vacuous: dispatches resolved and were pruned, and pruned identities were replayed.
      expect((await journal.storage()).pruned, summary).toBeGreaterThan(0)
      expect(replayedPruned, summary).toBeGreaterThan(0)
      expect(finalBefore.size, summary).toBeGreaterThan(0)
      // Kills landed mid-dispatch: identities were left for recover().
      expect(recovered, summary).toBeGreaterThan(0)
    } finally {
      await journal.close()
    }
    if (backend.name === 'sqlite') expect((await target.readRaw()).integrity).toBe('ok')
  }, 120_000)
})
