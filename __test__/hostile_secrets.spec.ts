// No secret is stored or echoed (issue 9, item 8): every token the journal
// stores (an executor id, a decision's reason code) and every token filter
// gets the contracts' credential check, and is refused with
// `credential_like_value` carrying the violation's path, never the value;
// nothing is written, and the CLI never prints the value back.
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { HookJournal, HookRuntime, LoopxHooksError } from '../lib/index.js'

/** The plain ESM fixture shared with the child processes. */
interface Fixture {
  PROFILE: Parameters<typeof HookRuntime.open>[0]['profile']
  install(runtime: HookRuntime): void
  request(rid: string): Parameters<HookRuntime['dispatch']>[0]
}

const BIN = join(__dirname, '..', 'bin', 'loopx-hooks.js')
const SECRETS = [
  'sk_live_4eC39HqLyjWDarjtT1zdp7dc',
  'ghp_abcdefghijklmnopqrstuvwxyz0123456789',
  'npm_abcdefghijklmnop',
  'xoxb-123-456-abc',
]

let dir: string
let journalPath: string
let intentId: string

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'loopx-hostile-secrets-'))
  journalPath = join(dir, 'journal.sqlite')
  const { PROFILE, install, request } = (await import(
    pathToFileURL(join(__dirname, 'children', 'fixture.mjs')).href
  )) as Fixture
  const runtime = await HookRuntime.open({ journal: journalPath, profile: PROFILE })
  install(runtime)
  await runtime.dispatch(request('r1'))
  intentId = (await runtime.journal.listIntents({ pendingOnly: true })).items[0]!.intentId
  await runtime.close()
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

async function refusal(promise: Promise<unknown>): Promise<LoopxHooksError> {
  try {
    await promise
  } catch (error) {
    expect(error).toBeInstanceOf(LoopxHooksError)
    return error as LoopxHooksError
  }
  throw new Error('expected a refusal')
}

/** Every byte under the journal's folder, as latin1 text. */
function filesText(): string {
  return readdirSync(dir)
    .map((f) => readFileSync(join(dir, f)).toString('latin1'))
    .join('\n')
}

describe('journal tokens are never credential-like', () => {
  it('decide refuses a credential-like reason code or executor id with the violation, and stores nothing', async () => {
    const journal = await HookJournal.open(journalPath)
    for (const secret of SECRETS.filter((s) => /^[a-z][a-z0-9_]*$/.test(s))) {
      const byReason = await refusal(
        journal.decide({ intentId, executorId: 'x.exec', decision: 'admit', reasonCode: secret }),
      )
      expect(byReason.code).toBe('ERR_LOOPX_CREDENTIAL_LIKE_VALUE')
      expect(byReason.violations).toEqual([{ path: '/reasonCode', rule: 'credential_like_value' }])
      expect(byReason.message).not.toContain(secret)

      const byExecutor = await refusal(
        journal.decide({ intentId, executorId: secret, decision: 'reject', reasonCode: 'ok' }),
      )
      expect(byExecutor.code).toBe('ERR_LOOPX_CREDENTIAL_LIKE_VALUE')
      expect(byExecutor.violations).toEqual([{ path: '/executorId', rule: 'credential_like_value' }])

      const done = await refusal(journal.markDone(intentId, secret))
      expect(done.violations).toEqual([{ path: '/executorId', rule: 'credential_like_value' }])

      const filter = await refusal(journal.listIntents({ capabilityId: secret }))
      expect(filter.code).toBe('ERR_LOOPX_CREDENTIAL_LIKE_VALUE')
      expect(filter.message).not.toContain(secret)
    }
    const [stored] = (await journal.listIntents()).items
    expect(stored!.decision).toBeNull()
    expect(stored!.executorId).toBeNull()
    await journal.close()
    for (const secret of SECRETS) expect(filesText()).not.toContain(secret)
  })

  it('journal decide and done refuse a credential-like token without printing it back or storing it', () => {
    for (const secret of SECRETS.filter((s) => /^[a-z][a-z0-9_]*$/.test(s))) {
      for (const args of [
        ['decide', '--intent', intentId, '--executor', 'x.exec', '--decision', 'admit', '--reason', secret],
        ['decide', '--intent', intentId, '--executor', secret, '--decision', 'admit', '--reason', 'ok'],
        ['done', '--intent', intentId, '--executor', secret],
      ]) {
        const r = spawnSync(process.execPath, [BIN, 'journal', ...args, '--db', journalPath], {
          encoding: 'utf8',
          timeout: 20_000,
        })
        expect(r.status).toBe(2)
        expect(r.stderr).toMatch(/ERR_LOOPX_CREDENTIAL_LIKE_VALUE/)
        expect(r.stdout + r.stderr).not.toContain(secret)
      }
    }
    for (const secret of SECRETS) expect(filesText()).not.toContain(secret)
  })

  it('the CLI refuses a credential-like filter without printing it back', () => {
    for (const secret of SECRETS.filter((s) => /^[a-z][a-z0-9_]*$/.test(s))) {
      for (const args of [
        ['journal', 'intents', '--db', journalPath, '--capability', secret],
        ['journal', 'dispatches', '--db', journalPath, '--hook', secret],
      ]) {
        const r = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout: 20_000 })
        expect(r.status).toBe(2)
        expect(r.stderr).toMatch(/ERR_LOOPX_CREDENTIAL_LIKE_VALUE/)
        expect(r.stdout + r.stderr).not.toContain(secret)
      }
    }
  })
})
