// PostgreSQL when the network misbehaves, against real servers (no mocks):
// a TCP proxy that holds, delays and cuts the bytes (scripts/tcp-proxy.mjs),
// a listener that accepts and says nothing, a server of this file's own
// frozen with SIGSTOP, and one crashed with `pg_ctl restart -m immediate`
// after a checkpoint it had not flushed. Every call settles within its
// documented bound with a coded error while a 100 ms timer keeps ticking on
// the JS thread, and a crash never loses a finished dispatch.
import { execFileSync, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import net from 'node:net'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'

import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'

import {
  defineHook,
  HookRuntime,
  intent,
  LoopxHooksError,
  proposed,
  type DispatchRequest,
  type HookRuntimeOptions,
} from '../lib/index.js'
import { withPg } from './support/backends'
import { pgCtl, startOwnServer, stopOwnServer, type OwnServer } from './support/pg_own_server'
import { sleep } from './support/runtime'
import { TcpProxy } from '../scripts/tcp-proxy.mjs'

const BIN = join(__dirname, '..', 'bin', 'loopx-hooks.js')
const CHILDREN = join(__dirname, 'children')

interface Fixture {
  PROFILE: HookRuntimeOptions['profile']
  KIND: Parameters<typeof defineHook>[0]['kinds'][number]
  REGISTRATION: Parameters<typeof defineHook>[0]['registration']
  POLICY_VERSION: string
  install(runtime: HookRuntime): void
  request(rid: string): DispatchRequest
  payloadFor(rid: string): Record<string, unknown>
  expected(rid: string): { dispatchId: string; intentIds: string[] }
}
let fixture: Fixture

/** Small bounds, so that each wait is seen to end: 0.5 s per statement, 1 s of write retries, 1 s to connect. */
const LIMITS = { statementTimeoutMs: 500, writeRetryMs: 1_000 }
const withConnectTimeout = (url: string) => `${url}${url.includes('?') ? '&' : '?'}connect_timeout=1`
const schemaName = (label: string) => `t_${label}_${randomBytes(6).toString('hex')}`
const portOf = (url: string) => Number(new URL(url).port)

/** Counts the ticks of a 100 ms timer: it runs only while the JS thread is free. */
function ticker() {
  let ticks = 0
  const timer = setInterval(() => ticks++, 100)
  return {
    get ticks() {
      return ticks
    },
    stop: () => clearInterval(timer),
  }
}

/** How `call` settled (its value, or its error's code) and how long it took. */
async function settle(call: () => Promise<unknown>): Promise<{ code: string | null; ms: number }> {
  const from = Date.now()
  try {
    await call()
    return { code: null, ms: Date.now() - from }
  } catch (error) {
    expect(error).toBeInstanceOf(LoopxHooksError)
    return { code: (error as LoopxHooksError).code, ms: Date.now() - from }
  }
}

async function openRuntime(url: string, schema: string): Promise<HookRuntime> {
  const runtime = await HookRuntime.open({
    journal: { postgres: { connectionString: withConnectTimeout(url), schema, ...LIMITS } },
    profile: fixture.PROFILE,
  })
  fixture.install(runtime)
  return runtime
}

const dropSchema = (url: string, schema: string) =>
  withPg(url, (c) => c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`))

/** Every call on a silent server settles, coded, within its bound, and the timer keeps ticking meanwhile. */
async function expectBoundedWhileSilent(runtime: HookRuntime, tick: ReturnType<typeof ticker>) {
  const did = fixture.expected('r1').dispatchId
  const ticksBefore = tick.ticks
  const read = await settle(() => runtime.journal.getDispatch(did))
  expect(read).toMatchObject({ code: 'ERR_LOOPX_JOURNAL_UNAVAILABLE' })
  expect(read.ms).toBeLessThan(3_000)
  // The read waited out its statement bound off the JS thread: a read on
  // it would have let the timer fire at most once, after it.
  expect(tick.ticks - ticksBefore, 'the timer ticked while the read waited').toBeGreaterThan(1)
  const stats = await settle(() => runtime.journal.stats())
  expect(stats.code).toBe('ERR_LOOPX_JOURNAL_UNAVAILABLE')
  expect(stats.ms).toBeLessThan(3_000)
  for (const call of [
    () => runtime.dispatch(fixture.request('r2')),
    () =>
      runtime.journal.decide({
        intentId: fixture.expected('r1').intentIds[0]!,
        executorId: 'x',
        decision: 'admit',
        reasonCode: 'ok',
      }),
  ]) {
    const before = tick.ticks
    const out = await settle(call)
    expect(out.code).toBe('ERR_LOOPX_JOURNAL_UNAVAILABLE')
    expect(out.ms).toBeLessThan(8_000)
    expect(tick.ticks - before, 'the timer ticked while the call waited').toBeGreaterThan(2)
  }
}

/** Reads answer again within 10 s of the server answering. */
async function expectBack(runtime: HookRuntime) {
  const from = Date.now()
  for (;;) {
    const row = await runtime.journal.getDispatch(fixture.expected('r1').dispatchId).catch(() => undefined)
    if (row) return
    expect(Date.now() - from, 'reads answer again once the server does').toBeLessThan(10_000)
    await sleep(50)
  }
}

describe('PostgreSQL when the network misbehaves', () => {
  beforeAll(async () => {
    fixture = (await import(pathToFileURL(join(CHILDREN, 'fixture.mjs')).href)) as Fixture
  })

  it('a listener that accepts TCP and says nothing: HookRuntime.open rejects coded within 5 s, and the CLI ends coded', async () => {
    const held: net.Socket[] = []
    const silent = net.createServer((s) => held.push(s))
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r))
    const port = (silent.address() as net.AddressInfo).port
    const tick = ticker()
    try {
      const out = await settle(() => openRuntime(`postgres://u:pw@127.0.0.1:${port}/db`, 'loopx_hooks'))
      expect(out.code).toBe('ERR_LOOPX_JOURNAL_UNAVAILABLE')
      expect(out.ms).toBeLessThan(5_000)
      expect(tick.ticks).toBeGreaterThan(2)
      // The command line too: `journal show` ends, coded, naming no credential.
      const url = `postgres://u:s3cret-pw@127.0.0.1:${port}/db?connect_timeout=1`
      const from = Date.now()
      const shown = await new Promise<{ status: number | null; text: string }>((resolve) => {
        const kid = spawn(process.execPath, [BIN, 'journal', 'show', '--db', url], {
          stdio: ['ignore', 'pipe', 'pipe'],
        })
        let text = ''
        kid.stdout.on('data', (d) => (text += d))
        kid.stderr.on('data', (d) => (text += d))
        kid.on('close', (status) => resolve({ status, text }))
      })
      expect(Date.now() - from, 'journal show settles').toBeLessThan(15_000)
      expect(shown.status, shown.text).not.toBe(0)
      expect(shown.text).toContain('ERR_LOOPX_JOURNAL_UNAVAILABLE')
      for (const secret of ['s3cret-pw', String(port)]) expect(shown.text).not.toContain(secret)
    } finally {
      tick.stop()
      for (const s of held) s.destroy()
      silent.close()
    }
  }, 20_000)

  it('a proxy that holds every byte: reads, dispatch, decide and close settle within their bounds; delayed bytes still answer', async () => {
    const url = inject('pgUrl')
    const proxy = await TcpProxy.start(portOf(url))
    const proxied = url.replace(`:${portOf(url)}/`, `:${proxy.port}/`)
    const schema = schemaName('held')
    const runtime = await openRuntime(proxied, schema)
    const tick = ticker()
    try {
      expect((await runtime.dispatch(fixture.request('r1'))).hooks[0]?.outcome).toBe('recorded')
      await proxy.set({ kind: 'hold' })
      await expectBoundedWhileSilent(runtime, tick)
      await proxy.set({ kind: 'delay', ms: 40 })
      await proxy.set({ kind: 'cut' })
      await expectBack(runtime)
      await proxy.set({ kind: 'hold' })
      const before = tick.ticks
      const closing = await settle(() => runtime.close())
      expect(closing.code).toBeNull()
      expect(closing.ms).toBeLessThan(10_000)
      expect(tick.ticks).toBeGreaterThanOrEqual(before)
    } finally {
      tick.stop()
      await proxy.set({ kind: 'pass' })
      await runtime.close()
      await proxy.stop()
      await dropSchema(url, schema)
    }
  }, 60_000)

  describe('a server of its own', () => {
    let server: OwnServer | undefined
    beforeAll(async () => {
      server = await startOwnServer()
    }, 60_000)
    afterAll(async () => {
      if (server) await stopOwnServer(server)
    })

    /** The postmaster and every process it started. */
    const processes = (srv: OwnServer) => {
      const pid = readFileSync(join(srv.dir, 'postmaster.pid'), 'utf8').split('\n')[0]!.trim()
      const children = execFileSync('pgrep', ['-P', pid], { encoding: 'utf8' }).split('\n').filter(Boolean)
      return [pid, ...children].map(Number)
    }

    /** A session whose client left may end as soon as it runs again. */
    const signal = (pids: number[], sig: NodeJS.Signals) => {
      for (const pid of pids) {
        try {
          process.kill(pid, sig)
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error
        }
      }
    }

    it('SIGSTOPped: every call settles within its bound and the same runtime works after SIGCONT', async () => {
      const srv = server!
      const schema = schemaName('stopped')
      const runtime = await openRuntime(srv.url, schema)
      const tick = ticker()
      let frozen: number[] = []
      try {
        expect((await runtime.dispatch(fixture.request('r1'))).hooks[0]?.outcome).toBe('recorded')
        // After the runtime's connections are open: their sessions freeze too.
        frozen = processes(srv)
        signal(frozen, 'SIGSTOP')
        await expectBoundedWhileSilent(runtime, tick)
        signal(frozen, 'SIGCONT')
        await expectBack(runtime)
        expect((await runtime.dispatch(fixture.request('r3'))).hooks[0]?.outcome).toBe('recorded')
      } finally {
        signal(frozen, 'SIGCONT')
        tick.stop()
        await runtime.close()
        await dropSchema(srv.url, schema)
      }
    }, 60_000)

    it('crashed after a checkpoint it had not flushed: the finished dispatch is still recorded', async () => {
      const srv = server!
      await withPg(srv.url, async (c) => {
        await c.query("ALTER SYSTEM SET wal_writer_delay = '10s'")
        await c.query('SELECT pg_reload_conf()')
      })
      const schema = schemaName('crashed')
      const runtime = await HookRuntime.open({
        journal: { postgres: { connectionString: srv.url, schema } },
        profile: fixture.PROFILE,
      })
      try {
        runtime.defineIntentKind(fixture.KIND)
        let invoked = () => {}
        const called = new Promise<void>((r) => (invoked = r))
        let answer = () => {}
        const gate = new Promise<void>((r) => (answer = r))
        runtime.register(
          defineHook({
            kinds: [fixture.KIND],
            registration: fixture.REGISTRATION,
            provider: async (input) => {
              invoked()
              await gate
              return proposed([
                intent(input, fixture.KIND, {
                  operation: 'mark',
                  policyVersion: fixture.POLICY_VERSION,
                  payload: fixture.payloadFor(input.source.receipt_id) as never,
                }),
              ])
            },
          }),
        )
        const expected = fixture.expected('r1')
        const rows = () =>
          withPg(srv.url, async (c) => {
            const q = `SELECT state, attempts FROM "${schema}".dispatches WHERE dispatch_id = $1`
            return (await c.query(q, [expected.dispatchId])).rows as { state: string; attempts: number }[]
          })
        const dispatched = runtime.dispatch(fixture.request('r1'))
        await called
        // The checkpoint committed without waiting for its WAL flush; the crash loses it.
        for (let i = 0; (await rows()).length === 0; i++) {
          expect(i, 'the checkpoint is committed').toBeLessThan(100)
          await sleep(20)
        }
        await pgCtl(srv, ['-w', '-t', '60', '-m', 'immediate', '-l', join(srv.dir, 'log'), 'restart'])
        expect(await rows(), 'the crash lost the checkpoint').toEqual([])
        answer()
        const out = await dispatched
        expect(out.hooks[0]).toMatchObject({ outcome: 'recorded', dispatchId: expected.dispatchId })
        expect(await rows()).toEqual([{ state: 'proposed', attempts: 1 }])
        const stored = await runtime.journal.listIntents()
        expect(stored.items.map((i) => i.intentId)).toEqual(expected.intentIds)
      } finally {
        await runtime.close()
        await withPg(srv.url, async (c) => {
          await c.query('ALTER SYSTEM RESET wal_writer_delay')
          await c.query('SELECT pg_reload_conf()')
        })
        await dropSchema(srv.url, schema)
      }
    }, 60_000)
  })
})
