// Outbox consumers that share the work (issue 10, item 2): four consumer
// processes lease intents from one journal while a dispatcher process keeps
// recording them; one consumer is SIGKILLed mid-lease several times and
// restarted. Every intent ends decided exactly once (one `decided` answer
// across all processes, one decision on record) and done, none left behind.
// In one process, a recorded intent wakes a waiting consumer without polling;
// on PostgreSQL, so does a commit of another process (LISTEN/NOTIFY).
// On each backend (support/backends.ts): an SQLite file, a PostgreSQL schema.
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'

import { afterAll, describe, expect, it } from 'vitest'

import { HookRuntime, type HookJournal, type StoredIntent } from '../lib/index.js'
import { BACKENDS, POSTGRES, Targets, openJournal, openJournalReadOnly, type Backend } from './support/backends'

const CHILDREN = join(__dirname, 'children')
const CONSUMERS = 4
const KILLS = 4
const LEASE_MS = 1500

type Line =
  | { t: 'ready' | 'stopped' }
  | { t: 'finished'; n: number }
  | { t: 'claimed'; i: string; decision: string | null }
  | { t: 'decide'; i: string; kind: string }
  | { t: 'done'; i: string; outcome: string }
  | { t: 'error'; i?: string; r?: string; code: string }
  | { t: 'outcome'; r: string; recorded: boolean }

interface Child {
  child: ChildProcessWithoutNullStreams
  lines: Line[]
  done: Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>
  /** Resolves at the first line matching `test`. */
  next(test: (l: Line) => boolean): Promise<void>
}

function start(script: string, args: string[]): Child {
  const child = spawn(process.execPath, [join(CHILDREN, script), ...args], { stdio: ['pipe', 'pipe', 'pipe'] })
  const lines: Line[] = []
  const waiters: { test: (l: Line) => boolean; resolve: () => void }[] = []
  let buf = ''
  let stderr = ''
  child.stdout.setEncoding('utf8')
  child.stdout.on('data', (chunk: string) => {
    buf += chunk
    let nl
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = JSON.parse(buf.slice(0, nl)) as Line
      buf = buf.slice(nl + 1)
      lines.push(line)
      for (const w of waiters.splice(0)) (w.test(line) ? w.resolve : () => waiters.push(w))()
    }
  })
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()))
  const done = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>((resolve) =>
    child.on('close', (code, signal) => resolve({ code, signal, stderr })),
  )
  const next = (test: (l: Line) => boolean) =>
    lines.some(test) ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ test, resolve }))
  return { child, lines, done, next }
}

async function allIntents(journal: HookJournal): Promise<StoredIntent[]> {
  const all: StoredIntent[] = []
  let after: number | undefined
  for (;;) {
    const page = await journal.listIntents({ limit: 1000, ...(after !== undefined ? { after } : {}) })
    all.push(...page.items)
    if (page.nextCursor === null) return all
    after = page.nextCursor
  }
}

