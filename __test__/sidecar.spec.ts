// LoopX's sidecar folder in and out, through the public API and the CLI: a
// folder written the way LoopX's host keeps it is imported into a journal; a
// shipped runtime over that journal replays an imported `intent_recorded`
// without calling the producer (and compares equal in verify mode) and
// retries an imported `retryable_failure` at attempt_count + 1; a runtime
// opened with `sidecarMirror` writes LoopX's files, which import back to the
// same receipts, and a writer holding LoopX's lock costs a counted mirror
// failure, never the dispatch.
import { spawnSync } from 'node:child_process'
import diagnostics_channel from 'node:diagnostics_channel'
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import {
  HookJournal,
  HookRuntime,
  SIDECAR_MIRROR_CHANNEL,
  type ShippedHookInput,
  type ShippedHookResult,
  type ShippedSidecarReceipt,
  type ShippedSource,
  type SidecarMirrorMessage,
} from '../lib/index.js'
import { POSTGRES, openJournal } from './support/backends'
import { STAGE, periodicRegistration, periodicResult } from './support/periodic_report'

const BIN = join(__dirname, '..', 'bin', 'loopx-hooks.js')

const registration = () => periodicRegistration()

function source(version: string): ShippedSource {
  return {
    schema_version: 'loopx_post_writeback_hook_source_v0',
    event_kind: 'refresh_state',
    status: 'committed',
    durable: true,
    identity: { goal_id: 'goal-1', agent_id: 'agent-1', todo_id: null, turn_instance_id: 'turn-1', effect_id: 'e-1' },
    state_version: version,
    receipt_id: null,
    committed_at: '2026-09-02T12:00:00Z',
    projection: { stage_completion: `stage-${version}` },
  }
}

/** A producer returning one intent, or throwing when `fails`. */
function producer(fails = false) {
  let calls = 0
  const fn = (input: ShippedHookInput): ShippedHookResult => {
    calls++
    if (fails) throw new Error('planted-producer-failure')
    return periodicResult(input)
  }
  return { fn, calls: () => calls }
}

let dir: string
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'loopx-sidecar-'))
})
afterEach(() => rmSync(dir, { recursive: true, force: true }))

const open = (journal: string, extra: { replay?: 'return' | 'verify'; sidecarMirror?: string } = {}) =>
  HookRuntime.open({
    dialect: 'loopx-shipped-v0',
    journal: join(dir, journal),
    profile: { enabled: true, replay: extra.replay ?? 'return' },
    ...(extra.sidecarMirror !== undefined ? { sidecarMirror: extra.sidecarMirror } : {}),
  })

/** The receipts a scratch runtime records for `version` (ok) and `failing` (a producer that throws). */
async function loopxReceipts(): Promise<{ ok: ShippedSidecarReceipt; failed: ShippedSidecarReceipt }> {
  const scratch = await open('scratch.sqlite')
  const good = producer()
  scratch.register({ registration: registration(), provider: good.fn })
  await scratch.dispatch(source('v1'))
  await scratch.close()
  const failing = await open('scratch-failing.sqlite')
  failing.register({ registration: registration(), provider: producer(true).fn })
  await failing.dispatch(source('v2'))
  const rows = async (rt: { journal: HookJournal }) => (await rt.journal.listDispatches()).items
  const failedRow = (await rows(failing))[0]!
  await failing.close()
  const reopened = await HookJournal.open(join(dir, 'scratch.sqlite'))
  const okRow = (await reopened.listDispatches()).items[0]!
  await reopened.close()
  return { ok: okRow.receipt as ShippedSidecarReceipt, failed: failedRow.receipt as ShippedSidecarReceipt }
}

/** Writes `r` where LoopX keeps it, as LoopX's writer formats it. */
function putSidecar(root: string, r: ShippedSidecarReceipt): string {
  const folder = join(root, 'goals', 'goal-1', 'post_writeback_hooks')
  mkdirSync(folder, { recursive: true })
  const file = join(folder, `${r.dispatch_id}.json`)
  writeFileSync(file, `${JSON.stringify(r, null, 2)}\n`)
  return file
}

describe('journal import --from-sidecars', () => {
  it('imports a LoopX folder; the runtime replays its intent without the producer and retries its failure at N+1', async () => {
    const { ok, failed } = await loopxReceipts()
    expect(ok.status).toBe('intent_recorded')
    expect(failed.status).toBe('retryable_failure')
    const root = join(dir, 'runtime')
    putSidecar(root, ok)
    putSidecar(root, { ...failed, attempt_count: 7 })

    const journal = await HookJournal.open(join(dir, 'hooks.sqlite'))
    expect(await journal.importSidecars(root)).toEqual({ imported: 2, alreadyPresent: 0, rejected: [] })
    expect(await journal.importSidecars(root)).toEqual({ imported: 0, alreadyPresent: 2, rejected: [] })
    await journal.close()

    for (const replay of ['return', 'verify'] as const) {
      const runtime = await open('hooks.sqlite', { replay })
      const p = producer()
      runtime.register({ registration: registration(), provider: p.fn })
      const result = await runtime.dispatch(source('v1'))
      expect(result.replayed_hooks).toEqual([STAGE])
      expect(result.failures).toEqual([])
      // verify mode calls the producer and finds its result equal to the imported one.
      expect(p.calls()).toBe(replay === 'return' ? 0 : 1)
      expect(result.intents).toEqual([ok.intent])
      await runtime.close()
    }

    const runtime = await open('hooks.sqlite')
    const p = producer()
    runtime.register({ registration: registration(), provider: p.fn })
    // An imported unfinished row has no source to recover from: recover() skips it.
    expect((await runtime.recover()).skipped).toBe(1)
    const retried = await runtime.dispatch(source('v2'))
    expect(p.calls()).toBe(1)
    expect(retried.retried_hooks).toEqual([STAGE])
    const row = await runtime.journal.getDispatch(failed.dispatch_id)
    expect(row?.attempts).toBe(8)
    expect((row?.receipt as ShippedSidecarReceipt).status).toBe('intent_recorded')
    await runtime.close()
  })

  it('is a CLI command with a text and a JSON report, exit 1 when a file is refused', async () => {
    const { ok } = await loopxReceipts()
    const root = join(dir, 'runtime')
    const file = putSidecar(root, ok)
    const folder = join(file, '..')
    writeFileSync(join(folder, `pwh_${'a'.repeat(64)}.json`), '{"planted-secret-content": ')
    symlinkSync('/etc/hostname', join(folder, `pwh_${'c'.repeat(64)}.json`))
    writeFileSync(join(folder, 'composition-retry-receipts.jsonl'), '{}\n')
    const db = join(dir, 'cli.sqlite')
    await (await HookJournal.open(db)).close()
    const run = (...args: string[]) =>
      spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout: 20_000 })

    const json = run('journal', 'import', '--from-sidecars', root, '--db', db, '--json')
    expect(json.status, json.stderr).toBe(1)
    const report = JSON.parse(json.stdout)
    expect(report).toEqual({
      imported: 1,
      alreadyPresent: 0,
      rejected: [
        { file: `goals/goal-1/post_writeback_hooks/pwh_${'a'.repeat(64)}.json`, reason: 'not_json' },
        { file: `goals/goal-1/post_writeback_hooks/pwh_${'c'.repeat(64)}.json`, reason: 'not_a_regular_file' },
      ],
    })
    expect(json.stdout).not.toContain(dir)
    expect(json.stdout).not.toContain('planted-secret-content')

    const text = run('journal', 'import', '--from-sidecars', root, '--db', db)
    expect(text.status).toBe(1)
    expect(text.stdout).toMatch(/^imported 0, already present 1, rejected 2\n/)
    expect(text.stdout).toMatch(/not_json/)
    expect(text.stdout).not.toContain(dir)

    rmSync(join(folder, `pwh_${'a'.repeat(64)}.json`))
    rmSync(join(folder, `pwh_${'c'.repeat(64)}.json`))
    const clean = run('journal', 'import', '--from-sidecars', root, '--db', db, '--json')
    expect(clean.status).toBe(0)
    expect(JSON.parse(clean.stdout)).toEqual({ imported: 0, alreadyPresent: 1, rejected: [] })

    // Like every journal command, it names a journal that exists.
    const missing = run('journal', 'import', '--from-sidecars', root, '--db', join(dir, 'none.sqlite'))
    expect(missing.status).toBe(1)
    expect(missing.stderr).toMatch(/^loopx-hooks: no journal at /)
    const noRoot = run('journal', 'import', '--db', db)
    expect(noRoot.status).toBe(2)
    expect(noRoot.stderr).toMatch(/--from-sidecars/)
  })
  it('imports into a PostgreSQL journal named as the other journal commands name it', async () => {
    const { ok, failed } = await loopxReceipts()
    const root = join(dir, 'runtime')
    putSidecar(root, ok)
    putSidecar(root, { ...failed, attempt_count: 10_000 })
    const target = POSTGRES.target('sidecar')
    try {
      await (await openJournal(target)).close()
      const run = () =>
        spawnSync(process.execPath, [BIN, 'journal', 'import', '--from-sidecars', root, ...target.cliArgs, '--json'], {
          encoding: 'utf8',
          timeout: 20_000,
        })
      const first = run()
      expect(first.status, first.stderr).toBe(0)
      expect(JSON.parse(first.stdout)).toEqual({ imported: 2, alreadyPresent: 0, rejected: [] })
      const second = run()
      expect(JSON.parse(second.stdout)).toEqual({ imported: 0, alreadyPresent: 2, rejected: [] })
      expect(first.stdout + second.stdout + second.stderr).not.toContain(target.cliArgs[1]!)
      const journal = await openJournal(target)
      const row = await journal.getDispatch(failed.dispatch_id)
      expect(row?.attempts).toBe(10_000)
      expect(row?.receipt).toEqual({ ...failed, attempt_count: 10_000 })
      expect((await journal.getDispatch(ok.dispatch_id))?.receipt).toEqual(ok)
      await journal.close()
    } finally {
      await target.cleanup()
    }
  })
})