describe.each(BACKENDS.map((b): [string, Backend] => [b.name, b]))('outbox on %s', (_, backend) => {
  const targets = new Targets(backend)
  afterAll(() => targets.cleanup())

  describe('consumers that share the outbox', () => {
    it(`${CONSUMERS} consumer processes and one SIGKILLed mid-lease ${KILLS} times, while dispatches arrive: each intent decided once, none left`, async () => {
      const target = targets.fresh('shared')
      const arg = target.childArg()
      // Create the journal first so every process opens a current one.
      await (await openJournal(target)).close()
      const consumers = Array.from({ length: CONSUMERS }, (_, c) =>
        start('consumer.mjs', [arg, `consumer.c${c}`, String(LEASE_MS), '5']),
      )
      await Promise.all(consumers.map((c) => c.next((l) => l.t === 'ready')))
      // Dispatches keep arriving until every kill happened, so the victim always finds work.
      const dispatcher = start('paced-dispatcher.mjs', [arg, '10'])
      await dispatcher.next((l) => l.t === 'ready')

      // The victim holds each claim long enough to be killed inside its lease.
      const killed: Child[] = []
      for (let k = 0; k < KILLS; k++) {
        const victim = start('consumer.mjs', [arg, 'consumer.victim', String(LEASE_MS), '400'])
        await victim.next((l) => l.t === 'claimed')
        victim.child.kill('SIGKILL')
        await victim.done
        killed.push(victim)
      }

      dispatcher.child.stdin.end('stop\n')
      const dispatched = await dispatcher.done
      expect(dispatched.code, dispatched.stderr).toBe(0)
      expect(dispatcher.lines.filter((l) => l.t === 'error')).toEqual([])
      const recorded = dispatcher.lines.filter((l) => l.t === 'outcome' && l.recorded).length

      // Wait until the journal has no open intent (leases of the victim expire and are taken over).
      const reader = await openJournalReadOnly(target)
      for (;;) {
        const open = await reader.listIntents({ pendingOnly: true, limit: 1 })
        if (open.items.length === 0) break
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
      for (const c of consumers) c.child.stdin.end('stop\n')
      const exits = await Promise.all(consumers.map((c) => c.done))
      for (const e of exits) expect({ code: e.code, stderr: e.stderr }).toEqual({ code: 0, stderr: '' })

      const intents = await allIntents(reader)
      await reader.close()
      expect(intents).toHaveLength(recorded)
      expect(recorded).toBeGreaterThan(KILLS * 3)
      for (const i of intents) {
        expect(i.decision, i.intentId).toBe('admit')
        expect(i.doneAt, i.intentId).not.toBeNull()
        expect(i.reasonCode).toBe('consumed')
      }
      // One `decided` answer per intent across every process, the killed ones included.
      const decided = new Map<string, number>()
      for (const c of [...consumers, ...killed])
        for (const l of c.lines)
          if (l.t === 'decide' && l.kind === 'decided') decided.set(l.i, (decided.get(l.i) ?? 0) + 1)
      for (const i of intents) expect(decided.get(i.intentId) ?? 0, i.intentId).toBeLessThanOrEqual(1)
      // The victim's claims were taken over: each intent it claimed is done by the journal's record.
      const victimClaims = killed.flatMap((v) => v.lines.flatMap((l) => (l.t === 'claimed' ? [l.i] : [])))
      expect(victimClaims.length).toBeGreaterThanOrEqual(KILLS)
      // A consumer only ever sees an intent it holds: its decision is the first
      // and its done counts (a double claim would show up as a conflict or not_admitted).
      for (const c of consumers) {
        for (const l of c.lines) {
          if (l.t === 'decide') expect(l.kind, l.i).toBe('decided')
          if (l.t === 'done') expect(l.outcome, l.i).toBe('done')
        }
      }
      // Nobody decided what another held: the journal refused instead.
      const errors = consumers.flatMap((c) => c.lines.filter((l) => l.t === 'error'))
      for (const e of errors) expect(['ERR_LOOPX_LEASE_EXPIRED', 'ERR_LOOPX_LEASE_NOT_HELD']).toContain(e.code)
      // Work was shared: more than one consumer decided something.
      const deciders = consumers.filter((c) => c.lines.some((l) => l.t === 'decide' && l.kind === 'decided'))
      expect(deciders.length).toBeGreaterThan(1)
    }, 180_000)

    it('a recorded intent wakes a waiting consumer in the same process (no polling)', async () => {
      const fixture = (await import(pathToFileURL(join(CHILDREN, 'fixture.mjs')).href)) as {
        PROFILE: Parameters<typeof HookRuntime.open>[0]['profile']
        install(runtime: HookRuntime): void
        request(rid: string): Parameters<HookRuntime['dispatch']>[0]
      }
      const target = targets.fresh('wake')
      const runtime = await HookRuntime.open({ ...target.runtimeOptions(), profile: fixture.PROFILE })
      fixture.install(runtime)
      const consumer = await openJournal(target)
      const stop = new AbortController()
      // A poll interval longer than the test's timeout: only the in-process wake can deliver.
      const first = (async () => {
        for await (const intent of consumer.consume({
          executorId: 'wake.c',
          leaseMs: 10_000,
          signal: stop.signal,
          pollMs: 60_000,
        }))
          return intent
        return null
      })()
      await new Promise((resolve) => setTimeout(resolve, 100))
      await runtime.dispatch(fixture.request('r5'))
      const intent = await first
      expect(intent?.intent.payload).toEqual({ receipt_ref: 'r5', n: 5 })
      stop.abort()
      await consumer.close()
      await runtime.close()
    })

    it('an abort ends a waiting consume promptly', async () => {
      const journal = await openJournal(targets.fresh('abort'))
      const stop = new AbortController()
      const loop = (async () => {
        let n = 0
        for await (const _ of journal.consume({
          executorId: 'abort.c',
          leaseMs: 1000,
          signal: stop.signal,
          pollMs: 60_000,
        }))
          n++
        return n
      })()
      setTimeout(() => stop.abort(), 50)
      expect(await loop).toBe(0)
      await journal.close()
    })
  })

  describe('CLI journal decide and done', () => {
    const BIN = join(__dirname, '..', 'bin', 'loopx-hooks.js')
    const cli = (args: string[]) => {
      const r = spawnSync(process.execPath, [BIN, 'journal', ...args], { encoding: 'utf8', timeout: 20_000 })
      return { status: r.status, stdout: r.stdout, stderr: r.stderr }
    }

    it('are the only journal commands that write, say so in --help, and answer with exit statuses', async () => {
      const help = cli(['--help'])
      expect(help.status).toBe(0)
      expect(help.stdout).toMatch(
        /decide and done are\s+the\s+only\s+commands\s+that\s+open\s+the\s+journal\s+for\s+writing/,
      )
      expect(help.stdout).toMatch(/decide\s+WRITES/)
      expect(help.stdout).toMatch(/done\s+WRITES/)

      const fixture = (await import(pathToFileURL(join(CHILDREN, 'fixture.mjs')).href)) as {
        PROFILE: Parameters<typeof HookRuntime.open>[0]['profile']
        install(runtime: HookRuntime): void
        request(rid: string): Parameters<HookRuntime['dispatch']>[0]
      }
      const target = targets.fresh('cli')
      const runtime = await HookRuntime.open({ ...target.runtimeOptions(), profile: fixture.PROFILE })
      fixture.install(runtime)
      await runtime.dispatch(fixture.request('r1'))
      await runtime.dispatch(fixture.request('r2'))
      const [one, two] = (await runtime.journal.listIntents({ pendingOnly: true })).items
      await runtime.close()

      const decide = (intent: string, executor: string, decision: string, reason: string) =>
        cli([
          'decide',
          ...target.cliArgs,
          '--intent',
          intent,
          '--executor',
          executor,
          '--decision',
          decision,
          '--reason',
          reason,
        ])
      expect(decide(one!.intentId, 'cli.exec', 'admit', 'policy_ok')).toMatchObject({
        status: 0,
        stdout: 'decided: admit by cli.exec (policy_ok)\n',
      })
      expect(decide(one!.intentId, 'cli.exec', 'admit', 'policy_ok').status).toBe(0)
      const conflict = decide(one!.intentId, 'cli.other', 'reject', 'no')
      expect(conflict.status).toBe(1)
      expect(conflict.stdout).toMatch(/^conflict: already admitted by cli\.exec \(policy_ok\)/)
      expect(
        cli(['done', ...target.cliArgs, '--intent', two!.intentId, '--executor', 'cli.exec', '--json']),
      ).toMatchObject({
        status: 1,
        // The library's DoneOutcome itself, as JSON.
        stdout: '"not_admitted"\n',
      })
      expect(cli(['done', ...target.cliArgs, '--intent', one!.intentId, '--executor', 'cli.exec'])).toMatchObject({
        status: 0,
        stdout: 'done\n',
      })

      // A lease held by a consumer: the CLI's decision is refused with a code.
      const consumer = await openJournal(target)
      expect((await consumer.claim({ executorId: 'lease.holder', leaseMs: 60_000 })).map((i) => i.intentId)).toEqual([
        two!.intentId,
      ])
      await consumer.close()
      const refused = decide(two!.intentId, 'cli.exec', 'reject', 'no')
      expect(refused.status).toBe(1)
      expect(refused.stderr).toMatch(/ERR_LOOPX_LEASE_NOT_HELD/)

      // Never creates a journal (SQLite: a file; PostgreSQL: a schema).
      const missing = targets.fresh('missing')
      expect(
        cli([
          'decide',
          ...missing.cliArgs,
          '--intent',
          one!.intentId,
          '--executor',
          'x',
          '--decision',
          'admit',
          '--reason',
          'ok',
        ]).status,
      ).toBe(1)
      expect(await missing.exists()).toBe(false)
    })
  })
})

// PostgreSQL only: SQLite wakes consumers of its own process and polls for others' commits (lib/consume.ts).
describe('outbox across hosts, PostgreSQL only', () => {
  const targets = new Targets(POSTGRES)
  afterAll(() => targets.cleanup())

  it("another process's commit wakes a waiting consumer at once (LISTEN/NOTIFY; its polling is set past the test's timeout)", async () => {
    const target = targets.fresh('notify')
    const consumer = await openJournal(target)
    const stop = new AbortController()
    const first = (async () => {
      for await (const intent of consumer.consume({
        executorId: 'notify.c',
        leaseMs: 10_000,
        signal: stop.signal,
        pollMs: 60_000,
      }))
        return intent
      return null
    })()
    await new Promise((resolve) => setTimeout(resolve, 100))
    const dispatcher = start('paced-dispatcher.mjs', [target.childArg(), '50'])
    try {
      const intent = await first
      expect(intent?.intent.payload).toEqual({ receipt_ref: 'r0', n: 0 })
    } finally {
      dispatcher.child.stdin.end('stop\n')
      expect((await dispatcher.done).code).toBe(0)
      stop.abort()
      await consumer.close()
    }
  })
})