describe('sidecarMirror', () => {
  it("writes LoopX's file for each settled dispatch, which imports back as the same receipt", async () => {
    const root = join(dir, 'mirror')
    const runtime = await open('hooks.sqlite', { sidecarMirror: root })
    runtime.register({ registration: registration(), provider: producer().fn })
    await runtime.dispatch(source('v1'))
    await runtime.dispatch(source('v1'))
    const rows = (await runtime.journal.listDispatches()).items
    expect(rows).toHaveLength(1)
    const folder = join(root, 'goals', 'goal-1', 'post_writeback_hooks')
    expect(readdirSync(folder)).toEqual([`${rows[0]!.dispatchId}.json`])
    const onDisk = readFileSync(join(folder, `${rows[0]!.dispatchId}.json`), 'utf8')
    expect(onDisk).toBe(`${JSON.stringify(rows[0]!.receipt, null, 2)}\n`)
    expect(runtime.metrics().sidecarMirror).toEqual({ written: 1, replayed: 1, failed: {} })
    await runtime.close()

    const other = await HookJournal.open(join(dir, 'other.sqlite'))
    expect(await other.importSidecars(root)).toEqual({ imported: 1, alreadyPresent: 0, rejected: [] })
    expect((await other.getDispatch(rows[0]!.dispatchId))?.receipt).toEqual(rows[0]!.receipt)
    await other.close()
  })

  it('a writer holding the lock costs a counted mirror failure, never the dispatch', { timeout: 30_000 }, async () => {
    const root = join(dir, 'mirror')
    const scratch = await loopxReceipts()
    const folder = join(root, 'goals', 'goal-1', 'post_writeback_hooks')
    mkdirSync(folder, { recursive: true })
    const lock = join(folder, `${scratch.ok.dispatch_id}.json.ts-effect.lock`)
    writeFileSync(lock, JSON.stringify({ pid: process.pid, token: 'python-live-owner' }))
    const messages: SidecarMirrorMessage[] = []
    const listen = (m: unknown) => messages.push(m as SidecarMirrorMessage)
    diagnostics_channel.subscribe(SIDECAR_MIRROR_CHANNEL, listen)
    try {
      const runtime = await open('hooks.sqlite', { sidecarMirror: root })
      runtime.register({ registration: registration(), provider: producer().fn })
      const result = await runtime.dispatch(source('v1'))
      expect(result.intent_count).toBe(1)
      expect(result.failures).toEqual([])
      expect(runtime.metrics().sidecarMirror).toEqual({ written: 0, replayed: 0, failed: { lock_acquire_timeout: 1 } })
      expect(messages).toEqual([{ runtime, dispatchId: scratch.ok.dispatch_id, code: 'lock_acquire_timeout' }])
      expect(JSON.stringify(messages[0]!.code)).not.toContain(dir)
      expect(readdirSync(folder)).toEqual([`${scratch.ok.dispatch_id}.json.ts-effect.lock`])
      // Once LoopX's writer let go, the next dispatch (a replay) mirrors it.
      rmSync(lock)
      await runtime.dispatch(source('v1'))
      expect(runtime.metrics().sidecarMirror).toEqual({ written: 1, replayed: 0, failed: { lock_acquire_timeout: 1 } })
      await runtime.close()
    } finally {
      diagnostics_channel.unsubscribe(SIDECAR_MIRROR_CHANNEL, listen)
    }
  })

  it('is refused outside the shipped dialect', async () => {
    await expect(
      HookRuntime.open({ journal: join(dir, 'x.sqlite'), sidecarMirror: join(dir, 'm') } as never),
    ).rejects.toMatchObject({ code: 'ERR_LOOPX_INVALID_ARGUMENT' })
  })
})
